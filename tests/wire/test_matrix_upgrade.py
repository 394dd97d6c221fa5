# SPDX-License-Identifier: GPL-2.0-or-later
"""The kinds x rules matrix (tests/README.md), the upgrade column: a station whose mounts (an
HLS mount with an intro, a relayed one, an on-demand relayed one) ask for an htpasswd login
is upgraded with `rimecast --upgrade`; in the new process every kind still needs the login
(a new plain, TLS or relay listener 401, a new HLS session 401, a piece or an intro segment
asked for bare 403), and what logged in before the upgrade keeps its login there: the
listeners go on, the HLS session polls by its token and gets its pieces and intro, and each
of their users is still listening (a second login of it is refused). Rimecast only."""

import shutil

import pytest

import matrixlib as mx
import wirelib
from test_upgrade import Adopted
from test_upgrade_command import pidfile_pid
from test_upgrade_command import upgrade as upgrade_command

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")]

KINDS = {"plain": "p", "relay": "r", "relay_on_demand": "o"}  # carried listeners' users
USERS = ("p", "r", "o", "h", "plain", "tls", "relay", "relay_on_demand", "hls_session")


def login(user):
    return {"Authorization": wirelib.basic_auth(user, "pw-" + user)}


class Upgraded:
    """The station after the upgrade: before[kind], what each kind got without a login before
    it; carried[kind], a listener of each listener kind logged in before it; session, an HLS
    session that logged in (user "h") and played before it; intro, the first intro segment
    its playlist listed."""

    def __init__(self, st):
        self.st, self.srv = st, st.srv
        self.before = {kind: st.attempt(kind)(None, None) for kind in (
            "plain", "tls", "hls_session", "relay", "relay_on_demand")}
        self.carried = {kind: st.keep(mx.listen(self.srv, st.mount_of(kind),
                                                headers=login(user)), mx.Listener.close)
                        for kind, user in KINDS.items()}
        self.session = mx.Session(self.srv, st.MOUNT, login("h"))
        assert self.session.status == 200
        self.intro = mx.intro_segments(self.session.text)[0]
        old = self.srv.proc
        rc, out, err = upgrade_command(self.srv, timeout=90)
        assert rc == 0, (rc, out, err)
        self.srv.proc = Adopted(pidfile_pid(self.srv), self.srv)
        assert self.srv.proc.pid != old.pid and old.wait(30) == 0


@pytest.fixture(scope="module")
def upgraded():
    with mx.KindStation() as st:
        users = mx.users_file(st.dir(mx.private_dir()), **{u: "pw-" + u for u in USERS})
        st.start(users)
        yield Upgraded(st)


@pytest.mark.parametrize("kind", ["plain", "relay", "relay_on_demand"])
def test_after_an_upgrade_a_listener_still_needs_its_login_and_a_carried_one_keeps_it(upgraded,
                                                                                       kind):
    st, carried = upgraded.st, upgraded.carried[kind]
    ask = st.attempt(kind)
    assert upgraded.before[kind] == 401
    assert ask(None, None) == 401
    carried.wait_bytes(carried.received + 8192, 10)
    assert not carried.closed
    assert ask(login(KINDS[kind]), None) == 401  # its user listens on: no second login
    assert ask(login(kind), None) == 200


def test_after_an_upgrade_a_tls_listener_still_needs_its_login(upgraded):
    ask = upgraded.st.attempt("tls")
    assert upgraded.before["tls"] == 401
    assert ask(None, None) == 401
    assert ask(login("tls"), None) == 200  # served by the new process


def test_after_an_upgrade_an_hls_session_still_needs_its_login_and_a_carried_one_keeps_it(
        upgraded):
    srv, mount, s = upgraded.srv, upgraded.st.MOUNT, upgraded.session
    assert upgraded.before["hls_session"] == 401
    assert mx.Session(srv, mount).status == 401
    # the carried session: its token alone, its pieces by it; its user still listening
    assert s.poll() == 200
    seg = mx.newest_segment(s.text)
    assert "session=" + s.token in seg and s.piece(seg)[0] == 200
    assert mx.Session(srv, mount, login("h")).status == 401
    assert mx.Session(srv, mount, login("hls_session")).status == 200


def test_after_an_upgrade_a_piece_asked_for_bare_is_still_refused(upgraded):
    s = upgraded.session
    assert s.poll() == 200
    seg = mx.newest_segment(s.text)
    ask = upgraded.st.attempt("bare_piece", seg)
    assert ask(None, None) == 403
    assert ask(login("h"), "127.0.0.2") == 403
    assert s.piece(seg)[0] == 200


def test_after_an_upgrade_an_intro_segment_answers_its_carried_session_only(upgraded):
    s, uri = upgraded.session, upgraded.intro
    assert "session=" + s.token in uri
    assert upgraded.st.attempt("intro", uri)(None, None) == 403
    status, _, body = s.piece(uri)
    assert status == 200 and body[:3] == b"ID3"

