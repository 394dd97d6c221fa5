# SPDX-License-Identifier: GPL-2.0-or-later
"""Upgrading the binary without dropping a listener: SIGUSR2 starts the binary installed at
the path the server was started from, which takes over the listening sockets, the mounts and
every plain connection; the old process then exits. When the new binary cannot take over, the
old process serves on and says why."""

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

import adminlib
import conftest
import formatlib as fl
import hlscheck
import wirelib
from conftest import BINARY, port_pair
from test_auth_url import auth, url_mount  # noqa: F401 (auth: the recording auth server)

pytestmark = pytest.mark.rimecast_only

RATE = 32 * 1024  # source bytes per second: the 64 kbit/s file about four times real time


class Adopted:
    """The process that took over (not our child): enough of Popen for Server.stop()."""

    def __init__(self, pid, srv):
        self.pid, self.srv = pid, srv
        self.returncode = None

    def _running(self):
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except (FileNotFoundError, ProcessLookupError):
            return False

    def poll(self):
        if self.returncode is None and not self._running():
            # not our child: its exit code is out of reach; its log says whether it shut down
            # cleanly, its output whether a sanitizer of a test build found anything
            done = self.srv.error_log().rstrip().endswith("shutdown complete")
            self.returncode = 0 if done and "Sanitizer" not in self.srv.stderr() else 1
        return self.returncode

    def send_signal(self, sig):
        os.kill(self.pid, sig)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout=None):
        try:
            wirelib.wait_until(lambda: self.poll() is not None, timeout or 3600,
                               "PID %d to exit" % self.pid)
        except wirelib.WaitTimeout:
            raise subprocess.TimeoutExpired("rimecast", timeout)
        return self.returncode


def upgrade(srv, timeout=20, drains=False):
    """SIGUSR2; waits for the hand-over and the old process's exit (not when it `drains`: it
    keeps TLS listeners); srv follows the new process from then on. Returns the new PID."""
    old = srv.proc
    done = srv.error_log().count("upgrade: handed over to PID")
    old.send_signal(signal.SIGUSR2)
    wirelib.wait_until(lambda: srv.error_log().count("upgrade: handed over to PID") > done,
                       timeout, lambda: "the hand-over\n" + srv.diagnostics())
    new_pid = int(re.findall(r"upgrade: handed over to PID (\d+)", srv.error_log())[-1])
    if drains:  # it lives on for its TLS listeners: the test follows it by its PID
        pass
    elif isinstance(old, Adopted):  # an upgrade of one that took over: it exits without a word
        wirelib.wait_until(lambda: not old._running(), timeout, "PID %d to exit" % old.pid)
        assert "Sanitizer" not in srv.stderr()
    else:
        assert old.wait(timeout) == 0
    srv.proc = Adopted(new_pid, srv)
    assert new_pid != old.pid
    return new_pid


def pidfile_pid(srv):
    with open(os.path.join(srv.dir, "server.pid")) as f:
        return int(f.read().strip())


def listener_stats(srv, mount):
    """Each listener of the mount in the admin listener list: its id and when it connected
    (the clock now less the seconds it says it has been connected)."""
    r = adminlib.admin(srv, "/admin/listclients?mount=" + mount)
    assert r.status == 200, r.status
    now = time.time()
    return {lis.findtext("ID"): now - int(lis.findtext("Connected"))
            for lis in r.xml().iter("listener")}


def assert_same_listeners(before, after):
    assert sorted(before) == sorted(after), (before, after)
    for k in before:  # whole seconds on both sides
        assert abs(before[k] - after[k]) < 2.5, (k, before[k], after[k])


def icy_audio(lis, metaint):
    audio, blocks = fl.icy_demux(lis.snapshot(), metaint)
    return audio, [fl.icy_fields(t).get("StreamTitle") for _, t in blocks if t]


@pytest.fixture(scope="module")
def mp3_file():
    """A minute of MP3 noise: no two stretches of it alike, so a capture locates in it."""
    p = subprocess.run([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "lavfi",
                        "-i", "anoisesrc=d=60:c=pink:r=44100", "-c:a", "libmp3lame", "-b:a",
                        "64k", "-id3v2_version", "0", "-f", "mp3", "-"],
                       capture_output=True, check=True, timeout=120)
    return p.stdout


def test_listeners_and_source_of_an_mp3_mount_survive_an_upgrade(server, mp3_file):
    srv = server()
    src = srv.source("/live.mp3", mp3_file, rate=RATE, chunk=1000)
    assert src.connect().status == 200, src.response
    src.start()
    fl.wait_mount(srv, "/live.mp3")
    fl.set_metadata(srv, "/live.mp3", song="Before")
    listeners = [srv.listener("/live.mp3", headers={"Icy-MetaData": "1"}) for _ in range(3)]
    for lis in listeners:
        assert lis.open().status == 200, lis.response
    metaint = int(listeners[0].response.header("icy-metaint"))
    for lis in listeners:
        lis.wait_bytes(40000, 10)
    before = listener_stats(srv, "/live.mp3")
    assert len(before) == 3
    old_pid = srv.pid

    new_pid = upgrade(srv)

    assert pidfile_pid(srv) == new_pid != old_pid
    got = [lis.received for lis in listeners]
    for lis, n in zip(listeners, got):
        lis.wait_bytes(n + 40000, 10)
    fl.set_metadata(srv, "/live.mp3", song="After")
    for lis in listeners:
        wirelib.wait_until(lambda: "After" in icy_audio(lis, metaint)[1], 10,
                           "the new title at an old listener")
    assert_same_listeners(before, listener_stats(srv, "/live.mp3"))
    for lis in listeners:
        assert not lis.closed, lis.close_reason
        audio, titles = icy_audio(lis, metaint)
        assert titles[0] == "Before" and titles[-1] == "After", titles
        # every byte of the source's file, in order, none twice: the hand-over is invisible
        assert wirelib.locate_slice(mp3_file, audio) is not None, "audio is not one slice"
        assert fl.ffmpeg_stream_decode_errors(fl.trim_capture("mp3", audio), "mp3") == ""
    assert src.error is None, src.error
    src.stop()
    for lis in listeners:
        lis.close()


# ---------------------------------------------------------------- when the new binary fails

def _fault_points():
    out = subprocess.run([BINARY, "--version"], capture_output=True, text=True,
                         timeout=10).stdout
    m = re.search(r"^fault injection: (.*)$", out, re.M)
    return m.group(1).split() if m else []


@pytest.fixture
def installed_copy():
    """Factory: a copy of the binary under test in a directory of its own (readable by the
    user the server runs as): the server is started from it, and a test replaces it as a
    package upgrade would."""
    dirs = []

    def copy():
        d = tempfile.mkdtemp(prefix="upgrade-bin-")
        dirs.append(d)
        os.chmod(d, 0o755)
        path = os.path.join(d, "rimecast")
        shutil.copy2(BINARY, path)
        return path
    yield copy
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def replace_binary(path, script):
    """Puts an executable script where the binary was (a new file, renamed over it)."""
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(script)
    os.chmod(tmp, 0o755)
    os.rename(tmp, path)


