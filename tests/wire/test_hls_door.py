# SPDX-License-Identifier: GPL-2.0-or-later
"""HLS through the one door: on a mount with listener authentication every HLS URL answers
only within a logged-in session (a token the server issued, bound to the session, the mount,
the address and the login), its pieces are private; an open mount's pieces stay public for a
cache to share; a session begins only with a token the server issued, each address holds at
most its share of a mount's slots, sessions count against <clients>, and a session is a
listener (counts, figures) only once it fetched audio. Icecast has no HLS: Rimecast only."""

import http.client
import json
import os
import re
import shutil
import time
import xml.etree.ElementTree as ET

import pytest

import adminlib
import conftest
import formatlib as fl
import hlscheck
import wirelib
from test_auth_htpasswd import md5_line, user_dir, write_users
from test_auth_url import auth, url_mount  # noqa: F401 (auth: the fixture)
from test_hls import get, start_source

pytestmark = pytest.mark.rimecast_only

SHORT = ("<hls><target-duration>2</target-duration><part-target-ms>500</part-target-ms>"
         "<segments>3</segments></hls>")
ANN = {"Authorization": wirelib.basic_auth("ann", "secret")}
OTHER = "127.0.0.2"  # another client address (all of 127/8 is this machine)


def media(srv, mount, token, headers=None, source_ip=None):
    status, headers_, body = get(srv, "%s/hls.m3u8?session=%s" % (mount, token), headers,
                                 source_ip=source_ip)
    return status, headers_, body.decode(errors="replace")


def pieces_of(text):
    """Every piece URI a media playlist lists: segments, parts, the preload hint."""
    pl = hlscheck.parse(text)
    uris = [s["uri"] for s in pl["segments"]]
    uris += [p["uri"] for s in pl["segments"] for p in s["parts"]]
    uris += [p["uri"] for p in pl["open_parts"]]
    return uris


def without_token(uri):
    return re.sub(r"[?&]session=[0-9a-f]+", "", uri)


@pytest.fixture
def users():
    d = user_dir()
    path = os.path.join(d, "users")
    write_users(path, md5_line("ann", "secret") + md5_line("bob", "pw2"))
    yield path
    shutil.rmtree(d, ignore_errors=True)


def htpasswd_mount(name, path, **more):
    return dict({"mount_name": name, "auth": {"type": "htpasswd",
                                              "options": {"filename": path}}}, **more)


def logged_in(srv, mount, headers=ANN, source_ip=None):
    """A session of mount that logged in and fetched its first segment: (token, playlist)."""
    token = hlscheck.issue_token(srv.host, srv.port, mount, source_ip=source_ip)
    status, _, text = media(srv, mount, token, headers, source_ip)
    assert status == 200, (status, text[:200])
    seg = hlscheck.parse(text)["segments"][-1]["uri"]
    assert get(srv, mount + "/" + seg, source_ip=source_ip)[0] == 200
    return token, text


# ---------------------------------------------------------------- protected pieces

@pytest.mark.parametrize("kind", ["htpasswd", "url"])
def test_a_protected_mounts_pieces_answer_only_within_its_logged_in_session(server, users, auth,
                                                                           kind):
    rec = auth() if kind == "url" else None
    mount = "/paid.aac"
    block = htpasswd_mount(mount, users) if kind == "htpasswd" else url_mount(rec, mount)
    srv = server(mounts=[block], extra_xml=SHORT)
    p = start_source(srv, mount, "aac")
    try:
        token, text = logged_in(srv, mount)
        uris = pieces_of(text)
        assert uris and all("session=" + token in u for u in uris), uris
        seg = hlscheck.parse(text)["segments"][-1]["uri"]
        status, headers, body = get(srv, mount + "/" + seg)
        assert status == 200 and body[:3] == b"ID3"
        assert headers["cache-control"].startswith("private"), headers["cache-control"]
        status, headers, _ = media(srv, mount, token)
        assert status == 200 and headers["cache-control"].startswith("private")
        bare = without_token(seg)
        # without a token, with a made-up one, with a HEAD scan: refused alike
        for path, method in ((bare, "GET"), (bare, "HEAD"),
                             (bare + "?session=" + "0" * 32, "GET"),
                             (bare + "?session=" + "0" * 32, "HEAD")):
            status, headers, body = get(srv, mount + "/" + path, method=method)
            assert status == 403, (path, method, status)
            assert "public" not in headers.get("cache-control", "")
        # every part and the hint too
        for uri in uris:
            assert get(srv, mount + "/" + without_token(uri), method="HEAD")[0] == 403, uri
        # the same token from another address: neither its playlist nor its pieces
        assert media(srv, mount, token, source_ip=OTHER)[0] == 403
        assert get(srv, mount + "/" + seg, source_ip=OTHER)[0] == 403
    finally:
        fl.stop_process(p)


