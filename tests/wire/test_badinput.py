# SPDX-License-Identifier: GPL-2.0-or-later
"""Hostile and broken requests against one streaming server.

All tests in this module share a server with a live source and a live
listener; after each bad input the server must still be up and that
listener must still receive data."""

import re
import socket
import select
import selectors
import time

import pytest

import wirelib
from conftest import (ADMIN_PASSWORD, ADMIN_USER, IS_ICECAST, SOURCE_PASSWORD, Server,
                      assert_server_healthy)

HEADER_TIMEOUT = 2


@pytest.fixture(scope="module")
def env():
    data = wirelib.make_data(4 << 20, seed=7)
    srv = Server(header_timeout=HEADER_TIMEOUT, clients=1000).start()
    src = srv.source("/live.mp3", data, rate=32 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    src.wait_sent(8192, 5)
    lis = srv.listener("/live.mp3", keep=0)
    assert lis.open().status == 200
    yield srv, lis
    lis.close()
    src.stop()
    alive = srv.is_alive()
    code = srv.stop()
    if not alive or code != 0:
        print(srv.diagnostics())
    assert alive, "server died"
    assert code == 0, "exit code %r after SIGTERM" % code


def send_and_answer(srv, raw, timeout=HEADER_TIMEOUT + 4):
    """Send raw bytes; return the response (None if closed without one)."""
    s = wirelib.connect(srv.host, srv.port)
    try:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            return None
        try:
            resp, _ = wirelib.read_head(s, timeout)
        except ConnectionResetError:
            return None
        return resp
    finally:
        s.close()


def expect_rejected(resp, rimecast_statuses):
    if resp is not None:
        assert resp.status >= 400, resp
    if not IS_ICECAST:
        assert resp is not None, "closed without an HTTP error status"
        assert resp.status in rimecast_statuses, resp


def test_garbage_request_line(env):
    srv, lis = env
    resp = send_and_answer(srv, b"\x00\x01garbage\r\n\r\n")
    expect_rejected(resp, (400,))
    assert_server_healthy(srv, lis)


def test_100kb_header(env):
    srv, lis = env
    raw = b"GET /live.mp3 HTTP/1.0\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n"
    expect_rejected(send_and_answer(srv, raw), (400, 431))
    assert_server_healthy(srv, lis)


def test_1000_header_lines(env):
    srv, lis = env
    raw = b"GET /live.mp3 HTTP/1.0\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(1000)) + b"\r\n"
    expect_rejected(send_and_answer(srv, raw), (400, 431))
    assert_server_healthy(srv, lis)


def test_header_trickled_one_byte_per_second_times_out(env):
    srv, lis = env
    s = wirelib.connect(srv.host, srv.port)
    raw = b"GET /live.mp3 HTTP/1.0\r\nUser-Agent: " + b"x" * 100 + b"\r\n\r\n"
    t0 = time.monotonic()
    got = b""
    closed = False
    try:
        for byte in raw:
            try:
                s.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            # wait up to one second for the server to answer or close
            r, _, _ = select.select([s], [], [], 1.0)
            if r:
                try:
                    chunk = s.recv(4096)
                except ConnectionResetError:
                    chunk = b""
                got += chunk
                if not chunk:
                    closed = True
                    break
            if time.monotonic() - t0 > HEADER_TIMEOUT + 6:
                break
    finally:
        s.close()
    elapsed = time.monotonic() - t0
    assert closed, "slow header connection still open after %.1fs" % elapsed
    assert elapsed < HEADER_TIMEOUT + 6
    assert b" 200 " not in got.split(b"\r\n", 1)[0]
    if not IS_ICECAST:
        assert got.startswith(b"HTTP/1.") and got.split(b" ")[1] in (b"408", b"400"), got[:100]
    assert_server_healthy(srv, lis)


def test_bad_base64_authorization_on_put(env):
    srv, lis = env
    raw = (b"PUT /bad.mp3 HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\n"
           b"Authorization: Basic !!!not*base64===\r\n\r\n")
    resp = send_and_answer(srv, raw)
    assert resp is not None and resp.status in (400, 401), resp
    # and a source with no ':' in its decoded credentials
    raw2 = (b"PUT /bad.mp3 HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\n"
            b"Authorization: Basic bm9jb2xvbg==\r\n\r\n")
    resp = send_and_answer(srv, raw2)
    assert resp is not None and resp.status in (400, 401), resp
    assert_server_healthy(srv, lis)


BAD_CONTENT_LENGTHS = ["-1", "abc", "99999999999999999999999", "5\r\nContent-Length: 6", "+5",
                       "1 2", "5,5", "0x10", ""]


@pytest.mark.skipif(IS_ICECAST, reason="icecast2 ignores Content-Length on PUT (answers 200)")
@pytest.mark.parametrize("value", BAD_CONTENT_LENGTHS,
                         ids=["negative", "not-a-number", "overflow", "conflicting", "plus",
                              "two-numbers", "list", "hex", "empty"])
def test_bad_content_length_is_400_and_creates_no_mount(env, value):
    """A body of unknown length: 400 and a close, and the PUT never becomes a source."""
    srv, lis = env
    mount = "/cl-%d.mp3" % BAD_CONTENT_LENGTHS.index(value)
    raw = ("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\nAuthorization: %s\r\n"
           "Content-Length: %s\r\n\r\n" % (mount, wirelib.basic_auth("source", SOURCE_PASSWORD),
                                            value)).encode()
    s = wirelib.connect(srv.host, srv.port)
    try:
        s.sendall(raw + b"\xff\xfb" * 2048)
        resp, _ = wirelib.read_head(s)
        assert resp is not None and resp.status == 400, resp
        wirelib.read_until_closed(s, 5)
    finally:
        s.close()
    probe, _ = wirelib.simple_request(srv.host, srv.port,
                                      ("GET %s HTTP/1.0\r\n\r\n" % mount).encode())
    assert probe is not None and probe.status == 404, probe
    assert_server_healthy(srv, lis)


@pytest.mark.skipif(IS_ICECAST, reason="icecast2 ignores Content-Length on GET and POST")
@pytest.mark.parametrize("method,path", [("GET", "/live.mp3"), ("POST", "/admin/stats")])
@pytest.mark.parametrize("value", ["-1", "abc", "99999999999999999999999",
                                   "5\r\nContent-Length: 6"],
                         ids=["negative", "not-a-number", "overflow", "conflicting"])
def test_bad_content_length_on_get_and_post_is_400(env, method, path, value):
    """Whatever the method, a request whose length cannot be known is not served: no stream
    for the GET, no admin answer for the POST."""
    srv, lis = env
    raw = ("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: %s\r\n\r\n"
           % (method, path, wirelib.basic_auth(ADMIN_USER, ADMIN_PASSWORD), value)).encode()
    s = wirelib.connect(srv.host, srv.port)
    try:
        s.sendall(raw)
        resp, rest = wirelib.read_head(s)
        assert resp is not None and resp.status == 400, resp
        rest += wirelib.read_until_closed(s, 5)
        assert b"<icestats>" not in rest and len(rest) < 4096, rest[:200]
    finally:
        s.close()
    assert_server_healthy(srv, lis)


def test_unknown_method(env):
    srv, lis = env
    resp = send_and_answer(srv, b"FOO / HTTP/1.1\r\nHost: x\r\n\r\n")
    expect_rejected(resp, (400, 405, 501))
    assert_server_healthy(srv, lis)


def _abort_batch(srv, count, rst_every=2):
    """Open `count` connections at once, send half a request on each, then
    close them (every other one with RST). Returns how many got connected."""
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((srv.host, srv.port))
        sel.register(s, selectors.EVENT_WRITE)
        socks.append(s)
    done = 0
    deadline = time.monotonic() + 20
    while done < count and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            sel.unregister(s)
            done += 1
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                try:
                    s.send(b"GET /live.mp3 HT" if done % 2 else b"SOURCE /x.mp3 HTTP/1.0\r\nAuthor")
                except OSError:
                    pass
    sel.close()
    connected = 0
    for i, s in enumerate(socks):
        try:
            s.getpeername()
            connected += 1
        except OSError:
            pass
        if i % rst_every:
            wirelib.set_linger_rst(s)
        s.close()
    return connected


def test_500_connections_aborted_mid_request(env):
    srv, lis = env
    connected = sum(_abort_batch(srv, 100) for _ in range(5))
    assert connected >= 400, "only %d of 500 connections were accepted" % connected
    assert_server_healthy(srv, lis)
    # a fresh listener is still served
    fresh = srv.listener("/live.mp3")
    assert fresh.open().status == 200
    fresh.wait_bytes(4096, 5)
    fresh.close()


# Common log format + "referer" "agent" seconds; quoted fields may carry \" escapes.
QUOTED = rb'"(?:[^"\\]|\\.)*"'
CLF = re.compile(rb'^\S+ \S+ \S+ \[[^\]]+\] ' + QUOTED + rb' \d{3} \d+ ' + QUOTED + rb' ' +
                 QUOTED + rb' \d+$')


def test_log_lines_escape_control_bytes_and_quotes(env):
    srv, lis = env
    marker = b"MARK%d" % int(time.time() * 1000)
    requests = [
        b"GET /live.mp3%0d%0a" + marker + b'"q\x1b[31m HTTP/1.0\r\nUser-Agent: ua"%0d%0a\x01\x7f\tx\r\n\r\n',
        b"GET /nope%0D%0A" + marker + b'"q" HTTP/1.0\r\nUser-Agent: ' + marker +
        b'"\x02"\r\nReferer: r\x03"e\r\n\r\n',
    ]
    for raw in requests:
        send_and_answer(srv, raw, timeout=5)
    def entries():
        return [ln for ln in srv.access_log_bytes().split(b"\n") if marker in ln]
    wirelib.wait_until(lambda: len(entries()) >= len(requests), 5, "access log entries")
    access = srv.access_log_bytes()
    for ln in access.split(b"\n"):
        if not ln:
            continue
        assert not re.search(rb"[\x00-\x08\x0a-\x1f]", ln), "raw control byte in access.log: %r" % ln
        if not IS_ICECAST:
            assert b"\x7f" not in ln and b"\t" not in ln, ln
        assert CLF.match(ln), "not one well-formed access.log entry: %r" % ln
    # nothing was split into extra lines starting with our marker
    assert not any(ln.startswith(marker) for ln in access.split(b"\n"))
    with open(srv.error_log_path, "rb") as f:
        err = f.read()
    for ln in err.split(b"\n"):
        assert not re.search(rb"[\x00-\x08\x0a-\x1f]", ln), "raw control byte in error.log: %r" % ln
        assert not ln.startswith(marker), "error.log line injected: %r" % ln
    assert_server_healthy(srv, lis)
