# SPDX-License-Identifier: GPL-2.0-or-later
"""The kinds x rules matrix (tests/README.md), the relay listener's cells: a listener of a
mount this server relays from another (a <relay> always on, and one on demand, which starts
only for a listener let in) meets the relayed mount's rules as a listener of a source's mount
does: htpasswd and URL authentication, max-listeners (on demand: the listeners that waited
for the relay to connect are let in up to it), a <fallback-when-full> into a protected mount
(only with its login), <fallback-override> (it brings back only the listeners that came from
the mount, not the relay's own), a user's second login refused, the login back-off (a blocked
login never makes an on-demand relay connect), killclient and moveclients."""

import concurrent.futures

import pytest

import adminlib
import formatlib as fl
import httprec
import matrixlib as mx
import wirelib

pytestmark = pytest.mark.rimecast_only

USERS = {u: "pw-" + u for u in ("ann", "bob", "cat", "dan")}
WAYS = ["always", "on_demand"]


def login(user, password=None):
    return {"Authorization": wirelib.basic_auth(user, password or USERS[user])}


def relayed(way, what):
    """The edge's relayed mount for a case: /r-<what>.mp3 always on, /od-<what>.mp3 on
    demand."""
    return ("/r-%s.mp3" if way == "always" else "/od-%s.mp3") % what


class Station(mx.Bench):
    """An origin (/up.mp3) and an edge relaying it to a mount per case and way, with the
    case's settings; /prot.mp3, /ov-r.mp3, /ov-od.mp3 and /m2.mp3 are the edge's own (local
    sources)."""

    def start(self):
        self.origin = self.server()
        self.keep(mx.paced_source(self.origin, "/up.mp3"), lambda s: s.stop())
        files = self.dir(mx.private_dir())
        self.rec = self.keep(httprec.Recorder(lambda req: (
            (200, {"icecast-auth-user": "1"}) if req.form.get("user") == "ok"
            else (200, {"icecast-auth-message": "not on the list"}))), httprec.Recorder.close)
        users = mx.users_file(files, **USERS)
        m = mx.mount_xml
        blocks = [m("/prot.mp3", users),
                  m("/ov-r.mp3", fallback_mount="/r-open.mp3", fallback_override=1),
                  m("/ov-od.mp3", fallback_mount="/od-open.mp3", fallback_override=1),
                  m("/r-url.mp3", url_auth={"listener_add": self.rec.url("/listener_add")}),
                  mx.relay_xml(self.origin, "/up.mp3", "/r-url.mp3")]
        for way in WAYS:
            od = way == "on_demand"
            blocks += [m(relayed(way, "paid"), users), m(relayed(way, "guard"), users),
                       m(relayed(way, "full"), max_listeners=1),
                       m(relayed(way, "wf"), max_listeners=0, fallback_mount="/prot.mp3",
                         fallback_when_full=1)]
            blocks += [mx.relay_xml(self.origin, "/up.mp3", relayed(way, what), on_demand=od)
                       for what in ("paid", "guard", "full", "wf", "open")]
        self.srv = self.server(
            sources=16, extra_xml="".join(blocks),
            security_xml="<login-backoff><exempt-local>0</exempt-local></login-backoff>")
        self.sources = {}
        for name in ("/prot.mp3", "/ov-r.mp3", "/ov-od.mp3", "/m2.mp3"):
            self.source(name)
        for what in ("paid", "guard", "full", "wf", "open", "url"):
            fl.wait_mount(self.srv, "/r-%s.mp3" % what)

    def source(self, name):
        self.sources[name] = mx.paced_source(self.srv, name)
        self.keep(name, lambda n: self.sources.pop(n).stop() if n in self.sources else None)


@pytest.fixture(scope="module")
def relay():
    with Station() as st:
        st.start()
        yield st


def users_on(srv, mount):
    return sorted(x.findtext("username") or "-" for x in mx.listeners(srv, mount))


@pytest.mark.parametrize("way", WAYS)
def test_a_relay_listener_needs_the_htpasswd_login(relay, way):
    mount = relayed(way, "paid")
    assert mx.stream(relay.srv, mount)[0] == 401
    assert mx.stream(relay.srv, mount, login("ann", "wrong"))[0] == 401
    status, body = mx.stream(relay.srv, mount, login("ann"))
    assert status == 200 and len(body) >= 8192


def test_a_relay_listener_is_let_in_or_refused_by_url_authentication(relay):
    status, body = mx.stream(relay.srv, "/r-url.mp3", {"Authorization": wirelib.basic_auth(
        "nobody", "x")})
    assert status == 403 and b"not on the list" in body
    status, body = mx.stream(relay.srv, "/r-url.mp3", {"Authorization": wirelib.basic_auth(
        "ok", "x")})
    assert status == 200 and len(body) >= 8192


