# SPDX-License-Identifier: GPL-2.0-or-later
"""`rimecast --upgrade -c CONFIG`: finds the running server through the config's pidfile,
sends SIGUSR2 only to a rimecast that handles it, and reports what the server's error log says:
the new PID (once the pidfile names it and the port answers), the "upgrade: failed:" line, or
that nothing happened in time. Stand-in servers (upgrade_fake.py, run by a copy of the Python
interpreter named rimecast) play each kind of server; the last test runs the daemon itself."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import conftest
import wirelib
from conftest import BINARY, HERE, free_port
from test_upgrade import mp3_file  # noqa: F401 (a fixture)

pytestmark = pytest.mark.rimecast_only


def upgrade(srv, *args, timeout=30):
    p = subprocess.run([BINARY, "--upgrade", "-c", srv.config_path] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def pidfile_pid(srv):
    try:
        with open(os.path.join(srv.dir, "server.pid")) as f:
            return int(f.read().strip() or 0)
    except FileNotFoundError:
        return 0


def answers(srv):
    resp, body = wirelib.simple_request(srv.host, srv.port, b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
    return resp and resp.status == 200 and resp.header("server")


@pytest.fixture
def fake(server):
    """fake(mode) -> (Server with its config written, the stand-in's Popen)."""
    started = []

    def start(mode):
        srv = server(start=False)
        srv.cfg["port"] = free_port()
        srv.write_config()
        interp = os.path.join(srv.dir, "rimecast")
        shutil.copy(os.path.realpath(sys.executable), interp)
        p = subprocess.Popen([interp, os.path.join(HERE, "upgrade_fake.py"), mode,
                              str(srv.port), os.path.join(srv.dir, "server.pid"),
                              srv.error_log_path], stdin=subprocess.DEVNULL)
        started.append((srv, p))
        wirelib.wait_until(lambda: pidfile_pid(srv) == p.pid and answers(srv), 10,
                           "the stand-in server serving")
        return srv, p

    yield start
    for srv, p in started:
        for pid in {p.pid, pidfile_pid(srv)}:  # the stand-in, and the process it handed over to
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        p.wait(5)


def still_running(proc, seconds=0.5):
    try:
        proc.wait(seconds)
        return False
    except subprocess.TimeoutExpired:
        return True


def test_a_server_without_the_handover_gets_no_signal(fake):
    srv, p = fake("nohandler")
    rc, out, err = upgrade(srv)
    assert rc == 3, (rc, out, err)
    assert "does not handle SIGUSR2" in err and "PID %d" % p.pid in err
    # SIGUSR2's default action would have ended it
    assert still_running(p), "the server was signalled (exit %s)" % p.returncode
    assert answers(srv) == "fake-old"


def test_handover_reports_the_new_process(fake):
    srv, p = fake("handover")
    rc, out, err = upgrade(srv)
    assert rc == 0, (rc, out, err)
    new = pidfile_pid(srv)
    assert new not in (0, p.pid)
    assert "PID %d handed over to PID %d in " % (p.pid, new) in out and "serving after" in out
    assert "http://127.0.0.1:%d/ answers (HTTP/1.0 200 OK, Server: fake-new)" % srv.port in out
    assert p.wait(5) == 0


def test_failure_prints_the_error_log_line(fake):
    srv, p = fake("fail")
    with open(srv.error_log_path, "a") as f:  # an earlier failure: not this upgrade's
        f.write("[2026-01-01  00:00:00] EROR upgrade/fake upgrade: failed: an older one\n")
    rc, out, err = upgrade(srv)
    assert rc == 1, (rc, out, err)
    assert "upgrade: failed: the new binary exited at start-up (status 1)" in err
    assert "an older one" not in err
    assert "goes on serving" in err and still_running(p, 0)
    assert answers(srv) == "fake-old"


def test_no_answer_within_the_timeout(fake):
    srv, p = fake("silent")
    t0 = time.monotonic()
    rc, out, err = upgrade(srv, "--timeout=1")
    took = time.monotonic() - t0
    assert rc == 1, (rc, out, err)
    assert "no hand-over within 1 s" in err
    assert 1.0 <= took < 5, took
    assert still_running(p, 0)


def test_no_server_or_not_rimecast(server):
    srv = server(start=False)
    srv.cfg["port"] = free_port()
    srv.write_config()
    rc, out, err = upgrade(srv)
    assert rc == 3 and "cannot read the pidfile" in err and "is the server running?" in err, err
    # a stale pidfile naming a process that is not rimecast: it is not signalled
    other = subprocess.Popen(["sleep", "30"])
    try:
        with open(os.path.join(srv.dir, "server.pid"), "w") as f:
            f.write("%d\n" % other.pid)
        rc, out, err = upgrade(srv)
        assert rc == 3 and ("process %d" % other.pid) in err and "is not rimecast" in err, err
        assert still_running(other)
    finally:
        other.kill()
        other.wait()
    rc, out, err = upgrade(srv, "--timeout=0")
    assert rc == 2 and "--timeout" in err
    rc, out, err = upgrade(srv, "--pid=x")
    assert rc == 2 and "--pid" in err


def handles_usr2(pid):
    with open("/proc/%d/status" % pid) as f:
        masks = [int(line.split()[1], 16) for line in f
                 if line.split(":")[0] in ("SigBlk", "SigIgn", "SigCgt")]
    return any(m & (1 << (signal.SIGUSR2 - 1)) for m in masks)


def test_the_daemon_with_a_listener(server, data):
    """Against the daemon under test: a version that hands over is upgraded while a listener
    keeps receiving; one that does not is left running (no SIGUSR2) and said to be too old."""
    srv = server()
    src = srv.source("/live.mp3", data, rate=32 * 1024)
    assert src.connect().status == 200
    src.start()
    lis = srv.listener("/live.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(16384, 10)
    old = srv.pid
    rc, out, err = upgrade(srv, timeout=90)
    new = None
    try:
        if not handles_usr2(old):
            assert rc == 3 and "does not handle SIGUSR2" in err, (rc, out, err)
            assert srv.is_alive()
        else:
            assert rc == 0, (rc, out, err)
            new = pidfile_pid(srv)
            assert new != old and "handed over to PID %d" % new in out
            srv.proc.wait(30)  # the old process leaves once it has handed over
            srv.stopped = True
        before = lis.received
        lis.wait_bytes(before + 16384, 10)
        assert not lis.closed
    finally:
        src.close()
        lis.close()
        if new:
            os.kill(new, signal.SIGTERM)
            wirelib.wait_until(lambda: not os.path.exists("/proc/%d" % new), 10, "the new PID gone")


def test_a_server_logging_to_stderr_is_upgraded_and_the_new_pid_named(server, mp3_file):
    """<errorlog>/dev/stderr</errorlog> (containers, AzuraCast): the command has no log of the
    server's to read (its own /dev/stderr is another stream), so it follows the pidfile; a TLS
    listener the old process keeps does not make it wait for that process to end."""
    from test_upgrade import running, tls_live_mount
    srv, src, lis, secure = tls_live_mount(server, mp3_file)
    srv.write_config(text=conftest.render_config(srv.cfg).replace(
        "<errorlog>error.log</errorlog>", "<errorlog>/dev/stderr</errorlog>"))
    old = srv.pid
    rc, out, err = upgrade(srv, "--timeout=20", timeout=60)
    new = pidfile_pid(srv)
    try:
        assert rc == 0, (rc, out, err)
        assert new != old and "PID %d handed over to PID %d" % (old, new) in out, out
        assert running(old), "the old process serves its TLS listener until it leaves"
        n = secure.received
        secure.wait_bytes(n + 10000, 10)
    finally:
        src.stop()
        for x in (secure, lis):
            x.close()
        if new and new != old:
            os.kill(new, signal.SIGTERM)
            wirelib.wait_until(lambda: not running(new), 10, "the new PID gone")
        wirelib.wait_until(lambda: not running(old), 10, "the old PID gone")
        srv.stopped = True


def test_the_docs_example_shows_the_version_the_binary_has():
    with open(os.path.join(conftest.SRCDIR, "docs", "UPGRADE.md")) as f:
        shown = set(re.findall(r"Server: Rimecast (\d+\.\d+\.\d+)", f.read()))
    version = subprocess.run([conftest.BINARY, "-v"], capture_output=True, text=True,
                             check=True).stdout.splitlines()[0].split()[-1]
    assert shown == {version}, (shown, version)
