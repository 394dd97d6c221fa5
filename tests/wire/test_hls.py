# SPDX-License-Identifier: GPL-2.0-or-later
"""HLS and Low-Latency HLS of MP3 and AAC mounts: <mount>/hls.m3u8 and its segments and parts.
ffmpeg plays them; the playlist checker (hlscheck.py) holds the playlist rules over many
reloads and across a source reconnect; blocking reloads are answered when the part exists.
Icecast has no HLS: Rimecast only."""

import http.client
import json
import os
import re
import subprocess
import threading
import time
import xml.etree.ElementTree as ET

import pytest

import adminlib
import formatlib as fl
import hlscheck
import wirelib

pytestmark = pytest.mark.rimecast_only

EXT = {"mp3": "mp3", "aac": "aac"}


def get(srv, path, headers=None, method="GET", timeout=30, source_ip=None):
    """(status, headers, body) of one request on a connection of its own (from source_ip)."""
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout,
                                   source_address=(source_ip, 0) if source_ip else None)
    try:
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def playlist(srv, mount, query=""):
    """The media playlist, as a session that polls it (query: more parameters, "&...")."""
    status, headers, body = get(srv, mount + "/hls.m3u8?session=" + hlscheck.token(srv, mount)
                                + query)
    assert status == 200, (status, body[:300])
    return body.decode()


def start_source(srv, mount, codec):
    p = fl.ffmpeg_source(srv, mount, codec)
    fl.wait_mount(srv, mount, p)
    return p


def ffmpeg_play_hls(srv, mount, seconds):
    """ffmpeg decodes `seconds` of the mount's HLS (errors only): its CompletedProcess."""
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i",
           srv.url(mount + "/hls.m3u8"), "-t", str(seconds), "-f", "null", "-"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60 + 3 * seconds)


@pytest.mark.parametrize("codec", ["mp3", "aac"])
def test_ffmpeg_plays_the_hls_of_a_mount(server, codec):
    srv = server()
    mount = "/live." + codec
    p = start_source(srv, mount, codec)
    try:
        r = ffmpeg_play_hls(srv, mount, 20)
    finally:
        fl.stop_process(p)
    complaints = fl._decode_complaints(r.stderr).splitlines()
    if codec == "mp3":
        # ffmpeg's raw MP3 demuxer reads 1 KiB at a time across segment boundaries, so the
        # frames of a segment still in its parser when the next segment's ID3 timestamp is
        # read get that timestamp, and its null muxer says so; the audio decodes whole
        complaints = [l for l in complaints if "non monotonically increasing dts" not in l]
    assert r.returncode == 0 and complaints == [], r.stderr


@pytest.mark.parametrize("codec", ["mp3", "aac"])
def test_segments_are_whole_frames_after_an_id3_timestamp(server, tmp_path, codec):
    srv = server()
    mount = "/live." + codec
    p = start_source(srv, mount, codec)
    try:
        pl = hlscheck.parse(playlist(srv, mount))
        seg = pl["segments"][-1]
        status, headers, body = get(srv, mount + "/" + seg["uri"])
    finally:
        fl.stop_process(p)
    assert status == 200
    assert headers["content-type"] == ("audio/aac" if codec == "aac" else "audio/mpeg")
    assert body[:3] == b"ID3"
    owner = b"com.apple.streaming.transportStreamTimestamp\0"
    i = body.index(owner)
    ts = int.from_bytes(body[i + len(owner):i + len(owner) + 8], "big")
    assert ts < 1 << 33
    tag = fl.id3v2_len(body, 0)
    audio = body[tag:]
    frame_len = fl.adts_frame_len if codec == "aac" else fl.mp3_frame_len
    pos, frames = 0, 0
    while pos < len(audio):
        n = frame_len(audio, pos)
        assert n, "no frame at %d of %d" % (pos, len(audio))
        pos += n
        frames += 1
    assert pos == len(audio)
    spf = 1024 if codec == "aac" else 1152
    assert abs(frames * spf / 44100 - seg["duration"]) < 1e-4
    path = fl.save(str(tmp_path), "seg." + codec, body)
    assert fl.ffmpeg_decode_errors(path) == ""