def live_mount(srv, mp3_file):
    """A paced MP3 source on /live.mp3 and a listener that is receiving it."""
    src = srv.source("/live.mp3", mp3_file, rate=RATE, chunk=1000)
    assert src.connect().status == 200, src.response
    src.start()
    fl.wait_mount(srv, "/live.mp3")
    lis = srv.listener("/live.mp3")
    assert lis.open().status == 200, "%r\n%s" % (lis.response, srv.diagnostics())
    lis.wait_bytes(20000, 10)
    return src, lis


def assert_serving_on(srv, pid, lis, src):
    """The same process still streams to the listener it had, and takes new ones."""
    assert srv.is_alive() and srv.pid == pid and pidfile_pid(srv) == pid
    n = lis.received
    lis.wait_bytes(n + 20000, 10)
    assert not lis.closed, lis.close_reason
    assert wirelib.locate_slice(mp3_file_of(src), bytes(lis.snapshot())) is not None
    fresh = srv.listener("/live.mp3")
    assert fresh.open().status == 200, fresh.response
    fresh.wait_bytes(10000, 10)
    fresh.close()
    assert src.error is None, src.error


def mp3_file_of(src):
    return src.data


def failure_line(srv, timeout=30):
    srv.wait_log("upgrade: failed:", timeout)
    return [l for l in srv.error_log().splitlines() if "upgrade: failed:" in l][-1]


def test_a_new_binary_that_exits_at_once_leaves_the_old_process_serving(server, mp3_file,
                                                                        installed_copy):
    path = installed_copy()
    srv = server(binary=path)
    src, lis = live_mount(srv, mp3_file)
    pid = srv.pid
    replace_binary(path, "#!/bin/sh\nexit 1\n")
    srv.send_signal(signal.SIGUSR2)
    line = failure_line(srv)
    assert "exited with status 1" in line, line
    assert_serving_on(srv, pid, lis, src)
    src.stop()
    lis.close()


def test_a_config_broken_since_start_is_refused_and_the_old_process_serves_on(server,
                                                                               mp3_file):
    srv = server()
    src, lis = live_mount(srv, mp3_file)
    pid = srv.pid
    good = open(srv.config_path).read()
    srv.write_config(good.replace("<limits>", "<limits><workers>many</workers>"))
    srv.send_signal(signal.SIGUSR2)
    line = failure_line(srv)
    assert "the new process says:" in line and "workers" in line, line
    assert_serving_on(srv, pid, lis, src)
    # the workers were never stopped for it, and the next upgrade with a good config works
    srv.write_config(good)
    upgrade(srv)
    n = lis.received
    lis.wait_bytes(n + 20000, 10)
    assert wirelib.locate_slice(mp3_file, bytes(lis.snapshot())) is not None
    src.stop()
    lis.close()


def test_a_second_sigusr2_during_an_upgrade_is_ignored(server, mp3_file, installed_copy):
    path = installed_copy()
    real = installed_copy()
    srv = server(binary=path)
    src, lis = live_mount(srv, mp3_file)
    # the new binary takes its time to start: a second signal comes while it does
    marker = os.path.join(srv.logdir, "started")  # a directory the server's user may write
    replace_binary(path, "#!/bin/sh\ntouch %s\nsleep 2\nexec %s \"$@\"\n" % (marker, real))
    srv.send_signal(signal.SIGUSR2)
    wirelib.wait_until(lambda: os.path.exists(marker), 10, "the new binary to start")
    srv.send_signal(signal.SIGUSR2)
    srv.wait_log("SIGUSR2 ignored: an upgrade is already running", 10)
    old = srv.proc
    wirelib.wait_until(lambda: "upgrade: handed over to PID" in srv.error_log(), 20,
                       lambda: "the hand-over\n" + srv.diagnostics())
    assert old.wait(10) == 0
    new_pid = int(re.findall(r"upgrade: handed over to PID (\d+)", srv.error_log())[-1])
    srv.proc = Adopted(new_pid, srv)
    assert srv.error_log().count("upgrade: SIGUSR2: starting") == 1
    assert pidfile_pid(srv) == new_pid
    n = lis.received
    lis.wait_bytes(n + 20000, 10)
    assert not lis.closed and wirelib.locate_slice(mp3_file, bytes(lis.snapshot())) is not None
    src.stop()
    lis.close()


@pytest.mark.parametrize("point, why", [
    # dies holding every descriptor, before it confirms
    ("upgrade_takeover", r"went away .*status 3"),
    # reads the state as that of another format version
    ("upgrade_version", r"the state is of format version (\d+), this binary reads version "
                        r"(?!\1)\d+"),
])
def test_a_new_process_that_fails_with_the_state_changes_nothing(server, mp3_file,
                                                                  monkeypatch, point, why):
    if point not in _fault_points():
        pytest.skip("needs a binary built with --enable-fault-injection")
    monkeypatch.setenv("RIMECAST_FAULT", point + ":1")
    srv = server()
    src, lis = live_mount(srv, mp3_file)
    pid = srv.pid
    srv.send_signal(signal.SIGUSR2)
    line = failure_line(srv)
    assert re.search(why, line), line
    assert_serving_on(srv, pid, lis, src)
    src.stop()
    lis.close()


# ---------------------------------------------------------------- more kinds of stream

def assert_pages_continue(data):
    """Whole pages, headers first, and within each logical stream no data page lost or sent
    twice (sequence numbers one after the other from the first data page a listener got: its
    header pages come before the burst point)."""
    capture = fl.strict_capture("vorbis", data)
    last = {}
    for p in fl.ogg_pages(capture)[0]:
        if p.granule == 0:  # a header page
            continue
        if p.serial in last:
            assert p.seqno == last[p.serial] + 1, (p.serial, last[p.serial], p.seqno)
        last[p.serial] = p.seqno
    return capture


@pytest.mark.parametrize("codec", ["vorbis", "opus"])
def test_ogg_mount_listeners_play_on_across_an_upgrade(server, codec):
    srv = server(extra_xml=fl.opus_titles_xml("/live.ogg") if codec == "opus" else "")
    enc = fl.ffmpeg_source(srv, "/live.ogg", codec, title="Ogg before")
    try:
        fl.wait_mount(srv, "/live.ogg", enc)
        listeners = [srv.listener("/live.ogg") for _ in range(2)]
        for lis in listeners:
            assert lis.open().status == 200, lis.response
            lis.wait_bytes(8000, 10)
        upgrade(srv)
        for lis in listeners:
            n = lis.received
            lis.wait_bytes(n + 8000, 10)
        # a title set after the upgrade goes into the stream as a new chain link
        fl.set_metadata(srv, "/live.ogg", song="Ogg after")
        fl.wait_title(srv, "/live.ogg", "Ogg after")
        late = srv.listener("/live.ogg")
        assert late.open().status == 200, late.response
        for lis in listeners + [late]:
            n = lis.received
            lis.wait_bytes(n + 8000, 10)
            assert not lis.closed, lis.close_reason
        assert enc.poll() is None, enc.stderr.read()
        for lis in listeners + [late]:
            capture = assert_pages_continue(lis.snapshot())
            assert fl.ffmpeg_stream_decode_errors(capture, "ogg") == ""
            lis.close()
    finally:
        fl.stop_process(enc)


