# SPDX-License-Identifier: GPL-2.0-or-later
"""URL authentication (<authentication type="url">) against a recording auth server.

listener_add decides who listens (icecast-auth-user: 1), icecast-auth-message
says why not (403 body and error log), icecast-auth-timelimit ends the session
on time (both header names may be changed); listener_remove reports duration and
bytes; mount_add / mount_remove follow the source; stream_auth decides sources
(with and without credentials, CVE-2015-3026). The auth server is sent the
configured credentials and the address behind a trusted proxy. An auth server
that is slow or down refuses in time while other mounts keep streaming (on the
same worker), and many listeners at once never open more than the client pool's
parallel requests. A listener of an on-demand relay's mount is asked for before
the relay connects.
"""

import os
import shutil
import socket
import tempfile
import threading
import time

import pytest

import adminlib
import httprec
import wirelib
from conftest import SOURCE_PASSWORD

MOUNT = "/paid"
OPEN = "/free"
DATA = wirelib.make_data(256 * 1024)
POOL = 16  # FETCH_MAX_ACTIVE

pytestmark = pytest.mark.rimecast_only  # Icecast 2.4 answers 401 and has no timeout option


def accept(req):
    return 200, {"icecast-auth-user": "1"}


auth = httprec.recorder_fixture("auth", accept)


def url_mount(rec, name=MOUNT, **extra):
    opts = {"listener_add": rec.url("/listener_add"), "listener_remove": rec.url("/remove"),
            "mount_add": rec.url("/mount_add"), "mount_remove": rec.url("/mount_remove")}
    opts.update(extra)
    return {"mount_name": name, "auth": {"type": "url", "options": opts}}


def live(srv, mount=MOUNT):
    src = srv.source(mount, DATA, headers={"Content-Type": "audio/mpeg"}, loop=True)
    assert src.connect().status == 200
    src.start()
    wirelib.wait_until(lambda: src.sent > 32 * 1024, 5, "source data")
    return src


def listen(srv, mount=MOUNT, **headers):
    lst = srv.listener(mount, headers=headers)
    resp = lst.open(timeout=10)
    return lst, resp


def test_accepted_listener_streams_and_its_fields_are_sent_escaped(server, auth):
    rec = auth()
    srv = server(mounts=[url_mount(rec, headers="x-token,x-absent", header_prefix="h.")])
    src = live(srv)
    ma = rec.wait("mount_add")[0]
    assert ma.body == ("action=mount_add&mount=%%2fpaid&server=127%%2e0%%2e0%%2e1&port=%d"
                       % srv.port).encode()
    lst, resp = listen(srv, MOUNT + "?k=a_b", Authorization=wirelib.basic_auth("al.ice", "p@ss"),
                       **{"X-Token": "a b&c/\u00e9".encode().decode("latin-1")})
    assert resp.status == 200
    lst.wait_bytes(16 * 1024, 5)
    add = rec.wait("listener_add")[0]
    f = add.form
    assert (f["server"], f["port"], f["mount"], f["user"], f["pass"], f["ip"]) == (
        "127.0.0.1", str(srv.port), "/paid?k=a_b", "al.ice", "p@ss", "127.0.0.1")
    assert f["agent"] == "wiretest-listener/1.0" and f["client"].isdigit()
    # Icecast's escaping: everything but letters and digits, lowercase hex
    assert b"&mount=%2fpaid%3fk%3da%5fb&user=al%2eice&pass=p%40ss&" in add.body
    assert add.body.endswith(b"&h.x-token=a%20b%26c%2f%c3%a9")
    assert add.headers["Authorization"] == wirelib.basic_auth("al.ice", "p@ss")
    assert add.headers["User-Agent"].startswith("Rimecast")
    time.sleep(1.1)
    lst.close()
    rm = rec.wait("listener_remove")[0].form
    assert rm["client"] == f["client"] and rm["mount"] == "/paid?k=a_b"
    assert int(rm["duration"]) >= 1 and int(rm["sent"]) >= 16 * 1024
    src.stop()
    rec.wait("mount_remove")
    assert "al.ice" in srv.access_log()


