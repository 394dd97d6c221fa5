# SPDX-License-Identifier: GPL-2.0-or-later
"""Relays pulling from an https:// upstream: the edge's outbound TLS client.

An origin serves its mounts on a TLS-only listen socket with a self-signed certificate made per
test (openssl req -x509, with a subjectAltName); an edge relays from it with <tls>1</tls> (or
<ssl>1</ssl>) and <ssl-cafile> naming that certificate. Listeners on the edge get a byte-exact
slice of what the source sent; an upstream the edge cannot verify (no CA, another name) is
refused with the verification failure in the error log; a 302 to https:// moves the relay onto
TLS; a TLS upstream that never answers the handshake is dropped at the deadline and retried
while the edge goes on serving.
"""

import os
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest

import adminlib
import formatlib
import wirelib
from conftest import SOURCE_PASSWORD
from test_relay import check_mp3_relay, start_origin
from upstreamlib import Acceptor, FakeUpstream

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")]


# ---------------------------------------------------------------- helpers

def make_cert(directory, name, san, cn="rimecast test origin"):
    """A self-signed certificate with subjectAltName san; returns (combined PEM, cert alone)."""
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", key, "-out", cert, "-subj", "/CN=" + cn,
                    "-addext", "subjectAltName=" + san],
                   check=True, capture_output=True, timeout=60)
    pem = os.path.join(directory, name + ".pem")
    with open(pem, "wb") as out:
        for part in (cert, key):
            with open(part, "rb") as f:
                out.write(f.read())
    for path in (pem, cert):
        os.chmod(path, 0o644)
    return pem, cert


def https_origin(server, data, san="IP:127.0.0.1,DNS:localhost", mount="/live.mp3"):
    """A started origin with a TLS-only socket and a streaming MP3 source on mount; returns
    (origin, source, the certificate alone as a CA file)."""
    origin = server(start=False, tls_mode="1")
    pem, cert = make_cert(origin.dir, "origin", san)
    origin.cfg["ssl_certificate"] = pem
    origin.start()
    src = origin.source(mount, data, rate=32 * 1024)
    assert src.connect().status == 200
    src.start()
    formatlib.wait_mount(origin, mount)
    return origin, src, cert


def relay_xml(host, port, mount, local, element="tls", on_demand=0):
    tls = "<%s>1</%s>" % (element, element) if element else ""
    return ("<relay><server>%s</server><port>%d</port><mount>%s</mount>"
            "<local-mount>%s</local-mount>%s<on-demand>%d</on-demand></relay>"
            % (host, port, mount, local, tls, on_demand))


def lines_with(srv, needle):
    return [line for line in srv.error_log().splitlines() if needle in line]


def mounts_of(srv):
    doc = adminlib.admin(srv, "/admin/listmounts").xml()
    return [s.get("mount") for s in doc.findall("source")]


# ---------------------------------------------------------------- relaying over HTTPS

@pytest.mark.parametrize("element,host", [("tls", "127.0.0.1"), ("ssl", "localhost")],
                         ids=["tls-by-address", "ssl-by-name"])
def test_edge_relays_an_https_origin_byte_exact_with_icy_titles(server, data, element, host):
    origin, src, ca = https_origin(server, data)
    edge = server(ssl_cafile=ca,
                  extra_xml=relay_xml(host, origin.tls_port, "/live.mp3", "/edge.mp3", element))
    check_mp3_relay(origin, edge, src, data, "/edge.mp3")
    log = edge.error_log()
    assert "pulling https://%s:%d/live.mp3" % (host, origin.tls_port) in log
    assert "TLS handshake failed" not in log
    src.close()


