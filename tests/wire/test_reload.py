# SPDX-License-Identifier: GPL-2.0-or-later
"""SIGHUP applies a changed config to what is running, without dropping anyone.

Covers: a changed <stream-name>/<genre>/<stream-description> of a live mount reaches new
listeners' heads and the stats (and going back to the source's own ice-name when the setting
is removed), while connected listeners keep flowing; a <listen-socket> added to the config is
opened and one removed is closed, connections accepted on it staying; <write-window> changes
how listeners are written (a window gathers writes, 0 writes every block at once).
"""

import signal
import socket
import threading
import time

import pytest

import conftest
import formatlib
import wirelib
from conftest import assert_server_healthy


def reload(srv, **changes):
    srv.write_config(**changes)
    before = srv.error_log().count("config reloaded")
    srv.send_signal(signal.SIGHUP)
    wirelib.wait_until(lambda: srv.error_log().count("config reloaded") > before, 5,
                       "the reload")
    time.sleep(0.1)            # the workers run their part of the reload on their own loops


def head(srv, mount):
    lis = srv.listener(mount)
    resp = lis.open()
    assert resp.status == 200, resp
    lis.close()
    return resp


@pytest.mark.rimecast_only
def test_changed_stream_name_reaches_a_live_mount(server, data):
    mounts = [{"mount_name": "/live.mp3", "stream_name": "Before", "genre": "Jazz"}]
    srv = server(mounts=mounts)
    src = srv.source("/live.mp3", data, rate=64 * 1024,
                     headers={"ice-name": "From Source", "ice-description": "Source desc"})
    assert src.connect().status == 200
    src.start()
    try:
        src.wait_sent(16384, 5)
        resp = head(srv, "/live.mp3")
        assert resp.header("icy-name") == "Before" and resp.header("icy-genre") == "Jazz"
        keep = srv.listener("/live.mp3")
        assert keep.open().status == 200

        reload(srv, mounts=[{"mount_name": "/live.mp3", "stream_name": "After",
                             "genre": "Rock", "stream_description": "Conf desc"}])
        resp = head(srv, "/live.mp3")
        assert resp.header("icy-name") == "After", resp
        assert resp.header("icy-genre") == "Rock"
        assert resp.header("icy-description") == "Conf desc"
        st = formatlib.stats_source(srv, "/live.mp3")
        assert st.findtext("server_name") == "After" and st.findtext("genre") == "Rock"

        reload(srv, mounts=[{"mount_name": "/live.mp3"}])
        resp = head(srv, "/live.mp3")
        assert resp.header("icy-name") == "From Source", resp
        assert resp.header("icy-description") == "Source desc"
        assert formatlib.stats_source(srv, "/live.mp3").findtext("server_name") == "From Source"
        assert_server_healthy(srv, keep)
        keep.close()
    finally:
        src.stop()


def can_connect(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def listen_xml(port):
    return ("<listen-socket><port>%d</port><bind-address>127.0.0.1</bind-address>"
            "</listen-socket>" % port)


@pytest.mark.rimecast_only
def test_listen_sockets_added_and_removed_without_dropping_anyone(server, data):
    srv = server(workers=2)
    first, second = srv.port, conftest.free_port()
    src = srv.source("/live.mp3", data, rate=64 * 1024)
    assert src.connect().status == 200
    src.start()
    try:
        src.wait_sent(16384, 5)
        on_first = srv.listener("/live.mp3")
        assert on_first.open().status == 200
        assert not can_connect(second)

        reload(srv, extra_xml=listen_xml(second))
        assert wirelib.wait_until(lambda: can_connect(second), 5, "the new port")
        on_second = wirelib.Listener("127.0.0.1", second, "/live.mp3")
        assert on_second.open().status == 200

        # the first port leaves the config: closed for new clients, its listener stays
        srv.cfg["port"] = second
        reload(srv, extra_xml="")
        wirelib.wait_until(lambda: not can_connect(first), 5, "the old port to close")
        assert_server_healthy(srv, on_first)
        assert_server_healthy(srv, on_second)
        assert head(srv, "/live.mp3").status == 200          # srv.port is the second one now
        on_first.close()
        on_second.close()
    finally:
        src.stop()


class TimedListener(wirelib.Listener):
    """Records when each chunk arrived."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.times = []

    def _add(self, chunk):
        self.times.append(time.monotonic())
        super()._add(chunk)

    def arrivals(self, seconds):
        """Distinct arrivals (chunks more than 20 ms apart) over the next `seconds`."""
        start = len(self.times)
        time.sleep(seconds)
        t = self.times[start:]
        return sum(1 for a, b in zip(t, t[1:]) if b - a > 0.02) + (1 if t else 0)


@pytest.mark.rimecast_only
def test_write_window_changes_on_reload(server, data):
    srv = server(write_window=0, workers=1)
    src = srv.source("/live.mp3", data, rate=20 * 1024, chunk=1024)   # a write every 50 ms
    assert src.connect().status == 200
    src.start()
    try:
        src.wait_sent(16384, 5)
        lis = TimedListener(srv.host, srv.port, "/live.mp3")
        assert lis.open().status == 200
        lis.wait_bytes(lis.received + 4096, 5)
        immediate = lis.arrivals(2.0)
        reload(srv, write_window=400)
        lis.arrivals(0.5)
        windowed = lis.arrivals(2.0)
        reload(srv, write_window=0)
        lis.arrivals(0.5)
        again = lis.arrivals(2.0)
        conftest.note("write-window reload: arrivals in 2 s: 0 ms %d, 400 ms %d, 0 ms %d"
                      % (immediate, windowed, again))
        assert immediate >= 15 and again >= 15, (immediate, again)
        assert 3 <= windowed <= 7, windowed          # gathered, and still flowing
        assert_server_healthy(srv, lis)
        lis.close()
    finally:
        src.stop()
