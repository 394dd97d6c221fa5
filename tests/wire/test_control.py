# SPDX-License-Identifier: GPL-2.0-or-later
"""Process control: SIGHUP reload, SIGTERM, command line, config errors."""

import os
import re
import signal
import subprocess

import pytest

import wirelib
from conftest import BINARY, CONNECT_PENDING, IS_ICECAST, Server, free_port, render_config


def test_sighup_reload_keeps_100_listeners_flowing(server, data):
    srv = server(clients=200, queue_size=1 << 20, burst_size=16384)
    src = srv.source("/hup.mp3", data, rate=64 * 1024)
    assert src.connect().status == 200
    src.start()
    src.wait_sent(16384, 5)
    many = wirelib.MultiListener(srv.host, srv.port, "/hup.mp3", 100, keep=0,
                                  pending=CONNECT_PENDING).start()
    try:
        many.wait_all_received(16384, 30)

        # harmless change + SIGHUP: nobody is dropped, everybody keeps receiving
        srv.write_config(location="Somewhere Else")
        srv.send_signal(signal.SIGHUP)
        many.wait_all_more(many.received_totals(), 32768, 15)
        assert srv.is_alive()

        # broken config + SIGHUP: the server keeps running on the old config
        srv.write_config(text="<icecast>\n  <limits>\n    <clients>10</clients>\n  <limits\n")
        srv.send_signal(signal.SIGHUP)
        many.wait_all_more(many.received_totals(), 32768, 15)
        assert srv.is_alive()
        assert not many.closed_peers()
        # the old listen socket and limits still apply: a new listener is admitted
        lis = srv.listener("/hup.mp3")
        assert lis.open().status == 200
        lis.wait_bytes(8192, 5)
        lis.close()
    finally:
        many.stop()
        src.stop()
    if not IS_ICECAST:
        log = srv.error_log()
        assert re.search(r"icecast\.xml:\d+", log), "reload error without file:line"


def test_sigterm_exits_cleanly(server, data):
    srv = server()
    src = srv.source("/t.mp3", data, rate=32768)
    assert src.connect().status == 200
    src.start()
    lis = srv.listener("/t.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(4096, 5)
    code = srv.stop(timeout=10)
    assert code == 0, "exit code %r\n%s" % (code, srv.diagnostics())
    lis.wait_closed(5)
    lis.close()
    src.stop()


def test_version_flag_prints_a_version():
    p = subprocess.run([BINARY, "-v"], capture_output=True, timeout=10, text=True)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert re.search(r"\d+\.\d+", out), out


def _run_config(text, timeout=10):
    """Write a config and run the binary on it; returns (exit code or None if still up, output)."""
    srv = Server()
    srv.cfg["port"] = free_port()
    srv.write_config(text=text)
    p = subprocess.Popen([BINARY, "-c", srv.config_path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=srv.dir)
    try:
        out, err = p.communicate(timeout=3)
        return p.returncode, out + err, srv
    except subprocess.TimeoutExpired:
        # still running: that is a started server; stop it cleanly
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=timeout)
        return None, out + err, srv


def _base_config():
    srv = Server()
    srv.cfg["port"] = free_port()
    return srv, render_config(srv.cfg)


def test_running_as_root_without_changeowner_is_refused():
    srv = Server(changeowner=False)
    srv.cfg["port"] = free_port()
    code, out, _ = _run_config(render_config(srv.cfg))
    assert code is not None and code != 0, "started as root without <changeowner>"
    assert "changeowner" in out.lower() or "root" in out.lower(), out


@pytest.mark.rimecast_only
def test_malformed_xml_reports_file_and_line():
    _, text = _base_config()
    lines = text.splitlines()
    lines.insert(5, "  <limits><clients>5</limits>")   # mismatched tag on line 6
    code, out, srv = _run_config("\n".join(lines) + "\n")
    assert code not in (None, 0), out
    assert re.search(re.escape(srv.config_path) + r":\d+:", out), out


@pytest.mark.rimecast_only
def test_non_numeric_port_reports_line():
    _, text = _base_config()
    text = re.sub(r"<port>\d+</port>", "<port>abc</port>", text)
    lineno = next(i + 1 for i, ln in enumerate(text.splitlines()) if "<port>abc" in ln)
    code, out, srv = _run_config(text)
    assert code not in (None, 0), out
    assert re.search(r":%d:" % lineno, out), "no line %d in: %s" % (lineno, out)


@pytest.mark.rimecast_only
def test_unknown_element_warns_and_starts(server):
    srv = server(extra_xml="<frobnicate>1</frobnicate>")
    resp, _ = wirelib.simple_request(srv.host, srv.port, b"GET /nothing HTTP/1.0\r\n\r\n")
    assert resp is not None and resp.status == 404
    wirelib.wait_until(lambda: "frobnicate" in srv.stderr() + srv.error_log(), 5,
                       "a warning naming the unknown element")


@pytest.mark.rimecast_only
def test_background_flag_daemonizes_and_writes_the_pidfile():
    srv, text = _base_config()
    srv.write_config(text=text)
    pidfile = os.path.join(srv.dir, "server.pid")
    p = subprocess.run([BINARY, "-b", "-c", srv.config_path], capture_output=True, timeout=10,
                       text=True, cwd=srv.dir)
    assert p.returncode == 0, p.stdout + p.stderr
    wirelib.wait_until(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), 5,
                       "the daemon's pidfile")
    pid = int(open(pidfile).read())
    try:
        # the daemon serves on its port although the command that started it has returned
        wirelib.wait_until(lambda: _answers(srv.cfg["port"]), 5, "the daemon to answer")
        assert os.getsid(pid) == pid, "the daemon did not start its own session"
    finally:
        os.kill(pid, signal.SIGTERM)
    wirelib.wait_until(lambda: _gone(pid), 10, "the daemon to exit")


def _gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # exited, not yet reaped
    except OSError:
        return True


def _answers(port):
    import socket
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /nothing-here HTTP/1.0\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.0 404")
    except OSError:
        return False