@pytest.mark.parametrize("way", WAYS)
def test_a_relay_listener_takes_a_place_of_max_listeners(relay, way):
    """Two listeners ask at once (on demand: both wait for the relay to connect): one gets
    the one place, the other is refused, as on a live mount."""
    srv, mount = relay.srv, relayed(way, "full")
    pair = [mx.Listener(srv, mount), mx.Listener(srv, mount)]
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            resps = list(pool.map(lambda lis: lis.open(start=False), pair))
        assert sorted(r.status for r in resps) == [200, 403], resps
        admitted = pair[[r.status for r in resps].index(200)]
        admitted.start()
        admitted.wait_bytes(8192, 10)
        assert mx.listener_count(srv, mount) == 1
    finally:
        for lis in pair:
            lis.close()


@pytest.mark.parametrize("way", WAYS)
def test_a_full_relayed_mount_falls_back_into_a_protected_mount_only_with_its_login(relay, way):
    """A relayed mount (max-listeners 0) whose <fallback-when-full> is /prot.mp3, a mount with
    authentication: its listeners never logged in there, so they are refused."""
    srv = relay.srv
    before = mx.listener_count(srv, "/prot.mp3")
    status, body = mx.stream(srv, relayed(way, "wf"), login("ann"))
    assert status == 403 and b"max listeners" in body
    assert mx.listener_count(srv, "/prot.mp3") == before
    # (said at most once every 10 s: maybe for the other way's mount)
    srv.wait_log("is full and its <fallback-when-full> /prot.mp3 has authentication it did "
                 "not pass")


@pytest.mark.parametrize("way", WAYS)
def test_fallback_override_brings_back_only_those_who_came_from_the_mount(relay, way):
    """/ov-r.mp3 (/ov-od.mp3) falls back to a relayed mount, with its own listener (which keeps
    an on-demand relay connected), and overrides: when its source comes back, its listener
    returns and the relay's own stays."""
    srv, mount = relay.srv, relayed(way, "open")
    home = "/ov-r.mp3" if way == "always" else "/ov-od.mp3"
    own = mx.listen(srv, mount, headers={"User-Agent": "relay-own/1"})
    moved = mx.listen(srv, home, headers={"User-Agent": "from-home/1"})
    try:
        relay.sources.pop(home).stop()
        wirelib.wait_until(lambda: mx.listener_count(srv, mount) == 2, 10,
                           "the fallback to the relayed mount")
        relay.source(home)
        wirelib.wait_until(lambda: mx.listener_count(srv, home) == 1, 10, "the override")
        assert [x.findtext("UserAgent") for x in mx.listeners(srv, mount)] == ["relay-own/1"]
        for lis in (own, moved):
            lis.wait_bytes(lis.received + 8192, 5)
            assert not lis.closed
    finally:
        own.close()
        moved.close()


@pytest.mark.parametrize("way", WAYS)
def test_a_users_second_login_to_a_relayed_mount_is_refused(relay, way):
    srv, mount = relay.srv, relayed(way, "paid")
    first = mx.listen(srv, mount, headers=login("bob"))
    try:
        assert mx.stream(srv, mount, login("bob"))[0] == 401
        assert users_on(srv, mount).count("bob") == 1
    finally:
        first.close()


@pytest.mark.parametrize("way", WAYS)
def test_failed_logins_to_a_relayed_mount_back_off_and_start_no_relay(relay, way):
    srv, mount = relay.srv, relayed(way, "guard")  # no other test asks for it
    address = "127.0.0.4%d" % WAYS.index(way)
    for _ in range(5):
        assert mx.stream(srv, mount, login("cat", "wrong"), address)[0] == 401
    assert mx.stream(srv, mount, login("cat"), address)[0] == 429
    # an on-demand relay was not started for them (one always on is live from the start)
    assert (mount in mx.live_mounts(srv)) == (way == "always")
    assert srv.error_log().count("failed login from %s" % address) == 5
    assert mx.stream(srv, mount, login("cat"), "127.0.0.49")[0] == 200  # another address
    assert mount in mx.live_mounts(srv)


@pytest.mark.parametrize("way", WAYS)
def test_killclient_ends_a_relay_listener(relay, way):
    srv, mount = relay.srv, relayed(way, "open")
    lis = mx.listen(srv, mount)
    try:
        [x] = mx.listeners(srv, mount)
        r = adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (mount, x.findtext("ID")))
        assert r.status == 200 and r.xml().findtext("return") == "1"
        lis.wait_closed(5)
        assert mx.listeners(srv, mount) == []
    finally:
        lis.close()


@pytest.mark.parametrize("way", WAYS)
def test_moveclients_moves_relay_listeners_to_another_mount(relay, way):
    srv, mount = relay.srv, relayed(way, "open")
    lis = mx.listen(srv, mount, headers={"User-Agent": "moved-%s/1" % way})
    try:
        r = adminlib.admin(srv, "/admin/moveclients?mount=%s&destination=/m2.mp3" % mount)
        assert r.status == 200 and r.xml().findtext("message").startswith("Clients moved")
        wirelib.wait_until(lambda: "moved-%s/1" % way in [
            x.findtext("UserAgent") for x in mx.listeners(srv, "/m2.mp3")], 5, "the move")
        lis.wait_bytes(lis.received + 8192, 5)
        assert not lis.closed
    finally:
        lis.close()