def test_chunked_put_source_from_ffmpeg_goes_on_across_an_upgrade(server, mp3_file):
    srv = server()
    ff = subprocess.Popen(
        [fl.FFMPEG, "-hide_banner", "-loglevel", "error", "-f", "data", "-i", "pipe:0",
         "-map", "0", "-c", "copy", "-f", "data", "-method", "PUT", "-content_type",
         "audio/mpeg", "http://source:%s@%s:%d/put.mp3" % (fl.SOURCE_PASSWORD, srv.host,
                                                          srv.port)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sent = [0]

    def feed(upto):
        while sent[0] < upto:
            piece = mp3_file[sent[0]:min(upto, sent[0] + 1000)]
            ff.stdin.write(piece)
            ff.stdin.flush()
            sent[0] += len(piece)
            time.sleep(len(piece) / RATE)
    try:
        feed(20000)
        fl.wait_mount(srv, "/put.mp3", ff)
        lis = srv.listener("/put.mp3")
        assert lis.open().status == 200, lis.response
        feed(80000)
        lis.wait_bytes(40000, 10)
        upgrade(srv)
        feed(160000)
        lis.wait_bytes(100000, 10)
        assert not lis.closed, lis.close_reason
        assert ff.poll() is None, ff.stderr.read()
        assert wirelib.locate_slice(mp3_file, bytes(lis.snapshot())) is not None
        assert "chunked" not in srv.error_log(), srv.error_log()
        lis.close()
    finally:
        ff.stdin.close()
        fl.stop_process(ff)


def test_shoutcast_source_and_its_listeners_go_on_across_an_upgrade(server, mp3_file):
    from test_shoutcast import MOUNT, ShoutcastSource
    port = port_pair()
    srv = server(extra_xml="""<listen-socket><port>%d</port><bind-address>127.0.0.1
      </bind-address><shoutcast-mount>%s</shoutcast-mount></listen-socket>""" % (port, MOUNT))
    src = ShoutcastSource(srv.host, port + 1, mp3_file, rate=RATE, chunk=1000)
    assert src.connect() is not None, src.greeting
    src.start()
    fl.wait_mount(srv, MOUNT)
    # one listener on the HTTP port, one on the Shoutcast socket's own port
    listeners = [wirelib.Listener(srv.host, p, MOUNT) for p in (srv.port, port)]
    for lis in listeners:
        assert lis.open().status == 200, lis.response
        lis.wait_bytes(20000, 10)
    upgrade(srv)
    for lis in listeners:
        n = lis.received
        lis.wait_bytes(n + 40000, 10)
        assert not lis.closed, lis.close_reason
        assert wirelib.locate_slice(mp3_file, bytes(lis.snapshot())) is not None
    # the Shoutcast socket still takes sources: the old one leaves, a new one logs in
    src.stop()
    srv.wait_log("disconnected", 10)
    again = ShoutcastSource(srv.host, port + 1, mp3_file, rate=RATE, chunk=1000)
    assert again.connect() is not None, again.greeting
    again.stop()
    for lis in listeners:
        lis.close()


def history_samples(srv, mount):
    r = adminlib.admin(srv, "/admin/history?mount=" + mount)
    assert r.status == 200, r.status
    hour = [x for x in r.xml().iter("range") if x.get("name") == "hour"][0]
    return [(s.findtext("time"), s.findtext("listeners")) for s in hour.iter("sample")]


@pytest.mark.slow
def test_stats_counters_peaks_and_history_carry_over(server, mp3_file):
    srv = server()
    src, lis = live_mount(srv, mp3_file)
    extra = srv.listener("/live.mp3")
    assert extra.open().status == 200
    extra.close()  # the peak was 2, one is left
    wirelib.wait_until(lambda: history_samples(srv, "/live.mp3"), 25, "a history sample",
                       interval=0.5)
    before = history_samples(srv, "/live.mp3")
    stats = fl.stats_source(srv, "/live.mp3")
    peak, connections = stats.findtext("listener_peak"), stats.findtext("total_bytes_read")
    server_stats = adminlib.admin(srv, "/admin/stats").xml()
    accepted = int(server_stats.findtext("client_connections"))
    upgrade(srv)
    after = history_samples(srv, "/live.mp3")
    assert after[:len(before)] == before, (before, after)
    stats = fl.stats_source(srv, "/live.mp3")
    assert stats.findtext("listener_peak") == peak == "2"
    assert int(stats.findtext("total_bytes_read")) >= int(connections) > 0
    # counted on: what the old process had accepted is not forgotten
    assert int(adminlib.admin(srv, "/admin/stats").xml().findtext("client_connections")) >= \
        accepted >= 3
    src.stop()
    lis.close()


def test_a_relay_keeps_its_upstream_connection_and_listeners_across_an_upgrade(server,
                                                                               mp3_file):
    from test_relay import relay_xml
    origin = server()
    src = origin.source("/live.mp3", mp3_file, rate=RATE, chunk=1000)
    assert src.connect().status == 200
    src.start()
    fl.wait_mount(origin, "/live.mp3")
    fl.set_metadata(origin, "/live.mp3", song="Upstream before")
    edge = server(extra_xml=relay_xml(origin, "/live.mp3", "/relayed.mp3", icy=1))
    fl.wait_mount(edge, "/relayed.mp3")
    lis = edge.listener("/relayed.mp3", headers={"Icy-MetaData": "1"})
    assert lis.open().status == 200, lis.response
    metaint = int(lis.response.header("icy-metaint"))
    lis.wait_bytes(30000, 10)
    upstream = listener_stats(origin, "/live.mp3")  # the edge's connection to the origin
    assert len(upstream) == 1
    upgrade(edge)
    n = lis.received
    lis.wait_bytes(n + 30000, 10)
    fl.set_metadata(origin, "/live.mp3", song="Upstream after")
    wirelib.wait_until(lambda: "Upstream after" in icy_audio(lis, metaint)[1], 15,
                       "the upstream's new title at the edge's listener")
    assert not lis.closed, lis.close_reason
    audio, titles = icy_audio(lis, metaint)
    assert titles[0] == "Upstream before", titles
    assert wirelib.locate_slice(mp3_file, audio) is not None
    assert_same_listeners(upstream, listener_stats(origin, "/live.mp3"))  # never reconnected
    assert "reconnecting" not in edge.error_log()
    src.stop()
    lis.close()


def assert_relay_started_again(edge, mount, lis, before, data):
    """The listener of a relay's mount carried without its upstream connection hears the
    stream again, on the same connection, once the new process's relay reconnected."""
    n = lis.received
    lis.wait_bytes(n + 30000, 15)
    assert not lis.closed, lis.close_reason

    def one_slice():  # what came before the gap may still be arriving at first
        try:
            return wirelib.locate_slice(data, bytes(lis.snapshot())[-20000:]) is not None
        except AssertionError:
            return False
    wirelib.wait_until(one_slice, 15, "20000 bytes of the stream in one piece after the gap")
    assert not lis.closed, lis.close_reason
    assert_same_listeners(before, listener_stats(edge, mount))
    assert "carried over by the upgrade, connecting again" in edge.error_log()


def relay_waiting_to_reconnect(server, mp3_file):
    """An edge relaying /live.mp3 of an origin on /relayed.mp3, with a listener, whose upstream
    source left: the relay holds its listener and retries. (origin, edge, listener, the
    listener's admin entry from before)."""
    from test_relay import relay_xml
    origin = server()
    src = origin.source("/live.mp3", mp3_file, rate=RATE, chunk=1000)
    assert src.connect().status == 200
    src.start()
    fl.wait_mount(origin, "/live.mp3")
    edge = server(extra_xml=relay_xml(origin, "/live.mp3", "/relayed.mp3"))
    fl.wait_mount(edge, "/relayed.mp3")
    lis = edge.listener("/relayed.mp3")
    assert lis.open().status == 200, lis.response
    lis.wait_bytes(30000, 10)
    before = listener_stats(edge, "/relayed.mp3")
    src.stop()
    edge.wait_log("upstream lost, reconnecting")
    return origin, edge, lis, before


def test_a_relay_waiting_to_reconnect_is_started_again_on_its_carried_mount(server, mp3_file):
    origin, edge, lis, before = relay_waiting_to_reconnect(server, mp3_file)
    upgrade(edge)
    again = origin.source("/live.mp3", mp3_file, rate=RATE, chunk=1000)
    assert again.connect().status == 200
    again.start()
    assert_relay_started_again(edge, "/relayed.mp3", lis, before, mp3_file)
    again.stop()
    lis.close()


def test_a_carried_relay_mount_the_new_config_no_longer_relays_ends(server, mp3_file):
    _, edge, lis, _ = relay_waiting_to_reconnect(server, mp3_file)
    edge.write_config(extra_xml="")  # the new process reads a config without the relay
    upgrade(edge)
    lis.wait_closed(10)
    edge.wait_log("relay /relayed.mp3: no longer relayed: its carried mount ends")


def test_a_relay_over_tls_reconnects_from_the_new_process_and_its_listener_stays(server,
                                                                                mp3_file):
    from test_relay_tls import https_origin, relay_xml
    origin, src, ca = https_origin(server, mp3_file)
    edge = server(ssl_cafile=ca,
                  extra_xml=relay_xml("127.0.0.1", origin.tls_port, "/live.mp3", "/edge.mp3"))
    fl.wait_mount(edge, "/edge.mp3")
    lis = edge.listener("/edge.mp3")
    assert lis.open().status == 200, lis.response
    lis.wait_bytes(30000, 10)
    before = listener_stats(edge, "/edge.mp3")
    upgrade(edge)  # the TLS upstream connection stays with the old process, which exits
    assert_relay_started_again(edge, "/edge.mp3", lis, before, mp3_file)
    src.stop()
    lis.close()


def test_a_relay_listed_by_a_master_is_started_again_on_its_carried_mount(server, mp3_file):
    from conftest import SOURCE_PASSWORD
    master = server()
    slave = server(extra_xml="<master-server>127.0.0.1</master-server>"
                   "<master-server-port>%d</master-server-port>"
                   "<master-update-interval>1</master-update-interval>"
                   "<master-username>relay</master-username>"
                   "<master-password>%s</master-password>" % (master.port, SOURCE_PASSWORD))
    src = master.source("/m1.mp3", mp3_file, rate=RATE, chunk=1000)
    assert src.connect().status == 200
    src.start()
    fl.wait_mount(master, "/m1.mp3")
    fl.wait_mount(slave, "/m1.mp3", timeout=10)
    lis = slave.listener("/m1.mp3")
    assert lis.open().status == 200, lis.response
    lis.wait_bytes(30000, 10)
    before = listener_stats(slave, "/m1.mp3")
    upgrade(slave)
    assert_relay_started_again(slave, "/m1.mp3", lis, before, mp3_file)
    lis.close()
    src.stop()
    # a mount the master no longer lists is not kept: it goes as before
    wirelib.wait_until(lambda: "/m1.mp3" not in [
        m.get("mount") for m in adminlib.admin(slave, "/admin/listmounts").xml().findall("source")],
        10, "the mount to go from the slave")


def test_admin_event_feeds_stay_connected_and_go_on_numbering(server, mp3_file):
    from adminlib import EventStream
    srv = server()
    src, lis = live_mount(srv, mp3_file)
    es = EventStream(srv)
    try:
        assert es.response.status == 200
        second = srv.listener("/live.mp3")
        assert second.open().status == 200
        join = es.wait_for(lambda j: j["type"] == "listener_join", 5, "a join before")
        upgrade(srv)
        third = srv.listener("/live.mp3")
        assert third.open().status == 200
        later = es.wait_for(lambda j: j["type"] == "listener_join" and
                            j["id"] != join["json"]["id"], 10, "a join after the upgrade")
        assert int(later["id"]) == int(join["id"]) + 1  # the same ring, numbers go on
        # a dashboard that reconnects with Last-Event-ID resumes in the carried ring
        resumed = EventStream(srv, headers={"Last-Event-ID": join["id"]})
        again = resumed.wait_for(lambda j: j["type"] == "listener_join", 5, "the resumed join")
        assert again["id"] == later["id"]
        resumed.close()
        for x in (second, third):
            x.close()
    finally:
        es.close()
    src.stop()
    lis.close()


class HlsPoller:
    """An HLS player as the spec asks it to behave: it reloads the media playlist of its
    session every half second on a kept-alive connection, fetches each new segment, and
    retries what it cannot get (a new connection)."""

    def __init__(self, srv, mount, token=None):
        self.srv, self.mount = srv, mount
        self.token = token or hlscheck.issue_token(srv.host, srv.port, mount)
        self.segments = []  # (sequence number, bytes)
        self.retries = 0
        self.conn = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _get(self, path):
        for _ in range(5):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.srv.host, self.srv.port,
                                                           timeout=10)
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                self.retries += 1
                self.conn.close()
                self.conn = None
                time.sleep(0.2)
        return None, b""

    def _run(self):
        while not self._stop.is_set():
            status, body = self._get("%s/hls.m3u8?session=%s" % (self.mount, self.token))
            if status == 200:
                for line in body.decode().splitlines():
                    m = re.fullmatch(r"hls/(\d+)\.mp3", line)
                    if m and (not self.segments or int(m.group(1)) > self.segments[-1][0]):
                        st, seg = self._get("%s/%s" % (self.mount, line))
                        if st == 200:
                            self.segments.append((int(m.group(1)), seg))
            self._stop.wait(0.5)

    def stop(self):
        self._stop.set()
        self.thread.join(10)
        if self.conn is not None:
            self.conn.close()


def test_an_hls_session_goes_on_as_the_same_listener_across_an_upgrade(server):
    srv = server(extra_xml="<hls><target-duration>2</target-duration>"
                 "<part-target-ms>500</part-target-ms></hls>")
    enc = fl.ffmpeg_source(srv, "/live.mp3", "mp3")
    player = None
    try:
        fl.wait_mount(srv, "/live.mp3", enc)
        player = HlsPoller(srv, "/live.mp3")
        wirelib.wait_until(lambda: len(player.segments) >= 2, 15, "segments before")
        before = listener_stats(srv, "/live.mp3")
        assert len(before) == 1
        seen = player.segments[-1][0]
        upgrade(srv)
        assert_same_listeners(before, listener_stats(srv, "/live.mp3"))
        # the window is made again in the new process: its segments come after the old ones
        wirelib.wait_until(lambda: len([q for q, _ in player.segments if q > seen]) >= 2, 20,
                           "segments from the new process")
        assert_same_listeners(before, listener_stats(srv, "/live.mp3"))
        assert fl.json_source(srv, "/live.mp3")["listeners"] == 1
        seqs = [q for q, _ in player.segments]
        assert seqs == sorted(set(seqs)), seqs
        player.stop()
        wirelib.wait_until(lambda: fl.json_source(srv, "/live.mp3")["listeners"] == 0, 30,
                           "the session to end once it stopped polling")
    finally:
        if player:
            player.stop()
        fl.stop_process(enc)
    # one session from its first poll to its last: one access-log line
    lines = [l for l in srv.access_log().splitlines() if "/live.mp3/hls.m3u8?session=" in l]
    assert len(lines) == 1, lines


def running(pid):
    return Adopted(pid, None)._running()


def tls_live_mount(server, mp3_file, **cfg):
    """A TLS server with a paced MP3 source on /live.mp3, a plain listener and a TLS one, both
    receiving."""
    from test_tls import TlsListener, tls_server
    srv, _, _ = tls_server(server, **cfg)
    src, lis = live_mount(srv, mp3_file)
    secure = TlsListener(srv, "/live.mp3")
    assert secure.open().status == 200, secure.response
    secure.wait_bytes(10000, 10)
    return srv, src, lis, secure


def test_a_tls_listener_stays_with_the_old_process_until_it_leaves(server, mp3_file):
    from test_tls import TlsListener
    srv, src, lis, secure = tls_live_mount(server, mp3_file)
    old = srv.proc.pid
    new = upgrade(srv, drains=True)
    srv.wait_log("upgrade: serving 1 TLS listener until it leaves")
    n = lis.received
    lis.wait_bytes(n + 20000, 10)
    assert not lis.closed, lis.close_reason
    assert not secure.closed, secure.close_reason
    assert running(old)
    # new connections, TLS ones too, go to the new process: the listener counts are its own
    again = TlsListener(srv, "/live.mp3")
    assert again.open().status == 200, again.response
    again.wait_bytes(10000, 10)
    wirelib.wait_until(lambda: fl.json_source(srv, "/live.mp3")["listeners"] == 2, 10,
                       "the new process to count its plain and its new TLS listener")
    assert running(old) and running(new)
    secure.close()
    wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    assert "upgrade: the last TLS listener left: exiting" in srv.error_log()
    assert "Sanitizer" not in srv.stderr()
    for x in (again, lis):
        x.close()
    src.stop()


class CurlListener:
    """curl -k over HTTPS with ICY metadata, its head and body written to files as they come:
    a real TLS client for a test that follows it across an upgrade."""

    def __init__(self, srv, mount, user=None):
        self.head = os.path.join(srv.dir, "curl-head-%d" % id(self))
        self.body = os.path.join(srv.dir, "curl-body-%d" % id(self))
        cmd = ["curl", "-k", "-sS", "-N", "-H", "Icy-MetaData: 1", "-D", self.head, "-o",
               self.body, "https://127.0.0.1:%d%s" % (srv.tls_port, mount)]
        if user:
            cmd[1:1] = ["-u", user]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)

    def received(self):
        try:
            return os.path.getsize(self.body)
        except FileNotFoundError:
            return 0

    def wait_bytes(self, n, timeout):
        wirelib.wait_until(lambda: self.received() >= n, timeout,
                           lambda: "%d bytes at curl (has %d)" % (n, self.received()))

    def metaint(self):
        with open(self.head) as f:
            return int(re.search(r"(?im)^icy-metaint:\s*(\d+)", f.read()).group(1))

    def audio_and_titles(self):
        with open(self.body, "rb") as f:
            audio, blocks = fl.icy_demux(f.read(), self.metaint())
        return audio, [fl.icy_fields(t).get("StreamTitle") for _, t in blocks if t]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def join_gap(data, audio):
    """audio is data[k:k+i] then data[k+i+gap:...]: the gap (0 when it is one slice)."""
    k = data.find(audio[:64])
    assert k >= 0 and data.find(audio[:64], k + 1) < 0, "the start is not one place of the file"
    i = next((j for j, b in enumerate(audio) if k + j >= len(data) or data[k + j] != b), None)
    if i is None:
        return 0
    return wirelib.locate_slice(data, audio[i:]) - (k + i)