def test_listclients_shows_the_user_of_url_authenticated_listeners(server, auth):
    rec = auth()
    srv = server(mounts=[url_mount(rec)])
    src, other = live(srv), live(srv, OPEN)
    evil = "<b>&'\"x"
    lst, resp = listen(srv, Authorization=wirelib.basic_auth(evil, "pw"))
    assert resp.status == 200
    anon, resp = listen(srv)
    assert resp.status == 200
    # credentials on a mount without authentication are no login
    free, resp = listen(srv, OPEN, Authorization=wirelib.basic_auth("ghost", "pw"))
    assert resp.status == 200
    r = adminlib.admin(srv, "/admin/listclients?mount=" + MOUNT)
    assert b"<username>&lt;b&gt;&amp;'\"x</username>" in r.body
    users = [l.findtext("username") for l in r.xml().findall("source/listener")]
    assert sorted(users, key=str) == sorted([evil, None], key=str)
    doc = adminlib.admin(srv, "/admin/listclients?mount=" + OPEN).xml()
    assert [l.findtext("username") for l in doc.findall("source/listener")] == [None]
    js = adminlib.admin(srv, "/admin/listclients.json?mount=" + MOUNT)
    assert js.status == 200 and "username" in js.body.decode()
    for c in (lst, anon, free):
        c.close()
    src.stop()
    other.stop()


def test_refused_listener_gets_403_with_the_message(server, auth):
    rec = auth(lambda req: (200, {"icecast-auth-message": "no <ticket>\x01 here"}))
    srv = server(mounts=[url_mount(rec)])
    src = live(srv)
    lst, resp = listen(srv)
    assert resp.status == 403
    lst.close()
    resp, body = wirelib.simple_request(srv.host, srv.port,
                                        ("GET %s HTTP/1.0\r\n\r\n" % MOUNT).encode())
    assert resp.status == 403 and b"no &lt;ticket&gt; here" in body, body
    srv.wait_log("refused by the auth server")
    assert "no <ticket> here" in srv.error_log()
    src.stop()


def test_timelimit_ends_the_session_on_time(server, auth):
    rec = auth(lambda req: (200, {"icecast-auth-user": "1", "icecast-auth-timelimit": "2"}))
    srv = server(mounts=[url_mount(rec)])
    src = live(srv)
    lst, resp = listen(srv)
    t0 = time.monotonic()
    assert resp.status == 200
    lst.wait_closed(5)
    took = time.monotonic() - t0
    assert 1.8 <= took <= 3.0, took
    srv.wait_log("reached its time limit")
    src.stop()


class Progress:
    """Samples a listener's byte count in a thread: the longest time it did not grow."""

    def __init__(self, lst):
        self.lst, self.samples = lst, []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.is_set():
            self.samples.append((time.monotonic(), self.lst.received))
            self.done.wait(0.01)

    def longest_stall(self):
        self.done.set()
        self.thread.join(5)
        worst, since, last = 0.0, self.samples[0][0], self.samples[0][1]
        for t, n in self.samples:
            if n != last:
                since, last = t, n
            worst = max(worst, t - since)
        return worst


def test_slow_auth_server_refuses_in_time_while_others_stream(server, auth):
    rec = auth(lambda req: (time.sleep(4), accept(req))[1])
    # one worker: the waiting listener and the streaming one share its loop
    srv = server(mounts=[url_mount(rec, timeout="1")], workers=1)
    src = live(srv)
    other = live(srv, OPEN)
    free, resp = listen(srv, OPEN)
    assert resp.status == 200
    free.wait_bytes(8192, 5)
    before = free.received
    progress = Progress(free)
    t0 = time.monotonic()
    lst, resp = listen(srv)
    took = time.monotonic() - t0
    stall = progress.longest_stall()
    assert resp.status == 403 and 0.9 <= took <= 2.5, (resp, took)
    assert free.received > before  # streamed meanwhile
    # the source sends every 1/16 s: a loop that waited for the auth server would stall >= 1 s
    assert stall < 0.5, "the other listener stalled %.2f s while the auth request was pending" % stall
    srv.wait_log("gave no answer")
    for x in (lst, free):
        x.close()
    src.stop()
    other.stop()


def dead_url():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = "http://127.0.0.1:%d/" % s.getsockname()[1]
    s.close()
    return dead


def test_dead_auth_server_refuses_quickly(server):
    dead = dead_url()
    srv = server(mounts=[{"mount_name": MOUNT, "auth": {"type": "url", "options": {
        "listener_add": dead, "mount_add": dead}}}])
    src = live(srv)
    t0 = time.monotonic()
    lst, resp = listen(srv)
    assert resp.status == 403 and time.monotonic() - t0 < 1.0
    lst.close()
    assert "authentication unavailable" in srv.error_log() or "gave no answer" in srv.error_log()
    src.stop()


