# SPDX-License-Identifier: GPL-2.0-or-later
"""Relays through an origin's restart.

An edge that lost its upstream holds its mount, and its listeners, for a 30 s grace period;
its retries meanwhile come at least every 2 s (+-20 %), so an origin back within the grace
period gets the listeners back: they keep their connection and receive the restarted
source's audio a few seconds after it returns. A slave whose master was away past the grace
period has its mounts back as soon as the master answers its stream list again, instead of
each relay waiting out a backoff of up to a minute. The times are recorded as measurements.
"""

import time

import pytest

import formatlib
import wirelib
from conftest import SOURCE_PASSWORD, note
from test_relay import relay_xml, start_origin
from test_upstream_trust import master_xml

pytestmark = pytest.mark.rimecast_only


def restart(srv):
    """Starts a stopped server again on its port (the edge's config names it)."""
    srv.stopped = False
    assert srv._spawn(10), "origin did not start again\n" + srv.diagnostics()


def source_again(origin, mount, data):
    src = origin.source(mount, data, rate=32 * 1024)
    assert src.connect().status == 200
    src.start()
    return src


def wait_for_new_audio(lis, data, since, timeout):
    """Waits until what lis received after byte `since` holds a slice of data."""
    def found():
        tail = lis.snapshot()[since:]
        return len(tail) >= 256 and data.find(tail[-128:-64]) >= 0
    wirelib.wait_until(found, timeout,
                       lambda: "the restarted source's audio (closed=%s)" % lis.closed)


@pytest.mark.slow
def test_an_edge_listener_keeps_its_connection_through_an_origin_restart(server, data):
    origin, src = start_origin(server, None, "/live.mp3", data)
    edge = server(extra_xml=relay_xml(origin, "/live.mp3", "/edge.mp3"))
    formatlib.wait_mount(edge, "/edge.mp3")
    lis = edge.listener("/edge.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(16384, 10)
    src.close()
    origin.stop()
    lost = time.monotonic()
    edge.wait_log("upstream lost, reconnecting")
    # down for 19 s: past the retries at about +1, +3, +7 and +15 s that a doubling backoff
    # makes, and back well within the 30 s grace period
    time.sleep(19)
    restart(origin)
    again = wirelib.make_data(1 << 20, seed=77)
    since = len(lis.snapshot())
    src = source_again(origin, "/live.mp3", again)
    back = time.monotonic()
    wait_for_new_audio(lis, again, since, 10)
    took = time.monotonic() - back
    note("relay recovery: edge listener got audio %.1f s after the origin's source returned "
         "(origin away %.1f s)" % (took, back - lost))
    assert not lis.closed, lis.close_reason
    assert took < 4.5, took
    assert "grace period" not in edge.error_log()
    lis.close()
    src.close()


@pytest.mark.slow
def test_a_slaves_mount_is_back_promptly_after_its_master_returns(server, data):
    master, src = start_origin(server, None, "/m.mp3", data)
    slave = server(extra_xml=master_xml(master.port, interval=1, password=SOURCE_PASSWORD))
    formatlib.wait_mount(slave, "/m.mp3")
    src.close()
    master.stop()
    lost = time.monotonic()
    # away past the grace period: the slave's mount ends, its relay backs off
    slave.wait_log("upstream gone for longer than the grace period", timeout=40)
    time.sleep(max(0.0, 36 - (time.monotonic() - lost)))
    restart(master)
    src = source_again(master, "/m.mp3", data)
    back = time.monotonic()
    formatlib.wait_mount(slave, "/m.mp3", timeout=30)
    took = time.monotonic() - back
    note("relay recovery: slave's mount back %.1f s after its master's source returned "
         "(master away %.1f s)" % (took, back - lost))
    assert took < 4.5, took
    src.close()
