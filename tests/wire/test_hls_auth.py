# SPDX-License-Identifier: GPL-2.0-or-later
"""HLS sessions on mounts with listener authentication.

A session's first media playlist request is authenticated as a listener's GET: URL
authentication's listener_add once per session (not per reload), the listener's refusal
for a refused one, the time limit of the auth server's answer ending the session (its next
playlist is refused), and listener_remove at the session's end (it stopped polling, or
killclient) with its real length and the bytes it was sent. With an htpasswd file, the
first playlist needs the credentials (ffmpeg plays with them in the URL) and the session's
later polls only its token. A session is a listener once it fetched a segment; the segments
its playlist lists carry its token (tests/wire/test_hls_door.py holds them to it)."""

import os
import re
import shutil
import signal
import subprocess
import threading
import time
import xml.etree.ElementTree as ET

import pytest

import adminlib
import formatlib as fl
import hlscheck
import wirelib
from test_auth_htpasswd import md5_line, user_dir, write_users
from test_auth_url import auth, url_mount  # noqa: F401 (auth: the fixture)
from test_hls import get, start_source

pytestmark = pytest.mark.rimecast_only

MOUNT = "/paid.aac"
SHORT = ("<hls><target-duration>2</target-duration><part-target-ms>500</part-target-ms>"
         "</hls>")


def poll(srv, token, headers=None):
    return get(srv, MOUNT + "/hls.m3u8?session=" + token,
               dict({"User-Agent": "hls-auth/1"}, **(headers or {})))


def play_segment(srv, playlist_body):
    """Fetches the newest segment a session's playlist lists (its URI carries the token)."""
    seg = hlscheck.parse(playlist_body.decode())["segments"][-1]
    return get(srv, MOUNT + "/" + seg["uri"], {"User-Agent": "hls-auth/1"})


def live_url_mount(server, rec, **options):
    srv = server(mounts=[url_mount(rec, MOUNT, **options)], extra_xml=SHORT)
    return srv, start_source(srv, MOUNT, "aac")


def test_listener_add_once_per_session_and_remove_with_its_length_and_bytes(server, auth):
    rec = auth()
    srv, p = live_url_mount(server, rec)
    token = hlscheck.token(srv, MOUNT, "1")
    try:
        got = 0
        first = time.monotonic()  # the session begins with its first request
        status, _, body = poll(srv, token)
        assert status == 200, body
        got += len(body)
        # it polls on for a while and fetches a segment: still one listener_add
        for _ in range(6):
            time.sleep(0.5)
            status, _, body = poll(srv, token)
            assert status == 200
            got += len(body)
        last = time.monotonic()
        seg = hlscheck.parse(body.decode())["segments"][-1]
        status, _, seg_body = get(srv, MOUNT + "/" + seg["uri"], {"User-Agent": "hls-auth/1"})
        assert status == 200 and seg_body[:3] == b"ID3"
        got += len(seg_body)
        assert fl.json_source(srv, MOUNT)["listeners"] == 1
        [add] = rec.of("listener_add")
        assert add.form["mount"] == MOUNT + "/hls.m3u8?session=" + token
        assert add.form["agent"] == "hls-auth/1"
        # a second session is a second listener_add
        assert poll(srv, hlscheck.token(srv, MOUNT, "2"))[0] == 200
        assert len(rec.wait("listener_add", 2)) == 2
        # both stop polling: after the timeout (10 s here) they end, maybe in the same walk
        # and the second first
        removes = rec.wait("listener_remove", 2, timeout=25)
    finally:
        fl.stop_process(p)
    rm = [r for r in removes if r.form["client"] == add.form["client"]]
    assert rm, removes
    rm = rm[0].form
    assert rm["mount"] == add.form["mount"]
    # to a target duration (2 s) after its last request: a player asks at least that often
    assert abs(int(rm["duration"]) - (last - first + 2)) <= 1, (rm, last - first)
    assert int(rm["sent"]) == got, (rm, got)


def test_refused_session_gets_the_listeners_refusal_and_no_place(server, auth):
    rec = auth(lambda req: (403, {"icecast-auth-message": "no ticket"}))
    srv, p = live_url_mount(server, rec)
    try:
        token = hlscheck.token(srv, MOUNT, "3")
        status, _, body = poll(srv, token)
        assert status == 403 and b"no ticket" in body
        # refused again on its next poll: it never began
        assert poll(srv, token)[0] == 403
        assert len(rec.of("listener_add")) == 2
        assert fl.json_source(srv, MOUNT)["listeners"] == 0
    finally:
        fl.stop_process(p)
    assert rec.of("listener_remove") == []


