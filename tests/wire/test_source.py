# SPDX-License-Identifier: GPL-2.0-or-later
"""Source protocol: PUT / SOURCE login, auth, limits, timeouts, header mapping."""

import os
import socket
import threading
import time

import pytest

import adminlib
import wirelib
from conftest import IS_ICECAST


def test_put_with_basic_auth_is_accepted(server):
    srv = server()
    src = srv.source("/m.mp3")
    resp = src.connect()
    assert resp.status == 200, resp
    assert src.continue_response is None
    src.close()


def test_put_with_expect_100_continue_gets_100_then_200(server):
    srv = server()
    src = srv.source("/m.mp3", expect=True)
    resp = src.connect()
    assert src.continue_response is not None, "no interim response"
    assert src.continue_response.status_line.startswith("HTTP/1.1 100")
    assert resp.status == 200, resp
    src.close()


def test_legacy_source_method_is_accepted(server):
    srv = server()
    src = srv.source("/m.mp3", method="SOURCE")
    assert src.connect().status == 200
    src.close()


def test_wrong_password_gets_401_with_basic_challenge(server):
    srv = server()
    resp = srv.source("/m.mp3", password="wrong").connect()
    assert resp.status == 401, resp
    assert resp.header("WWW-Authenticate", "").startswith("Basic")


def test_missing_authorization_gets_401(server):
    srv = server()
    resp = srv.source("/m.mp3", auth=False).connect()
    assert resp.status == 401, resp
    assert resp.header("WWW-Authenticate", "").startswith("Basic")


def test_mount_in_use_gets_403(server):
    srv = server()
    first = srv.source("/m.mp3")
    assert first.connect().status == 200
    second = srv.source("/m.mp3")
    assert second.connect().status == 403
    # the first source keeps its mount
    first.send_now(b"x" * 4096)
    lis = srv.listener("/m.mp3")
    assert lis.open().status == 200
    lis.close()
    first.close()


def test_sources_limit_gets_403(server):
    srv = server(sources=2)
    a = srv.source("/a.mp3")
    b = srv.source("/b.mp3")
    assert a.connect().status == 200
    assert b.connect().status == 200
    c = srv.source("/c.mp3")
    assert c.connect().status == 403
    a.close()
    b.close()


def test_per_mount_credentials_replace_the_global_password(server):
    srv = server(mounts=[dict(mount_name="/own.mp3", username="dj", password="djpw")])
    own = srv.source("/own.mp3", user="dj", password="djpw")
    assert own.connect().status == 200
    own.close()
    # like Icecast 2.4: the mount's own credentials replace the global ones there ...
    wirelib.wait_until(lambda: srv.source("/own.mp3", user="source").connect().status == 401,
                       5, "global password refused on a mount with its own password")
    # ... and do not open other mounts
    assert srv.source("/other.mp3", user="dj", password="djpw").connect().status == 401
    assert srv.source("/other.mp3").connect().status == 200


def test_malformed_source_request_is_rejected(server):
    srv = server()
    resp, body = wirelib.simple_request(srv.host, srv.port, b"PUT\r\n\r\n", timeout=3)
    if IS_ICECAST:
        assert resp is None or resp.status >= 400
    else:
        assert resp is not None and resp.status == 400, resp
    assert srv.is_alive()


@pytest.mark.rimecast_only
def test_malformed_request_line_gets_400(server):
    srv = server()
    resp, _ = wirelib.simple_request(srv.host, srv.port, b"PUT /m.mp3\r\n\r\n", timeout=3)
    assert resp is not None and resp.status == 400, resp


def test_source_timeout_drops_silent_source_and_its_listeners(server, data):
    srv = server(source_timeout=2)
    src = srv.source("/quiet.mp3", data, rate=32 * 1024)
    assert src.connect().status == 200
    src.send_now(data[:16384])
    lis = srv.listener("/quiet.mp3")
    assert lis.open().status == 200
    # the source sends nothing more; within source-timeout (+ slack) it is dropped
    lis.wait_closed(8)
    src.sock.settimeout(8)
    try:
        assert src.sock.recv(1) == b""
    except ConnectionResetError:
        pass
    # the mount is free again
    again = srv.source("/quiet.mp3")
    wirelib.wait_until(lambda: again.connect().status == 200 or None, 3, "mount to be free")
    again.close()
    src.close()