def assert_fed_across_the_upgrade(srv, src, secure, old, settle=5):
    """The TLS listener (curl) kept by the old process goes on hearing the station for settle
    seconds after the hand-over, whole frames, and a title set since reaches it."""
    handed = time.monotonic()
    srv.wait_log("upgrade: serving 1 TLS listener until it leaves")
    while time.monotonic() - handed < settle:
        n = secure.received()
        secure.wait_bytes(n + 4000, 5)  # bytes keep coming: the source's, through the feed
        assert running(old)
    fl.set_metadata(srv, "/live.mp3", song="After")
    wirelib.wait_until(lambda: "After" in secure.audio_and_titles()[1], 10,
                       "the title set after the upgrade at the TLS listener")
    audio, titles = secure.audio_and_titles()
    assert "Before" in titles and titles[-1] == "After", titles
    assert fl.ffmpeg_stream_decode_errors(fl.trim_capture("mp3", audio), "mp3") == ""
    # the source's bytes in order, with one gap at most where the feed joined: what the source
    # sent between the hand-over and the feed's first block (less than a second of its pace)
    gap = join_gap(src.data, audio)
    print("feed join gap: %d bytes" % gap)
    assert 0 <= gap < RATE, gap
    assert secure.proc.poll() is None, secure.proc.stderr.read()
    assert src.error is None, src.error