@pytest.mark.parametrize("case", ["no-cafile", "other-name", "other-address"])
def test_an_upstream_that_does_not_verify_is_refused(server, data, case):
    san = {"no-cafile": "IP:127.0.0.1", "other-name": "DNS:origin.example",
           "other-address": "IP:192.0.2.7"}[case]
    origin, src, ca = https_origin(server, data, san=san)
    host = "localhost" if case == "other-name" else "127.0.0.1"
    edge = server(ssl_cafile=None if case == "no-cafile" else ca,
                  extra_xml=relay_xml(host, origin.tls_port, "/live.mp3", "/edge.mp3"))
    # the edge keeps serving its own mounts meanwhile
    local = edge.source("/local.mp3", wirelib.make_data(1 << 20, seed=7), rate=32 * 1024)
    assert local.connect().status == 200
    local.start()
    want = {"no-cafile": "certificate verify failed (self-signed certificate)",
            "other-name": "certificate verify failed (hostname mismatch)",
            "other-address": "certificate verify failed (IP address mismatch)"}[case]
    # one line per attempt, and attempts back off: the second comes about a second later
    wirelib.wait_until(lambda: len(lines_with(edge, want)) >= 2, 10,
                       lambda: "two refused attempts in the log:\n" + edge.error_log()[-3000:])
    line = lines_with(edge, want)[0]
    assert "relay /edge.mp3 from https://%s:%d/live.mp3: TLS handshake failed: " % (
        host, origin.tls_port) in line
    assert len(lines_with(edge, "TLS handshake failed")) <= 4
    # nothing reached the origin's mount, the edge's mount stays absent
    assert int(formatlib.stats_source(origin, "/live.mp3").findtext("listeners")) == 0
    assert "/edge.mp3" not in mounts_of(edge)
    assert edge.listener("/edge.mp3").open().status == 404
    lis = edge.listener("/local.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(16000, 10)
    lis.close()
    local.close()
    src.close()


def test_a_redirect_to_https_moves_the_relay_onto_tls(server, data):
    origin, src, ca = https_origin(server, data)
    target = "https://127.0.0.1:%d/live.mp3" % origin.tls_port

    def redirect(conn, head):
        assert head.startswith(b"GET /live.mp3 ")
        conn.sendall(b"HTTP/1.0 302 Found\r\nLocation: " + target.encode() +
                     b"\r\nContent-Length: 0\r\n\r\n")

    front = Acceptor(redirect)   # the origin's plain port, as far as the edge knows
    try:
        edge = server(ssl_cafile=ca, extra_xml=relay_xml("127.0.0.1", front.port, "/live.mp3",
                                                         "/edge.mp3", element=None))
        check_mp3_relay(origin, edge, src, data, "/edge.mp3")
        assert "relay /edge.mp3: redirected to https://127.0.0.1:%d" % origin.tls_port \
            in edge.error_log()
        assert front.accepted
    finally:
        front.close()
    src.close()


@pytest.mark.slow
def test_a_stalled_tls_upstream_is_dropped_at_the_deadline_and_retried(server, data):
    stalled = Acceptor(None)
    try:
        edge = server(extra_xml=relay_xml("127.0.0.1", stalled.port, "/live.mp3", "/edge.mp3"))
        local = edge.source("/local.mp3", data, rate=32 * 1024)
        assert local.connect().status == 200
        local.start()
        lis = edge.listener("/local.mp3")
        assert lis.open().status == 200
        wirelib.wait_until(lambda: stalled.accepted, 10, "the relay to connect")
        # while the handshake hangs, the edge serves: pages answer and the listener streams
        for _ in range(3):
            before = lis.received
            t0 = time.monotonic()
            assert adminlib.request(edge, "/status-json.xsl").status == 200
            assert time.monotonic() - t0 < 1.0
            lis.wait_bytes(before + 16000, 5)
        wirelib.wait_until(lambda: len(stalled.accepted) >= 2, 16, "a second attempt")
        gap = stalled.accepted[1] - stalled.accepted[0]
        assert 9.0 <= gap <= 14.0, gap   # the 10 s deadline, then about a second of backoff
        assert lines_with(edge, "TLS handshake failed: not complete in time")
        assert "/edge.mp3" not in mounts_of(edge)
        assert not lis.closed, lis.close_reason
        lis.close()
        local.close()
    finally:
        stalled.close()


# ---------------------------------------------------------------- master over HTTPS

def test_slave_fetches_the_list_and_relays_over_the_masters_ssl_port(server, data):
    """<master-ssl-port> (Icecast-KH): the stream list and the mounts it names by path come over
    TLS from that port."""
    master, src, ca = https_origin(server, data, mount="/m1.mp3")
    slave = server(ssl_cafile=ca,
                   extra_xml="<master-server>127.0.0.1</master-server>"
                   "<master-server-port>%d</master-server-port>"
                   "<master-ssl-port>%d</master-ssl-port>"
                   "<master-update-interval>1</master-update-interval>"
                   "<master-username>relay</master-username>"
                   "<master-password>%s</master-password>"
                   % (master.port, master.tls_port, SOURCE_PASSWORD))
    formatlib.wait_mount(slave, "/m1.mp3", timeout=10)
    lis = slave.listener("/m1.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(20000, 10)
    wirelib.locate_slice(data, lis.snapshot())
    lis.close()
    assert "relay /m1.mp3: pulling https://127.0.0.1:%d/m1.mp3" % master.tls_port \
        in slave.error_log()
    src.close()


def test_https_lines_of_a_masters_list_are_relayed_over_tls(server, data, tmp_path):
    """A line that is the master's own https:// URL (its <master-ssl-port>) is relayed over TLS
    (lines naming another server are refused: test_upstream_trust.py)."""
    pem, ca = make_cert(str(tmp_path), "master", "IP:127.0.0.1")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pem)
    master = FakeUpstream(listing=lambda: ("https://127.0.0.1:%d/live.mp3\r\n"
                                           % master.port).encode(),
                          streams={"/live.mp3": data[:1 << 20]}, tls=ctx)
    try:
        slave = server(ssl_cafile=ca,
                       extra_xml="<master-server>127.0.0.1</master-server>"
                       "<master-server-port>%d</master-server-port>"
                       "<master-ssl-port>%d</master-ssl-port>"
                       "<master-update-interval>1</master-update-interval>"
                       "<master-password>x</master-password>" % (master.port, master.port))
        formatlib.wait_mount(slave, "/live.mp3", timeout=10)
        lis = slave.listener("/live.mp3")
        assert lis.open().status == 200
        lis.wait_bytes(20000, 10)
        wirelib.locate_slice(data, lis.snapshot())
        lis.close()
    finally:
        master.close()