def test_time_limit_ends_the_session_and_its_next_playlist_is_refused(server, auth):
    limited = {}

    def answer(req):  # only the session under test has a time limit
        limit = ({"icecast-auth-timelimit": "2"}
                 if "t" in limited and req.form["mount"].endswith(limited["t"]) else {})
        return 200, dict({"icecast-auth-user": "1"}, **limit)
    rec = auth(answer)
    srv, p = live_url_mount(server, rec)
    token = limited["t"] = hlscheck.token(srv, MOUNT, "4")
    try:
        # another session's first playlist waits for the window's first segment, so that the
        # one under test is answered at once; it plays (a listener)
        status, _, body = poll(srv, hlscheck.token(srv, MOUNT, "0"))
        assert status == 200 and play_segment(srv, body)[0] == 200
        begun = time.monotonic()
        assert poll(srv, token)[0] == 200
        assert poll(srv, token)[0] == 200
        # it ends at its limit, polled or not: listener_remove, the listener count
        [rm] = rec.wait("listener_remove", 1, timeout=6)
        ended = time.monotonic()
        assert 1.5 <= ended - begun <= 3.5, ended - begun
        assert int(rm.form["duration"]) == 2 and rm.form["mount"].endswith(token)
        assert fl.json_source(srv, MOUNT)["listeners"] == 1  # the other one, till its timeout
        status, _, body = poll(srv, token)
        assert status == 403 and b"time limit" in body
        assert len(rec.of("listener_add")) == 2
    finally:
        fl.stop_process(p)
    # one line for the session, one for the refused poll
    lines = [l for l in srv.access_log().splitlines() if "session=" + token in l]
    assert [re.search(r'HTTP/1.1" (\d+)', l).group(1) for l in lines] == ["200", "403"], lines


def test_killclient_ends_the_session_and_sends_listener_remove(server, auth):
    rec = auth()
    srv, p = live_url_mount(server, rec)
    token = hlscheck.token(srv, MOUNT, "5")
    try:
        status, _, body = poll(srv, token, {"Authorization": wirelib.basic_auth("al", "pw")})
        assert status == 200 and play_segment(srv, body)[0] == 200
        [add] = rec.of("listener_add")
        assert add.form["user"] == "al"
        doc = ET.fromstring(adminlib.admin(srv, "/admin/listclients?mount=" + MOUNT).body)
        [lst] = doc.findall("source/listener")
        # the session is the client the auth server was told of
        assert lst.findtext("ID") == add.form["client"]
        r = adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (MOUNT, lst.findtext("ID")))
        assert r.status == 200
        [rm] = rec.wait("listener_remove", 1, timeout=5)
        assert rm.form["client"] == add.form["client"] and rm.form["user"] == "al"
        status, _, body = poll(srv, token)
        assert status == 403 and b"session was ended" in body
        assert len(rec.of("listener_add")) == 1
    finally:
        fl.stop_process(p)
    assert re.search(r' - al \[.*"GET %s/hls.m3u8\?session=%s ' % (MOUNT, token),
                     srv.access_log())


def test_a_login_answered_after_a_reload_plays_the_mount_it_asked_for(server, auth):
    """The playlist request that waits for its login keeps what it asked for: a reload that
    drops the alias it came by while the auth server decides changes nothing, it is answered
    with the playlist of the mount it logged in for (not 404 for a path that names nothing
    now), and its session polls on by that mount's own URL."""
    release = threading.Event()

    def slow(req):
        if req.path == "/listener_add":
            release.wait(20)
        return 200, {"icecast-auth-user": "1"}
    rec = auth(slow)
    alias = '<paths><alias source="/radio.m3u8" destination="%s/hls.m3u8"/></paths>' % MOUNT
    srv = server(mounts=[url_mount(rec, MOUNT, timeout=30)], extra_xml=SHORT + alias)
    p = start_source(srv, MOUNT, "aac")
    try:
        token = hlscheck.token(srv, MOUNT, "alias")
        got = {}
        waiting = threading.Thread(target=lambda: got.update(
            answer=get(srv, "/radio.m3u8?session=" + token, {"User-Agent": "hls-auth/1"})))
        waiting.start()
        rec.wait("listener_add")  # it waits for its login
        reloads = srv.error_log().count("config reloaded")
        srv.write_config(extra_xml=SHORT)  # the alias is gone
        srv.send_signal(signal.SIGHUP)
        wirelib.wait_until(lambda: srv.error_log().count("config reloaded") > reloads, 10,
                           "the reload")
        assert get(srv, "/radio.m3u8?session=" + token)[0] == 404  # names nothing now
        release.set()
        waiting.join(30)
        status, _, body = got["answer"]
        assert status == 200, body
        assert hlscheck.parse(body.decode())["segments"]
        assert poll(srv, token)[0] == 200
        assert len(rec.of("listener_add")) == 1
    finally:
        release.set()
        fl.stop_process(p)