def test_dead_auth_server_refuses_a_source_quickly(server):
    dead = dead_url()
    srv = server(mounts=[{"mount_name": MOUNT, "auth": {"type": "url", "options": {
        "stream_auth": dead}}}])
    src = srv.source(MOUNT, DATA, user="dj", password="spin", headers={"Content-Type": "audio/mpeg"})
    t0 = time.monotonic()
    resp = src.connect()
    took = time.monotonic() - t0
    assert resp.status == 403 and took < 1.0, (resp, took)
    src.close()
    srv.wait_log("stream_auth for 127.0.0.1 on /paid: the auth server gave no answer")
    assert MOUNT.encode() not in adminlib.admin(srv, "/admin/listmounts").body


def test_many_listeners_at_once_use_a_bounded_pool(server, auth):
    rec = auth(lambda req: (time.sleep(0.05), accept(req))[1])
    # one worker parks them all: the pool, not the loop, bounds the parallel requests
    srv = server(mounts=[url_mount(rec, listener_remove=rec.url("/remove"))], clients=2000,
                 workers=1)
    src = live(srv)
    n = 500
    socks = []
    for i in range(n):
        c = wirelib.connect(srv.host, srv.port, 10)
        c.sendall(("GET %s HTTP/1.0\r\n\r\n" % MOUNT).encode())
        socks.append(c)
    statuses = []
    for c in socks:
        resp, _ = wirelib.read_head(c, 20)
        statuses.append(resp.status if resp else None)
    assert statuses.count(200) == n, {s: statuses.count(s) for s in set(statuses)}
    assert len(rec.of("listener_add")) == n
    assert 8 <= rec.max_active <= POOL, rec.max_active
    for c in socks:
        c.close()
    rec.wait("listener_remove", n, 20)
    src.stop()


def dj_only(req):
    """stream_auth accepts dj/spin (and user source with pass spin, as admin.cgi sends it)."""
    if req.action != "stream_auth":
        return accept(req)
    if req.form.get("pass") == "spin" and req.form.get("user") in ("dj", "source"):
        return accept(req)
    return 200, {"icecast-auth-message": "bad dj"}


def meta_title(srv, mount=MOUNT):
    doc = adminlib.admin(srv, "/admin/stats").xml()
    return [s.findtext("title") for s in doc.iter("source") if s.get("mount") == mount][0]


def test_metadata_with_source_credentials_is_decided_by_stream_auth(server, auth):
    rec = auth(dj_only)
    srv = server(mounts=[url_mount(rec, stream_auth=rec.url("/stream"))])
    src = srv.source(MOUNT, DATA, user="dj", password="spin",
                     headers={"Content-Type": "audio/mpeg"}, loop=True)
    assert src.connect().status == 200
    src.start()
    rec.wait("stream_auth")
    path = "/admin/metadata?mount=/paid&mode=updinfo&song="
    r = adminlib.request(srv, path + "one", auth=("dj", "spin"))
    assert r.status == 200 and b"Metadata update successful" in r.body
    sa = rec.wait("stream_auth", 2)[1]
    assert sa.body == ("action=stream_auth&mount=%%2fpaid&ip=127%%2e0%%2e0%%2e1&server=127%%2e0"
                       "%%2e0%%2e1&port=%d&user=dj&pass=spin&admin=1" % srv.port).encode()
    assert meta_title(srv) == "one"
    # refused by the auth server: 401, the title stays
    assert adminlib.request(srv, path + "two", auth=("dj", "wrong")).status == 401
    assert rec.wait("stream_auth", 3)[2].form["admin"] == "1"
    # the local source password no longer opens it: the auth server decides
    assert adminlib.request(srv, path + "two", auth=("source", SOURCE_PASSWORD)).status == 401
    assert meta_title(srv) == "one"
    # the form page takes the same credentials
    assert adminlib.request(srv, "/admin/updatemetadata?mount=/paid",
                            auth=("dj", "spin")).status == 200
    # Shoutcast style: user source, pass= as password
    r = adminlib.request(srv, "/admin.cgi?pass=spin&mode=updinfo&song=three&mount=/paid")
    assert r.status == 200 and b"Metadata update successful" in r.body
    cgi = rec.of("stream_auth")[-1].form
    assert (cgi["user"], cgi["pass"], cgi["admin"]) == ("source", "spin", "1")
    assert meta_title(srv) == "three"
    # admin credentials are checked here, the auth server is not asked
    asked = len(rec.of("stream_auth"))
    assert adminlib.admin(srv, path + "four").status == 200
    assert meta_title(srv) == "four" and len(rec.of("stream_auth")) == asked
    # the auth server down: refused (403), admin still works
    rec.close()
    t0 = time.monotonic()
    r = adminlib.request(srv, path + "five", auth=("dj", "spin"))
    assert r.status == 403 and b"authentication unavailable" in r.body
    assert time.monotonic() - t0 < 5
    assert adminlib.admin(srv, path + "six").status == 200
    assert meta_title(srv) == "six"
    srv.wait_log("stream_auth for 127.0.0.1 on /paid: the auth server gave no answer")
    src.stop()
    assert srv.is_alive()


