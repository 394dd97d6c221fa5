# SPDX-License-Identifier: GPL-2.0-or-later
"""Source to ear of a mount's low-latency HLS, played by hls.js in a real headless Chromium
with its default configuration and lowLatencyMode on, from a page of another origin (as a
third party's player is), the mount fed at its real rate by ffmpeg (-re). Two measures,
independent of each other, over about a minute of play:

- titles: a title is set with /admin/metadata at wall time T0 (taken before the request);
  the server puts it in the ID3 tag of the next part, hls.js makes it a cue of the player's
  metadata track, and the page notes the wall time T1 at which the playhead reached the
  cue's start (the cue's entry, corrected by how far the playhead had gone past its start
  when the browser said so). T1 - T0 is source to ear for that title: the audio that reached
  the server at T0 plus the wait for the next part to begin.
- the playhead's date: Date.now() - hls.playingDate, every 250 ms; playingDate comes from
  EXT-X-PROGRAM-DATE-TIME, the wall time at which the source sent a segment's first sample
  (as the server knows it from when the source's blocks come; the last test checks it).

On an Ogg mount a title goes into the stream at the next page, whose audio the source began
sending before the title was set (ffmpeg sends a page a second), so there the title's cue is
early by up to a second and the measure by title reads low; by date is the one to take.

The medians after the player's start-up must be under 3 s (the goal of LL-HLS here, against
18-24 s for classic HLS of 6 s segments), hls.js must not jump a hole in its buffer, nor
stall unless the machine was too busy to run the browser. Each measure's distribution is
printed (pytest -s) and given in the failure message with the player's stalls, which hls.js
never makes up (its default playback rate stays 1), and the machine's idle share.

AAC and Opus mounts meet it. An MP3 mount does not, for hls.js's sake: in a browser whose Media
Source takes audio/mpeg (Chromium), hls.js appends MP3 as is to an audio/mpeg SourceBuffer,
whose frames are placed at its timestampOffset; hls.js sets that to the part's start only for
the first part of a segment, and for the next parts of the same segment to a fixed offset
that suits fragmented MP4 only, so they land elsewhere in the timeline. The player plays the
first part of each segment, stalls, and jumps the hole at the next segment. The test is kept
(an expected failure) to show when hls.js no longer does so. Played by the station's own
page (status.xsl, app.js), which works around it, an MP3 mount meets the goal (the third
case). Rimecast only.
"""

import calendar
import socket
import statistics
import time

import pytest

import formatlib as fl
import hlscheck
import httprec
import webuilib
import wirelib
from test_hls import playlist
from test_hls_web import play_hls
from test_webui import ADMIN, WEB, browsers  # noqa: F401 (browsers: the fixture)

_missing = webuilib.missing_requirements()
pytestmark = pytest.mark.rimecast_only
in_chromium = pytest.mark.skipif(_missing is not None, reason=_missing or "")

GOAL = 3.0          # seconds, source to ear
START_UP = 8.0      # seconds of play before the first title: the player is past its start
TITLES = 12         # one every TITLE_EVERY seconds after that
TITLE_EVERY = 4.0
LAST = 8            # the median is of the last LAST titles' cues
BUSY = 25           # per cent idle under which the machine may starve the browser into a stall
HOLE = "bufferSeekOverHole"  # hls.js jumped a hole in its buffer

# hls.js with its defaults and lowLatencyMode, on an <audio> of a page of its own
PLAYER = """
var a = document.createElement('audio');
a.id = 'player';
a.muted = true;
document.body.appendChild(a);
var hls = a.__hls = new Hls({lowLatencyMode: true});
hls.attachMedia(a);
hls.loadSource(arguments[0]);
a.play().catch(function () {});
"""

