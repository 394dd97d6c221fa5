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

MOUNT = "/live.mp3"
DENIED_IP = "127.0.0.2"
DENIED_AGENT = "MatrixBot/2.0"
CLIENTS = 40

KINDS = ["plain", "tls", "hls_session", "bare_piece", "intro", "relay", "relay_on_demand"]


class Station(mx.Bench):
    """An edge with a TLS socket, an MP3 mount with HLS and an intro, and two relays of an
    origin's mount (/relay.mp3 always, /od.mp3 on demand); <deny-ip> names DENIED_IP,
    <deny-agents> a pattern DENIED_AGENT matches."""

    def start(self):
        origin = self.server()
        self.keep(mx.mp3_source(origin, "/up.mp3"), fl.stop_process)
        web = self.dir(mx.web_dir())
        files = self.dir(mx.private_dir())
        deny = mx.write_file(os.path.join(files, "deny"), DENIED_IP + "\n")
        agents = mx.write_file(os.path.join(files, "agents"), "*matrixbot*\n")
        self.srv = mx.conftest.Server(
            tls_mode="1", webroot=web, clients=CLIENTS,
            extra_xml=mx.mount_xml(MOUNT, intro="/intro.mp3") + mx.SHORT_HLS +
            mx.relay_xml(origin, "/up.mp3", "/relay.mp3") +
            mx.relay_xml(origin, "/up.mp3", "/od.mp3", on_demand=True) +
            "<paths><deny-ip>%s</deny-ip><deny-agents>%s</deny-agents></paths>" % (deny, agents))
        self.srv.cfg["ssl_certificate"] = mx.make_cert(self.srv.dir)
        self.server(self.srv)
        self.keep(mx.mp3_source(self.srv, MOUNT), fl.stop_process)
        fl.wait_mount(self.srv, "/relay.mp3")

    def attempt(self, kind):
        """A function of (headers, source_ip) asking for audio as `kind` does: the status it
        got. What it needs to know first (a piece's URI, from a session of its own) is asked
        for now."""
        srv = self.srv
        if kind in ("plain", "tls", "relay", "relay_on_demand"):
            mount = {"relay": "/relay.mp3", "relay_on_demand": "/od.mp3"}.get(kind, MOUNT)
            return lambda headers, ip: mx.stream(srv, mount, headers, ip, tls=kind == "tls")[0]
        if kind == "hls_session":
            return lambda headers, ip: mx.session_status(srv, MOUNT, headers, ip)
        text = mx.Session(srv, MOUNT, play=False).text
        uri = mx.intro_segments(text)[0] if kind == "intro" else mx.newest_segment(text)
        return lambda headers, ip: mx.bare_piece_status(srv, MOUNT, uri, headers, ip)


@pytest.fixture(scope="module")
def station():
    with Station() as st:
        st.start()
        yield st


REFUSED = {"tls": 0}  # closed before its handshake: no answer; the others get 403


@pytest.mark.parametrize("kind", KINDS)
def test_an_address_in_deny_ip_gets_nothing_whatever_it_asks_for(station, kind):
    ask = station.attempt(kind)
    assert ask(None, DENIED_IP) == REFUSED.get(kind, 403)
    assert ask(None, "127.0.0.1") == 200


@pytest.mark.parametrize("kind", KINDS)
def test_an_agent_in_deny_agents_gets_403_whatever_it_asks_for(station, kind):
    ask = station.attempt(kind)
    assert ask({"User-Agent": DENIED_AGENT}, None) == 403
    assert ask({"User-Agent": "NicePlayer/1.0"}, None) == 200


def test_ffmpeg_plays_hls_unless_its_agent_is_denied(station):
    """ffmpeg, a real HLS player: refused with an agent the file denies, plays with its own."""
    def play(agent):
        cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error"]
        cmd += ["-user_agent", agent] if agent else []
        cmd += ["-i", station.srv.url(MOUNT + "/hls.m3u8"), "-t", "2", "-f", "null", "-"]
        return mx.subprocess_run(cmd)
    refused = play(DENIED_AGENT)
    assert refused.returncode != 0 and "403" in refused.stderr, refused.stderr
    ok = play(None)
    assert ok.returncode == 0 and fl._decode_complaints(ok.stderr) == "", ok.stderr


# ---------------------------------------------------------------- <clients>

def fill(srv):
    """Plain listeners of MOUNT until the server refuses one for <clients>: the listeners."""
    held = []
    for _ in range(CLIENTS + 5):
        s = mx.connect(srv)
        s.sendall(mx.request_bytes("GET", MOUNT))
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
    refused_before = mx.metric(srv, "rimecast_connections_refused_total")
    held = fill(srv)
    try:
        got = ask(None, None)
    finally:
        for s in held:
            s.close()
    assert got == REFUSED.get(kind, 403)
    # the filling's last listener and this request were refused as over the limit
    wirelib.wait_until(lambda: mx.metric(srv, "rimecast_clients") <= CLIENTS // 2, 10,
                       "the held listeners to leave")
    assert mx.metric(srv, "rimecast_connections_refused_total") == refused_before + 2
    assert ask(None, None) == 200