def test_listener_headers_mirror_source_headers(server, data):
    srv = server()
    ice = {"ice-name": "Wire Radio", "ice-description": "Test stream",
           "ice-genre": "Noise", "ice-url": "http://example.org/wire",
           "ice-public": "0", "ice-bitrate": "128"}
    src = srv.source("/h.mp3", data, headers=ice, content_type="audio/mpeg", rate=32768)
    assert src.connect().status == 200
    src.start()
    src.wait_sent(4096, 5)
    lis = srv.listener("/h.mp3")
    resp = lis.open()
    assert resp.status == 200
    assert resp.header("Content-Type") == "audio/mpeg"
    assert resp.header("icy-name") == "Wire Radio"
    assert resp.header("icy-description") == "Test stream"
    assert resp.header("icy-genre") == "Noise"
    assert resp.header("icy-url") == "http://example.org/wire"
    assert resp.header("icy-pub") == "0"
    assert resp.header("icy-br") == "128"
    assert "no-cache" in resp.header("Cache-Control", "")
    assert resp.header("Server")
    lis.close()
    src.stop()


def test_source_disconnect_frees_the_mount(server):
    srv = server()
    a = srv.source("/f.mp3")
    assert a.connect().status == 200
    a.sock.shutdown(socket.SHUT_RDWR)
    a.close()
    wirelib.wait_until(lambda: srv.source("/f.mp3").connect().status == 200, 5,
                       "mount to be free after source left")


class Flood:
    """A source that pours a file into its socket with sendfile() as fast as the socket takes
    it: cheaper for the sender than for the server, which copies and parses every byte."""

    def __init__(self, srv, mount, path, size):
        self.src = srv.source(mount)
        assert self.src.connect().status == 200, self.src.response
        self.path, self.size = path, size
        self.sent = 0
        self.error = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        sock = self.src.sock
        sock.setblocking(True)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            while not self.stop.is_set():
                off = 0
                while off < self.size and not self.stop.is_set():
                    n = os.sendfile(sock.fileno(), fd, off, self.size - off)
                    off += n
                    self.sent += n
        except OSError as e:
            if not self.stop.is_set():
                self.error = e
        finally:
            os.close(fd)

    def close(self):
        self.stop.set()
        self.src.sock.shutdown(socket.SHUT_RDWR)   # wakes the sender if it is blocked
        self.thread.join(10)
        self.src.sock.close()


@pytest.mark.rimecast_only
def test_flooding_sources_do_not_hold_their_worker(server, data, tmp_path):
    """Sources sending as fast as their sockets allow are read in bounded slices: on a single
    worker, another mount's listener still gets its data on time and admin still answers."""
    srv = server(workers=1)
    paced = srv.source("/paced.mp3", data, rate=32 * 1024, chunk=1024, loop=True)
    assert paced.connect().status == 200
    paced.start()
    lis = srv.listener("/paced.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(8192, 5)

    path = str(tmp_path / "flood.bin")
    with open(path, "wb") as f:
        f.write(data)
    floods = [Flood(srv, "/flood%d.mp3" % i, path, len(data)) for i in range(4)]
    try:
        wirelib.wait_until(lambda: all(f.sent >= 4 * len(data) or f.error for f in floods), 20,
                           "every flood to be under way")
        # a second of the paced mount, with a second to spare; admin within a quarter of a second
        start = lis.received
        lis.wait_bytes(start + 32 * 1024, 2)
        for _ in range(20):
            t0 = time.monotonic()
            r = adminlib.admin(srv, "/admin/stats", timeout=10)
            took = time.monotonic() - t0
            assert r.status == 200
            assert took < 0.25, "admin answered after %.2fs" % took
        poured = [f.sent for f in floods]
        wirelib.wait_until(lambda: all(f.sent > p for f, p in zip(floods, poured)), 5,
                           "the floods to be read on")
        assert all(f.error is None for f in floods) and not lis.closed
    finally:
        for f in floods:
            f.close()
        lis.close()
        paced.stop()