def reload_over_a_source_reconnect(srv, mount, check, restart, meanwhile=None):
    """Reloads (through check) until the window is full and slides, calls meanwhile(load)
    when given, then restart() (a new source), and reloads until the new source's
    discontinuity is listed and then left the window (the discontinuity sequence counts it).
    Returns the new source's first segment."""
    load = lambda: playlist(srv, mount)  # noqa: E731
    first_msn = check.check(load())["msn"]
    check.reload_until(load, lambda pl: pl["msn"] > first_msn and check.window_ok(pl), 30,
                       "the window to fill and slide")
    if meanwhile:
        meanwhile(load)
    last_before = check.last["segments"][-1]["seq"]
    restart()
    new = check.reload_until(load, lambda pl: [s for s in pl["segments"]
                                               if s["discontinuity"] and s["seq"] > last_before],
                             30, "a discontinuity for the new source")[0]
    disc = max(check.discontinuities)
    check.reload_until(load, lambda pl: pl["msn"] > disc, 40,
                       "the discontinuity to leave the window", interval=0.5)
    assert check.last["dseq"] >= 1
    return new


def test_playlist_rules_hold_over_reloads_and_a_source_reconnect(server):
    # short segments, so that the window slides within seconds
    srv = server(extra_xml="<hls><target-duration>2</target-duration>"
                 "<part-target-ms>500</part-target-ms><segments>3</segments></hls>")
    mount = "/live.mp3"
    check = hlscheck.Checker()
    p = [start_source(srv, mount, "mp3")]

    def restart():
        fl.stop_process(p[0])
        p[0] = start_source(srv, mount, "mp3")
    try:
        reload_over_a_source_reconnect(srv, mount, check, restart)
    finally:
        fl.stop_process(p[0])
    assert check.reloads > 50


def test_ogg_mount_answers_hls_needs_mp3_or_aac(server):
    srv = server()
    p = start_source(srv, "/live.ogg", "vorbis")
    try:
        # 503 until the codec headers came (they tell Opus, which has HLS, from the rest)
        status, _, body = wirelib.wait_until(
            lambda: (lambda r: r[0] != 503 and r)(get(srv, "/live.ogg/hls.m3u8")), 15,
            "the Ogg mount's codec headers", interval=0.1)
    finally:
        fl.stop_process(p)
    assert status == 415
    assert b"HLS needs an MP3 or AAC" in body


def test_unknown_mount_and_disabled_hls_are_404(server):
    srv = server(extra_xml="<hls><enabled>0</enabled></hls>")
    p = start_source(srv, "/live.mp3", "mp3")
    try:
        status, _, body = get(srv, "/live.mp3/hls.m3u8")
        assert status == 404 and b"HLS is not enabled" in body
        assert get(srv, "/nothere.mp3/hls.m3u8")[0] == 404
    finally:
        fl.stop_process(p)


def test_settings_of_a_mount_shape_the_playlist(server):
    # the mount's own block, over a default block's (which fills what it leaves unset), over
    # the global <hls>
    srv = server(extra_xml="<hls><target-duration>4</target-duration></hls>"
                 "<mount><mount-name>/live.aac</mount-name><hls>"
                 "<target-duration>2</target-duration><segments>4</segments></hls></mount>"
                 "<mount type=\"default\"><hls><part-target-ms>700</part-target-ms>"
                 "<target-duration>3</target-duration></hls></mount>")
    pa = start_source(srv, "/live.aac", "aac")
    pm = start_source(srv, "/live.mp3", "mp3")
    try:
        aac = hlscheck.parse(playlist(srv, "/live.aac"))
        mp3 = hlscheck.parse(playlist(srv, "/live.mp3"))
    finally:
        fl.stop_process(pa)
        fl.stop_process(pm)
    assert aac["target"] == 2 and aac["part_target"] == 0.7
    assert mp3["target"] == 3 and mp3["part_target"] == 0.7