def test_a_tls_listener_kept_by_the_old_process_is_fed_from_the_new_one(server, mp3_file):
    srv, src, lis, _ = tls_live_mount(server, mp3_file)
    _.close()
    fl.set_metadata(srv, "/live.mp3", song="Before")
    secure = CurlListener(srv, "/live.mp3")
    secure.wait_bytes(20000, 10)
    before = listener_stats(srv, "/live.mp3")
    old = srv.proc.pid
    upgrade(srv, drains=True)
    assert_fed_across_the_upgrade(srv, src, secure, old)
    # the feed is nobody's listener at the new process: its lists and counts show the plain
    # listener it took over and nothing else (the TLS listener is the old process's)
    lis_id = [k for k in before if k in listener_stats(srv, "/live.mp3")]
    assert list(listener_stats(srv, "/live.mp3")) == lis_id and len(lis_id) == 1
    assert fl.json_source(srv, "/live.mp3")["listeners"] == 1
    def counts():
        stats = adminlib.admin(srv, "/admin/stats").xml()
        return stats.findtext("listeners"), stats.findtext("clients")
    # clients: the plain listener, the source and the request asking (the requests before it
    # end as their replies are written)
    wirelib.wait_until(lambda: counts() == ("1", "3"), 5, lambda: "counts %r" % (counts(),))
    assert fl.stats_source(srv, "/live.mp3").findtext("listeners") == "1"
    metrics = adminlib.admin(srv, "/metrics").text
    assert re.search(r'(?m)^rimecast_listeners\{mount="/live.mp3"\} 1$', metrics), metrics
    # nor can the admin kick it out, whatever id it tries
    for i in range(1, int(lis_id[0]) + 40):
        if str(i) != lis_id[0]:
            r = adminlib.admin(srv, "/admin/killclient?mount=/live.mp3&id=%d" % i)
            assert b"not found" in r.body, (i, r.body)
    n = secure.received()
    secure.wait_bytes(n + 4000, 5)
    secure.stop()
    wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    log = srv.error_log()
    assert "upgrade: the last TLS listener left: exiting" in log
    assert "feed token refused" not in log
    lis.close()
    src.stop()
    assert srv.stop() == 0
    # the session log has the listeners (the plain one, the TLS one that left before the
    # upgrade and the one the old process kept), no feed
    with open(os.path.join(srv.logdir, "sessions.log")) as f:
        ended = [json.loads(line) for line in f if line.strip()]
    assert len(ended) == 3, ended
    assert not [r for r in ended if "Rimecast" in (r.get("agent") or "")], ended


