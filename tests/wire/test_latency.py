# SPDX-License-Identifier: GPL-2.0-or-later
"""Low-latency mode (write window 0): the worker that reads a source block writes it to its own
listeners in the same loop turn; it does not wake itself through its eventfd and come back a
turn later. Watched from outside with strace: the writes the daemon makes while a paced source
streams to a listener on the same worker."""

import os
import re
import shutil
import subprocess
import tempfile

import pytest

import wirelib
from conftest import IS_ICECAST, note

pytestmark = pytest.mark.skipif(IS_ICECAST or not shutil.which("strace"),
                                reason="rimecast's loop, watched with strace")

RATE = 64 * 1024
CHUNK = 1024  # one source read, one block, one pass per chunk at window 0


def _traced_writes(srv, listener, more):
    """Runs strace on the daemon until the listener got `more` bytes; returns its output."""
    fd, out = tempfile.mkstemp(prefix="trace.", dir=srv.dir)
    os.close(fd)
    tracer = subprocess.Popen(["strace", "-f", "-y", "-e", "trace=write,writev", "-e",
                               "signal=none", "-o", out, "-p", str(srv.pid)],
                              stderr=subprocess.PIPE, text=True)
    try:
        attached = tracer.stderr.readline()  # "Process N attached with T threads"
        assert "attached" in attached, "strace did not attach: %r" % attached
        start = listener.received
        listener.wait_bytes(start + more, 10)
    finally:
        tracer.terminate()
        tracer.wait(10)
    with open(out) as f:
        return f.read()


def test_at_window_0_a_block_reaches_a_listener_of_the_same_worker_without_an_eventfd_wake(
        server, data):
    srv = server(workers=1, write_window=0)
    src = srv.source("/ll.mp3", data, rate=RATE, chunk=CHUNK)
    assert src.connect().status == 200
    src.start()
    listener = srv.listener("/ll.mp3")
    listener.open()
    try:
        listener.wait_bytes(4 * CHUNK, 5)
        trace = _traced_writes(srv, listener, 32 * CHUNK)
    finally:
        listener.close()
        src.stop()
    passes = len(re.findall(r"^\d+ +writev\(\d+<(?:TCP|socket)", trace, re.M))
    wakes = len(re.findall(r"^\d+ +write\(\d+<anon_inode:\[eventfd\]>", trace, re.M))
    note("%d listener writes, %d eventfd writes while 32 KB streamed" % (passes, wakes))
    assert passes >= 8, "too few listener writes traced:\n%s" % trace[-2000:]
    # one eventfd write per block before: the worker woke itself for each pass
    assert wakes * 10 < passes, "the worker wakes itself for its own passes"