def test_a_token_is_good_for_its_own_mount_and_session_only(server, users):
    srv = server(mounts=[htpasswd_mount("/a.aac", users), htpasswd_mount("/b.aac", users)],
                 extra_xml=SHORT)
    pa = start_source(srv, "/a.aac", "aac")
    pb = start_source(srv, "/b.aac", "aac")
    try:
        token, text = logged_in(srv, "/a.aac")
        seg = hlscheck.parse(text)["segments"][-1]["uri"]
        # a's token on b: not issued for b, no session of b
        _, _, btext = media(srv, "/b.aac", hlscheck.issue_token(srv.host, srv.port, "/b.aac"),
                            {"Authorization": wirelib.basic_auth("bob", "pw2")})
        bseg = without_token(hlscheck.parse(btext)["segments"][-1]["uri"])
        assert get(srv, "/b.aac/%s?session=%s" % (bseg, token))[0] == 403
        assert media(srv, "/b.aac", token, ANN)[0] == 403  # not issued for /b.aac
        # killed, the session's token opens nothing any more
        doc = ET.fromstring(adminlib.admin(srv, "/admin/listclients?mount=/a.aac").body)
        [lst] = doc.findall("source/listener")
        assert adminlib.admin(srv, "/admin/killclient?mount=/a.aac&id=" +
                              lst.findtext("ID")).status == 200
        assert get(srv, "/a.aac/" + seg)[0] == 403
        status, _, body = media(srv, "/a.aac", token)
        assert status == 403 and "ended" in body
    finally:
        fl.stop_process(pa)
        fl.stop_process(pb)


def test_an_open_mounts_pieces_stay_public_for_a_cache(server):
    srv = server(extra_xml=SHORT)
    mount = "/open.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        token, text = hlscheck.listen(srv, mount)
        seg = hlscheck.parse(text)["segments"][-1]["uri"]
        assert "session=" not in seg
        status, headers, _ = get(srv, mount + "/" + seg, source_ip=OTHER)
        assert status == 200 and headers["cache-control"].startswith("public")
    finally:
        fl.stop_process(p)


def test_an_open_mount_serving_its_protected_fallback_is_protected(server, users):
    srv = server(mounts=[{"mount_name": "/open.aac", "fallback_mount": "/paid.aac"},
                         htpasswd_mount("/paid.aac", users)], extra_xml=SHORT)
    paid = start_source(srv, "/paid.aac", "aac")
    own = start_source(srv, "/open.aac", "aac")
    try:
        # a session begun while the open mount has its source: no login
        token, text = hlscheck.listen(srv, "/open.aac", "open")
        assert media(srv, "/open.aac", token)[0] == 200
        fl.stop_process(own)
        own = None

        def moved():  # the window now serves /paid.aac under /open.aac
            return media(srv, "/open.aac", token)[0] != 200
        wirelib.wait_until(moved, 15, "the session to meet the fallback's login", interval=0.3)
        status, headers, _ = media(srv, "/open.aac", token)
        assert status == 401 and headers["www-authenticate"].startswith("Basic")
        # its old pieces and the fallback's pieces under the open mount's path need a login
        status, _, fresh = media(srv, "/open.aac", hlscheck.issue_token(srv.host, srv.port,
                                                                        "/open.aac"), ANN)
        assert status == 200
        seg = hlscheck.parse(fresh)["segments"][-1]["uri"]
        assert "session=" in seg
        assert get(srv, "/open.aac/" + without_token(seg))[0] == 403
        assert get(srv, "/open.aac/" + without_token(seg) + "?session=" + token)[0] == 403
        assert get(srv, "/open.aac/" + seg)[0] == 200
    finally:
        fl.stop_process(own)
        fl.stop_process(paid)