def _next_part(pl):
    """(msn, part) the preload hint names."""
    m = re.search(r"/(\d+)\.(\d+)\.\w+$", "/" + pl["hint"]["URI"])
    return int(m.group(1)), int(m.group(2))


def _lists_part(pl, msn, part):
    for s in pl["segments"]:
        if s["seq"] == msn:
            return True
    name = "hls/%d.%d." % (msn, part)
    return any(p["uri"].startswith(name) for p in pl["open_parts"])


def blocking_reloads_are_answered_when_the_part_exists(srv, mount, rounds=3):
    """Blocking reloads for the hinted part, each answered within 50 ms of the part showing in
    plain reloads (and the playlist rules holding); returns the last playlist."""
    check = hlscheck.Checker()
    pl = check.check(playlist(srv, mount))
    for _ in range(rounds):
        msn, part = _next_part(pl)
        answer = {}

        def blocking():
            body = playlist(srv, mount, "&_HLS_msn=%d&_HLS_part=%d" % (msn, part))
            answer["t"] = time.monotonic()
            answer["pl"] = hlscheck.parse(body)
        t = threading.Thread(target=blocking)
        t.start()
        seen = None
        # the part's existence, from plain reloads every 5 ms
        deadline = time.monotonic() + 10
        while seen is None and time.monotonic() < deadline:
            if _lists_part(hlscheck.parse(playlist(srv, mount)), msn, part):
                seen = time.monotonic()
            else:
                time.sleep(0.005)
        t.join(10)
        assert seen is not None and "t" in answer
        assert _lists_part(answer["pl"], msn, part)
        assert answer["t"] - seen < 0.05, "answered %.3f s after the part existed" % (
            answer["t"] - seen)
        pl = check.check(playlist(srv, mount))
    return pl


def test_blocking_reload_is_answered_when_the_part_exists(server):
    srv = server()
    mount = "/live.aac"
    p = start_source(srv, mount, "aac")
    try:
        pl = blocking_reloads_are_answered_when_the_part_exists(srv, mount)
        msn, _ = _next_part(pl)
        # a part several segments ahead is refused at once
        t0 = time.monotonic()
        status, _, _ = get(srv, mount + "/hls.m3u8?session=%s&_HLS_msn=%d&_HLS_part=0" % (hlscheck.token(srv, mount), msn + 5))
        assert status == 400 and time.monotonic() - t0 < 1
        assert get(srv, mount + "/hls.m3u8?session=%s&_HLS_part=1" % hlscheck.token(srv, mount))[0] == 400
    finally:
        fl.stop_process(p)


def test_parts_play_and_are_cacheable(server, tmp_path):
    srv = server()
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        pl = hlscheck.Checker().check(playlist(srv, mount))
        part = pl["segments"][-1]["parts"][0]["uri"]
        status, headers, body = get(srv, mount + "/" + part)
        assert status == 200 and body[:3] == b"ID3"
        assert "immutable" in headers["cache-control"] and "public" in headers["cache-control"]
        assert headers["access-control-allow-origin"] == "*"
        etag = headers["etag"]
        assert get(srv, mount + "/" + part, {"If-None-Match": etag})[0] == 304
        status, h2, head = get(srv, mount + "/" + part, method="HEAD")
        assert status == 200 and head == b"" and int(h2["content-length"]) == len(body)
        status, h3, piece = get(srv, mount + "/" + part, {"Range": "bytes=50-199"})
        assert status == 206 and piece == body[50:200]
        assert h3["content-range"] == "bytes 50-199/%d" % len(body)
        status, h4, _ = get(srv, mount + "/hls.m3u8?session=" + hlscheck.token(srv, mount))
        assert "max-age=3" in h4["cache-control"]
        assert h4["content-type"] == "application/vnd.apple.mpegurl"
    finally:
        fl.stop_process(p)
    path = fl.save(str(tmp_path), "part.mp3", body)
    assert fl.ffmpeg_decode_errors(path) == ""


