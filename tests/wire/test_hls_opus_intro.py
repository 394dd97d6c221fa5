# SPDX-License-Identifier: GPL-2.0-or-later
"""The mount's <intro> (or a URL-authentication preroll) played first to the HLS sessions of an
Opus mount, as on MP3 and AAC mounts.

The intro, an Ogg Opus file in the webroot, is cut into fragmented MP4 segments of its own
behind an init segment of its own OpusHead (here a stereo intro before a mono stream): the
session's first playlist lists its EXT-X-MAP and segments, then EXT-X-DISCONTINUITY and the
live stream's map. Their URLs name the file, the same for every session, and each fragment
carries its time in an emsg ID3 tag as live ones do (so hls.js keeps the title cues that come
after). ffmpeg plays the whole (intro first: its tone, then the stream's) with no error, and
hls.js in Chromium plays through it (skipped without chromium and selenium); a preroll named by the auth
server replaces the intro, and counts once, when its last segment was fetched whole. A file
that is not Ogg Opus is not played, logged."""

import array
import os
import re
import shutil
import subprocess

import pytest

import adminlib
import formatlib as fl
import hlscheck
import webuilib
import wirelib
from test_auth_url import auth  # noqa: F401 (the fixture)
from test_fallback import mount_xml, webdir, webroot_with  # noqa: F401 (webdir: the fixture)
from test_hls import get
from test_hls_opus import TIMESTAMP_OWNER, _id3_frames, opus_source
from test_hls_web import play_hls, title_cues
from test_webui import ADMIN, WEB, browsers  # noqa: F401 (browsers: the fixture)

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live.opus"
SHORT = ("<hls><target-duration>2</target-duration><part-target-ms>500</part-target-ms>"
         "<segments>3</segments></hls>")
INTRO_SECONDS = 3
INTRO_FREQ, LIVE_FREQ = 1000, 440  # the stream: ffmpeg_source's sine


def opus_file(web, name, seconds, freq, channels):
    """An Ogg Opus file of a sine in the webroot: its bytes."""
    path = os.path.join(web, name)
    subprocess.run([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                    "-i", "sine=frequency=%d:sample_rate=48000:duration=%g" % (freq, seconds),
                    "-ac", str(channels), "-c:a", "libopus", "-b:a", "48k", "-f", "ogg", path],
                   check=True, timeout=60, capture_output=True)
    os.chmod(path, 0o644)
    with open(path, "rb") as f:
        return f.read()


def file_opus_head(data):
    page = fl.parse_page(data, 0)
    assert page.bos
    return fl.page_packets(page)[0][0]


def playlist(srv, token):
    status, _, body = get(srv, MOUNT + "/hls.m3u8?session=" + hlscheck.token(srv, MOUNT, token))
    assert status == 200, (status, body[:300])
    return body.decode()


def fetch(srv, uri):
    status, headers, body = get(srv, MOUNT + "/" + uri)
    assert status == 200, (uri, status, body[:200])
    return headers, body


def intro_of(pl):
    segs = pl["segments"]
    intro = [s for s in segs if s["uri"].startswith("hls/intro/")]
    assert intro and segs[:len(intro)] == intro, segs
    return intro, segs[len(intro)]


@pytest.fixture
def station(server, webdir):
    intro = opus_file(webdir, "intro.opus", INTRO_SECONDS, INTRO_FREQ, 2)
    srv = server(extra_xml=mount_xml(MOUNT, intro="/intro.opus") + SHORT, webroot=webdir)
    p = opus_source(srv)
    yield srv, intro
    fl.stop_process(p)