def test_one_login_is_one_listener_with_duplicate_users_refused(server, users):
    srv = server(mounts=[htpasswd_mount("/paid.aac", users)], extra_xml=SHORT)
    p = start_source(srv, "/paid.aac", "aac")
    try:
        logged_in(srv, "/paid.aac")
        # a second session of the same user, from anywhere: refused as a second plain login is
        lis = srv.listener("/paid.aac", headers=ANN)
        plain = lis.open(start=False).status
        lis.close()
        assert plain == 401
        second = hlscheck.issue_token(srv.host, srv.port, "/paid.aac", source_ip=OTHER)
        status, _, body = media(srv, "/paid.aac", second, ANN, source_ip=OTHER)
        assert status == plain, (status, body[:200])
        assert fl.json_source(srv, "/paid.aac")["listeners"] == 1
    finally:
        fl.stop_process(p)


# ---------------------------------------------------------------- sessions that cannot multiply

def test_a_session_begins_only_with_a_token_the_server_issued(server):
    srv = server(extra_xml=SHORT)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        for forged in ("0123456789abcdef", "0" * 32, "ab" * 16):
            status, _, body = media(srv, mount, forged)
            assert status == 403 and "unknown session" in body, (forged, status)
        assert media(srv, mount, "xyz")[0] == 400
        token = hlscheck.issue_token(srv.host, srv.port, mount)
        assert media(srv, mount, token)[0] == 200
        # a token issued for another mount name
        other = hlscheck.issue_token(srv.host, srv.port, mount)  # noqa: F841 (the same mount)
        assert media(srv, "/other.mp3", token)[0] in (403, 404)
    finally:
        fl.stop_process(p)


def test_an_issued_token_stays_valid_across_a_restart(server):
    srv = server(extra_xml=SHORT)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    token = hlscheck.issue_token(srv.host, srv.port, mount)
    fl.stop_process(p)
    assert srv.stop() == 0
    key = os.path.join(srv.logdir, "hls-token.key")
    assert os.stat(key).st_mode & 0o077 == 0  # the key is the server user's alone
    srv.stopped = False
    srv.start()
    p = start_source(srv, mount, "mp3")
    try:
        status, _, body = media(srv, mount, token)
        assert status == 200, body[:200]
    finally:
        fl.stop_process(p)


def test_an_issued_token_stays_valid_across_an_upgrade(server):
    from test_upgrade import upgrade
    srv = server(extra_xml=SHORT)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        token = hlscheck.issue_token(srv.host, srv.port, mount)  # not begun yet
        upgrade(srv)
        status, _, body = media(srv, mount, token)
        assert status == 200, body[:200]
        assert media(srv, mount, "0" * 32)[0] == 403  # and a forged one is still refused
    finally:
        fl.stop_process(p)


def test_one_address_holds_at_most_its_share_and_others_still_get_in(server):
    srv = server(mounts=[{"mount_name": "/live.mp3", "max_listeners": 10}], extra_xml=SHORT)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
        statuses = []
        for _ in range(40):  # one kept-alive connection asks for forty sessions
            c.request("GET", mount + "/hls.m3u8")
            token = hlscheck.TOKEN_RE.search(c.getresponse().read().decode()).group(1)
            c.request("GET", "%s/hls.m3u8?session=%s" % (mount, token))
            r = c.getresponse()
            statuses.append((r.status, r.read()))
        c.close()
        ok = [s for s, _ in statuses if s == 200]
        # half of max-listeners: 5 sessions, then "too many sessions from this address"
        assert len(ok) == 5, [s for s, _ in statuses]
        assert all(b"too many sessions from this address" in b for s, b in statuses if s != 200)
        # real listeners from another address: admitted (a session and a plain listener)
        logged = hlscheck.issue_token(srv.host, srv.port, mount, source_ip=OTHER)
        status, _, text = media(srv, mount, logged, source_ip=OTHER)
        assert status == 200
        seg = hlscheck.parse(text)["segments"][-1]["uri"]
        assert get(srv, mount + "/" + seg, source_ip=OTHER)[0] == 200
        lis = srv.listener(mount)
        assert lis.open().status == 200
        lis.close()
    finally:
        fl.stop_process(p)


