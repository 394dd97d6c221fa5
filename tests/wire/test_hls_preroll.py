# SPDX-License-Identifier: GPL-2.0-or-later
"""The mount's <intro> played first to HLS sessions, as to plain listeners.

A session's first playlist lists the intro as segments of its own (cut on the intro's
frames; URLs that name the intro file and its version, the same for every session), then
EXT-X-DISCONTINUITY and the live segments; the playlist rules hold for that session over its
reloads (the checker), the intro segments' bytes are the intro's frames and decode, and
ffmpeg playing from the playlist's start (EXT-X-START) plays the intro to its end, which
the server counts as played. A preroll URL authentication names replaces the intro for the
session it let in, and its session record says whether it was played (fetched to its end)."""

import re
import subprocess

import pytest

import adminlib
import formatlib as fl
import hlscheck
import wirelib
from test_auth_url import auth  # noqa: F401 (the fixture)
from test_fallback import mount_xml, webdir, webroot_with  # noqa: F401 (webdir: the fixture)
from test_hls import _session_records, get, start_source

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live.aac"
SHORT = ("<hls><target-duration>2</target-duration><part-target-ms>500</part-target-ms>"
         "<segments>3</segments></hls>")
INTRO_SECONDS = 3


@pytest.fixture
def station(server, webdir):
    _, intro = webroot_with(webdir, "intro.aac", codec="aac", seconds=INTRO_SECONDS, freq=1000)
    webroot_with(webdir, "other.aac", codec="aac", seconds=1)  # a webroot file, no intro
    srv = server(extra_xml=mount_xml(MOUNT, intro="/intro.aac") + SHORT, webroot=webdir)
    p = start_source(srv, MOUNT, "aac")
    yield srv, intro
    fl.stop_process(p)


def playlist(srv, token):
    status, _, body = get(srv, MOUNT + "/hls.m3u8?session=" + hlscheck.token(srv, MOUNT, token))
    assert status == 200, (status, body[:300])
    return body.decode()


def strip_tag(body):
    assert body[:3] == b"ID3"
    return body[fl.id3v2_len(body, 0):]


def test_session_gets_the_intro_segments_then_a_discontinuity_and_live(station, tmp_path):
    srv, intro = station
    check = hlscheck.Checker()
    pl = check.check(playlist(srv, "a" * 16))
    segs = pl["segments"]
    intro_segs = [s for s in segs if s["uri"].startswith("hls/intro/")]
    # the intro first, cut in segments of at most the target duration, then the live stream
    assert segs[:len(intro_segs)] == intro_segs and len(intro_segs) == 2, segs
    live = segs[len(intro_segs)]
    assert live["discontinuity"] and re.fullmatch(r"hls/\d+\.aac", live["uri"])
    assert [s["seq"] for s in segs] == list(range(pl["msn"], pl["msn"] + len(segs)))
    assert abs(sum(s["duration"] for s in intro_segs) - INTRO_SECONDS) < 0.1
    frames = b""
    for s in intro_segs:
        assert "?file=/intro.aac&v=" in s["uri"] and "session" not in s["uri"]
        status, headers, body = get(srv, MOUNT + "/" + s["uri"])
        assert status == 200 and headers["content-type"] == "audio/aac"
        assert "immutable" in headers["cache-control"]
        audio = strip_tag(body)
        path = fl.save(str(tmp_path), "intro-%d.aac" % s["seq"], audio)
        assert fl.ffmpeg_decode_errors(path) == ""
        frames += audio
    # the intro's own frames, all of them, in order
    assert frames == intro
    status, _, body = get(srv, MOUNT + "/" + live["uri"])
    assert status == 200 and fl.adts_frame_len(strip_tag(body), 0)
    # another session gets the same intro URLs (a cache serves them), its own numbers
    other = hlscheck.parse(playlist(srv, "b" * 16))
    assert [s["uri"] for s in other["segments"][:2]] == [s["uri"] for s in intro_segs]
    # the first session's reloads keep its numbers until the intro left its playlist
    first_live = live["seq"]

    def intro_left():
        check.check(playlist(srv, "a" * 16))
        return check.last["msn"] > first_live
    wirelib.wait_until(intro_left, 30, "the intro to leave the playlist", interval=0.3)
    assert check.last["dseq"] >= pl["dseq"] + 1
    assert not any(s["uri"].startswith("hls/intro/") for s in check.last["segments"])