def test_a_tls_listener_of_an_ogg_vorbis_mount_is_fed_whole_pages(server):
    from test_tls import TlsListener, tls_server
    srv, _, _ = tls_server(server)
    enc = fl.ffmpeg_source(srv, "/live.ogg", "vorbis", title="Ogg before")
    try:
        fl.wait_mount(srv, "/live.ogg", enc)
        secure = TlsListener(srv, "/live.ogg")
        assert secure.open().status == 200, secure.response
        secure.wait_bytes(8000, 10)
        old = srv.proc.pid
        upgrade(srv, drains=True)
        handed = time.monotonic()
        srv.wait_log("upgrade: serving 1 TLS listener until it leaves")
        while time.monotonic() - handed < 5:
            n = secure.received
            secure.wait_bytes(n + 4000, 5)
        assert not secure.closed and running(old), secure.close_reason
        # whole pages that ffmpeg plays with no error, across the join
        capture = fl.strict_capture("vorbis", secure.snapshot())
        assert fl.ffmpeg_stream_decode_errors(capture, "ogg") == ""
        assert enc.poll() is None, enc.stderr.read()
        secure.close()
        wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    finally:
        fl.stop_process(enc)


def test_the_feed_of_a_mount_closes_when_its_last_tls_listener_leaves(server, mp3_file):
    from test_tls import TlsListener
    srv, src, lis, secure = tls_live_mount(server, mp3_file)
    other = srv.source("/other.mp3", mp3_file, rate=RATE, chunk=1000)
    assert other.connect().status == 200, other.response
    other.start()
    fl.wait_mount(srv, "/other.mp3")
    second = TlsListener(srv, "/other.mp3")
    assert second.open().status == 200, second.response
    second.wait_bytes(10000, 10)
    old = srv.proc.pid
    upgrade(srv, drains=True)
    srv.wait_log("upgrade: serving 2 TLS listeners until they leave")
    for x in (secure, second):
        n = x.received
        x.wait_bytes(n + 8000, 10)
    second.close()
    srv.wait_log("relay /other.mp3: local feed closed: its last listener left")
    # the other mount's feed goes on, and the old process with it
    n = secure.received
    secure.wait_bytes(n + 8000, 10)
    assert running(old) and not secure.closed, secure.close_reason
    assert srv.error_log().count("local feed closed") == 1
    secure.close()
    wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    for x in (src, other):
        x.stop()
    lis.close()


@contextlib.contextmanager
def user_file_station(start, mp3_file, mount):
    """A server started by start(mounts=...) whose `mount` lets in the user carol (password pw)
    of a user file, with a paced MP3 source on it: (server, source)."""
    from test_auth_htpasswd import auth_mount, md5_line, user_dir, write_users
    d = user_dir()
    try:
        users = os.path.join(d, "users")
        write_users(users, md5_line("carol", "pw"))
        conf = auth_mount(users)
        conf["mount_name"] = mount
        srv = start(mounts=[conf])
        src = srv.source(mount, mp3_file, rate=RATE, chunk=1000)
        assert src.connect().status == 200, src.response
        src.start()
        fl.wait_mount(srv, mount)
        yield srv, src
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_a_wrong_feed_token_makes_an_ordinary_listener(server, mp3_file):
    from test_tls import tls_server
    with user_file_station(lambda **kw: tls_server(server, **kw)[0], mp3_file,
                           "/live.mp3") as (srv, src):
        fl.set_metadata(srv, "/live.mp3", song="Before")
        # a TLS listener of a mount with authentication: the feed needs none
        secure = CurlListener(srv, "/live.mp3", user="carol:pw")
        secure.wait_bytes(20000, 10)
        old = srv.proc.pid
        upgrade(srv, drains=True)
        assert_fed_across_the_upgrade(srv, src, secure, old, settle=2)
        # a token the new process was not sent: the mount's authentication applies...
        bad = {"X-Rimecast-Feed": "0" * 32}
        nobody = srv.listener("/live.mp3", headers=bad)
        assert nobody.open().status == 401, nobody.response
        srv.wait_log("feed token refused")
        # ...and, passed, it is an ordinary listener: counted and listed
        carol = srv.listener("/live.mp3",
                             headers=dict(bad, Authorization=wirelib.basic_auth("carol", "pw")))
        assert carol.open().status == 200, carol.response
        carol.wait_bytes(10000, 10)
        wirelib.wait_until(lambda: fl.json_source(srv, "/live.mp3")["listeners"] == 1, 10,
                           "the listener with a wrong token to be counted")
        assert len(listener_stats(srv, "/live.mp3")) == 1
        carol.close()
        secure.stop()
        wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
        src.stop()


def test_a_tls_listener_whose_feed_ends_with_the_source_is_closed_with_a_log_line(server,
                                                                                  mp3_file):
    srv, src, lis, secure = tls_live_mount(server, mp3_file)
    old = srv.proc.pid
    upgrade(srv, drains=True)
    srv.wait_log("upgrade: serving 1 TLS listener until it leaves")
    n = secure.received
    secure.wait_bytes(n + 8000, 10)
    src.stop()  # the new process's mount ends: the feed with it
    secure.wait_closed(10)
    srv.wait_log("upgrade: closing the TLS listeners of /live.mp3: its feed from the new "
                 "process ended")
    wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    lis.close()


