# SPDX-License-Identifier: GPL-2.0-or-later
"""The kinds x rules matrix (tests/README.md), the TLS listener's cells: a listener over HTTPS
meets a mount's rules as a plain one does: htpasswd and URL authentication, max-listeners, a
fallback or a <fallback-when-full> into a protected mount (only those who logged in there
go), <fallback-override> bringing it back, a user's second login refused (over TLS or not),
the login back-off, and moveclients (it goes on over the same TLS connection). Rimecast only
(Icecast 2.4's TLS is not built in Debian's package)."""

import shutil

import pytest

import adminlib
import httprec
import matrixlib as mx
import wirelib

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")]

USERS = {u: "pw-" + u for u in ("ann", "bob", "cat", "dan", "eve")}


def login(user, password=None):
    return {"Authorization": wirelib.basic_auth(user, password or USERS[user])}


def url_answer(req):
    """The auth server lets in user "ok" only."""
    if req.form.get("user") == "ok":
        return 200, {"icecast-auth-user": "1"}
    return 200, {"icecast-auth-message": "not on the list"}


class Station(mx.Bench):
    def start(self):
        files = self.dir(mx.private_dir())
        self.rec = self.keep(httprec.Recorder(url_answer), httprec.Recorder.close)
        users = mx.users_file(files, **USERS)
        url = {"listener_add": self.rec.url("/listener_add")}
        m = mx.mount_xml
        self.srv = mx.conftest.Server(
            tls_mode="1", sources=16,
            security_xml="<login-backoff><exempt-local>0</exempt-local></login-backoff>",
            extra_xml="".join([
                m("/paid.mp3", users),
                m("/url.mp3", url_auth=url),
                m("/full.mp3", max_listeners=1),
                m("/home.mp3", fallback_mount="/paid.mp3"),
                m("/mhome.mp3", users, fallback_mount="/paid.mp3"),
                m("/wf.mp3", max_listeners=0, fallback_mount="/paid.mp3", fallback_when_full=1),
                m("/ov.mp3", fallback_mount="/free.mp3", fallback_override=1),
            ]))
        self.srv.cfg["ssl_certificate"] = mx.make_cert(self.srv.dir)
        self.server(self.srv)
        self.sources = {}
        for name in ("/paid.mp3", "/url.mp3", "/full.mp3", "/home.mp3", "/mhome.mp3", "/wf.mp3",
                     "/ov.mp3", "/free.mp3", "/m1.mp3", "/m2.mp3"):
            self.source(name)

    def source(self, name):
        self.sources[name] = mx.paced_source(self.srv, name)
        self.keep(name, lambda n: self.sources.pop(n).stop() if n in self.sources else None)


@pytest.fixture(scope="module")
def tls():
    with Station() as st:
        st.start()
        yield st


def users_on(srv, mount):
    return sorted(x.findtext("username") or "-" for x in mx.listeners(srv, mount))


def test_a_tls_listener_needs_the_htpasswd_login(tls):
    srv = tls.srv
    assert mx.stream(srv, "/paid.mp3", tls=True)[0] == 401
    assert mx.stream(srv, "/paid.mp3", login("ann", "wrong"), tls=True)[0] == 401
    status, body = mx.stream(srv, "/paid.mp3", login("ann"), tls=True)
    assert status == 200 and len(body) >= 8192


def test_a_tls_listener_is_let_in_or_refused_by_url_authentication(tls):
    srv = tls.srv
    status, body = mx.stream(srv, "/url.mp3", login("nobody", "x"), tls=True)
    assert status == 403 and b"not on the list" in body
    status, body = mx.stream(srv, "/url.mp3", {"Authorization": wirelib.basic_auth("ok", "x")},
                             tls=True)
    assert status == 200 and len(body) >= 8192
    assert [r.form["user"] for r in tls.rec.of("listener_add")] == ["nobody", "ok"]