def test_preload_hinted_part_is_answered_once_complete(server):
    srv = server()
    mount = "/live.aac"
    p = start_source(srv, mount, "aac")
    try:
        pl = hlscheck.Checker().check(playlist(srv, mount))
        hint = pl["hint"]["URI"]
        t0 = time.monotonic()
        status, headers, body = get(srv, mount + "/" + hint)
        waited = time.monotonic() - t0
        after = hlscheck.parse(playlist(srv, mount))
    finally:
        fl.stop_process(p)
    assert status == 200 and body[:3] == b"ID3"
    parts = [q for s in after["segments"] for q in s["parts"]] + after["open_parts"]
    listed = [q for q in parts if q["uri"] == hint]
    assert listed, "the hinted part %s is not in the next playlist" % hint
    frames, pos = 0, fl.id3v2_len(body, 0)
    while pos < len(body):
        n = fl.adts_frame_len(body, pos)
        assert n
        pos += n
        frames += 1
    assert abs(frames * 1024 / 44100 - listed[0]["duration"]) < 1e-4
    # it was not there yet when asked: the answer waited for it (at most one part target)
    assert waited < after["part_target"] + 0.5


def test_a_part_asked_for_ahead_of_the_one_being_cut_is_answered_once_complete(server):
    """Not the part being cut (that one is sent as it fills) but the one after: the request
    waits and is answered when the part is complete, as the part its URL names."""
    srv = server()
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    answers = []
    try:
        for _ in range(3):
            pl = hlscheck.Checker().check(playlist(srv, mount))
            msn, part = _next_part(pl)
            per_segment = len(pl["segments"][-1]["parts"])
            msn, part = (msn, part + 1) if part + 1 < per_segment else (msn + 1, 0)
            status, headers, body = get(srv, mount + "/hls/%d.%d.mp3" % (msn, part))
            listed = _lists_part(hlscheck.parse(playlist(srv, mount)), msn, part)
            answers.append((status, headers.get("content-type"), body[:3], listed))
    finally:
        fl.stop_process(p)
    assert answers == [(200, "audio/mpeg", b"ID3", True)] * 3, answers


def test_stats_give_the_hls_url_of_mounts_that_have_hls(server):
    srv = server()
    pm = start_source(srv, "/live.mp3", "mp3")
    po = start_source(srv, "/live.ogg", "vorbis")
    try:
        mp3 = fl.json_source(srv, "/live.mp3")
        ogg = fl.json_source(srv, "/live.ogg")
        xml = fl.stats_source(srv, "/live.mp3")
        xml_ogg = fl.stats_source(srv, "/live.ogg")
    finally:
        fl.stop_process(pm)
        fl.stop_process(po)
    assert mp3["hls_url"] == mp3["listenurl"] + "/hls.m3u8"
    assert "hls_url" not in ogg
    assert xml.findtext("hls_url") == xml.findtext("listenurl") + "/hls.m3u8"
    assert xml_ogg.find("hls_url") is None


def test_mount_with_listener_authentication_refuses_hls_without_sessions(server, tmp_path):
    # a poll of the one playlist for everyone names nobody to authenticate (with sessions,
    # test_hls_auth.py)
    users = tmp_path / "users"
    users.write_text("")
    users.chmod(0o644)
    srv = server(mounts=[{"mount_name": "/live.mp3",
                          "auth": {"type": "htpasswd", "options": {"filename": str(users)}}}],
                 extra_xml="<hls><sessions>0</sessions></hls>")
    p = start_source(srv, "/live.mp3", "mp3")
    try:
        status, _, body = get(srv, "/live.mp3/hls.m3u8")
        assert status == 403 and b"listener authentication" in body
        assert "hls_url" not in fl.json_source(srv, "/live.mp3")
    finally:
        fl.stop_process(p)


