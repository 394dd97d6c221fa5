# SPDX-License-Identifier: GPL-2.0-or-later
"""Every answer has a deadline: a client that asks for a file (or pipelines page requests) and
never reads is closed once its response made no write progress for <client-timeout>; the
Shoutcast v1 login keeps its header-timeout until its headers are complete."""

import os
import shutil
import socket
import tempfile
import time

import pytest

import wirelib
from conftest import SOURCE_PASSWORD, assert_server_healthy, note
from test_shoutcast import MOUNT, port_pair

pytestmark = pytest.mark.rimecast_only

CLIENT_TIMEOUT = 2
MARGIN = 2.5  # the close is logged when the connection is released; loaded machines lag


@pytest.fixture
def webroot():
    d = tempfile.mkdtemp(prefix="web-")
    os.chmod(d, 0o755)
    with open(os.path.join(d, "big.bin"), "wb") as f:
        f.write(wirelib.make_data(24 << 20, seed=5))
    os.chmod(os.path.join(d, "big.bin"), 0o644)
    with open(os.path.join(d, "small.txt"), "w") as f:
        f.write("x" * 3000)
    os.chmod(os.path.join(d, "small.txt"), 0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def stalled_client(srv, raw):
    """Sends raw with a tiny receive buffer and never reads."""
    s = wirelib.connect(srv.host, srv.port, rcvbuf=4096)
    s.sendall(raw)
    return s


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def wait_access(srv, needle, timeout):
    return wirelib.wait_until(lambda: [l for l in srv.access_log().splitlines() if needle in l],
                              timeout, "%r in the access log" % needle)


def test_file_never_read_is_closed_after_client_timeout(server, webroot):
    srv = server(webroot=webroot, client_timeout=CLIENT_TIMEOUT)
    data = wirelib.make_data(1 << 20, seed=3)
    src = srv.source("/live.mp3", data, rate=32 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    lis = srv.listener("/live.mp3", keep=0)
    assert lis.open().status == 200

    t0 = time.monotonic()
    s = stalled_client(srv, b"GET /big.bin HTTP/1.0\r\nUser-Agent: stalled\r\n\r\n")
    try:
        lines = wait_access(srv, "GET /big.bin", CLIENT_TIMEOUT + MARGIN + 1)
        elapsed = time.monotonic() - t0
        note("file never read: closed after %.2f s (client-timeout %d s)"
             % (elapsed, CLIENT_TIMEOUT))
        assert elapsed >= CLIENT_TIMEOUT - 0.2, "closed before client-timeout"
        fields = lines[0].split('"')
        status, sent = fields[2].split()[:2]
        assert status == "200" and 0 < int(sent) < 24 << 20, lines[0]
        assert "no write progress within client-timeout" in srv.error_log()
        assert_server_healthy(srv, lis)
    finally:
        s.close()
        lis.close()
        src.stop()


def test_slow_reader_making_progress_is_not_cut(server, webroot):
    """The deadline is for no progress: a client that reads slowly but steadily gets it all."""
    srv = server(webroot=webroot, client_timeout=CLIENT_TIMEOUT)
    s = wirelib.connect(srv.host, srv.port, rcvbuf=8192)
    s.sendall(b"GET /big.bin HTTP/1.0\r\n\r\n")
    got, t0 = 0, time.monotonic()
    s.settimeout(5)
    # read ~4 KB every 0.3 s for longer than the timeout, then everything
    while time.monotonic() - t0 < CLIENT_TIMEOUT * 2:
        chunk = s.recv(4096)
        assert chunk, "closed while the client was reading (after %d bytes)" % got
        got += len(chunk)
        time.sleep(0.3)
    rest = wirelib.read_until_closed(s, 20, limit=32 << 20)
    s.close()
    head_and_body = got + len(rest)
    assert head_and_body > 24 << 20


def test_pipelined_pages_never_read_are_closed(server, webroot):
    srv = server(webroot=webroot, client_timeout=CLIENT_TIMEOUT)
    req = b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n"
    base = open_fds(srv.pid)
    s = wirelib.connect(srv.host, srv.port, rcvbuf=4096)
    s.settimeout(0.5)
    t0 = time.monotonic()
    sent = 0
    try:
        while sent < 4 << 20 and time.monotonic() - t0 < 2:
            sent += s.send(req * 64)
    except (socket.timeout, BlockingIOError):
        pass  # the server stopped reading: its answers are stuck
    try:
        wirelib.wait_until(lambda: open_fds(srv.pid) <= base,
                           CLIENT_TIMEOUT + MARGIN + 2, "the stalled keep-alive client to be closed")
        note("pipelined pages never read: closed after %.2f s" % (time.monotonic() - t0))
    finally:
        s.close()


def test_shoutcast_login_keeps_header_timeout_after_password(server):
    port = port_pair()
    extra = """<listen-socket><port>%d</port><bind-address>127.0.0.1</bind-address>
    <shoutcast-mount>%s</shoutcast-mount></listen-socket>
  <shoutcast-mount>%s</shoutcast-mount>""" % (port, MOUNT, MOUNT)
    srv = server(extra_xml=extra, header_timeout=2)
    s = wirelib.connect(srv.host, port + 1)
    t0 = time.monotonic()
    s.sendall(SOURCE_PASSWORD.encode() + b"\r\nicy-name: never finished\r\n")
    assert s.recv(64).startswith(b"OK2")
    wirelib.read_until_closed(s, 2 + MARGIN + 1)
    elapsed = time.monotonic() - t0
    note("shoutcast login without end of headers: closed after %.2f s" % elapsed)
    assert elapsed >= 1.8
    s.close()
    srv.wait_log("login not complete within header-timeout")