# what the page records of the player arguments[0] (an <audio> played by the hls.js in its
# __hls): each TIT2 cue's entry, the playhead's date, hls.js's errors
MEASURE = """
var a = document.querySelector(arguments[0]), hls = a.__hls;
var lat = window.lat = {cues: [], dates: [], stalls: [], errors: []};
hls.on(Hls.Events.ERROR, function (e, d) {
    lat.errors.push(d.details + (d.fatal ? ' (fatal)' : ''));
    if (d.details === Hls.ErrorDetails.BUFFER_STALLED_ERROR)
        lat.stalls.push(a.currentTime);
});
function watch(t) {
    if (t.kind !== 'metadata' || t.watched) return;
    t.watched = true;
    t.mode = 'hidden';
    t.addEventListener('cuechange', function () {
        var now = Date.now(), at = a.currentTime;
        for (var i = 0; t.activeCues && i < t.activeCues.length; i++) {
            var c = t.activeCues[i], v = c.value;
            if (!v || v.key !== 'TIT2' || c.entered) continue;
            c.entered = true;
            lat.cues.push({title: v.data, t1: now - Math.max(0, at - c.startTime) * 1000,
                           late: at - c.startTime});
        }
    });
}
a.textTracks.addEventListener('addtrack', function (e) { watch(e.track); });
setInterval(function () {
    for (var i = 0; i < a.textTracks.length; i++) watch(a.textTracks[i]);
    var d = hls.playingDate;
    if (!a.paused && a.currentTime > 0 && d)
        lat.dates.push([a.currentTime, Date.now() - d.getTime(), hls.latency,
                        hls.targetLatency, Date.now()]);
}, 250);
"""


PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>player</title>
<script src="%s"></script></head><body></body></html>"""


def open_player_page(b, srv, pages):
    """A third party's page (another origin) with the server's hls.js."""
    rec = pages(pages={"/": PAGE % srv.url("/vendor/hls.light.min.js")})
    b.get(rec.url("/"))
    b.wait(lambda: b.js_run("return typeof window.Hls === 'function'"), 15, "hls.js to load")


def cpu_times():
    """(idle, total) jiffies of the machine so far (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v)


def idle_since(before):
    """The machine's idle share since cpu_times() gave before, in per cent."""
    i0, t0 = before
    i1, t1 = cpu_times()
    return 100.0 * (i1 - i0) / max(1, t1 - t0)


def summary(values):
    v = sorted(values)
    if not v:
        return "none"
    q = lambda f: v[min(len(v) - 1, int(f * len(v)))]  # noqa: E731
    return "n=%d min %.2f p25 %.2f median %.2f p75 %.2f max %.2f s" % (
        len(v), v[0], q(0.25), statistics.median(v), q(0.75), v[-1])


pages = httprec.recorder_fixture("pages", lambda req: (404, {}))


HLS_JS_MP3_PARTS = pytest.mark.xfail(
    strict=True, reason="hls.js misplaces an MP3 segment's parts after its first in an "
    "audio/mpeg SourceBuffer (Chromium): a stall at every segment")


@pytest.fixture
def live(server):
    """Factory: codec -> (server, mount) fed by a real-time ffmpeg (stopped at teardown)."""
    procs = []

    def start(codec):
        mount = "/live." + codec
        srv = server(webroot=WEB, adminroot=ADMIN,
                     extra_xml=fl.opus_titles_xml(mount) if codec == "opus" else "")
        procs.append(fl.ffmpeg_source(srv, mount, codec))
        fl.wait_mount(srv, mount, procs[-1])
        return srv, mount
    yield start
    for p in procs:
        fl.stop_process(p)


def third_party_player(browsers, srv, mount, pages):
    """hls.js with its defaults on a page of another origin, playing mount's HLS and measured
    from its start: (browser, the player's selector)."""
    b = browsers(js=True)
    open_player_page(b, srv, pages)
    b.js_run(PLAYER, srv.url(mount + "/hls.m3u8"))
    b.js_run(MEASURE, "#player")
    b.wait(lambda: b.js_run("return document.querySelector('#player').currentTime") > 0.2, 30,
           "hls.js to start playing")
    return b, "#player"


def station_page_player(browsers, srv, mount, pages):
    """The server's own page (status.xsl, app.js) playing mount's HLS, measured once it
    plays: (browser, the player's selector)."""
    b, audio = play_hls(srv, browsers, mount)
    b.js_run(MEASURE, audio)
    return b, audio


