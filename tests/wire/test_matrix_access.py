# SPDX-License-Identifier: GPL-2.0-or-later
"""The kinds x rules matrix (tests/README.md), the rules that come before any mount: the
<deny-ip> file, the <deny-agents> file and <clients>, held against every kind of listener on
one station: a plain GET, a TLS listener, an HLS session, an HLS piece asked for without a
session, an intro segment, and listeners of a relayed mount (always on, and on demand). Each
kind is refused by each rule (a TLS connection from a denied address, or past <clients>, is
closed before its handshake) and admitted without it. Rimecast only (HLS, TLS, <deny-agents>)."""

import os
import shutil

import pytest

import formatlib as fl
import matrixlib as mx
import wirelib

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")]

DENIED_IP = "127.0.0.2"
DENIED_AGENT = "MatrixBot/2.0"
CLIENTS = 40


@pytest.fixture(scope="module")
def station():
    """An edge with every kind (matrixlib.KindStation), open; <deny-ip> names DENIED_IP,
    <deny-agents> a pattern DENIED_AGENT matches; <clients> CLIENTS."""
    with mx.KindStation() as st:
        files = st.dir(mx.private_dir())
        deny = mx.write_file(os.path.join(files, "deny"), DENIED_IP + "\n")
        agents = mx.write_file(os.path.join(files, "agents"), "*matrixbot*\n")
        st.start(clients=CLIENTS, more="<paths><deny-ip>%s</deny-ip><deny-agents>%s"
                 "</deny-agents></paths>" % (deny, agents))
        yield st


REFUSED = {"tls": 0}  # closed before its handshake: no answer; the others get 403


@pytest.mark.parametrize("kind", mx.KINDS)
def test_an_address_in_deny_ip_gets_nothing_whatever_it_asks_for(station, kind):
    ask = station.attempt(kind)
    assert ask(None, DENIED_IP) == REFUSED.get(kind, 403)
    assert ask(None, "127.0.0.1") == 200


@pytest.mark.parametrize("kind", mx.KINDS)
def test_an_agent_in_deny_agents_gets_403_whatever_it_asks_for(station, kind):
    ask = station.attempt(kind)
    assert ask({"User-Agent": DENIED_AGENT}, None) == 403
    assert ask({"User-Agent": "NicePlayer/1.0"}, None) == 200


def test_ffmpeg_plays_hls_unless_its_agent_is_denied(station):
    """ffmpeg, a real HLS player: refused with an agent the file denies, plays with its own."""
    def play(agent):
        cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error"]
        cmd += ["-user_agent", agent] if agent else []
        cmd += ["-i", station.srv.url(mx.KindStation.MOUNT + "/hls.m3u8"), "-t", "2",
                "-f", "null", "-"]
        return mx.subprocess_run(cmd)
    refused = play(DENIED_AGENT)
    assert refused.returncode != 0 and "403" in refused.stderr, refused.stderr
    ok = play(None)
    assert ok.returncode == 0 and fl._decode_complaints(ok.stderr) == "", ok.stderr


# ---------------------------------------------------------------- <clients>

def fill(srv):
    """Plain listeners of the station's mount until the server refuses one for <clients>: the
    listeners (their sockets)."""
    held = []
    for _ in range(CLIENTS + 5):
        s = mx.connect(srv)
        s.sendall(mx.request_bytes("GET", mx.KindStation.MOUNT))
        resp, _ = wirelib.read_head(s, 10)
        if resp is None or resp.status != 200:
            s.close()
            assert resp is not None and resp.status == 403, resp
            return held
        held.append(s)
    for s in held:
        s.close()
    raise AssertionError("no refusal after %d listeners with <clients> %d" % (len(held), CLIENTS))


@pytest.mark.parametrize("kind", ["tls", "bare_piece", "intro", "relay", "relay_on_demand"])
def test_past_clients_each_kind_is_refused_and_admitted_again_once_there_is_room(station, kind):
    srv = station.srv
    ask = station.attempt(kind)
    # HLS sessions count against <clients> too: those of the station's earlier cells end
    # first, so that none ends (and frees a place) between the filling and the request
    wirelib.wait_until(lambda: mx.metric(srv, "rimecast_hls_sessions") == 0, 40,
                       "the earlier cells' HLS sessions to end", interval=0.5)
    refused_before = mx.metric(srv, "rimecast_connections_refused_total")
    held = fill(srv)
    try:
        got = ask(None, None)
    finally:
        for s in held:
            s.close()
    assert got == REFUSED.get(kind, 403)
    # the filling's last listener and this request were refused as over the limit
    # /metrics itself is refused (None, and one refusal more) while the server still counts
    # the held connections
    polls_refused = [0]

    def left():
        clients = mx.metric(srv, "rimecast_clients")
        polls_refused[0] += clients is None
        return clients is not None and clients <= CLIENTS // 2
    wirelib.wait_until(left, 10, "the held listeners to leave")
    assert (mx.metric(srv, "rimecast_connections_refused_total") ==
            refused_before + 2 + polls_refused[0])
    assert ask(None, None) == 200
