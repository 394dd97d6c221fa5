# SPDX-License-Identifier: GPL-2.0-or-later
"""A reload (SIGHUP) applies the relays and the master.

A <relay> added to the config starts (an on-demand one when a listener asks); one removed
stops, its listeners moved to the mount's <fallback-mount> or closed, as Icecast 2.4 does; one
whose settings changed reconnects on them, its listeners staying through the reconnect (Icecast
closes them); a changed <master-server> is asked for its list at once, the mounts it lists
appear, those only the old master listed stop, and those both list reconnect to the new one;
a master removed has its relays stopped; a <relay> added for a mount the master relays takes
it over. A relay an upgrade brought over is followed like the others. A reload that changes
nothing about relays touches none of them. Each change is logged once.
"""

import os
import shutil
import signal
import subprocess
import time

import pytest

import adminlib
import formatlib
import wirelib
from conftest import SOURCE_PASSWORD
from test_upstream_trust import master_xml
from upstreamlib import FakeUpstream

pytestmark = pytest.mark.rimecast_only

CURL = shutil.which("curl")


def relay_xml(port, mount, local, on_demand=0, host="127.0.0.1"):
    return ("<relay><server>%s</server><port>%d</port><mount>%s</mount>"
            "<local-mount>%s</local-mount><on-demand>%d</on-demand></relay>"
            % (host, port, mount, local, on_demand))


def reload(srv, **changes):
    """Writes the changed config, sends SIGHUP and waits until the reload is logged."""
    srv.write_config(**changes)
    before = srv.error_log().count("config reloaded")
    srv.send_signal(signal.SIGHUP)
    wirelib.wait_until(lambda: srv.error_log().count("config reloaded") > before, 5,
                       "the reload")


def log_count(srv, needle):
    return srv.error_log().count(needle)


def mounts_of(srv):
    return [s.get("mount") for s in
            adminlib.admin(srv, "/admin/listmounts").xml().findall("source")]


def upstream_conns(srv, port):
    """How many connections the server process holds open to 127.0.0.1/127.0.0.2:port."""
    inodes = set()
    fddir = "/proc/%d/fd" % srv.pid
    for name in os.listdir(fddir):
        try:
            target = os.readlink(os.path.join(fddir, name))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    n = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if (int(fields[2].split(":")[1], 16) == port and fields[9] in inodes
                    and fields[3] == "01"):
                n += 1
    return n


def gets_from(lis, data, since, timeout=10):
    """Waits until what lis received after byte `since` ends with a slice of data."""
    def found():
        tail = lis.snapshot()[since:]
        return len(tail) >= 256 and data.find(tail[-128:-64]) >= 0
    wirelib.wait_until(found, timeout,
                       lambda: "the listener to receive the expected stream (closed=%s, %s)"
                       % (lis.closed, lis.close_reason))


def listen(srv, mount, data, n=40000):
    lis = srv.listener(mount)
    assert lis.open(timeout=12).status == 200
    lis.wait_bytes(n, 10)
    gets_from(lis, data, 0)
    return lis


@pytest.fixture
def d1():
    return wirelib.make_data(4 << 20, seed=11)


@pytest.fixture
def d2():
    return wirelib.make_data(4 << 20, seed=22)


@pytest.mark.skipif(formatlib.FFMPEG is None or CURL is None, reason="ffmpeg or curl missing")
def test_a_relay_added_by_a_reload_starts_and_its_mount_plays(server, tmp_path):
    origin = server()
    proc = formatlib.ffmpeg_source(origin, "/live.mp3", "mp3")
    try:
        formatlib.wait_mount(origin, "/live.mp3", proc)
        edge = server()
        assert edge.listener("/edge.mp3").open().status == 404
        reload(edge, extra_xml=relay_xml(origin.port, "/live.mp3", "/edge.mp3"))
        formatlib.wait_mount(edge, "/edge.mp3", timeout=5)
        path = str(tmp_path / "edge.mp3")
        subprocess.run([CURL, "-s", "--max-time", "3", "-o", path, edge.url("/edge.mp3")],
                       timeout=10)
        assert os.path.getsize(path) > 8000  # 3 s of 64 kbit/s, with the burst
        assert formatlib.ffmpeg_decode_errors(path, "mp3") == ""
        assert log_count(edge, "relay /edge.mp3: added by the reload, starting") == 1
    finally:
        formatlib.stop_process(proc)


