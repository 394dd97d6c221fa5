# SPDX-License-Identifier: GPL-2.0-or-later
"""The service manager's notifications (systemd Type=notify): with $NOTIFY_SOCKET set, the
daemon sends READY=1 once it accepts connections, RELOADING=1 (with the time) and READY=1
around a SIGHUP reload, and STOPPING=1 when it shuts down, each one datagram from the daemon's
own process, to a socket given by a path or an abstract name."""

import os
import signal
import socket
import struct
import time

import pytest

import wirelib

pytestmark = pytest.mark.rimecast_only


class NotifySocket:
    """A datagram socket standing in for systemd's notify socket; it asks the kernel for the
    sender's credentials, as systemd does, to check who sent each message."""

    def __init__(self, name):
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + name[1:] if name.startswith("@") else name)
        if not name.startswith("@"):
            os.chmod(name, 0o777)  # the daemon sends as the user it dropped to
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)

    def next(self, timeout=5.0):
        """(text, sender pid) of the next message, waiting at most timeout."""
        self.sock.settimeout(timeout)
        try:
            data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            raise AssertionError("no notification within %.0f s" % timeout)
        pid = None
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", payload[:12])[0]
        return data.decode(), pid

    def none_within(self, seconds):
        self.sock.settimeout(seconds)
        try:
            return self.sock.recv(4096).decode()
        except socket.timeout:
            return None

    def close(self):
        self.sock.close()


def started_with_notify(server, monkeypatch, name):
    srv = server(start=False)
    if not name.startswith("@"):
        name = os.path.join(srv.dir, name)
    notify = NotifySocket(name)
    monkeypatch.setenv("NOTIFY_SOCKET", name)
    srv.start()
    return srv, notify


def test_ready_once_listening_and_stopping_at_shutdown(server, monkeypatch):
    srv, notify = started_with_notify(server, monkeypatch, "notify.sock")
    try:
        text, pid = notify.next()
        assert text == "READY=1"
        assert pid == srv.pid, "READY=1 sent by pid %s, not the daemon's %d" % (pid, srv.pid)
        # ready means serving: a request is answered at once
        r, _ = wirelib.simple_request(srv.host, srv.port, b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
        assert r.status == 200
        assert notify.none_within(0.3) is None, "only one READY=1 at start-up"
        srv.send_signal(signal.SIGTERM)
        text, pid = notify.next()
        assert text == "STOPPING=1" and pid == srv.pid
        assert srv.stop() == 0
    finally:
        notify.close()


def test_reload_is_framed_by_reloading_and_ready(server, monkeypatch):
    srv, notify = started_with_notify(server, monkeypatch, "@rimecast-wire-notify-%d" % os.getpid())
    try:
        assert notify.next()[0] == "READY=1"
        before = time.clock_gettime(time.CLOCK_MONOTONIC)
        srv.send_signal(signal.SIGHUP)
        text, pid = notify.next()
        lines = text.split("\n")
        assert lines[0] == "RELOADING=1" and pid == srv.pid, text
        # MONOTONIC_USEC: when the reload began, on the clock systemd compares it with
        usec = int(dict(line.split("=", 1) for line in lines)["MONOTONIC_USEC"])
        after = time.clock_gettime(time.CLOCK_MONOTONIC)
        assert before * 1e6 - 1 <= usec <= after * 1e6 + 1
        assert notify.next()[0] == "READY=1"
        srv.wait_log("config reloaded")
    finally:
        notify.close()


def test_unreachable_notify_socket_is_logged_and_serving_goes_on(server, monkeypatch):
    """A socket name of a kind the daemon cannot reach (systemd's vsock addresses) is said once
    in the error log; the server starts and serves all the same."""
    monkeypatch.setenv("NOTIFY_SOCKET", "vsock:2:9")
    srv = server()
    srv.wait_log("cannot notify the service manager (NOTIFY_SOCKET) of READY=1")
    r, _ = wirelib.simple_request(srv.host, srv.port, b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
    assert r.status == 200