def test_intro_segment_urls_serve_only_intros_of_the_mount(station):
    srv, intro = station
    uri = hlscheck.parse(playlist(srv, "c" * 16))["segments"][0]["uri"]
    assert get(srv, MOUNT + "/" + uri)[0] == 200
    # another version of the file, a segment it does not have, another webroot file
    for bad in (re.sub(r"v=\d+", "v=1", uri), uri.replace("intro/0.", "intro/7."),
                uri.replace("file=/intro.aac", "file=/other.aac")):
        assert get(srv, MOUNT + "/" + bad)[0] == 404, bad


def test_ffmpeg_from_the_playlist_start_plays_the_intro_and_it_counts_as_played(station):
    srv, _ = station
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-prefer_x_start", "1",
           "-i", srv.url(MOUNT + "/hls.m3u8"), "-t", str(INTRO_SECONDS + 3), "-f", "null", "-"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and fl._decode_complaints(r.stderr) == "", r.stderr
    srv.wait_log("played its intro", 5)


def test_url_auth_preroll_replaces_the_intro_and_its_end_is_an_impression(server, webdir, auth):
    webroot_with(webdir, "intro.aac", codec="aac", seconds=INTRO_SECONDS, freq=1000)
    _, pre = webroot_with(webdir, "pre.aac", codec="aac", seconds=1, freq=2000)
    rec = auth(lambda req: (200, {"icecast-auth-user": "1", "icecast-preroll": "pre.aac"}))
    block = ('<mount type="normal"><mount-name>%s</mount-name><intro>/intro.aac</intro>'
             '<authentication type="url"><option name="listener_add" value="%s"/>'
             '</authentication></mount>' % (MOUNT, rec.url("/listener_add")))
    srv = server(extra_xml=block + SHORT, webroot=webdir)
    p = start_source(srv, MOUNT, "aac")
    try:
        segs = hlscheck.parse(playlist(srv, "d" * 16))["segments"]
        intro_segs = [s for s in segs if s["uri"].startswith("hls/intro/")]
        assert intro_segs and all("?file=/pre.aac&v=" in s["uri"] for s in intro_segs), segs
        frames = b"".join(strip_tag(get(srv, MOUNT + "/" + s["uri"])[2]) for s in intro_segs)
        assert frames == pre
        # a session that never fetches its preroll's end has no impression (it plays a live
        # segment: a listener, with a session record); each session's URIs carry its token
        segs_e = hlscheck.parse(playlist(srv, "e" * 16))["segments"]
        first = segs_e[0]["uri"]
        assert first.split("&session=")[0] == intro_segs[0]["uri"].split("&session=")[0]
        assert get(srv, MOUNT + "/" + segs_e[-1]["uri"])[0] == 200
        for token in ("d", "e"):
            sid = [r for r in rec.of("listener_add")
                   if r.form["mount"].endswith("session=" + hlscheck.token(srv, MOUNT, token * 16))][0].form["client"]
            assert adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s"
                                  % (MOUNT, sid)).status == 200
        recs = wirelib.wait_until(lambda: len(_session_records(srv)) == 2 and
                                  _session_records(srv), 5, "the two session records")
    finally:
        fl.stop_process(p)
    played = {r["id"]: r["preroll"] for r in recs}
    ids = {t: [r for r in rec.of("listener_add")
               if r.form["mount"].endswith("session=" + hlscheck.token(srv, MOUNT, t * 16))][0].form["client"]
           for t in ("d", "e")}
    assert played == {int(ids["d"]): 1, int(ids["e"]): 0}, (played, ids)