def edge_with_fallback(server, up, fallback, d2):
    """An edge relaying up's /a.mp3 as /edge.mp3, with a local source on /fb.mp3 (d2) when
    fallback is set (and /edge.mp3's <fallback-mount> naming it)."""
    mounts = [{"mount_name": "/edge.mp3", "fallback_mount": "/fb.mp3"}] if fallback else None
    edge = server(mounts=mounts, extra_xml=relay_xml(up.port, "/a.mp3", "/edge.mp3"))
    src = None
    if fallback:
        src = edge.source("/fb.mp3", d2, rate=32 * 1024)
        assert src.connect().status == 200
        src.start()
        formatlib.wait_mount(edge, "/fb.mp3")
    formatlib.wait_mount(edge, "/edge.mp3")
    return edge, src


def test_a_relay_removed_by_a_reload_moves_its_listeners_to_the_fallback(server, d1, d2):
    up = FakeUpstream(streams={"/a.mp3": d1})
    try:
        edge, src = edge_with_fallback(server, up, True, d2)
        lis = listen(edge, "/edge.mp3", d1)
        assert upstream_conns(edge, up.port) == 1
        reload(edge, extra_xml="")
        since = len(lis.snapshot())
        gets_from(lis, d2, since)
        assert not lis.closed, lis.close_reason
        assert "/edge.mp3" not in mounts_of(edge)
        wirelib.wait_until(lambda: upstream_conns(edge, up.port) == 0, 5,
                           "the relay's connection to close")
        assert log_count(edge, "relay /edge.mp3: removed by the reload, stopping "
                               "(1 listener to /fb.mp3)") == 1
        lis.close()
        src.close()
    finally:
        up.close()


def test_a_relay_removed_by_a_reload_closes_its_listeners_without_a_fallback(server, d1, d2):
    up = FakeUpstream(streams={"/a.mp3": d1})
    try:
        edge, _ = edge_with_fallback(server, up, False, d2)
        lis = listen(edge, "/edge.mp3", d1)
        reload(edge, extra_xml="")
        lis.wait_closed(5)
        assert "/edge.mp3" not in mounts_of(edge)
        assert edge.listener("/edge.mp3").open().status == 404
        wirelib.wait_until(lambda: upstream_conns(edge, up.port) == 0, 5,
                           "the relay's connection to close")
        assert log_count(edge, "relay /edge.mp3: removed by the reload, stopping "
                               "(1 listener closed: no fallback)") == 1
    finally:
        up.close()


@pytest.mark.parametrize("change", ["server", "port", "mount"])
def test_a_relay_changed_by_a_reload_restarts_and_keeps_its_listeners(server, d1, d2, change):
    up = FakeUpstream(streams={"/a.mp3": d1, "/b.mp3": d2})
    other = None
    try:
        if change == "server":  # the same port on another address
            other = FakeUpstream(streams={"/a.mp3": d2}, host="127.0.0.2", port=up.port)
            new = relay_xml(up.port, "/a.mp3", "/edge.mp3", host="127.0.0.2")
        elif change == "port":
            other = FakeUpstream(streams={"/a.mp3": d2})
            new = relay_xml(other.port, "/a.mp3", "/edge.mp3")
        else:
            new = relay_xml(up.port, "/b.mp3", "/edge.mp3")
        edge = server(extra_xml=relay_xml(up.port, "/a.mp3", "/edge.mp3"))
        formatlib.wait_mount(edge, "/edge.mp3")
        lis = listen(edge, "/edge.mp3", d1)
        reload(edge, extra_xml=new)
        since = len(lis.snapshot())
        gets_from(lis, d2, since)
        assert not lis.closed, lis.close_reason
        serving = other or up
        assert len(serving.requests_for("/b.mp3" if change == "mount" else "/a.mp3")) == 1
        # the old upstream's connection is closed (127.0.0.2 has the same port)
        left = 1 if change == "server" else 0
        if other:
            wirelib.wait_until(lambda: upstream_conns(edge, up.port) == left, 5,
                               "%d connection(s) left to the old upstream's port" % left)
        assert log_count(edge, "relay /edge.mp3: changed by the reload (%s): restarting"
                         % change) == 1
        assert log_count(edge, "by the reload") == 1
        lis.close()
    finally:
        up.close()
        if other:
            other.close()