@pytest.fixture
def htpasswd_station(server):
    d = user_dir()
    path = os.path.join(d, "users")
    write_users(path, md5_line("ann", "secret"))
    srv = server(mounts=[{"mount_name": MOUNT,
                          "auth": {"type": "htpasswd", "options": {"filename": path}}}],
                 extra_xml=SHORT)
    p = start_source(srv, MOUNT, "aac")
    yield srv
    fl.stop_process(p)
    shutil.rmtree(d, ignore_errors=True)


def test_htpasswd_session_logs_in_once_and_polls_by_its_token(htpasswd_station):
    srv = htpasswd_station
    token = hlscheck.token(srv, MOUNT, "6")
    status, headers, _ = poll(srv, token)
    assert status == 401 and headers["www-authenticate"].startswith("Basic")
    assert poll(srv, token, {"Authorization": wirelib.basic_auth("ann", "wrong")})[0] == 401
    assert fl.json_source(srv, MOUNT)["listeners"] == 0
    assert poll(srv, token, {"Authorization": wirelib.basic_auth("ann", "secret")})[0] == 200
    # later polls carry only the token; another token needs the credentials again
    status, _, body = poll(srv, token)
    assert status == 200
    assert poll(srv, hlscheck.token(srv, MOUNT, "7"))[0] == 401
    assert fl.json_source(srv, MOUNT)["listeners"] == 0  # not before it fetched audio
    assert play_segment(srv, body)[0] == 200
    assert fl.json_source(srv, MOUNT)["listeners"] == 1
    doc = ET.fromstring(adminlib.admin(srv, "/admin/listclients?mount=" + MOUNT).body)
    sid = doc.find("source/listener").findtext("ID")
    assert adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (MOUNT, sid)).status == 200
    assert re.search(r' - ann \[.*"GET %s/hls.m3u8\?session=%s ' % (MOUNT, token),
                     srv.access_log())


def test_ffmpeg_plays_the_hls_of_an_htpasswd_mount_with_credentials(htpasswd_station):
    srv = htpasswd_station
    url = srv.url(MOUNT + "/hls.m3u8").replace("http://", "http://ann:secret@")
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i", url, "-t", "6",
           "-f", "null", "-"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and fl._decode_complaints(r.stderr) == "", r.stderr
    wirelib.wait_until(lambda: fl.json_source(srv, MOUNT)["listeners"] == 1, 5,
                       "ffmpeg's session")


def test_max_listener_duration_ends_an_hls_session_as_it_ends_a_listener(server):
    # no authentication: the mount's <max-listener-duration> alone limits the session
    srv = server(extra_xml=SHORT + "<mount type=\"normal\"><mount-name>" + MOUNT +
                 "</mount-name><max-listener-duration>2</max-listener-duration></mount>")
    p = start_source(srv, MOUNT, "aac")
    try:
        # sessions that wait for the window's first segment may meet their limit first:
        # warm it up with throwaway sessions until one is answered
        deadline = time.monotonic() + 20
        for n in range(100):
            status, _, body = poll(srv, hlscheck.token(srv, MOUNT, "warm%d" % n))
            if status == 200:
                play_segment(srv, body)
                break
            assert time.monotonic() < deadline, "the window never got its first segment"
        token = hlscheck.token(srv, MOUNT, "6")
        begun = time.monotonic()
        status, _, body = poll(srv, token)
        assert status == 200 and play_segment(srv, body)[0] == 200
        assert fl.json_source(srv, MOUNT)["listeners"] >= 1
        # both end at their limit, polled or not (the first one earlier): no listener left
        deadline = begun + 6
        while fl.json_source(srv, MOUNT)["listeners"] != 0:
            assert time.monotonic() < deadline, "the session outlived its limit"
            time.sleep(0.1)
        assert 1.5 <= time.monotonic() - begun
        status, _, body = poll(srv, token)
        assert status == 403 and b"time limit" in body
    finally:
        fl.stop_process(p)
