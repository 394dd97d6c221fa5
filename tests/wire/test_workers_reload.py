# SPDX-License-Identifier: GPL-2.0-or-later
"""<workers> changed on SIGHUP, without a restart and without dropping anyone.

More workers: new worker threads start and accept; listeners already streaming keep receiving
with no gap beyond the write window. Fewer: the surplus workers stop accepting at once, serve
their listeners until those leave (new clients are served by the others), and their threads
end once they have no connection left; a worker count raised again starts a drained slot
anew. The count is read from the worker threads' names (/proc/PID/task/TID/comm) and from
/metrics (rimecast_workers, rimecast_workers_draining).
"""

import os
import pwd
import re
import signal
import threading
import time

import pytest

import wirelib
from adminlib import admin, family_sum, parse_prometheus
from conftest import assert_server_healthy

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live.mp3"


def worker_threads(pid):
    n = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                n += f.read().startswith("worker-")
        except OSError:
            pass                # the thread ended meanwhile
    return n


def gauges(srv):
    fams = parse_prometheus(admin(srv, "/metrics").text)
    return (int(fams["rimecast_workers"]["samples"][0][2]),
            int(fams["rimecast_workers_draining"]["samples"][0][2]))


def reload(srv, workers):
    srv.write_config(workers=workers)
    before = srv.error_log().count("config reloaded")
    srv.send_signal(signal.SIGHUP)
    wirelib.wait_until(lambda: srv.error_log().count("config reloaded") > before, 5,
                       "the reload")


class GapListener(wirelib.Listener):
    """Records the longest pause between two arrivals while `watch` is set."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.last = None
        self.longest = 0.0
        self.watch = threading.Event()

    def _add(self, chunk):
        now = time.monotonic()
        if self.watch.is_set() and self.last is not None:
            self.longest = max(self.longest, now - self.last)
        self.last = now
        super()._add(chunk)


def open_listeners(srv, n, cls=wirelib.Listener):
    out = []
    for _ in range(n):
        lis = cls(srv.host, srv.port, MOUNT)
        assert lis.open().status == 200
        out.append(lis)
    for lis in out:
        lis.wait_bytes(4096, 5)
    return out


def as_nobody():
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


@pytest.mark.parametrize("started_as", ["root", "nobody"])
def test_workers_grow_and_drain_on_reload(server, data, started_as):
    """Started as root (privileges dropped after binding), an added worker shares a start-up
    socket and the kernel picks which worker accepts; started as the unprivileged user, an
    added worker opens its own SO_REUSEPORT socket and new connections are spread over all."""
    if started_as == "nobody" and os.geteuid() != 0:
        pytest.skip("needs root to start the server as nobody")
    srv = server(start=False, workers=1)
    if started_as == "nobody":
        srv.preexec_fn = as_nobody
    srv.start()
    src = srv.source(MOUNT, data, rate=64 * 1024)
    assert src.connect().status == 200
    src.start()
    listeners = []
    try:
        src.wait_sent(16384, 5)
        pid = srv.pid
        assert worker_threads(pid) == 1
        assert gauges(srv) == (1, 0)
        old = open_listeners(srv, 4, GapListener)
        listeners += old
        for lis in old:
            lis.watch.set()

        # more workers: started, accepting, nobody interrupted
        reload(srv, 3)
        wirelib.wait_until(lambda: worker_threads(pid) == 3, 5, "3 worker threads")
        wirelib.wait_until(lambda: gauges(srv) == (3, 0), 5, "3 workers in /metrics")
        assert "restart" not in srv.error_log().split("SIGHUP")[-1]
        for lis in old:
            assert_server_healthy(srv, lis, more=16384)
            lis.watch.clear()
            # the default write window is 500 ms: a pass every half second at most
            assert lis.longest < 1.5, "listener paused %.2f s across the reload" % lis.longest
        # new clients are served; a worker added by a reload may share worker 0's listen
        # socket (a port opened as root cannot be opened again once privileges are dropped),
        # so how they spread over the workers is the kernel's choice: enough of them that the
        # added workers get some
        new = open_listeners(srv, 30)
        listeners += new

        # fewer workers: 1 and 2 stop accepting; one with connections keeps them streaming,
        # one without ends at once
        reload(srv, 1)
        counts = wirelib.wait_until(
            lambda: dict(re.findall(r"worker ([12]): draining \(no longer accepting; (\d+) conn",
                                    srv.error_log())) if srv.error_log().count(": draining (") >= 2
            else None, 5, "workers 1 and 2 to start draining")
        busy = sum(int(n) > 0 for n in counts.values())
        if started_as == "nobody":   # 30 connections hashed over 3 sockets
            assert busy == 2, "an added worker got no listener: %s" % counts
        wirelib.wait_until(lambda: gauges(srv) == (1, busy), 5,
                           lambda: "1 worker, %d draining (now %s); log:\n%s"
                           % (busy, gauges(srv), "\n".join(srv.error_log().splitlines()[-12:])))
        assert worker_threads(pid) == 1 + busy   # those with listeners still serve them
        later = open_listeners(srv, 3)           # accepted by worker 0
        listeners += later
        for lis in old + new + later:
            assert_server_healthy(srv, lis)

        # the drained workers end once their connections are gone
        for lis in old + new:
            lis.close()
        wirelib.wait_until(lambda: worker_threads(pid) == 1, 10, "the drained threads to end")
        wirelib.wait_until(lambda: gauges(srv) == (1, 0), 5, "no worker draining")
        assert srv.wait_log("worker 1: drained, its thread ends")
        assert srv.wait_log("worker 2: drained, its thread ends")
        for lis in later:
            assert_server_healthy(srv, lis)

        # a drained slot starts again; a worker with nothing to serve ends at once
        reload(srv, 2)
        wirelib.wait_until(lambda: worker_threads(pid) == 2, 5, "worker 1 started again")
        assert srv.wait_log("worker 1: started again")
        again = open_listeners(srv, 6)
        listeners += again
        for lis in later + again:
            assert_server_healthy(srv, lis)
        for lis in again:
            lis.close()
        reload(srv, 1)
        wirelib.wait_until(lambda: worker_threads(pid) == 1, 10, "worker 1 to end again")
        wirelib.wait_until(lambda: gauges(srv) == (1, 0), 5, "one worker")
        for lis in later:
            assert_server_healthy(srv, lis)
        st = parse_prometheus(admin(srv, "/metrics").text)
        assert family_sum(st, "rimecast_listeners") == len(later)
    finally:
        for lis in listeners:
            lis.close()
        src.stop()