def test_stream_auth_decides_sources(server, auth):
    def answer(req):
        ok = req.action != "stream_auth" or (req.form.get("user"), req.form.get("pass")) == (
            "dj", "spin")
        return 200, ({"icecast-auth-user": "1"} if ok else {"icecast-auth-message": "bad dj"})
    rec = auth(answer)
    srv = server(mounts=[url_mount(rec, stream_auth=rec.url("/stream"))])
    good = srv.source(MOUNT, DATA, user="dj", password="spin",
                      headers={"Content-Type": "audio/mpeg"})
    assert good.connect().status == 200
    good.start()
    sa = rec.wait("stream_auth")[0]
    assert sa.body == ("action=stream_auth&mount=%%2fpaid&ip=127%%2e0%%2e0%%2e1&server=127%%2e0"
                       "%%2e0%%2e1&port=%d&user=dj&pass=spin" % srv.port).encode()
    lst, resp = listen(srv)
    assert resp.status == 200
    lst.wait_bytes(16 * 1024, 5)  # the bytes sent while the source waited were kept
    lst.close()
    good.stop()
    rec.wait("mount_remove")
    bad = srv.source(MOUNT, DATA, user="dj", password="wrong",
                     headers={"Content-Type": "audio/mpeg"})
    assert bad.connect().status == 401
    bad.close()
    # no credentials at all (CVE-2015-3026): asked with empty fields, refused, still running
    anon = srv.source(MOUNT, DATA, auth=False, headers={"Content-Type": "audio/mpeg"})
    assert anon.connect().status == 401
    anon.close()
    last = rec.wait("stream_auth", 3)[2].form
    assert last["user"] == "" and last["pass"] == ""
    assert srv.is_alive()
    # the source password no longer opens the mount: the auth server decides
    pw = srv.source(MOUNT, DATA, headers={"Content-Type": "audio/mpeg"})
    assert pw.connect().status == 401
    pw.close()


def test_custom_auth_and_timelimit_header_names_replace_the_defaults(server, auth):
    def answer(req):
        if req.action != "listener_add":
            return accept(req)
        user = req.form.get("user")
        if user == "default":  # the default names mean nothing once others are set
            return 200, {"icecast-auth-user": "1", "icecast-auth-timelimit": "1"}
        return 200, {"X-Ticket": "valid", "X-Seconds-Left": "2",
                     "icecast-auth-timelimit": "1"}
    rec = auth(answer)
    srv = server(mounts=[url_mount(rec, auth_header="X-Ticket: valid",
                                   timelimit_header="X-Seconds-Left:")])
    src = live(srv)
    lst, resp = listen(srv, Authorization=wirelib.basic_auth("default", "pw"))
    assert resp.status == 403
    lst.close()
    lst, resp = listen(srv, Authorization=wirelib.basic_auth("custom", "pw"))
    t0 = time.monotonic()
    assert resp.status == 200
    lst.wait_closed(5)  # X-Seconds-Left, not the default header's 1 s
    took = time.monotonic() - t0
    assert 1.7 <= took <= 3.0, took
    src.stop()