def test_hls_listener_is_a_listener_from_first_poll_to_timeout(server):
    # short segments: the session ends four target durations (at least 10 s) after its last poll
    srv = server(extra_xml="<hls><target-duration>2</target-duration>"
                 "<part-target-ms>500</part-target-ms></hls>")
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    player = None
    try:
        def variant_with_codecs():
            status, headers, body = get(srv, mount + "/hls.m3u8")
            assert status == 200 and "no-cache" in headers["cache-control"]
            v = hlscheck.parse_multivariant(body.decode())
            return v if "CODECS" in v else None  # named once the first frames came
        variant = wirelib.wait_until(variant_with_codecs, 10, "the codec in the variant")
        assert variant["BANDWIDTH"] > 0 and variant["CODECS"] == "mp4a.40.34"
        assert re.fullmatch(r"hls\.m3u8\?session=[0-9a-f]{32}", variant["uri"])
        assert fl.json_source(srv, mount)["listeners"] == 0  # not a session yet
        # ffmpeg plays in real time: a session while it polls
        player = subprocess.Popen([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-re",
                                   "-i", srv.url(mount + "/hls.m3u8"), "-t", "60", "-f", "null",
                                   "-"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        wirelib.wait_until(lambda: fl.json_source(srv, mount)["listeners"] == 1, 15,
                           "the HLS session to count as a listener")
        time.sleep(3)  # it polls on: still one listener, no access-log line yet
        assert fl.json_source(srv, mount)["listeners"] == 1
        metrics = adminlib.admin(srv, "/metrics").body.decode()
        assert re.search(r'^rimecast_listeners\{mount="%s"\} 1$' % re.escape(mount), metrics, re.M)
        assert re.search(r'^rimecast_hls_listeners\{mount="%s"\} 1$' % re.escape(mount),
                         metrics, re.M)
        assert "?session=" not in srv.access_log()
        fl.stop_process(player)
        wirelib.wait_until(lambda: fl.json_source(srv, mount)["listeners"] == 0, 20,
                           "the session to end once it stopped polling")
    finally:
        fl.stop_process(player)
        fl.stop_process(p)
    # one line for the session: its duration and the bytes of its playlists and segments
    lines = [l for l in srv.access_log().splitlines()
             if re.search(r'"GET %s/hls.m3u8\?session=[0-9a-f]{32} HTTP/1.1"' % mount, l)]
    assert len(lines) == 1, lines
    m = re.search(r'" 200 (\d+) ".*" ".*" (\d+)$', lines[0])
    # at least one segment (about 2 s at 64 kbit/s: 16 kB) and its playlists; it lasted from
    # its first poll to its end, at least the time it was seen playing
    assert m and int(m.group(1)) > 12000 and int(m.group(2)) >= 3, lines[0]
    # the segments it fetched have no lines of their own
    assert not re.search(r"GET %s/hls/\d+" % mount, srv.access_log())


def test_hls_sessions_count_against_max_listeners(server):
    srv = server(mounts=[{"mount_name": "/live.aac", "max_listeners": 1}])
    p = start_source(srv, "/live.aac", "aac")
    try:
        hlscheck.listen(srv, "/live.aac", "a")
        status, _, body = get(srv, "/live.aac/hls.m3u8?session=" + hlscheck.token(srv, "/live.aac", "b"))
        assert status == 403 and b"too many listeners" in body
        # the first session polls on; a plain listener is refused too
        assert get(srv, "/live.aac/hls.m3u8?session=" + hlscheck.token(srv, "/live.aac", "a"))[0] == 200
        lis = srv.listener("/live.aac")
        assert lis.open().status == 403
        assert get(srv, "/live.aac/hls.m3u8?session=xyz")[0] == 400
    finally:
        fl.stop_process(p)


def test_listclients_shows_hls_sessions_and_killclient_ends_one(server):
    srv = server()
    mount = "/live.aac"
    p = start_source(srv, mount, "aac")
    try:
        token, _ = hlscheck.listen(srv, mount, "c", {"User-Agent": "hls-test/1"})
        r = adminlib.admin(srv, "/admin/listclients?mount=" + mount)
        doc = ET.fromstring(r.body)
        listeners = doc.findall("source/listener")
        assert len(listeners) == 1 and listeners[0].findtext("UserAgent") == "hls-test/1"
        assert doc.findtext("source/Listeners") == "1"
        sid = listeners[0].findtext("ID")
        r = adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (mount, sid))
        assert r.status == 200 and b"removed" in r.body
        assert fl.json_source(srv, mount)["listeners"] == 0
        assert re.search(r'"GET %s/hls.m3u8\?session=%s HTTP/1.1" 200' % (mount, token),
                         srv.access_log())
        # the ended session's polls are refused; another session may begin
        status, _, body = get(srv, mount + "/hls.m3u8?session=" + token)
        assert status == 403 and b"session was ended" in body
        hlscheck.listen(srv, mount, "d")
        assert fl.json_source(srv, mount)["listeners"] == 1
    finally:
        fl.stop_process(p)


def _session_records(srv):
    try:
        with open(os.path.join(srv.logdir, "sessions.log"), "rb") as f:
            return [json.loads(line) for line in f.read().decode().splitlines()]
    except FileNotFoundError:
        return []


@pytest.mark.slow
def test_an_hls_session_ends_as_a_session_record_like_a_listeners(server):
    """An HLS session's end writes the same session record a streaming listener's does (the
    session log and the audience store): killed by killclient it says kicked; one that stops
    polling says client_left, with its agent and the bytes of what it fetched, and lasted until
    a target duration after its last request (not until the timeout that noticed)."""
    srv = server(extra_xml="<hls><target-duration>2</target-duration></hls>")
    mount = "/live.aac"
    p = start_source(srv, mount, "aac")
    try:
        first = time.time()
        for label in ("e", "f"):
            hlscheck.listen(srv, mount, label, {"User-Agent": "hls-rec/" + label})
        left = hlscheck.token(srv, mount, "f")
        r = adminlib.admin(srv, "/admin/listclients?mount=" + mount)
        ids = {l.findtext("UserAgent"): l.findtext("ID")
               for l in ET.fromstring(r.body).findall("source/listener")}
        assert adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s"
                              % (mount, ids["hls-rec/e"])).status == 200
        [rec] = wirelib.wait_until(lambda: _session_records(srv), 5, "the kicked record")
        assert rec["ended"] == "kicked" and rec["mount"] == mount, rec
        assert rec["user_agent"] == "hls-rec/e" and str(rec["id"]) == ids["hls-rec/e"]
        # the other polls once more, two seconds on (a known length), then stops polling
        time.sleep(2)
        assert get(srv, mount + "/hls.m3u8?session=" + left,
                   {"User-Agent": "hls-rec/f"})[0] == 200
        last = time.time()
        # its session ends after the timeout (10 s at least), lasting to a target duration
        # after its last request
        recs = wirelib.wait_until(lambda: len(_session_records(srv)) >= 2 and
                                  _session_records(srv), 30, "the second record")
        rec = recs[1]
        assert rec["ended"] == "client_left" and rec["user_agent"] == "hls-rec/f", rec
        assert rec["bytes"] > 0
        # (a player asks at least once a target duration, 2 s here, while it plays)
        assert 2.0 <= rec["seconds"] <= last - first + 2 + 0.5, (rec, last - first)
        # and so does its access-log line's duration (whole seconds)
        [line] = [l for l in srv.access_log().splitlines() if "session=" + left in l]
        assert 2 <= int(line.rsplit(" ", 1)[1]) <= last - first + 2 + 1, line
        assert fl.json_source(srv, mount)["listeners"] == 0
    finally:
        fl.stop_process(p)


