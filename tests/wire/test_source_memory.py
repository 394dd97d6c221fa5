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
    # the server reads without being asked anything: no request of ours adds to its heap
    wirelib.wait_until(lambda: wirelib.server_unread(srv.port, ports) == 0, 30,
                       "%d sources read" % len(names), interval=0.2)
    return sources


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
    rss0 = wirelib.proc_smaps_kb(srv.pid, "Rss")
    # one byte short of a block: the bytes wait gathered for more, then (the source quiet) go
    # out as a block of their size
    kept += open_sources(srv, ["/waiting%d" % i for i in range(n)], BLOCK - 1)
    rss1 = wirelib.proc_smaps_kb(srv.pid, "Rss")
    # a whole block: it goes to the queue at once and nothing is left gathered
    kept += open_sources(srv, ["/emitted%d" % i for i in range(n)], BLOCK)
    rss2 = wirelib.proc_smaps_kb(srv.pid, "Rss")
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
