# SPDX-License-Identifier: GPL-2.0-or-later
"""The kinds x rules matrix (tests/README.md), the SIGHUP column: a rule a reload adds applies
to every kind at once. A station's mounts (an HLS mount with an intro, a relayed one, an
on-demand relayed one) are open; each kind is let in; a reload gives the three an htpasswd
file; then each kind needs the login: a new plain, TLS or relay listener gets 401, a new HLS
session's first playlist 401, a session begun before the reload 401 at its next poll (its
login now), a piece or an intro segment asked for bare 403, while a session that logged in
gets its pieces by its token. A listener already streaming stays (a reload drops nobody: it
was let in under the rules of its time, as in Icecast). Rimecast only (HLS, TLS)."""

import shutil

import pytest

import matrixlib as mx
import wirelib

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")]

USERS = ("plain", "tls", "relay", "relay_on_demand", "old", "ffmpeg", "bare_piece", "intro")


def login(user):
    """The credentials of `user` (each test logs in as users of its own: a user's second login
    is refused while the first lasts, and a session's lasts past its last poll)."""
    return {"Authorization": wirelib.basic_auth(user, "pw-" + user)}


class Reloaded:
    """The station after the reload: before[kind] is what each kind got before it; session,
    an HLS session that played before it; uris, the pieces it listed (kind: bare URI);
    streaming, a plain listener connected before it."""

    def __init__(self, st):
        self.st, self.srv = st, st.srv
        self.before = {kind: st.attempt(kind)(None, None) for kind in mx.KINDS}
        self.session = mx.Session(self.srv, st.MOUNT, {"User-Agent": "before-reload/1"})
        self.uris = {kind: st.piece_uri(kind) for kind in ("bare_piece", "intro")}
        self.streaming = mx.listen(self.srv, st.MOUNT)
        st.keep(self.streaming, mx.Listener.close)
        users = mx.users_file(st.dir(mx.private_dir()), **{u: "pw-" + u for u in USERS})
        st.reload(users)


@pytest.fixture(scope="module")
def reloaded():
    with mx.KindStation() as st:
        st.start()
        yield Reloaded(st)


@pytest.mark.parametrize("kind", ["plain", "tls", "relay", "relay_on_demand"])
def test_a_listener_needs_the_login_a_reload_gave_its_mount(reloaded, kind):
    ask = reloaded.st.attempt(kind)
    assert reloaded.before[kind] == 200
    assert ask(None, None) == 401
    assert ask(login(kind), None) == 200


def test_an_hls_session_needs_the_login_a_reload_gave_its_mount(reloaded):
    srv, mount = reloaded.srv, reloaded.st.MOUNT
    assert reloaded.before["hls_session"] == 200
    assert mx.Session(srv, mount).status == 401
    # the session that played before it logs in at its next poll: its token alone is no login
    old = reloaded.session
    assert old.status == 200 and old.poll() == 401
    assert old.poll(login("old")) == 200
    seg = mx.newest_segment(old.text)
    assert "session=" + old.token in seg and old.piece(seg)[0] == 200
    # ffmpeg plays with the credentials in the URL
    url = srv.url(mount + "/hls.m3u8").replace("http://", "http://ffmpeg:pw-ffmpeg@")
    r = mx.subprocess_run([mx.fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i", url,
                           "-t", "2", "-f", "null", "-"])
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("kind", ["bare_piece", "intro"])
def test_a_piece_is_no_longer_public_once_a_reload_gave_its_mount_a_login(reloaded, kind):
    uri = reloaded.uris[kind]
    assert reloaded.before[kind] == 200
    assert "session=" not in uri  # an open mount's pieces name no session
    ask = reloaded.st.attempt(kind, uri)
    assert ask(None, None) == 403
    assert ask(login(kind), None) == 403  # a piece never logs in: a session does
    # within a logged-in session, by its token
    s = mx.Session(reloaded.srv, reloaded.st.MOUNT, login(kind))
    assert s.status == 200
    listed = mx.intro_segments(s.text)[0] if kind == "intro" else mx.newest_segment(s.text)
    assert "session=" + s.token in listed and s.piece(listed)[0] == 200


def test_a_listener_streaming_before_the_reload_stays(reloaded):
    lis = reloaded.streaming
    lis.wait_bytes(lis.received + 8192, 5)
    assert not lis.closed