@in_chromium
@pytest.mark.browser
@pytest.mark.parametrize("codec,player", [
    ("aac", third_party_player),
    ("opus", third_party_player),
    pytest.param("mp3", third_party_player, marks=HLS_JS_MP3_PARTS),
    ("mp3", station_page_player),
], ids=["aac", "opus", "mp3", "mp3-station-page"])
def test_hls_js_plays_low_latency_hls_under_three_seconds_from_source_to_ear(live, browsers, pages,
                                                                             codec, player):
    srv, mount = live(codec)
    b, _ = player(browsers, srv, mount, pages)
    started, cpu = time.monotonic(), cpu_times()
    wirelib.wait_until(lambda: time.monotonic() - started >= START_UP, START_UP + 1,
                       "the player's start-up", interval=0.2)
    b.js_run("window.lat.from = Date.now()")    # past start-up: the measures begin
    sent = {}
    for i in range(TITLES):
        title = "Latency probe %d" % i
        t0 = time.time()
        assert fl.set_metadata(srv, mount, song=title).status == 200
        sent[title] = t0
        due = started + START_UP + (i + 1) * TITLE_EVERY
        wirelib.wait_until(lambda: time.monotonic() >= due, TITLE_EVERY + 2, "the next title",
                           interval=0.1)
    last = "Latency probe %d" % (TITLES - 1)
    b.wait(lambda: any(c["title"] == last for c in b.js_run("return window.lat.cues")), 15,
           "the last title's cue")
    lat = b.js_run("return window.lat")
    idle_share = idle_since(cpu)
    idle = "%.0f %%" % idle_share
    samples = [d for d in lat["dates"] if d[4] >= lat["from"]]
    assert samples, lat

    def lost(wall_ms):
        """Seconds the playhead fell behind the wall clock since the measures began, by
        wall_ms: stalls, or a starved browser playing slower than real time."""
        at = min(samples, key=lambda d: abs(d[4] - wall_ms))
        return (at[4] - samples[0][4]) / 1000.0 - (at[0] - samples[0][0])

    cues = {c["title"]: c for c in lat["cues"] if c["title"] in sent}
    order = [t for t in sorted(sent, key=sent.get) if t in cues][-LAST:]
    ears = [cues[t]["t1"] / 1000.0 - sent[t] for t in order]
    ears_kept = [cues[t]["t1"] / 1000.0 - sent[t] - lost(cues[t]["t1"]) for t in order]
    dates = [d[1] / 1000.0 for d in samples]
    dates_kept = [d[1] / 1000.0 - lost(d[4]) for d in samples]
    behind = lost(samples[-1][4])
    stalls = [t for t in lat["stalls"] if t >= samples[0][0]]
    report = ("%s: source to ear by title cue (last %d): %s (%s); by the playhead's date: %s;"
              " the same less what the player fell behind the clock (%.2f s by the end):"
              " %s and %s; hls.js latency %s, target latency %s; stalls at %s; errors %s;"
              " cues missed %d of %d; machine idle %s"
              % (codec, LAST, summary(ears), " ".join("%.2f" % e for e in ears), summary(dates),
                 behind, summary(ears_kept), summary(dates_kept), summary([d[2] for d in samples]),
                 samples[-1][3], stalls, sorted(set(lat["errors"])), len(sent) - len(cues),
                 len(sent), idle))
    print(report)
    holes = [e for e in lat["errors"] if e.startswith(HOLE)]
    assert len(cues) >= TITLES - 2 and not holes, report
    # a stall loses time for good; a starved browser may stall, a served one should not
    assert not stalls or idle_share < BUSY, report
    # what the server and the player's choice of position give, whatever the machine's load
    assert statistics.median(ears_kept) < GOAL and statistics.median(dates_kept) < GOAL, report
    # and as heard, when the browser kept up with the clock (a starved one plays slower)
    if behind < 0.5:
        assert statistics.median(ears) < GOAL and statistics.median(dates) < GOAL, report