def test_a_relay_whose_local_mount_changed_ends_the_old_mount(server, d1):
    up = FakeUpstream(streams={"/a.mp3": d1})
    try:
        edge = server(extra_xml=relay_xml(up.port, "/a.mp3", "/edge.mp3"))
        formatlib.wait_mount(edge, "/edge.mp3")
        lis = listen(edge, "/edge.mp3", d1)
        reload(edge, extra_xml=relay_xml(up.port, "/a.mp3", "/new.mp3"))
        lis.wait_closed(5)
        formatlib.wait_mount(edge, "/new.mp3", timeout=5)
        assert "/edge.mp3" not in mounts_of(edge)
        listen(edge, "/new.mp3", d1).close()
        assert log_count(edge, "relay /edge.mp3: removed by the reload, stopping") == 1
        assert log_count(edge, "relay /new.mp3: added by the reload, starting") == 1
    finally:
        up.close()


def test_an_on_demand_relay_added_by_a_reload_starts_when_a_listener_asks(server, d1):
    up = FakeUpstream(streams={"/a.mp3": d1})
    try:
        edge = server()
        reload(edge, extra_xml=relay_xml(up.port, "/a.mp3", "/od.mp3", on_demand=1))
        edge.wait_log("relay /od.mp3: added by the reload, starting")
        # an always-on relay connects at its worker's next tick (200 ms): this one waits
        time.sleep(1.0)
        assert up.requests_for("/a.mp3") == []
        lis = listen(edge, "/od.mp3", d1)
        assert len(up.requests_for("/a.mp3")) == 1
        assert log_count(edge, "relay /od.mp3: added by the reload, starting") == 1
        lis.close()
    finally:
        up.close()


def test_a_changed_master_is_polled_at_once_and_its_mounts_appear(server, d1, d2):
    old = FakeUpstream(listing=b"/a.mp3\n/c.mp3\n", streams={"/a.mp3": d1, "/c.mp3": d1})
    new = FakeUpstream(listing=b"/b.mp3\n/c.mp3\n", streams={"/b.mp3": d2, "/c.mp3": d2})
    try:
        # 120 s between lists: only the reload makes the slave ask the new master in time
        slave = server(extra_xml=master_xml(old.port, interval=120, password=SOURCE_PASSWORD))
        formatlib.wait_mount(slave, "/a.mp3")
        formatlib.wait_mount(slave, "/c.mp3")
        lis = listen(slave, "/c.mp3", d1)
        reload(slave, extra_xml=master_xml(new.port, interval=120, password=SOURCE_PASSWORD))
        formatlib.wait_mount(slave, "/b.mp3", timeout=5)
        wirelib.wait_until(lambda: "/a.mp3" not in mounts_of(slave), 5,
                           "the mount only the old master listed to go")
        since = len(lis.snapshot())
        gets_from(lis, d2, since)
        assert not lis.closed, lis.close_reason
        assert len(new.requests_for("/admin/streamlist.txt")) == 1
        assert len(old.requests_for("/admin/streamlist.txt")) == 1
        wirelib.wait_until(lambda: upstream_conns(slave, old.port) == 0, 5,
                           "the connections to the old master to close")
        assert log_count(slave, "master: now polling 127.0.0.1:%d (every 120 s)"
                         % new.port) == 1
        assert log_count(slave, "relay /c.mp3: changed by the reload (master): restarting") == 1
        assert log_count(slave, "/a.mp3 is no longer listed, stopping its relay") == 1
        lis.close()
    finally:
        old.close()
        new.close()