def test_without_sessions_the_playlist_is_the_same_for_everyone(server):
    # a CDN's origin: hls.m3u8 is the media playlist, no token, no listener counted
    srv = server(extra_xml="<hls><sessions>0</sessions></hls>")
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        status, headers, body = get(srv, mount + "/hls.m3u8")
        pl = hlscheck.Checker().check(body.decode())
        assert status == 200 and pl["segments"] and "session" not in body.decode()
        assert "max-age" in headers["cache-control"]
        assert fl.json_source(srv, mount)["listeners"] == 0
    finally:
        fl.stop_process(p)


def test_window_is_dropped_when_no_client_asks_and_made_again_on_request(server):
    # idle for six target durations (at least 20 s): the window goes; asked again, it comes
    # back with the sequence going on and a discontinuity
    srv = server(loglevel=4, extra_xml="<hls><target-duration>2</target-duration>"
                 "<part-target-ms>500</part-target-ms><sessions>0</sessions></hls>")
    mount = "/live.aac"
    p = start_source(srv, mount, "aac")
    try:
        check = hlscheck.Checker()
        before = check.check(get(srv, mount + "/hls.m3u8")[2].decode())
        srv.wait_log("hls: %s: no client asked for 20 s, window dropped" % mount, timeout=30)
        after = check.check(get(srv, mount + "/hls.m3u8")[2].decode())
    finally:
        fl.stop_process(p)
    assert after["msn"] > before["segments"][-1]["seq"]
    assert after["segments"][0]["discontinuity"]