def next_page_time(srv, mount):
    """The wall time at which the next page of an Ogg mount reached a listener, after the
    listener's burst (the stream quiet for 0.3 s: ffmpeg sends a page a second)."""
    with socket.create_connection((srv.host, srv.port), timeout=5) as c:
        c.sendall(("GET %s HTTP/1.0\r\n\r\n" % mount).encode())
        c.settimeout(0.3)
        deadline = time.monotonic() + 5
        while True:
            assert time.monotonic() < deadline, "the burst never ended"
            try:
                assert c.recv(65536), "the stream ended"
            except socket.timeout:
                break
        c.settimeout(3)
        assert c.recv(65536), "the stream ended"
        return time.time()


def pdt_seconds(pdt):
    return calendar.timegm(pdt.timetuple()) + pdt.microsecond / 1e6


def test_an_opus_segment_is_dated_when_the_source_sent_it_not_when_the_window_began(server):
    """EXT-X-PROGRAM-DATE-TIME is the wall time at which the source sent a segment's first
    sample. ffmpeg's Ogg muxer sends a page a second, so what the mount holds when its HLS
    window is made (here 0.6 s after a page came) ended with the last page, not at that
    moment; the pages that follow tell when the stream's samples were sent, and the segments
    are dated from them: a segment's end is never dated after the moment the server had it
    (the blocking reload that waited for it answered), nor much before (the page that
    completed it came then)."""
    # a listener gets each page as it comes; segments of 2 s
    srv = server(write_window=0, extra_xml="<hls><target-duration>2</target-duration>"
                 "<segments>3</segments></hls>")
    mount = "/live.opus"
    p = fl.ffmpeg_source(srv, mount, "opus")
    try:
        fl.wait_mount(srv, mount, p)
        came = next_page_time(srv, mount)
        wirelib.wait_until(lambda: time.time() >= came + 0.6, 2, "0.6 s after a page",
                           interval=0.01)
        pl = hlscheck.parse(playlist(srv, mount))  # the window is made here
        seq = pl["segments"][-1]["seq"] if pl["segments"] else pl["msn"] - 1
        ends = []
        for msn in range(seq + 1, seq + 4):
            body = playlist(srv, mount, "&_HLS_msn=%d" % msn)
            had = time.time()
            seg = [s for s in hlscheck.parse(body)["segments"] if s["seq"] == msn][0]
            ends.append(round(pdt_seconds(seg["pdt"]) + seg["duration"] - had, 3))
    finally:
        fl.stop_process(p)
    # dated at most 50 ms after it was complete; and the page that completed it came at most
    # a second before (a busy machine answers the reload later)
    print("segment ends dated less the moment they were complete:", ends)
    assert all(-1.5 < e <= 0.05 for e in ends), ends


def test_a_segment_keeps_its_date_once_the_first_seconds_of_its_window_are_past(server):
    """The pages that follow a window's start may date its segments earlier (above), but only
    in its first seconds: some players lose their place when a date they have seen moves
    between reloads. A source whose clock runs 5 % fast keeps showing an earlier start; after
    those seconds every reload still gives each segment the date it had."""
    srv = server(write_window=0, extra_xml="<hls><target-duration>2</target-duration>"
                 "<segments>3</segments></hls>")
    mount = "/live.opus"
    p = fl.ffmpeg_source(srv, mount, "opus", readrate=1.05)
    try:
        fl.wait_mount(srv, mount, p)
        next_page_time(srv, mount)  # the codec headers and audio have come
        pl = hlscheck.parse(playlist(srv, mount))  # the window is made here
        made = time.time()
        msn = pl["msn"]
        wirelib.wait_until(lambda: time.time() >= made + 6, 8, "the window's first seconds",
                           interval=0.05)
        dates = {}
        moved = []
        for n in range(msn, msn + 60):
            body = playlist(srv, mount, "&_HLS_msn=%d" % n)
            for seg in hlscheck.parse(body)["segments"]:
                was = dates.setdefault(seg["seq"], seg["pdt"])
                if was != seg["pdt"]:
                    moved.append((seg["seq"], was, seg["pdt"]))
            if time.time() >= made + 12:
                break
    finally:
        fl.stop_process(p)
    assert len(dates) >= 3, dates
    assert not moved, moved