def test_username_and_password_options_reach_the_auth_server_as_basic_auth(server, auth):
    rec = auth()
    srv = server(mounts=[url_mount(rec, username="rimecast", password="s3cr:et",
                                   stream_auth=rec.url("/stream"))])
    src = srv.source(MOUNT, DATA, user="dj", password="spin", headers={"Content-Type": "audio/mpeg"})
    assert src.connect().status == 200
    src.start()
    lst, resp = listen(srv, Authorization=wirelib.basic_auth("listener", "lpw"))
    assert resp.status == 200
    lst.close()
    want = wirelib.basic_auth("rimecast", "s3cr:et")
    for action in ("stream_auth", "mount_add", "listener_add", "listener_remove"):
        req = rec.wait(action)[0]
        assert req.headers.get("Authorization") == want, (action, req.headers)
    # the client's own credentials still go in the form
    assert rec.of("listener_add")[0].form["user"] == "listener"
    src.stop()


def test_auth_server_gets_the_forwarded_address_of_a_listener_behind_a_trusted_proxy(server, auth):
    rec = auth()
    d = tempfile.mkdtemp(prefix="wire-proxies-")
    try:
        os.chmod(d, 0o755)
        proxies = os.path.join(d, "proxies")
        with open(proxies, "w") as f:
            f.write("127.0.0.2\n")
        os.chmod(proxies, 0o644)
        srv = server(mounts=[url_mount(rec)],
                     extra_xml="<paths><trusted-proxies>%s</trusted-proxies></paths>" % proxies)
        src = live(srv)
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.settimeout(5)
        s.connect((srv.host, srv.port))
        s.sendall(("GET %s HTTP/1.0\r\nX-Forwarded-For: 198.51.100.7\r\n\r\n" % MOUNT).encode())
        head, _ = wirelib.read_head(s, 5)
        assert head.status == 200
        assert rec.wait("listener_add")[0].form["ip"] == "198.51.100.7"
        s.close()
        assert rec.wait("listener_remove")[0].form["ip"] == "198.51.100.7"
        src.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def on_demand_xml(origin, mount, local):
    return ("<relay><server>127.0.0.1</server><port>%d</port><mount>%s</mount>"
            "<local-mount>%s</local-mount><on-demand>1</on-demand></relay>"
            % (origin.port, mount, local))


def origin_listeners(origin, mount):
    doc = adminlib.admin(origin, "/admin/stats").xml()
    return [int(s.findtext("listeners")) for s in doc.findall("source")
            if s.get("mount") == mount][0]


def test_on_demand_relay_mount_asks_the_auth_server_before_the_relay_connects(server, auth):
    def answer(req):
        if req.action == "listener_add" and req.form.get("user") != "ok":
            return 200, {"icecast-auth-message": "no ticket"}
        return 200, {"icecast-auth-user": "1", "icecast-auth-timelimit": "3"}
    rec = auth(answer)
    origin = server()
    src = live(origin, "/live.mp3")
    edge = server(mounts=[url_mount(rec, "/od.mp3")],
                  extra_xml=on_demand_xml(origin, "/live.mp3", "/od.mp3"))
    # refused: 403 with the message, and the relay is not started for it
    lst, resp = listen(edge, "/od.mp3", Authorization=wirelib.basic_auth("nope", "pw"))
    assert resp.status == 403
    lst.close()
    assert rec.wait("listener_add")[0].form["mount"] == "/od.mp3"
    # a started relay would be on the origin within milliseconds (and stay 10 s): none comes
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        assert origin_listeners(origin, "/live.mp3") == 0
        time.sleep(0.05)
    # accepted: the relay connects and the listener gets the origin's stream
    lst = edge.listener("/od.mp3", headers={"Authorization": wirelib.basic_auth("ok", "pw")})
    assert lst.open(timeout=12).status == 200
    t0 = time.monotonic()
    lst.wait_bytes(16 * 1024, 10)
    assert DATA.find(lst.snapshot()[-4096:][:64]) >= 0  # the origin's bytes
    assert origin_listeners(origin, "/live.mp3") == 1
    add = rec.of("listener_add")[1].form
    assert (add["user"], add["mount"]) == ("ok", "/od.mp3")
    # the time limit of the answer holds once the relay is there
    lst.wait_closed(6)
    took = time.monotonic() - t0
    assert 2.5 <= took <= 4.5, took
    rm = rec.wait("listener_remove")[0].form
    assert rm["client"] == add["client"] and int(rm["sent"]) >= 16 * 1024
    edge.wait_log("reached its time limit")
    src.stop()