def _hint_just_begun(srv, mount):
    """The URL of the part the preload hint names, asked for the moment it begins."""
    pl = hlscheck.parse(get(srv, mount + "/hls.m3u8")[2].decode())
    # the moment the hinted part is complete, the next one has just begun
    pl = hlscheck.parse(get(srv, mount + "/hls.m3u8?_HLS_msn=%d&_HLS_part=%d"
                            % _next_part(pl))[2].decode())
    return mount + "/" + pl["hint"]["URI"]


# parts of a second (the default is half of one): long enough to see one followed as it fills
SECOND_PARTS = "<hls><sessions>0</sessions><part-target-ms>1000</part-target-ms></hls>"


def test_part_being_cut_is_sent_as_it_fills(server):
    srv = server(extra_xml=SECOND_PARTS)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        hint = _hint_just_begun(srv, mount)
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
        t0 = time.monotonic()
        c.request("GET", hint)
        r = c.getresponse()
        assert r.status == 200 and r.getheader("transfer-encoding") == "chunked"
        first = r.read(HEAD_AND_FRAME)           # the tag and a first frame
        t_first = time.monotonic()
        rest = r.read()                           # up to the part's end
        t_done = time.monotonic()
        c.close()
        # asked again once complete: the same bytes, with a length
        status, headers, whole = get(srv, hint)
    finally:
        fl.stop_process(p)
    assert first + rest == whole and status == 200 and "content-length" in headers
    # the first frame came well before the part was complete (a part lasts about 1 s)
    assert t_done - t_first > 0.3, (t_first - t0, t_done - t0)


def _chunk_times(srv, path, timeout=30):
    """GET path (HTTP/1.1, chunked): the arrival time and size of each chunk, up to the last."""
    import socket
    sock = socket.create_connection((srv.host, srv.port), timeout=timeout)
    sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                  % (path, srv.host)).encode())
    f = sock.makefile("rb")
    try:
        assert f.readline().split()[1] == b"200"
        head = {}
        while (line := f.readline().strip()):
            k, _, v = line.decode().partition(":")
            head[k.lower()] = v.strip()
        assert head.get("transfer-encoding") == "chunked", head
        chunks = []
        while True:
            size = int(f.readline().split(b";")[0], 16)
            chunks.append((time.monotonic(), size))
            f.read(size + 2)
            if size == 0:
                return chunks
    finally:
        f.close()
        sock.close()