def test_a_tls_listener_takes_a_place_of_max_listeners(tls):
    srv = tls.srv
    first = mx.listen(srv, "/full.mp3", tls=True)
    try:
        assert mx.stream(srv, "/full.mp3", tls=True)[0] == 403
        assert mx.stream(srv, "/full.mp3")[0] == 403  # nor a plain one: the TLS one holds it
    finally:
        first.close()
    wirelib.wait_until(lambda: mx.listener_count(srv, "/full.mp3") == 0, 5, "the place free")
    assert mx.stream(srv, "/full.mp3", tls=True)[0] == 200


def test_a_tls_listener_falls_back_into_a_protected_mount_only_with_its_login(tls):
    srv = tls.srv
    anonymous = mx.listen(srv, "/home.mp3", tls=True)
    member = mx.listen(srv, "/mhome.mp3", tls=True, headers=login("bob"))
    try:
        for m in ("/home.mp3", "/mhome.mp3"):
            tls.sources.pop(m).stop()
        anonymous.wait_closed(10)
        wirelib.wait_until(lambda: "bob" in users_on(srv, "/paid.mp3"), 10, "bob on /paid.mp3")
        member.wait_bytes(member.received + 8192, 5)
        assert not member.closed
        # a full mount's <fallback-when-full> into it: refused without the login
        assert mx.stream(srv, "/wf.mp3", tls=True)[0] == 403
    finally:
        anonymous.close()
        member.close()


def test_fallback_override_brings_a_tls_listener_back(tls):
    srv = tls.srv
    lis = mx.listen(srv, "/ov.mp3", tls=True)
    try:
        tls.sources.pop("/ov.mp3").stop()
        wirelib.wait_until(lambda: mx.listener_count(srv, "/free.mp3") == 1, 10, "the fallback")
        tls.source("/ov.mp3")
        wirelib.wait_until(lambda: mx.listener_count(srv, "/ov.mp3") == 1, 10, "the override")
        assert mx.listener_count(srv, "/free.mp3") == 0
        lis.wait_bytes(lis.received + 8192, 5)
        assert not lis.closed
    finally:
        lis.close()


def test_a_users_second_login_is_refused_over_tls_or_not(tls):
    srv = tls.srv
    first = mx.listen(srv, "/paid.mp3", tls=True, headers=login("cat"))
    try:
        assert mx.stream(srv, "/paid.mp3", login("cat"), tls=True)[0] == 401
        assert mx.stream(srv, "/paid.mp3", login("cat"))[0] == 401
        assert users_on(srv, "/paid.mp3").count("cat") == 1
    finally:
        first.close()
    wirelib.wait_until(lambda: "cat" not in users_on(srv, "/paid.mp3"), 5, "cat's place back")
    assert mx.stream(srv, "/paid.mp3", login("cat"), tls=True)[0] == 200


def test_failed_tls_logins_back_off_the_address(tls):
    srv = tls.srv
    for _ in range(5):
        assert mx.stream(srv, "/paid.mp3", login("dan", "wrong"), "127.0.0.31", tls=True)[0] == 401
    assert mx.stream(srv, "/paid.mp3", login("dan"), "127.0.0.31", tls=True)[0] == 429
    assert mx.stream(srv, "/paid.mp3", login("dan"), "127.0.0.31")[0] == 429  # the address's
    assert mx.stream(srv, "/paid.mp3", login("dan"), "127.0.0.32", tls=True)[0] == 200
    assert srv.error_log().count("failed login from 127.0.0.31") == 5


def test_moveclients_moves_a_tls_listener_on_its_connection(tls):
    srv = tls.srv
    lis = mx.listen(srv, "/m1.mp3", tls=True)
    try:
        r = adminlib.admin(srv, "/admin/moveclients?mount=/m1.mp3&destination=/m2.mp3")
        assert r.status == 200 and r.xml().findtext("message").startswith("Clients moved")
        wirelib.wait_until(lambda: mx.listener_count(srv, "/m2.mp3") == 1, 5, "the move")
        assert mx.listener_count(srv, "/m1.mp3") == 0
        lis.wait_bytes(lis.received + 8192, 5)
        assert not lis.closed
    finally:
        lis.close()
