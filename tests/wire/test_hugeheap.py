# SPDX-License-Identifier: GPL-2.0-or-later
"""The workers' heaps on transparent huge pages (core/hugeheap.c): the state of a worker's
connections is touched a few lines at a time every few hundred ms, and on 4 KB pages nearly each
touch also misses the TLB (docs/PERFORMANCE.md, "The heap on huge pages"). Where the kernel
offers huge pages to marked memory, the server marks its workers' heaps and they fill with huge
pages as connections come, past the first 16 MB a worker too (the further heaps glibc opens
past 64 MB: tests/unit/test_hugeheap.c), all but the first 2 MB of each heap, which stay on small
pages; a process started with huge pages turned off gets none."""
import os
import socket

import pytest

import wirelib
from conftest import note

CONNS = 800  # about 13 KB of state each: over 2 MB in each worker's heap

pytestmark = [
    pytest.mark.rimecast_only,
    pytest.mark.skipif("ASAN_OPTIONS" in os.environ,
                       reason="AddressSanitizer's allocator: the heaps are not glibc's"),
    pytest.mark.skipif(wirelib.thp_mode() not in ("always", "madvise"),
                       reason="the kernel offers no transparent huge pages to marked memory"),
]


def hold_connections(srv, n):
    """n connections, each with a request head sent but for its last line: the server reads it
    (a worker allocates the connection's state, its request and its read buffer) and waits for
    the rest. Returns once the server has read every byte of every one."""
    socks = []
    for _ in range(n):
        s = socket.create_connection((srv.host, srv.port), timeout=10)
        s.sendall(b"GET /live.mp3 HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n")
        socks.append(s)
    ports = {s.getsockname()[1] for s in socks}
    wirelib.wait_until(lambda: wirelib.server_unread(srv.port, ports) == 0, 30,
                       "%d request heads read" % n, interval=0.2)
    return socks


def test_worker_heaps_fill_with_huge_pages(server):
    srv = server(clients=CONNS + 50)
    srv.wait_log("transparent huge pages")
    before = wirelib.proc_smaps_kb(srv.pid, "AnonHugePages")
    socks = hold_connections(srv, CONNS)
    try:
        huge = wirelib.proc_smaps_kb(srv.pid, "AnonHugePages")
        assert huge >= before + 2048, "%d KB of the server's memory on huge pages (%d before)" % (
            huge, before)
    finally:
        for s in socks:
            s.close()


def test_a_process_with_huge_pages_turned_off_gets_none(server):
    srv = server(start=False, clients=CONNS + 50)
    srv.preexec_fn = wirelib.no_huge_pages
    srv.start()
    socks = hold_connections(srv, CONNS)
    try:
        assert wirelib.proc_smaps_kb(srv.pid, "AnonHugePages") == 0
        assert "transparent huge pages" not in srv.error_log()
    finally:
        for s in socks:
            s.close()


def test_state_past_the_first_heap_is_on_huge_pages_too(server):
    """12 000 connections' state (about 7 KB each) runs each worker's heap far past the 16 MB a
    worker had on huge pages when its heap was grown once at its start: the heaps are opened
    whole, so nearly all of that growth is on huge pages, not 16 MB a worker of it."""
    n = 12000
    srv = server(clients=n + 50)
    srv.wait_log("transparent huge pages")
    rss0 = wirelib.proc_smaps_kb(srv.pid, "Rss")
    huge0 = wirelib.proc_smaps_kb(srv.pid, "AnonHugePages")
    socks = hold_connections(srv, n)
    try:
        grown = wirelib.proc_smaps_kb(srv.pid, "Rss") - rss0
        huge = wirelib.proc_smaps_kb(srv.pid, "AnonHugePages") - huge0
        assert grown > 60 * 1024, "the state of %d connections: %d KB" % (n, grown)
        note("%d KB of %d KB grown on huge pages" % (huge, grown))
        assert huge >= 0.8 * grown, "%d KB of %d KB grown on huge pages" % (huge, grown)
    finally:
        for s in socks:
            s.close()


HEAP = 64 << 20  # glibc's thread heap on a 64-bit machine, aligned to its size
LEAD = 2 << 20   # HUGEHEAP_LEAD: the start of each heap left on small pages


def smaps_mappings(pid):
    """(lo, hi, marked for huge pages, AnonHugePages KB) of each mapping of /proc/PID/smaps."""
    out, cur = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                cur = [lo, hi, False, 0]
                out.append(cur)
            elif head == "AnonHugePages:":
                cur[3] = int(line.split()[1])
            elif head == "VmFlags:":
                cur[2] = " hg" in line
    return out


def test_a_heaps_first_2_mb_stay_on_small_pages(server):
    """A worker holding little state is resident by what it uses, not by a 2 MB huge page: each
    marked heap's first 2 MB are a mapping of their own, not marked, with no huge page in them
    (docs/PERFORMANCE.md, "Every goal in one afternoon's runs"), and past them the heap is
    marked."""
    srv = server(clients=CONNS + 50)
    srv.wait_log("transparent huge pages")
    socks = hold_connections(srv, CONNS)
    try:
        maps = smaps_mappings(srv.pid)
        heaps = sorted({lo & ~(HEAP - 1) for lo, hi, hg, _ in maps if hg})
        assert heaps, "no mapping of the server marked for huge pages"
        for base in heaps:
            lead = [m for m in maps if m[0] < base + LEAD and m[1] > base]
            assert [(m[0], m[1]) for m in lead] == [(base, base + LEAD)], \
                "the heap at %#x: its first 2 MB are not a mapping of their own" % base
            assert not lead[0][2] and lead[0][3] == 0, \
                "the heap at %#x: its first 2 MB are marked or on a huge page" % base
            assert any(m[2] and m[0] == base + LEAD for m in maps), \
                "the heap at %#x is not marked past its first 2 MB" % base
    finally:
        for s in socks:
            s.close()
