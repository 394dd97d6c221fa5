# SPDX-License-Identifier: GPL-2.0-or-later
"""Requests read ahead (src/net/read_ahead.h): when a loop turn finds several connections
with a request waiting, their reads go to the worker's io_uring and are entered in one system
call before the handlers run. Whatever the timing, every request is answered as it would be
without: whole ones, pipelined ones, heads split across reads, and a peer that ends its side
after its request. The batches are counted in /metrics; a build without liburing, or a worker
whose ring the kernel refuses, reads each request itself."""

import re
import socket
import subprocess
import time

import pytest

import wirelib
from adminlib import admin, parse_prometheus
from conftest import BINARY
from test_faults import POINTS

pytestmark = pytest.mark.rimecast_only

PEERS = 48
REQUEST = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
ROUNDS = 50  # rounds of sending to every peer at once, until a turn has read two or more


def _built_with_read_ahead():
    try:
        out = subprocess.run([BINARY, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return re.search(r"^read ahead: io_uring$", out, re.M) is not None


def _reads_ahead(srv):
    fams = parse_prometheus(admin(srv, "/metrics").text)
    (_, _, reads), = fams["rimecast_worker_reads_ahead_total"]["samples"]
    (_, _, enters), = fams["rimecast_worker_read_ahead_enters_total"]["samples"]
    return reads, enters


def _answers(sock, count, timeout=10.0):
    """Reads count whole /health answers (head and Content-Length body) from sock: their
    status lines; fails on a close or a timeout before."""
    buf, out = b"", []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = buf[:end].decode("latin-1")
            m = re.search(r"(?im)^content-length:\s*(\d+)\s*$", head)
            assert m, head
            total = end + 4 + int(m.group(1))
            if len(buf) >= total:
                assert '"state"' in buf[end + 4:total].decode("latin-1"), buf[:total]
                out.append(head.split("\r\n", 1)[0])
                buf = buf[total:]
                continue
        left = deadline - time.monotonic()
        assert left > 0, "%d of %d answers within %.0f s" % (len(out), count, timeout)
        sock.settimeout(left)
        chunk = sock.recv(65536)
        assert chunk, "closed after %d of %d answers" % (len(out), count)
        buf += chunk
    assert not buf, "more than asked: %r" % buf[:80]
    return out


def _peers(srv):
    return [wirelib.connect(srv.host, srv.port) for _ in range(PEERS)]


def _round(peers, parts):
    """Each part is sent to every peer in turn (all of the first, then all of the second...):
    a worker woken by the first finds most of the others' bytes waiting in the same turn."""
    for part in parts:
        for s in peers:
            s.sendall(part)


def _batched_rounds(srv, peers, parts, per_round):
    """Rounds of parts until the server read two or more in one turn; every answer checked."""
    before = _reads_ahead(srv)
    for _ in range(ROUNDS):
        _round(peers, parts)
        for s in peers:
            assert _answers(s, per_round) == ["HTTP/1.0 200 OK"] * per_round
        now = _reads_ahead(srv)
        if now[1] > before[1]:
            return now[0] - before[0], now[1] - before[1]
    return 0, 0


@pytest.mark.skipif(not _built_with_read_ahead(), reason="built without liburing")
def test_requests_arriving_together_are_read_in_one_call_and_all_answered(server):
    srv = server(workers=1)
    peers = _peers(srv)
    try:
        # whole requests
        reads, enters = _batched_rounds(srv, peers, [REQUEST], 1)
        assert enters >= 1 and reads >= 2 * enters, (reads, enters)
        # two pipelined in one write: both answered, in order, by the read ahead's bytes
        reads, enters = _batched_rounds(srv, peers, [REQUEST + REQUEST], 2)
        assert enters >= 1, "no turn read two pipelined requests ahead"
        # a head split in two: the first half read ahead is kept, the second completes it
        half = len(REQUEST) // 2
        reads, enters = _batched_rounds(srv, peers, [REQUEST[:half], REQUEST[half:]], 1)
        assert enters >= 1, "no turn read split heads ahead"
    finally:
        for s in peers:
            s.close()


@pytest.mark.skipif(not _built_with_read_ahead(), reason="built without liburing")
def test_a_request_read_ahead_with_the_end_of_its_stream_is_answered_then_closed(server):
    srv = server(workers=1)
    before = _reads_ahead(srv)
    for _ in range(ROUNDS):
        peers = _peers(srv)
        for s in peers:  # the request and the peer's end of stream arrive together
            s.sendall(REQUEST)
            s.shutdown(socket.SHUT_WR)
        for s in peers:
            assert _answers(s, 1) == ["HTTP/1.0 200 OK"]
            s.settimeout(5)
            assert s.recv(1) == b"", "still open after its answer and its end of stream"
            s.close()
        if _reads_ahead(srv)[1] > before[1]:
            break
    else:
        pytest.fail("no turn read two requests with their ends of stream ahead")


def test_a_worker_refused_its_ring_reads_each_request_itself(server, monkeypatch):
    if "read_ahead_ring" not in POINTS:
        pytest.skip("%s has no fault point read_ahead_ring "
                    "(configure --enable-fault-injection, with liburing)" % BINARY)
    monkeypatch.setenv("RIMECAST_FAULT", "read_ahead_ring:1")
    srv = server(workers=1)
    peers = _peers(srv)
    warned = []
    try:
        # until a turn with two requests to read asked for the ring, then as many again
        for r in range(ROUNDS):
            _round(peers, [REQUEST + REQUEST])
            for s in peers:
                assert _answers(s, 2) == ["HTTP/1.0 200 OK"] * 2
            warned = [l for l in srv.error_log().splitlines() if "io_uring setup" in l]
            if warned and r >= 10:
                break
        assert _reads_ahead(srv) == (0, 0)
    finally:
        for s in peers:
            s.close()
    assert len(warned) == 1, warned
    assert "requests are read one system call each" in warned[0]
