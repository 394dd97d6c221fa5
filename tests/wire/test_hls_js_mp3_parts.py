# SPDX-License-Identifier: GPL-2.0-or-later
"""The hls.js bug reported in docs/upstream/hls.js-mp3-parts.md, on its own reproduction and
without our server: a static LL-HLS stream of packed MP3 made by
docs/upstream/hls.js-mp3-parts/make-stream.py (12 segments of four 0.496 s parts, ID3
timestamps from 10 s), served from a temporary directory by python's http.server and played
by its index.html with the vendored hls.js (web/vendor) and lowLatencyMode, in a headless
Chromium, whose Media Source takes audio/mpeg.

- As vendored, hls.js gives every part of a segment after its first the timestampOffset it
  uses for fragmented MP4 (here -10 s): those parts never land at their place (here before
  the timeline's start, dropped), the buffer stays at the first part and the player stalls.
  The test asserts that it does, so that it fails once a vendored hls.js no longer does: then
  the workaround in web/app.js and the expected failure in test_hls_latency.py can go.
- The same build with the fix proposed in the report (patched in the temporary copy only),
  and the page's own copy of app.js's workaround, play the parts in place, one range from 0,
  across segment boundaries, without a stall; so does the vendored build loading whole
  segments (lowLatencyMode off), which shows the stream itself is sound.

Needs chromium, chromedriver, python3-selenium and ffmpeg (libmp3lame); skipped without the
first three.
"""

import functools
import http.server
import os
import subprocess
import sys
import threading

import pytest

import webuilib
from test_webui import browsers  # noqa: F401 (browsers: the fixture)

_missing = webuilib.missing_requirements()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""),
              pytest.mark.rimecast_only]

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REPRO = os.path.join(TOP, "docs", "upstream", "hls.js-mp3-parts")
VENDORED = os.path.join(TOP, "web", "vendor", "hls.light.min.js")
PARTS = 4           # per segment, as made below
START = 10.0        # seconds, the stream's first ID3 timestamp (its playlist starts at 0)
PLAYED = 5.0        # seconds the fixed players must play: past two segment boundaries


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """The reproduction made and served: its base URL."""
    out = str(tmp_path_factory.mktemp("hlsjs-mp3-parts"))
    subprocess.run([sys.executable, os.path.join(REPRO, "make-stream.py"), out,
                    "--hls", VENDORED, "--segments", "12", "--parts", str(PARTS),
                    "--start", str(START)],
                   check=True, stdout=subprocess.DEVNULL, timeout=60)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=out))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d/" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def report(b):
    return b.js_run("return window.report")


def covered(ranges, t):
    return any(s <= t < e for s, e in ranges)


def later_parts(r):
    """The appends of a part that is not its segment's first."""
    return [a for a in r["appends"] if "." in a["piece"] and not a["piece"].endswith(".0")]


def play(browsers, url):
    b = browsers(js=True)
    b.get(url)
    b.wait(lambda: (report(b) or {}).get("version"), 15, "hls.js to load")
    return b


@pytest.mark.browser
def test_vendored_hls_js_puts_a_segments_later_mp3_parts_out_of_place(stream, browsers):
    b = play(browsers, stream + "index.html")
    r = b.wait(lambda: (lambda r: r if r["stalls"] and len(later_parts(r)) >= PARTS else None)(
        report(b)), 30, "hls.js to stall after appending later parts")
    first = r["appends"][0]
    assert first["piece"] == "0.0" and covered(first["buffered"], 0.25), r["appends"][:PARTS]
    late = later_parts(r)
    # the offset they get is the fragmented MP4 one: the playlist's start less the timestamps'
    assert all(a["offset"] is not None and abs(a["offset"] + START) < 0.1 for a in late), late
    # none of them is where the playlist puts it: the buffer stays at the first part
    assert not [a for a in late if covered(a["buffered"], a["start"] + 0.25)], late[:PARTS]
    assert max(e for a in r["appends"] for _, e in a["buffered"]) < 0.6, r["appends"][:PARTS]
    assert b.js_run("return document.getElementById('player').currentTime") < 0.6


@pytest.mark.browser
@pytest.mark.parametrize("query", ["?hls=hls.fixed.min.js", "?workaround=1", "?ll=0"],
                         ids=["proposed-fix", "workaround", "whole-segments"])
def test_fixed_hls_js_plays_the_mp3_parts_in_place(stream, browsers, query):
    """Also the vendored build without lowLatencyMode, which loads whole segments: the
    stream itself plays."""
    b = play(browsers, stream + "index.html" + query)
    b.wait(lambda: b.js_run("return document.getElementById('player').currentTime") >= PLAYED,
           30, "the player to play %.0f s" % PLAYED)
    r = report(b)
    assert not r["stalls"] and not r["holes"] and not r["errors"], r
    if query == "?ll=0":
        assert r["appends"] and not [a for a in r["appends"] if "." in a["piece"]], r["appends"]
    else:
        assert len(later_parts(r)) >= PARTS, r["appends"]
    # each piece is where the playlist puts it, and the buffer is one range from 0
    assert not [a for a in r["appends"] if not covered(a["buffered"], a["start"] + 0.25)], r
    last = r["samples"][-1]["buffered"]
    assert len(last) == 1 and last[0][0] < 0.05 and last[0][1] > PLAYED, last
