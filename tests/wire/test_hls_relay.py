# SPDX-License-Identifier: GPL-2.0-or-later
"""HLS of mounts that are not live when it is asked for.

An on-demand relay's media playlist starts the relay as a listener's GET does, and waits
(bounded) until the first segment exists; ffmpeg then plays it. A mount with no source whose
<fallback-mount> is live answers its HLS from the fallback (the fallback's authentication
applies when the mount's own does not cover it); when the mount's own source comes, the
same session's playlist goes on with a discontinuity, the media sequence never going back
(the playlist checker over every reload). On an on-demand relay's mount with listener
authentication a session logs in before the relay is started, as a listener does."""

import os
import shutil
import subprocess
import time

import pytest

import formatlib as fl
import hlscheck
import wirelib
from test_auth_htpasswd import md5_line, user_dir, write_users
from test_auth_url import auth, url_mount  # noqa: F401 (auth: the fixture)
from test_hls import get, start_source
from test_relay import listeners_on, relay_xml

pytestmark = pytest.mark.rimecast_only

SHORT = ("<hls><target-duration>2</target-duration><part-target-ms>500</part-target-ms>"
         "<segments>3</segments></hls>")


def test_playlist_of_an_on_demand_relay_starts_it_and_ffmpeg_plays_it(server):
    origin = server()
    p = start_source(origin, "/live.aac", "aac")
    edge = server(extra_xml=SHORT + relay_xml(origin, "/live.aac", "/od.aac", on_demand=1))
    try:
        time.sleep(1)  # an on-demand relay stays away until asked
        assert listeners_on(origin, "/live.aac") == 0
        t0 = time.monotonic()
        status, _, body = get(edge, "/od.aac/hls.m3u8?session=" + hlscheck.token(edge, "/od.aac", "a"),
                              timeout=20)
        waited = time.monotonic() - t0
        assert status == 200, (body, waited, edge.error_log()[-2000:])
        # the relay connected, and the playlist waited for its first segment
        pl = hlscheck.Checker().check(body.decode())
        assert pl["segments"] and waited < 10, waited
        assert listeners_on(origin, "/live.aac") == 1
        seg = pl["segments"][-1]
        status, headers, seg_body = get(edge, "/od.aac/" + seg["uri"])
        assert status == 200 and headers["content-type"] == "audio/aac"
        cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i",
               edge.url("/od.aac/hls.m3u8"), "-t", "6", "-f", "null", "-"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and fl._decode_complaints(r.stderr) == "", r.stderr
    finally:
        fl.stop_process(p)


@pytest.mark.slow
def test_playlist_of_an_on_demand_relay_whose_upstream_never_comes_is_answered_in_time(server):
    origin = server()  # has no such mount
    edge = server(extra_xml=SHORT + relay_xml(origin, "/none.aac", "/od.aac", on_demand=1))
    t0 = time.monotonic()
    status, _, _ = get(edge, "/od.aac/hls.m3u8?session=" + hlscheck.token(edge, "/od.aac", "b"),
                    timeout=30)
    # as a listener of the relay is: 404 once the relay's wait (10 s) is over
    assert status == 404 and time.monotonic() - t0 < 13
    # the playlist request did start the relay: it asked the origin
    assert "GET /none.aac " in origin.access_log()