def test_tls_listeners_of_a_server_with_no_plain_socket_are_closed_at_the_hand_over(server,
                                                                                    mp3_file):
    srv, src, lis, secure = tls_live_mount(server, mp3_file)
    # the config now listens in TLS only (reloaded): the old process has no plain port to be
    # fed from, and the new process reads the same
    plain = re.compile(r"<listen-socket>\s*<port>%d</port>.*?</listen-socket>" % srv.port, re.S)
    text = open(srv.config_path).read()
    assert plain.search(text)
    srv.write_config(plain.sub("", text))
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    old = srv.proc.pid
    upgrade(srv, drains=True)
    secure.wait_closed(10)
    srv.wait_log("upgrade: closing the TLS listeners of /live.mp3: no plain HTTP listening "
                 "socket on a wildcard or loopback address")
    wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    log = srv.error_log()
    assert log.count("upgrade: closing the TLS listeners of") == 1, log
    assert "upgrade: the last TLS listener left: exiting" in log
    lis.close()
    src.stop()


def test_an_old_process_serving_tls_listeners_leaves_its_tls_relay_to_the_new_one(server,
                                                                                 mp3_file):
    from test_relay_tls import https_origin, relay_xml
    from test_tls import TlsListener, tls_server
    origin, src, ca = https_origin(server, mp3_file)
    edge, _, _ = tls_server(server, ssl_cafile=ca, extra_xml=relay_xml(
        "127.0.0.1", origin.tls_port, "/live.mp3", "/edge.mp3"))
    fl.wait_mount(edge, "/edge.mp3")
    lis = edge.listener("/edge.mp3")
    assert lis.open().status == 200, lis.response
    lis.wait_bytes(30000, 10)
    before = listener_stats(edge, "/edge.mp3")  # the plain one: the new process's
    secure = TlsListener(edge, "/edge.mp3")
    assert secure.open().status == 200, secure.response
    secure.wait_bytes(10000, 10)
    old = edge.proc.pid
    upgrade(edge, drains=True)
    assert_relay_started_again(edge, "/edge.mp3", lis, before, mp3_file)
    # the old process pulls nothing: the origin sees the new process's relay alone, over
    # several of the old relay's retry periods
    end = time.monotonic() + 4
    while time.monotonic() < end:
        assert fl.json_source(origin, "/live.mp3")["listeners"] == 1
        time.sleep(0.2)
    assert running(old) and not secure.closed
    secure.close()
    wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    src.stop()
    lis.close()


def test_tls_listeners_still_there_after_upgrade_drain_are_closed_with_a_log_line(server,
                                                                                  mp3_file):
    srv, src, lis, secure = tls_live_mount(
        server, mp3_file, extra_xml="<limits><upgrade-drain>2</upgrade-drain></limits>")
    old = srv.proc.pid
    upgrade(srv, drains=True)
    handed = time.monotonic()
    srv.wait_log("upgrade: serving 1 TLS listener until it leaves, for at most 2 s")
    secure.wait_closed(10)
    took = time.monotonic() - handed
    assert 1.5 < took < 6, took
    srv.wait_log("upgrade: drain time over: closing 1 TLS listener")
    wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    n = lis.received
    lis.wait_bytes(n + 20000, 10)
    assert not lis.closed, lis.close_reason
    lis.close()
    src.stop()


def test_with_upgrade_drain_0_tls_listeners_are_closed_at_the_hand_over(server, mp3_file):
    from test_tls import TlsListener
    srv, src, lis, secure = tls_live_mount(
        server, mp3_file, extra_xml="<limits><upgrade-drain>0</upgrade-drain></limits>")
    upgrade(srv)
    srv.wait_log("upgrade: 1 TLS connection closed")
    secure.wait_closed(10)
    n = lis.received
    lis.wait_bytes(n + 20000, 10)
    assert not lis.closed, lis.close_reason
    # the TLS socket came over with the others: the new process does the handshakes now
    again = TlsListener(srv, "/live.mp3")
    assert again.open().status == 200, again.response
    again.wait_bytes(10000, 10)
    for x in (again, secure, lis):
        x.close()
    src.stop()


def test_a_listener_logged_in_with_a_user_file_keeps_its_session(server, mp3_file):
    with user_file_station(server, mp3_file, "/secret") as (srv, src):
        auth = {"Authorization": wirelib.basic_auth("carol", "pw")}
        lis = srv.listener("/secret", headers=auth)
        assert lis.open().status == 200, lis.response
        lis.wait_bytes(20000, 10)
        upgrade(srv)
        n = lis.received
        lis.wait_bytes(n + 20000, 10)
        assert not lis.closed, lis.close_reason
        # the session came along: the same user is still listening, a second login is refused
        twice = srv.listener("/secret", headers=auth)
        assert twice.open().status == 401, twice.response
        twice.close()
        lis.close()  # its session ends in the new process: the user may come back

        def login():
            x = srv.listener("/secret", headers=auth)
            ok = x.open(start=False).status == 200
            x.close()
            return ok
        wirelib.wait_until(login, 5, "a login once the first listener left")
        src.stop()


def test_a_url_authenticated_listener_is_carried_and_its_remove_sent_once_by_the_new_process(
        server, mp3_file, auth):
    rec = auth()
    srv = server(mounts=[url_mount(rec, "/live.mp3")])
    src, _ = live_mount(srv, mp3_file)
    lis = srv.listener("/live.mp3", headers={"Authorization": wirelib.basic_auth("eve", "pw")})
    t0 = time.monotonic()
    assert lis.open().status == 200, lis.response
    client = rec.wait("listener_add", 2)[-1].form["client"]
    lis.wait_bytes(20000, 10)
    wirelib.wait_until(lambda: time.monotonic() - t0 >= 2, 5, "two seconds of listening")
    upgrade(srv)
    assert all(r.form["client"] != client for r in rec.of("listener_remove"))
    n = lis.received
    lis.wait_bytes(n + 20000, 10)
    assert not lis.closed, lis.close_reason
    wirelib.wait_until(lambda: time.monotonic() - t0 >= 4, 5, "two seconds after the upgrade")
    lis.close()
    took = time.monotonic() - t0
    removes = rec.wait("listener_remove", 1, 10)
    mine = [r.form for r in removes if r.form["client"] == client]
    # the old process is gone (upgrade() waited for it): no second remove can come from it
    assert len(mine) == 1, removes
    f = mine[0]
    assert (f["mount"], f["user"], f["pass"], f["ip"]) == ("/live.mp3", "eve", "pw", "127.0.0.1")
    assert abs(int(f["duration"]) - took) <= 1.5, (f["duration"], took)
    assert int(f["sent"]) >= n + 20000
    src.stop()


