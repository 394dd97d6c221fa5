# SPDX-License-Identifier: GPL-2.0-or-later
"""The kinds x rules matrix (tests/README.md), the cells of the HLS kinds that no other file
holds: an intro segment of a mount with listener authentication (htpasswd or URL) answers only
within a logged-in session, and not once killclient ended it; an intro segment is audio, so it
takes the session's listener slot (refused on a full mount); an open mount's pieces stay public
on a full mount; a sourceless mount serving its protected fallback keeps its intro for the
fallback's users; the login back-off counts an HLS login's failures with a plain listener's,
and a piece is never a login; moveclients leaves HLS sessions where they are (each plays the
window of the URL it was given); and when a mount's own source comes back, its HLS sessions
are back on it, logged in, whether <fallback-override> brings its listeners back or not.
Rimecast only (HLS)."""


import pytest

import adminlib
import httprec
import matrixlib as mx
import wirelib

pytestmark = pytest.mark.rimecast_only

USERS = {u: "pw-" + u for u in ("ann", "bob", "fay", "gus", "hal", "ian", "jan", "kim", "lea",
                               "max", "ned")}
OTHER = "127.0.0.2"  # another client address (all of 127/8 is this machine)


def login(user, password=None):
    return {"Authorization": wirelib.basic_auth(user, password or USERS[user])}


class Station(mx.Bench):
    """One server with a mount per case (see each test); the login back-off counts loopback
    (<exempt-local>0), each test that fails logins doing so from an address of its own."""

    def start(self):
        files = self.dir(mx.private_dir())
        web = self.dir(mx.web_dir())
        rec = self.keep(httprec.Recorder(lambda req: (200, {"icecast-auth-user": "1"})),
                        httprec.Recorder.close)
        users = mx.users_file(files, **USERS)
        url = {"listener_add": rec.url("/listener_add"),
               "listener_remove": rec.url("/listener_remove")}
        m = mx.mount_xml
        self.srv = self.server(webroot=web, sources=16, security_xml=(
            "<login-backoff><exempt-local>0</exempt-local></login-backoff>"), extra_xml="".join([
                mx.SHORT_HLS,
                m("/paid.mp3", users, intro="/intro.mp3"),
                m("/url.mp3", url_auth=url, intro="/intro.mp3"),
                m("/small.mp3", intro="/intro.mp3", max_listeners=1),
                m("/full.mp3", max_listeners=1),
                m("/sourceless.mp3", intro="/intro.mp3", fallback_mount="/fbpaid.mp3"),
                m("/fbpaid.mp3", users),
                m("/a1.mp3", users, fallback_mount="/b.mp3", fallback_override=1),
                m("/a2.mp3", users, fallback_mount="/b.mp3"),
            ]))
        self.sources = {}
        for name in ("/paid.mp3", "/url.mp3", "/small.mp3", "/full.mp3", "/fbpaid.mp3",
                     "/a1.mp3", "/a2.mp3", "/b.mp3", "/m1.mp3", "/m2.mp3"):
            self.source(name)

    def source(self, name):
        self.sources[name] = mx.paced_source(self.srv, name)
        self.keep(name, lambda n: self.sources.pop(n).stop() if n in self.sources else None)


@pytest.fixture(scope="module")
def hls():
    with Station() as st:
        st.start()
        yield st


# ---------------------------------------------------------------- intro segments

@pytest.mark.parametrize("kind", ["htpasswd", "url"])
def test_a_protected_mounts_intro_segments_answer_only_within_its_logged_in_session(hls, kind):
    srv, mount = hls.srv, "/paid.mp3" if kind == "htpasswd" else "/url.mp3"
    s = mx.Session(srv, mount, login("ann"))
    assert s.status == 200
    intro = mx.intro_segments(s.text)
    assert intro and all("session=" + s.token in u for u in intro), s.text
    status, headers, body = s.piece(intro[0])
    assert status == 200 and body[:3] == b"ID3"
    assert headers["cache-control"].startswith("private"), headers["cache-control"]
    # bare, with a made-up token, as a HEAD scan, or from another address: refused alike
    bare = mx.without_token(intro[0])
    for uri, method in ((bare, "GET"), (bare, "HEAD"), (bare + "&session=" + "0" * 32, "GET")):
        assert mx.bare_piece_status(srv, mount, uri, method=method) == 403, (uri, method)
    assert mx.exchange(srv, mount + "/" + intro[0], source_ip=OTHER)[0] == 403


def test_a_killed_sessions_intro_segments_are_refused(hls):
    srv = hls.srv
    s = mx.Session(srv, "/paid.mp3", login("bob"))
    assert s.status == 200
    intro = mx.intro_segments(s.text)
    [lst] = [x for x in mx.listeners(srv, "/paid.mp3") if x.findtext("username") == "bob"]
    r = adminlib.admin(srv, "/admin/killclient?mount=/paid.mp3&id=" + lst.findtext("ID"))
    assert r.status == 200
    status, _, body = s.piece(intro[0])
    assert status == 403 and b"session was ended" in body