def test_sessions_per_address_is_configurable(server):
    srv = server(extra_xml=SHORT + '<mount type="normal"><mount-name>/live.mp3</mount-name>'
                 "<hls><sessions-per-address>2</sessions-per-address></hls></mount>")
    p = start_source(srv, "/live.mp3", "mp3")
    try:
        got = [media(srv, "/live.mp3", hlscheck.issue_token(srv.host, srv.port, "/live.mp3"))[0]
               for _ in range(4)]
        assert got == [200, 200, 403, 403], got
    finally:
        fl.stop_process(p)


def test_sessions_count_against_clients(server):
    srv = server(clients=6, extra_xml=SHORT + "<hls><sessions-per-address>0"
                 "</sessions-per-address></hls>")
    p = start_source(srv, "/live.mp3", "mp3")  # the source: one client
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=30)

    def clients_now():  # asked on the kept-alive connection itself
        c.request("GET", "/metrics", headers={"Authorization": wirelib.basic_auth(
            conftest.ADMIN_USER, conftest.ADMIN_PASSWORD)})
        text = c.getresponse().read().decode()
        return int(re.search(r"^rimecast_clients (\d+)$", text, re.M).group(1))
    try:
        # the connections of the test's earlier requests have closed: the source and this one
        wirelib.wait_until(lambda: clients_now() == 2, 10, "only the source and this client")
        got = []
        for _ in range(8):  # one kept-alive connection begins sessions until refused
            c.request("GET", "/live.mp3/hls.m3u8")
            token = hlscheck.TOKEN_RE.search(c.getresponse().read().decode()).group(1)
            c.request("GET", "/live.mp3/hls.m3u8?session=" + token)
            r = c.getresponse()
            got.append((r.status, r.read()))
            if r.status != 200:
                break
        # the source, the connection with its first session, and four more sessions fill six
        assert [s for s, _ in got] == [200] * 5 + [403], [s for s, _ in got]
        assert b"connection limit" in got[-1][1]
        # and a new connection is refused while they hold their places
        lis = srv.listener("/live.mp3")
        assert lis.open().status == 403
        lis.close()
    finally:
        c.close()
        fl.stop_process(p)


def _records(srv):
    try:
        with open(os.path.join(srv.logdir, "sessions.log")) as f:
            return [json.loads(line) for line in f.read().splitlines()]
    except FileNotFoundError:
        return []


def test_a_session_is_a_listener_only_once_it_fetched_audio(server):
    srv = server(extra_xml=SHORT)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        idle = hlscheck.issue_token(srv.host, srv.port, mount)
        for _ in range(3):
            assert media(srv, mount, idle)[0] == 200
        assert fl.json_source(srv, mount)["listeners"] == 0
        doc = ET.fromstring(adminlib.admin(srv, "/admin/listclients?mount=" + mount).body)
        assert doc.findall("source/listener") == []
        hlscheck.listen(srv, mount, "plays", {"User-Agent": "x" * 5000})
        assert fl.json_source(srv, mount)["listeners"] == 1
        doc = ET.fromstring(adminlib.admin(srv, "/admin/listclients?mount=" + mount).body)
        [lst] = doc.findall("source/listener")
        assert lst.findtext("UserAgent") == "x" * 512  # what a session keeps of its agent
    finally:
        fl.stop_process(p)
    assert srv.stop() == 0
    # the session that only polled left no session record; the one that played did
    recs = _records(srv)
    assert len(recs) == 1 and recs[0]["user_agent"] == "x" * 512, recs