@pytest.mark.parametrize("window", [500, 250])
def test_part_being_cut_is_sent_at_write_window_ticks(server, window):
    """A part followed as it fills gets what was cut once a write window, as a plain listener
    is written: a chunk of several source blocks, not one per block the source sends."""
    srv = server(write_window=window, extra_xml=SECOND_PARTS)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        chunks = _chunk_times(srv, _hint_just_begun(srv, mount))
    finally:
        fl.stop_process(p)
    data = chunks[1:-1]                           # after the tag, before the last (empty) one
    span = data[-1][0] - data[0][0]
    assert span > 0.3, chunks                     # it was followed as it filled (~1 s)
    # what it held when asked, then one chunk a window, and one when the part completes
    assert 2 <= len(data) <= span * 1000 / window + 3, (window, span, [c[1] for c in data])


HEAD_AND_FRAME = 73 + 208


def _id3_frames(body):
    """{frame id: payload} of the ID3v2.4 tag a piece starts with."""
    assert body[:3] == b"ID3"
    size = (body[6] << 21) | (body[7] << 14) | (body[8] << 7) | body[9]
    frames, pos = {}, 10
    while pos + 10 <= 10 + size:
        fid = body[pos:pos + 4].decode()
        fsize = (body[pos + 4] << 21) | (body[pos + 5] << 14) | (body[pos + 6] << 7) | body[pos + 7]
        frames[fid] = body[pos + 10:pos + 10 + fsize]
        pos += 10 + fsize
    return frames


def test_a_title_travels_as_an_id3_frame_in_the_part_where_it_changes(server):
    """A title set on the mount reaches HLS players as a TIT2 frame (UTF-8) in the ID3 tag of
    the first part cut after the change, and of its segment; the parts after it carry only the
    timestamp, until the title changes again. The same part fetched twice is the same bytes."""
    srv = server()
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        playlist(srv, mount)  # the window exists from here
        title = "Zoë Keating – Escape Artist"
        assert fl.set_metadata(srv, mount, song=title).status == 200

        def titled_parts():
            uris = hlscheck.part_uris(hlscheck.parse(playlist(srv, mount)))
            found = []
            for uri in uris[-12:]:
                status, _, body = get(srv, "%s/%s" % (mount, uri))
                assert status == 200
                frames = _id3_frames(body)
                assert "PRIV" in frames
                if "TIT2" in frames:
                    found.append((uri, frames["TIT2"]))
            return found if len(uris) >= 4 and found and found[0][0] != uris[-1] else None
        found = wirelib.wait_until(titled_parts, 30, "a part announcing the title", interval=0.5)
        assert [t for _, t in found] == [b"\x03" + title.encode()], found
        uri = found[0][0]
        assert get(srv, "%s/%s" % (mount, uri))[2] == get(srv, "%s/%s" % (mount, uri))[2]
        # its segment carries it too, once complete
        seq = int(re.search(r"hls/(\d+)\.", uri).group(1))
        wirelib.wait_until(lambda: any(sg["seq"] == seq for sg in
                                       hlscheck.parse(playlist(srv, mount))["segments"]),
                           20, "the segment to complete", interval=0.5)
        seg = [sg for sg in hlscheck.parse(playlist(srv, mount))["segments"] if sg["seq"] == seq]
        status, _, body = get(srv, "%s/%s" % (mount, seg[0]["uri"]))
        assert status == 200 and _id3_frames(body).get("TIT2") == b"\x03" + title.encode()
    finally:
        fl.stop_process(p)


def test_sessions_still_polling_get_their_line_when_the_server_stops(server):
    srv = server()
    p = start_source(srv, "/live.aac", "aac")
    try:
        token, _ = hlscheck.listen(srv, "/live.aac", "e")
    finally:
        fl.stop_process(p)
    assert srv.stop() == 0
    assert re.search(r'"GET /live.aac/hls.m3u8\?session=%s HTTP/1.1" 200 \d+' % token,
                     srv.access_log())
