# SPDX-License-Identifier: GPL-2.0-or-later
"""What a source holds in memory besides its queue: the bytes waiting to make a block, as they
are, and nothing once they made one (no block's room kept for the source's life)."""
import os

import pytest

import wirelib
from conftest import note

BLOCK = 4096  # a whole gathered block: emitted at once


def open_sources(srv, names, nbytes):
    """Sources on the given mounts, each sending nbytes of silence (no frames to follow) and
    then nothing; returns once the server has read every byte of every one."""
    sources = []
    for name in names:
        s = srv.source(name, b"", content_type="audio/aac")
        assert s.connect().status == 200, s.response
        s.send_now(b"\0" * nbytes)
        sources.append(s)

    ports = {s.sock.getsockname()[1] for s in sources}
    ports_seen = set()

    def all_read():  # the server's ends of these connections have nothing left unread
        unread = 0
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                fields = line.split()
                if (int(fields[1].split(":")[1], 16) == srv.port
                        and int(fields[2].split(":")[1], 16) in ports):
                    ports_seen.add(int(fields[2].split(":")[1], 16))
                    unread += int(fields[4].split(":")[1], 16)
        return len(ports_seen) == len(ports) and unread == 0
    # the server reads without being asked anything: no request of ours adds to its heap
    wirelib.wait_until(all_read, 30, "%d sources read" % len(names), interval=0.2)
    return sources


def rss_kb(pid):
    """The server's resident memory, counted from its page tables (VmRSS in /proc/PID/status
    may lag by a few hundred KB per thread)."""
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Rss:"):
                return int(line.split()[1])
    raise AssertionError("no Rss in smaps_rollup")


@pytest.mark.rimecast_only
@pytest.mark.skipif("ASAN_OPTIONS" in os.environ,
                    reason="RSS says nothing of the heap under ASan (quarantine, shadow)")
def test_a_source_whose_bytes_made_a_block_holds_no_gathering_room(server):
    n = 150
    # resident memory by the page, not by the 2 MB of a worker heap's huge pages
    srv = server(start=False, sources=2 * n + 10, clients=2 * n + 50)
    srv.preexec_fn = wirelib.no_huge_pages
    srv.start()
    kept = open_sources(srv, ["/warm%d" % i for i in range(10)], BLOCK)  # first-use costs
    rss0 = rss_kb(srv.pid)
    # one byte short of a block: the bytes wait gathered for more, then (the source quiet) go
    # out as a block of their size
    kept += open_sources(srv, ["/waiting%d" % i for i in range(n)], BLOCK - 1)
    rss1 = rss_kb(srv.pid)
    # a whole block: it goes to the queue at once and nothing is left gathered
    kept += open_sources(srv, ["/emitted%d" % i for i in range(n)], BLOCK)
    rss2 = rss_kb(srv.pid)
    waiting, emitted = (rss1 - rss0) / n, (rss2 - rss1) / n
    note("per source: %.2f KB with its bytes gathered, %.2f KB with them in a block"
         % (waiting, emitted))
    try:
        # the same mount, connection and one block's bytes each: in the queue or gathered
        assert emitted < waiting + 1.5, (
            "a source holds %.1f KB with its block emitted, %.1f KB with it gathered"
            % (emitted, waiting))
    finally:
        for s in kept:
            s.close()
