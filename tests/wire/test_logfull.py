# SPDX-License-Identifier: GPL-2.0-or-later
"""A log that cannot be written (disk full): streaming goes on at full speed, the failure is said
once on stderr, and once in the error log when writes succeed again."""

import os
import signal
import time

import pytest

import conftest
import wirelib
from conftest import assert_server_healthy

pytestmark = pytest.mark.rimecast_only


def test_access_log_on_a_full_disk_never_stops_streaming_and_is_reported_once(server):
    srv = server(start=False)
    access = srv.access_log_path
    srv.cfg["port"] = conftest.free_port()
    # every write: ENOSPC (named in the config: a log is never opened through a symlink)
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "<accesslog>access.log</accesslog>", "<accesslog>/dev/full</accesslog>"))
    assert srv._spawn(10), srv.diagnostics()
    data = wirelib.make_data(1 << 20, seed=5)
    src = srv.source("/live.mp3", data, rate=64 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    lis = srv.listener("/live.mp3", keep=0)
    assert lis.open().status == 200
    # many short clients: each one is an access-log line that fails
    for _ in range(30):
        short = srv.listener("/live.mp3", keep=0)
        assert short.open().status == 200
        short.close()
    got = lis.received
    time.sleep(2.0)
    assert lis.received - got >= 64 * 1024, "the listener got %d bytes in 2 s" % (lis.received - got)
    assert srv.stderr().count("log write failed") == 1

    # space returns: a real file again, opened on SIGHUP; the next access line goes through
    srv.write_config()
    srv.send_signal(signal.SIGHUP)
    wirelib.wait_until(lambda: os.path.exists(access), 5, "the access log to be reopened")
    short = srv.listener("/live.mp3", keep=0)
    assert short.open().status == 200
    short.close()
    srv.wait_log("log write failed: the access log could not be written")
    assert srv.error_log().count("log write failed") == 1
    assert srv.stderr().count("log write failed") == 1
    assert_server_healthy(srv, lis)