def test_an_intro_segment_takes_the_sessions_slot_and_is_refused_on_a_full_mount(hls):
    srv = hls.srv
    s = mx.Session(srv, "/small.mp3", {"User-Agent": "intro-slot/1"}, play=False)
    assert s.status == 200 and mx.listener_count(srv, "/small.mp3") == 0  # pending: no slot
    intro = mx.intro_segments(s.text)
    lis = mx.listen(srv, "/small.mp3")  # the one place of the mount
    try:
        status, _, body = s.piece(intro[0])
        assert status == 403 and b"too many listeners" in body
        assert mx.listener_count(srv, "/small.mp3") == 1
    finally:
        lis.close()
    wirelib.wait_until(lambda: mx.listener_count(srv, "/small.mp3") == 0, 5, "the place free")
    status, _, body = s.piece(intro[0])
    assert status == 200 and body[:3] == b"ID3"
    assert [x.findtext("UserAgent") for x in mx.listeners(srv, "/small.mp3")] == ["intro-slot/1"]


def test_a_sourceless_mounts_intro_needs_the_login_of_the_protected_fallback_it_serves(hls):
    srv = hls.srv
    status, token = mx.issue(srv, "/sourceless.mp3")
    assert status == 200 and mx.media(srv, "/sourceless.mp3", token)[0] == 401
    s = mx.Session(srv, "/sourceless.mp3", login("fay"))
    assert s.status == 200
    intro = mx.intro_segments(s.text)
    assert intro and "file=/intro.mp3" in intro[0] and "session=" + s.token in intro[0]
    assert s.piece(intro[0])[0] == 200
    assert mx.bare_piece_status(srv, "/sourceless.mp3", intro[0]) == 403


def test_listclients_and_killclient_reach_a_session_a_fallback_serves(hls):
    """A session of a sourceless mount is a listener of the fallback that serves it, as a
    plain listener of that mount is: listed there, and killclient there ends it."""
    srv = hls.srv
    s = mx.Session(srv, "/sourceless.mp3", login("ned"))
    assert s.status == 200
    [lst] = [x for x in mx.listeners(srv, "/fbpaid.mp3") if x.findtext("username") == "ned"]
    r = adminlib.admin(srv, "/admin/killclient?mount=/fbpaid.mp3&id=" + lst.findtext("ID"))
    assert r.status == 200 and r.xml().findtext("return") == "1"
    status, text = mx.media(srv, "/sourceless.mp3", s.token)
    assert status == 403 and "session was ended" in text
    assert s.piece(mx.newest_segment(s.text))[0] == 403
    assert not any(x.findtext("username") == "ned" for x in mx.listeners(srv, "/fbpaid.mp3"))


# ---------------------------------------------------------------- pieces on a full mount

def test_an_open_mounts_pieces_stay_public_on_a_full_mount_and_count_no_listener(hls):
    srv = hls.srv
    s = mx.Session(srv, "/full.mp3", {"User-Agent": "pieces-full/1"}, play=False)
    seg = mx.newest_segment(s.text)
    lis = mx.listen(srv, "/full.mp3")
    try:
        # a cache (or anyone) fetching a piece is no listener: the full mount serves it
        status, headers, body = mx.exchange(srv, "/full.mp3/" + seg, source_ip=OTHER)
        assert status == 200 and body[:3] == b"ID3" and headers["cache-control"].startswith(
            "public")
        assert mx.bare_piece_status(srv, "/full.mp3", seg, source_ip=OTHER, method="HEAD") == 200
        assert mx.listener_count(srv, "/full.mp3") == 1
        # while a new session is refused a place
        assert mx.Session(srv, "/full.mp3", {"User-Agent": "late/1"}).status == 403
    finally:
        lis.close()


# ---------------------------------------------------------------- the login back-off

def test_an_hls_login_and_a_plain_login_share_the_back_off(hls):
    srv = hls.srv
    wrong = login("gus", "wrong")
    # five wrong passwords in session logins block the address, for sessions and listeners
    for _ in range(5):
        assert mx.Session(srv, "/paid.mp3", wrong, "127.0.0.21").status == 401
    status, token = mx.issue(srv, "/paid.mp3", source_ip="127.0.0.21")
    status, headers, _ = mx.exchange(srv, "/paid.mp3/hls.m3u8?session=" + token, login("gus"),
                                     source_ip="127.0.0.21")
    assert status == 429 and int(headers["retry-after"]) >= 1
    assert mx.stream(srv, "/paid.mp3", login("gus"), "127.0.0.21")[0] == 429
    # and the other way: a plain listener's failures block a session's login
    for _ in range(5):
        assert mx.stream(srv, "/paid.mp3", login("hal", "wrong"), "127.0.0.22")[0] == 401
    assert mx.Session(srv, "/paid.mp3", login("hal"), "127.0.0.22").status == 429
    # another address is not blocked
    assert mx.Session(srv, "/paid.mp3", login("hal"), "127.0.0.23").status == 200
    assert srv.error_log().count("failed login from 127.0.0.21") == 5