def test_on_demand_relays_hls_session_logs_in_before_the_relay_connects(server, auth):
    origin = server()
    p = start_source(origin, "/live.aac", "aac")
    verdict = {"accept": False}

    def answer(req):
        if verdict["accept"]:
            return 200, {"icecast-auth-user": "1"}
        return 403, {"icecast-auth-message": "no ticket"}
    rec = auth(answer)
    edge = server(mounts=[url_mount(rec, "/od.aac")],
                  extra_xml=SHORT + relay_xml(origin, "/live.aac", "/od.aac", on_demand=1))
    try:
        status, _, body = get(edge, "/od.aac/hls.m3u8?session=" + hlscheck.token(edge, "/od.aac", "e"))
        assert status == 403 and b"no ticket" in body
        time.sleep(1.5)  # a relay the refused session had started would be connected by now
        assert listeners_on(origin, "/live.aac") == 0
        verdict["accept"] = True
        status, _, body = get(edge, "/od.aac/hls.m3u8?session=" + hlscheck.token(edge, "/od.aac", "e"), timeout=20)
        assert status == 200 and hlscheck.parse(body.decode())["segments"], body
        assert listeners_on(origin, "/live.aac") == 1
        assert fl.json_source(edge, "/od.aac")["listeners"] == 0  # not before it plays
        status, _ = hlscheck.fetch_first_piece(edge.host, edge.port, "/od.aac", body.decode())
        assert status == 200 and fl.json_source(edge, "/od.aac")["listeners"] == 1
        assert len(rec.of("listener_add")) == 2  # the refused request and the session
        # its next polls are the session's: no login again
        assert get(edge, "/od.aac/hls.m3u8?session=" + hlscheck.token(edge, "/od.aac", "e"))[0] == 200
        assert len(rec.of("listener_add")) == 2
    finally:
        fl.stop_process(p)


def playlist(srv, mount, label, headers=None):
    status, _, body = get(srv, mount + "/hls.m3u8?session=" + hlscheck.token(srv, mount, label),
                          headers)
    assert status == 200, (status, body[:300])
    return body.decode()


def test_sourceless_mount_serves_its_fallbacks_hls_then_its_own(server):
    srv = server(mounts=[{"mount_name": "/main.aac", "fallback_mount": "/fb.aac"}],
                 extra_xml=SHORT)
    fb = start_source(srv, "/fb.aac", "aac")
    own = None
    token = "c" * 16
    check = hlscheck.Checker()
    try:
        pl = check.check(playlist(srv, "/main.aac", token))
        seg = pl["segments"][-1]
        status, headers, body = get(srv, "/main.aac/" + seg["uri"])
        assert status == 200 and body[:3] == b"ID3" and headers["content-type"] == "audio/aac"
        # the session counts as a listener where it listens, as a listener moved there
        assert fl.json_source(srv, "/fb.aac")["listeners"] == 1
        last_fb = check.last["segments"][-1]["seq"]
        own = start_source(srv, "/main.aac", "aac")

        def own_listed():
            check.check(playlist(srv, "/main.aac", token))
            return any(s["discontinuity"] and s["seq"] > last_fb
                       for s in check.last["segments"])
        wirelib.wait_until(own_listed, 20, "a discontinuity for the mount's own source",
                           interval=0.3)
        wirelib.wait_until(lambda: fl.json_source(srv, "/main.aac")["listeners"] == 1, 5,
                           "the session on the mount's own source")
        assert fl.json_source(srv, "/fb.aac")["listeners"] == 0
        # the segments after the discontinuity are the mount's own
        new = [s for s in check.last["segments"] if s["seq"] > last_fb]
        status, _, body = get(srv, "/main.aac/" + new[-1]["uri"])
        assert status == 200 and body[:3] == b"ID3"
    finally:
        fl.stop_process(own)
        fl.stop_process(fb)


def test_fallbacks_own_authentication_applies_to_the_sourceless_mounts_hls(server):
    d = user_dir()
    path = os.path.join(d, "users")
    write_users(path, md5_line("ann", "secret"))
    srv = server(mounts=[{"mount_name": "/main.aac", "fallback_mount": "/fb.aac"},
                         {"mount_name": "/fb.aac",
                          "auth": {"type": "htpasswd", "options": {"filename": path}}}],
                 extra_xml=SHORT)
    fb = start_source(srv, "/fb.aac", "aac")
    try:
        status, _, _ = get(srv, "/main.aac/hls.m3u8?session=" + hlscheck.token(srv, "/main.aac", "d"))
        assert status == 401
        text = playlist(srv, "/main.aac", "d", {"Authorization": wirelib.basic_auth("ann", "secret")})
        # its pieces are the session's only, and make it a listener of the fallback
        assert hlscheck.fetch_first_piece(srv.host, srv.port, "/main.aac", text)[0] == 200
        assert fl.json_source(srv, "/fb.aac")["listeners"] == 1
    finally:
        fl.stop_process(fb)
        shutil.rmtree(d, ignore_errors=True)