def test_session_gets_the_intro_fragments_with_their_map_then_a_discontinuity_and_live(
        station, tmp_path):
    srv, intro = station
    pl = hlscheck.Checker().check(playlist(srv, "a" * 16))
    intro_segs, live = intro_of(pl)
    imap = intro_segs[0]["map"]
    assert re.fullmatch(r"hls/intro/init\.mp4\?file=/intro\.opus&v=\d+", imap), imap
    assert all(s["map"] == imap and re.fullmatch(r"hls/intro/\d\.mp4\?file=/intro\.opus&v=\d+",
                                                 s["uri"]) for s in intro_segs), intro_segs
    assert live["discontinuity"] and re.fullmatch(r"hls/\d+\.mp4", live["uri"])
    assert re.fullmatch(r"hls/\d+\.init\.mp4", live["map"]), live
    # cut at most at the target duration, the whole file (pre-skip and the last frame's padding
    # are in the packets' durations)
    assert len(intro_segs) == 2 and all(s["duration"] <= 2 for s in intro_segs)
    assert abs(sum(s["duration"] for s in intro_segs) - INTRO_SECONDS) < 0.05
    ih, init = fetch(srv, imap)
    assert ih["content-type"] == "audio/mp4" and "immutable" in ih["cache-control"]
    # the intro's own OpusHead (stereo), not the stream's (mono)
    head = file_opus_head(intro)
    d = hlscheck.opus_init(init)
    assert (d["channels"], d["channelcount"], d["pre_skip"], d["family"]) == (
        2, 2, int.from_bytes(head[10:12], "little"), head[18])
    assert hlscheck.opus_init(fetch(srv, live["map"])[1])["channels"] == 1
    body, t = b"", 0
    for s in intro_segs:
        sh, seg = fetch(srv, s["uri"])
        assert sh["content-type"] == "audio/mp4" and "session" not in s["uri"]
        frags = hlscheck.fragments(seg)
        assert frags[0]["tfdt"] == t
        for f in frags:  # each with its time in an emsg ID3 tag, as live fragments
            (at, scale, tag), = f["emsg"]
            assert (at, scale) == (f["tfdt"], 48000) and _id3_frames(tag) == {
                "PRIV": TIMESTAMP_OWNER + (f["tfdt"] * 90000 // 48000).to_bytes(8, "big")}, f
        ticks = sum(sum(f["durations"]) for f in frags)
        assert abs(ticks - s["duration"] * 48000) < 1
        t += ticks
        body += seg
    path = fl.save(str(tmp_path), "intro.mp4", init + body)
    assert fl.ffmpeg_decode_errors(path) == ""
    # another session: the same intro URLs (a cache serves them to all)
    other, _ = intro_of(hlscheck.parse(playlist(srv, "b" * 16)))
    assert [(s["uri"], s["map"]) for s in other] == [(s["uri"], s["map"]) for s in intro_segs]


def test_intro_urls_serve_only_what_the_intro_has(station):
    srv, _ = station
    segs, _ = intro_of(hlscheck.parse(playlist(srv, "c" * 16)))
    uri, imap = segs[0]["uri"], segs[0]["map"]
    for bad in (re.sub(r"v=\d+", "v=1", imap), uri.replace("intro/0.", "intro/7."),
                re.sub(r"v=\d+", "v=1", uri)):
        assert get(srv, MOUNT + "/" + bad)[0] == 404, bad


def tone(pcm, start_s, seconds, rate=48000):
    """The frequency of a sine in s16 mono pcm over [start_s, start_s + seconds), from its
    zero crossings."""
    x = pcm[int(start_s * rate):int((start_s + seconds) * rate)]
    crossings = sum(1 for a, b in zip(x, x[1:]) if (a < 0) != (b < 0))
    return crossings / 2 / seconds


def test_ffmpeg_plays_the_intro_then_the_stream_and_it_counts_as_played(station):
    srv, _ = station
    seconds = INTRO_SECONDS + 10
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-prefer_x_start", "1",
           "-i", srv.url(MOUNT + "/hls.m3u8"), "-t", str(seconds), "-ac", "1", "-ar", "48000",
           "-f", "s16le", "-"]
    r = subprocess.run(cmd, capture_output=True, timeout=90)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0 and fl._decode_complaints(err) == "", err
    pcm = array.array("h", r.stdout)
    assert len(pcm) >= (seconds - 1) * 48000
    # the intro's tone first, then the stream's
    assert abs(tone(pcm, 0.2, 2) - INTRO_FREQ) < 20
    assert abs(tone(pcm, INTRO_SECONDS + 1, 5) - LIVE_FREQ) < 20
    srv.wait_log("played its intro", 5)


def figures(srv, key):
    j = adminlib.admin(srv, "/admin/audience.json?period=all&mount=" + MOUNT).json()
    return sum(p[key] for p in j["periods"])


def prerolls(srv):
    return figures(srv, "prerolls")


def test_url_auth_preroll_on_an_opus_mount_counts_once_its_last_segment_is_fetched(
        server, webdir, auth):
    opus_file(webdir, "intro.opus", INTRO_SECONDS, INTRO_FREQ, 2)
    pre = opus_file(webdir, "pre.opus", 3, 2000, 1)
    rec = auth(lambda req: (200, {"icecast-auth-user": "1", "icecast-preroll": "pre.opus"}))
    block = ('<mount type="normal"><mount-name>%s</mount-name><intro>/intro.opus</intro>'
             '<authentication type="url"><option name="listener_add" value="%s"/>'
             '</authentication></mount>' % (MOUNT, rec.url("/listener_add")))
    # a session qualifies after a second: the figures count the ones going on
    srv = server(extra_xml=block + SHORT + "<audience><min-session>1</min-session></audience>",
                 webroot=webdir)
    p = opus_source(srv)
    try:
        pl = hlscheck.Checker().check(playlist(srv, "d" * 16))
        segs, live = intro_of(pl)
        assert all("?file=/pre.opus&v=" in s["uri"] for s in segs) and len(segs) == 2, segs
        assert "file=/pre.opus&v=" in segs[0]["map"] and live["discontinuity"]
        init = fetch(srv, segs[0]["map"])[1]
        assert hlscheck.opus_init(init)["channels"] == file_opus_head(pre)[9] == 1
        fetch(srv, segs[0]["uri"])
        wirelib.wait_until(lambda: figures(srv, "in_progress") == 1, 5, "the session counted")
        assert prerolls(srv) == 0  # not played to its end yet
        fetch(srv, segs[1]["uri"])
        wirelib.wait_until(lambda: prerolls(srv) == 1, 5, "the preroll counted")
        fetch(srv, segs[1]["uri"])  # fetched again: still one impression
        fetch(srv, segs[1]["map"])
        assert prerolls(srv) == 1
    finally:
        fl.stop_process(p)


def test_an_intro_not_in_ogg_opus_is_skipped_and_logged(server, webdir):
    webroot_with(webdir, "intro.mp3", codec="mp3", seconds=2)
    srv = server(extra_xml=mount_xml(MOUNT, intro="/intro.mp3") + SHORT, webroot=webdir)
    p = opus_source(srv)
    try:
        for token in ("1" * 16, "2" * 16):
            segs = hlscheck.parse(playlist(srv, token))["segments"]
            assert not any(s["uri"].startswith("hls/intro/") for s in segs), segs
        srv.wait_log("intro /intro.mp3 is not in the stream's format", 5)
    finally:
        fl.stop_process(p)
    assert srv.error_log().count("intro /intro.mp3 is not") == 1


def test_hls_js_plays_the_opus_intro_then_the_stream(server, webdir, browsers):
    """hls.js, from the public page's HLS toggle in Chromium, takes the intro's init segment and
    fragments, then the live map after the discontinuity, and the player goes on past the
    intro with no media error."""
    if webuilib.missing_requirements():
        pytest.skip(webuilib.missing_requirements())
    web = os.path.join(webdir, "web")  # the page and the intro, readable by the server
    shutil.copytree(WEB, web)
    os.chmod(web, 0o755)
    opus_file(web, "intro.opus", INTRO_SECONDS, INTRO_FREQ, 2)
    srv = server(extra_xml=mount_xml(MOUNT, intro="/intro.opus") + SHORT, webroot=web,
                 adminroot=ADMIN)
    p = opus_source(srv)
    try:
        b, audio = play_hls(srv, browsers, MOUNT)
        now = "return document.querySelector(arguments[0]).currentTime"
        b.wait(lambda: b.js_run(now, audio) >= INTRO_SECONDS + 3, 30,
               "the player to play past the intro")
        state = b.js_run("""var a = document.querySelector(arguments[0]);
            return {error: a.error && a.error.code, paused: a.paused,
                    fetched: performance.getEntriesByType('resource').map(e => e.name)};""",
                         audio)
        errors = b.console_errors()  # while the source is on: its end makes 404s
    finally:
        fl.stop_process(p)
    assert state["error"] is None and not state["paused"], state
    fetched = [u.split(MOUNT + "/", 1)[-1] for u in state["fetched"]]
    intro = [u for u in fetched if u.startswith("hls/intro/")]
    assert intro[:1] and intro[0].startswith("hls/intro/init.mp4?file=/intro.opus"), fetched
    assert [u for u in intro if re.match(r"hls/intro/\d\.mp4", u)], fetched
    assert [u for u in fetched if re.fullmatch(r"hls/\d+\.init\.mp4", u)], fetched
    assert not [e for e in errors if "hls" in str(e).lower()], errors


def newest_segment_has(srv, text):
    """1 when the newest complete segment of a session's playlist holds text (a title)."""
    segs = hlscheck.parse(playlist(srv, "f" * 16))["segments"]
    return text.encode() in fetch(srv, segs[-1]["uri"])[1]


def test_hls_js_raises_the_titles_after_and_during_the_intro_as_cues(server, webdir, browsers):
    """hls.js makes its metadata track when the first metadata comes, and Chromium clears the
    cues of a track just made: an intro's fragments carry their time in an emsg ID3 tag as
    live ones do, so the first title after the intro stays a cue even when it is in the first
    live segment the player loads (with the timestamps that would otherwise make the track),
    and so does a title set while the listener hears the intro."""
    if webuilib.missing_requirements():
        pytest.skip(webuilib.missing_requirements())
    web = os.path.join(webdir, "web")
    shutil.copytree(WEB, web)
    os.chmod(web, 0o755)
    seconds = 4  # one segment of 6 s
    opus_file(web, "intro.opus", seconds, INTRO_FREQ, 2)
    srv = server(extra_xml=mount_xml(MOUNT, intro="/intro.opus", opus_title_updates=1) +
                 "<hls><segments>3</segments>"
                 "</hls>", webroot=web, adminroot=ADMIN)
    p = opus_source(srv)
    try:
        after, during = "After the intro – Ünïcode", "During the intro"
        assert fl.set_metadata(srv, MOUNT, song=after).status == 200
        # a new session's first live segment is the newest complete one: the one with the title
        wirelib.wait_until(lambda: newest_segment_has(srv, after), 15,
                           "the title in the newest complete segment", interval=0.1)
        b, audio = play_hls(srv, browsers, MOUNT)
        now = "return document.querySelector(arguments[0]).currentTime"
        assert fl.set_metadata(srv, MOUNT, song=during).status == 200
        assert b.js_run(now, audio) < seconds - 1  # set while the intro plays
        b.wait(lambda: b.js_run(now, audio) >= seconds + 1, 30, "the player past the intro")
        b.wait(lambda: during in title_cues(b, audio), 30, "the title set during the intro")
        cues = title_cues(b, audio)
    finally:
        fl.stop_process(p)
    assert after in cues, cues