def test_a_piece_is_never_a_login_so_never_a_failed_one(hls):
    srv = hls.srv
    text = mx.Session(srv, "/full.mp3", {"User-Agent": "no-login/1"}, "127.0.0.24",
                      play=False).text
    seg = mx.newest_segment(text)
    for _ in range(6):  # wrong credentials on pieces: not read
        assert mx.bare_piece_status(srv, "/full.mp3", seg, login("ian", "wrong"),
                                    "127.0.0.24") == 200
        assert mx.bare_piece_status(srv, "/paid.mp3", seg, login("ian", "wrong"),
                                    "127.0.0.24") == 403
    assert "failed login from 127.0.0.24" not in srv.error_log()
    assert mx.Session(srv, "/paid.mp3", login("ian"), "127.0.0.24").status == 200


# ---------------------------------------------------------------- moves

def test_moveclients_moves_the_listeners_and_leaves_hls_sessions_on_their_window(hls):
    srv = hls.srv
    lis = mx.listen(srv, "/m1.mp3")
    s = mx.Session(srv, "/m1.mp3", {"User-Agent": "stays/1"})
    try:
        assert s.status == 200
        wirelib.wait_until(lambda: mx.listener_count(srv, "/m1.mp3") == 2, 5, "two listeners")
        r = adminlib.admin(srv, "/admin/moveclients?mount=/m1.mp3&destination=/m2.mp3")
        assert r.status == 200 and r.xml().findtext("message").startswith("Clients moved")
        wirelib.wait_until(lambda: mx.listener_count(srv, "/m2.mp3") == 1, 5, "the move")
        lis.wait_bytes(lis.received + 8192, 5)
        # the session is still /m1.mp3's: listed and counted there, its playlist and pieces
        assert mx.listener_count(srv, "/m1.mp3") == 1
        assert [x.findtext("UserAgent") for x in mx.listeners(srv, "/m1.mp3")] == ["stays/1"]
        assert s.poll() == 200 and s.piece(mx.newest_segment(s.text))[0] == 200
    finally:
        lis.close()


def test_sessions_come_back_to_their_mounts_source_with_or_without_override(hls):
    """/a1.mp3 (fallback-override) and /a2.mp3 (none) have authentication and fall back to
    open /b.mp3. Their logged-in sessions follow the fallback and come back, logged in, when
    their own source does: on /a1.mp3 with the listener the override brings back, on /a2.mp3
    while its plain listener stays on /b.mp3 (a window is one stream for all its sessions)."""
    srv = hls.srv
    plain = {m: mx.listen(srv, m, headers=login(u)) for m, u in (("/a1.mp3", "jan"),
                                                                   ("/a2.mp3", "kim"))}
    sessions = {m: mx.Session(srv, m, login(u)) for m, u in (("/a1.mp3", "lea"),
                                                            ("/a2.mp3", "max"))}
    try:
        assert [s.status for s in sessions.values()] == [200, 200]
        for m in ("/a1.mp3", "/a2.mp3"):
            hls.sources.pop(m).stop()

        def on_fallback():  # the listeners moved; the sessions' windows follow at their poll
            for s in sessions.values():
                assert s.poll() == 200 and s.piece(mx.newest_segment(s.text))[0] == 200
            return mx.listener_count(srv, "/b.mp3") == 4
        wirelib.wait_until(on_fallback, 15, "everyone on /b.mp3", interval=0.3)
        for m in ("/a1.mp3", "/a2.mp3"):
            hls.source(m)

        def back():
            for s in sessions.values():  # their token alone: still logged in
                assert s.poll() == 200
            return (mx.listener_count(srv, "/a1.mp3"), mx.listener_count(srv, "/a2.mp3"),
                    mx.listener_count(srv, "/b.mp3")) == (2, 1, 1)
        wirelib.wait_until(back, 15, "the override and the sessions back", interval=0.3)
        users = {m: sorted(x.findtext("username") for x in mx.listeners(srv, m))
                 for m in ("/a1.mp3", "/a2.mp3", "/b.mp3")}
        assert users == {"/a1.mp3": ["jan", "lea"], "/a2.mp3": ["max"], "/b.mp3": ["kim"]}
        for lis in plain.values():
            lis.wait_bytes(lis.received + 8192, 5)
    finally:
        for lis in plain.values():
            lis.close()