def test_a_master_removed_by_a_reload_has_its_relays_stopped(server, d1):
    master = FakeUpstream(listing=b"/a.mp3\n", streams={"/a.mp3": d1})
    try:
        slave = server(extra_xml=master_xml(master.port, interval=120, password=SOURCE_PASSWORD))
        formatlib.wait_mount(slave, "/a.mp3")
        lis = listen(slave, "/a.mp3", d1)
        reload(slave, extra_xml="")
        lis.wait_closed(5)
        assert "/a.mp3" not in mounts_of(slave)
        wirelib.wait_until(lambda: upstream_conns(slave, master.port) == 0, 5,
                           "the relay's connection to the old master to close")
        assert log_count(slave, "master: no longer polling 127.0.0.1:%d: its relays stop"
                         % master.port) == 1
    finally:
        master.close()


def test_a_relay_added_by_a_reload_takes_over_a_mount_the_master_relays(server, d1, d2):
    master = FakeUpstream(listing=b"/a.mp3\n", streams={"/a.mp3": d1})
    up = FakeUpstream(streams={"/other.mp3": d2})
    try:
        xml = master_xml(master.port, interval=120, password=SOURCE_PASSWORD)
        slave = server(extra_xml=xml)
        formatlib.wait_mount(slave, "/a.mp3")
        reload(slave, extra_xml=xml + relay_xml(up.port, "/other.mp3", "/a.mp3"))
        wirelib.wait_until(lambda: upstream_conns(slave, master.port) == 0, 5,
                           "the master's relay of /a.mp3 to stop")
        wirelib.wait_until(lambda: up.requests_for("/other.mp3"), 5,
                           "the <relay> to connect")
        formatlib.wait_mount(slave, "/a.mp3")
        listen(slave, "/a.mp3", d2).close()
        assert log_count(slave, "relay /a.mp3: added by the reload, starting") == 1
    finally:
        master.close()
        up.close()


def test_a_reload_that_changes_nothing_about_relays_restarts_none(server, d1):
    up = FakeUpstream(listing=b"/m.mp3\n", streams={"/a.mp3": d1, "/m.mp3": d1})
    try:
        extra = (relay_xml(up.port, "/a.mp3", "/edge.mp3") +
                 master_xml(up.port, interval=120, password=SOURCE_PASSWORD))
        edge = server(extra_xml=extra)
        formatlib.wait_mount(edge, "/edge.mp3")
        formatlib.wait_mount(edge, "/m.mp3")
        lis = listen(edge, "/edge.mp3", d1)
        reload(edge, location="Somewhere else")
        # a restarted relay would connect again within its worker's tick (200 ms)
        time.sleep(1.0)
        lis.wait_bytes(lis.received + 16000, 5)
        wirelib.locate_slice(d1, lis.snapshot())  # one stream, never started again
        assert len(up.requests_for("/a.mp3")) == 1
        assert len(up.requests_for("/m.mp3")) == 1
        assert len(up.requests_for("/admin/streamlist.txt")) == 1
        assert upstream_conns(edge, up.port) == 2
        assert log_count(edge, "by the reload") == 0
        assert log_count(edge, "master: now polling") == 0
        lis.close()
    finally:
        up.close()


def test_a_relay_brought_over_by_an_upgrade_follows_a_later_reload(server, d1, d2):
    from test_upgrade import upgrade
    up = FakeUpstream(streams={"/a.mp3": d1, "/b.mp3": d2})
    try:
        edge = server(extra_xml=relay_xml(up.port, "/a.mp3", "/edge.mp3"))
        formatlib.wait_mount(edge, "/edge.mp3")
        lis = listen(edge, "/edge.mp3", d1)
        upgrade(edge)  # the new process adopts the relay's connection
        lis.wait_bytes(lis.received + 16000, 5)
        assert len(up.requests_for("/a.mp3")) == 1
        reload(edge, extra_xml=relay_xml(up.port, "/b.mp3", "/edge.mp3"))
        since = len(lis.snapshot())
        gets_from(lis, d2, since)
        assert not lis.closed, lis.close_reason
        assert log_count(edge, "relay /edge.mp3: changed by the reload (mount): restarting") == 1
        lis.close()
    finally:
        up.close()
