# SPDX-License-Identifier: GPL-2.0-or-later
"""Failures injected at named points (src/core/fault.h).

Only a binary configured with --enable-fault-injection has the points (its --version lists
them; ./dev.sh test builds the ASan/UBSan one so); with any other binary these tests skip.
RIMECAST_FAULT=point:N in the daemon's environment makes the Nth pass through a point fail as
if out of memory.
"""

import re
import socket
import subprocess
import time

import pytest

import formatlib
import wirelib
from conftest import BINARY


def _fault_points():
    try:
        out = subprocess.run([BINARY, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    m = re.search(r"^fault injection: (.*)$", out, re.M)
    return m.group(1).split() if m else []


POINTS = _fault_points()

pytestmark = pytest.mark.rimecast_only


def _answer(sock, timeout=5.0, limit=1 << 20):
    """What the server sends until it closes, at most timeout seconds or limit bytes:
    (bytes, closed)."""
    deadline = time.monotonic() + timeout
    buf = b""
    while len(buf) < limit:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, BrokenPipeError):
            return buf, True
        if not chunk:
            return buf, True
        buf += chunk
    return buf, False


def _needs(point):
    if point not in POINTS:
        pytest.skip("%s has no fault point %s (configure --enable-fault-injection)"
                    % (BINARY, point))


def test_a_listener_whose_head_cannot_be_queued_gets_an_error_never_headless_audio(
        server, data, monkeypatch):
    _needs("listener_head")
    monkeypatch.setenv("RIMECAST_FAULT", "listener_head:2")  # the second listener's head
    srv = server()
    src = srv.source("/live.mp3", data, rate=32 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    src.wait_sent(8192, 5)
    first = srv.listener("/live.mp3")
    assert first.open().status == 200
    first.wait_bytes(16384, 5)

    # the failing start: a 500 page, or a close with nothing at all; never stream bytes
    sock = wirelib.connect(srv.host, srv.port)
    sock.sendall(b"GET /live.mp3 HTTP/1.0\r\nHost: x\r\n\r\n")
    raw, closed = _answer(sock)
    sock.close()
    assert not raw or raw.startswith(b"HTTP/1."), \
        "%d bytes without an HTTP head: %r" % (len(raw), raw[:64])
    assert closed, "still open after %d bytes" % len(raw)
    if raw:
        head, _, body = raw.partition(b"\r\n\r\n")
        assert wirelib.parse_head(head).status == 500, raw[:200]
        assert not body or (len(body) < 4096 and data.find(body[:64]) < 0), \
            "stream bytes after the 500"

    # the slot was given back, the first listener goes on, the next one starts as usual
    third = srv.listener("/live.mp3")
    assert third.open().status == 200
    assert third.response.header("Content-Type") == "audio/mpeg"
    third.wait_bytes(32768, 5)
    wirelib.locate_slice(data, third.snapshot())
    more = first.received + 32768
    first.wait_bytes(more, 5)
    wirelib.locate_slice(data, first.snapshot())
    wirelib.wait_until(lambda: formatlib.stats_source(srv, "/live.mp3").findtext("listeners")
                       == "2", 5, "two listeners counted")
    assert "fault injection armed: RIMECAST_FAULT=listener_head:2" in srv.stderr()
    first.close()
    third.close()
    src.stop()


def test_a_mount_is_found_only_whole_by_a_listener_on_another_worker(server, monkeypatch):
    """A mount is built whole, then published: held right after it became findable (the
    source's worker asleep there), an Ogg mount already answers a listener on the other worker
    as Ogg (no icy-metaint, even when asked for). Before, the mount was published first and
    told it was Ogg afterwards: a listener in that window got an ICY interval on Ogg."""
    _needs("mount_published")
    monkeypatch.setenv("RIMECAST_FAULT", "mount_published:1")
    srv = server(workers=2)
    src = socket.create_connection((srv.host, srv.port), timeout=5)
    src.sendall(b"PUT /held.ogg HTTP/1.1\r\nHost: x\r\nContent-Type: application/ogg\r\n"
                b"Authorization: %s\r\n\r\n"
                % wirelib.basic_auth("source", "hackme").encode())
    sent = time.monotonic()
    answered, held = [], []
    while time.monotonic() - sent < 1.0 and not answered:
        s = wirelib.connect(srv.host, srv.port)
        s.sendall(b"GET /held.ogg HTTP/1.0\r\nHost: x\r\nIcy-MetaData: 1\r\n\r\n")
        try:
            head, _ = wirelib.read_head(s, 0.3)
        except (socket.timeout, wirelib.WaitTimeout):
            held.append(s)        # on the held worker: answered after the hold
            continue
        if head is not None and head.status == 200:
            answered.append(head)
        s.close()
    # the source is answered only once the hold is over: the listener came inside the window
    src.settimeout(5)
    assert src.recv(64).startswith(b"HTTP/1.0 200"), "source refused"
    assert time.monotonic() - sent >= 1.0
    assert answered, "no listener found the mount on the other worker during the hold"
    for head in answered:
        assert head.header("icy-metaint") is None, head
        assert head.header("Content-Type") == "application/ogg", head
    for s in held:
        s.close()
    src.close()