def test_an_hls_session_with_a_url_login_keeps_its_time_limit_and_remove(server, auth):
    from test_hls_auth import MOUNT, live_url_mount, poll
    rec = auth(lambda req: (200, {"icecast-auth-user": "1", "icecast-auth-timelimit": "7"}))
    srv, enc = live_url_mount(server, rec)
    token = hlscheck.token(srv, MOUNT, "7")
    try:
        t0 = time.monotonic()
        assert poll(srv, token, {"Authorization": wirelib.basic_auth("al", "pw")})[0] == 200
        [add] = rec.of("listener_add")
        upgrade(srv)
        assert rec.of("listener_remove") == []
        # it polls on in the new process until its login's time limit ends it there
        wirelib.wait_until(lambda: poll(srv, token)[0] != 200, 15,
                           "the time limit to end the session", interval=0.3)
        took = time.monotonic() - t0
        assert 6 <= took <= 9, took
        [rm] = rec.wait("listener_remove", 1, 10)
    finally:
        fl.stop_process(enc)
    assert rm.form["client"] == add.form["client"] and rm.form["user"] == "al"
    assert rm.form["duration"] == "7", rm.form
    assert len(rec.of("listener_remove")) == 1


def test_no_descriptor_is_left_behind_in_the_new_process(server, mp3_file, auth):
    # URL authentication starts the HTTP client: its library's own descriptors stay behind
    srv = server(mounts=[url_mount(auth(), "/other")])
    src, lis = live_mount(srv, mp3_file)

    def settled_fds(pid):
        """The process's descriptor count once it held still for a second (right after its
        confirmation a new process may open or close one or two for a moment: a name lookup,
        the HTTP library's connection cache)."""
        seen = []

        def still():
            seen.append(len(os.listdir("/proc/%d/fd" % pid)))
            return len(seen) >= 10 and len(set(seen[-10:])) == 1
        wirelib.wait_until(still, 20, lambda: "the descriptors to settle: %s" % seen[-20:],
                           interval=0.1)
        return seen[-1]

    counts = [settled_fds(upgrade(srv)) for _ in range(3)]
    n = lis.received
    lis.wait_bytes(n + 20000, 10)
    assert counts[0] == counts[1] == counts[2], counts
    lis.close()
    src.stop()


def test_the_new_process_tells_systemd_its_pid(server, mp3_file, monkeypatch):
    import socket
    d = tempfile.mkdtemp(prefix="upgrade-notify-")
    try:
        os.chmod(d, 0o755)
        path = os.path.join(d, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        os.chmod(path, 0o777)  # the server sends as the user it runs as
        monkeypatch.setenv("NOTIFY_SOCKET", path)
        # read as a service manager does, all along: the new process names itself the main
        # one and waits (BARRIER=1: its descriptor is dropped once read) before it confirms
        got, stop = [], threading.Event()

        def manager():
            sock.settimeout(0.2)
            while not stop.is_set():
                try:
                    got.append(sock.recv(4096).decode().split("\n"))
                except socket.timeout:
                    pass
        reader = threading.Thread(target=manager, daemon=True)
        reader.start()
        srv = server()
        src, lis = live_mount(srv, mp3_file)
        new_pid = upgrade(srv)
        deadline = time.monotonic() + 10
        named = lambda: ["MAINPID=%d" % new_pid in m for m in got]
        while not (any(named()) and any("READY=1" in m for m in got[named().index(True):])):
            assert time.monotonic() < deadline, got
            time.sleep(0.05)
        first = named().index(True)
        assert "BARRIER=1" in [l for m in got[first + 1:] for l in m], got  # before it confirmed
        stop.set()
        reader.join()
        sock.close()
        src.stop()
        lis.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_a_listener_still_in_its_intro_gets_the_rest_of_it_then_the_stream(server, mp3_file):
    web = tempfile.mkdtemp(prefix="upgrade-web-")
    try:
        os.chmod(web, 0o755)
        intro = fl.mp3_audio(fl.encode_file(os.path.join(web, "intro.mp3"), "mp3", 10,
                                            freq=1000))
        srv = server(webroot=web, sndbuf=8192, extra_xml='<mount type="normal"><mount-name>'
                     '/live.mp3</mount-name><intro>/intro.mp3</intro></mount>')
        src = srv.source("/live.mp3", mp3_file, rate=RATE, chunk=1000)
        assert src.connect().status == 200
        src.start()
        fl.wait_mount(srv, "/live.mp3")
        # a listener that reads nothing yet: its socket fills up in the middle of the intro
        lis = srv.listener("/live.mp3", rcvbuf=4096)
        assert lis.open(start=False).status == 200, lis.response
        upgrade(srv)
        lis.start()
        lis.wait_bytes(len(intro) + 30000, 15)
        body = bytes(lis.snapshot())
        assert body[:len(intro)] == intro
        assert wirelib.locate_slice(mp3_file, fl.trim_capture("mp3", body[len(intro):])) \
            is not None
        lis.close()
        src.stop()
    finally:
        shutil.rmtree(web, ignore_errors=True)



def test_a_recording_goes_on_in_the_same_file(server, mp3_file):
    srv = server(start=False)
    dump = os.path.join(srv.logdir, "recording.mp3")
    srv.cfg["extra_xml"] = ('<mount type="normal"><mount-name>/live.mp3</mount-name>'
                            '<dump-file>%s</dump-file></mount>' % dump)
    srv.start()
    src, lis = live_mount(srv, mp3_file)
    wirelib.wait_until(lambda: os.path.exists(dump) and os.path.getsize(dump) > 20000, 10,
                       "the recording to begin")
    upgrade(srv)
    upgraded_at = src.sent

    def recorded():
        with open(dump, "rb") as f:
            return f.read()
    # what the source sent well after the upgrade is in the file, after all that came before
    wirelib.wait_until(lambda: len(recorded()) > upgraded_at + 40000, 15,
                       "the recording to go on after the upgrade")
    body = recorded()
    assert wirelib.locate_slice(mp3_file, body) == 0, "not the stream from its first byte"
    assert [f for f in os.listdir(srv.logdir) if f.startswith("recording")] == ["recording.mp3"]
    src.stop()
    lis.close()


def test_an_upgrade_to_a_binary_that_is_gone_names_its_path_and_serves_on(server):
    d = tempfile.mkdtemp(dir=conftest.run_dir())
    os.chmod(d, 0o755)
    binary = os.path.join(d, "rimecast")
    shutil.copy(conftest.BINARY, binary)
    os.chmod(binary, 0o755)
    srv = server(binary=binary)
    os.unlink(binary)  # a package removed it, say
    srv.send_signal(signal.SIGUSR2)
    wirelib.wait_until(lambda: "upgrade: failed" in srv.error_log(), 20, "the failure")
    line = [l for l in srv.error_log().splitlines() if "upgrade: failed" in l][0]
    assert "the new binary %s cannot be run: No such file or directory" % binary in line, line
    assert "status 127" not in line
    lis = srv.listener("/nothing-here")
    assert lis.open().status == 404  # still serving
    lis.close()
