# SPDX-License-Identifier: GPL-2.0-or-later
"""Shoutcast v1 sources on the port after a listen-socket with <shoutcast-mount>.

The encoder connects to port + 1, sends its password line, gets "OK2" and "icy-caps:11", sends
icy-* and content-type header lines and a blank line, then audio. Listeners of the mount get
that audio byte for byte; the DSP's /admin.cgi title updates reach them; a wrong password
closes the connection and is logged."""

import socket
import threading
import time
import urllib.parse

import pytest

import adminlib
import formatlib as fl
import httprec
import wirelib
from conftest import IS_ICECAST, SOURCE_PASSWORD, port_pair

MOUNT = "/live.mp3"



@pytest.fixture
def sc(server):
    port = port_pair()
    extra = """<listen-socket><port>%d</port><bind-address>127.0.0.1</bind-address>
    <shoutcast-mount>%s</shoutcast-mount></listen-socket>
  <shoutcast-mount>%s</shoutcast-mount>""" % (port, MOUNT, MOUNT)
    srv = server(extra_xml=extra)
    return srv, port


OK2 = b"OK2\r\nicy-caps:11\r\n\r\n"
HEADERS = (b"icy-name:SC Test\r\nicy-genre:Rock\r\nicy-url:http://sc.test/\r\n"
           b"content-type:audio/mpeg\r\nicy-pub:0\r\nicy-br:128\r\n\r\n")


class ShoutcastSource(wirelib.SourceClient):
    """A Shoutcast v1 encoder: password line, OK2, header lines, then paced data."""

    def __init__(self, host, port, data, password=SOURCE_PASSWORD, eager=False, **kw):
        super().__init__(host, port, MOUNT, data, **kw)
        self.password, self.eager = password, eager
        self.greeting = None

    def connect(self, timeout=5.0):
        self.sock = wirelib.connect(self.host, self.port, timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        line = self.password.encode() + b"\r\n"
        if self.eager:                     # some encoders do not wait for OK2
            self.sock.sendall(line + HEADERS)
        else:
            self.sock.sendall(line)
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in buf and time.monotonic() < deadline:
            try:
                chunk = self.sock.recv(256)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
        self.greeting = buf
        if buf != OK2:
            return None
        if not self.eager:
            self.sock.sendall(HEADERS)
        return buf

    def start(self):
        assert self.greeting == OK2, self.greeting
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self


@pytest.mark.parametrize("eager", [False, True], ids=["waits-for-OK2", "eager"])
def test_shoutcast_source_streams_byte_exact_to_listeners(sc, data, eager):
    srv, port = sc
    src = ShoutcastSource(srv.host, port + 1, data, rate=64 * 1024, chunk=2048, eager=eager)
    assert src.connect() == OK2, src.greeting
    src.start()
    try:
        fl.wait_mount(srv, MOUNT, timeout=5)
        main = srv.listener(MOUNT)
        assert main.open().status == 200
        other = wirelib.Listener(srv.host, port, MOUNT)   # the Shoutcast socket's own port
        assert other.open().status == 200
        assert main.response.header("Content-Type") == "audio/mpeg"
        assert main.response.header("icy-name") == "SC Test"
        assert main.response.header("icy-genre") == "Rock"
        main.wait_bytes(64 * 1024, 5)
        other.wait_bytes(64 * 1024, 5)
        main.close()
        other.close()
        wirelib.locate_slice(data, main.snapshot())
        wirelib.locate_slice(data, other.snapshot())
        s = fl.stats_source(srv, MOUNT)
        assert s.findtext("server_name") == "SC Test"
    finally:
        src.stop()


def test_dsp_admin_cgi_sets_the_title_of_the_shoutcast_mount(sc, data):
    srv, port = sc
    src = ShoutcastSource(srv.host, port + 1, data, rate=64 * 1024, chunk=1024)
    assert src.connect() == OK2
    src.start()
    try:
        fl.wait_mount(srv, MOUNT, timeout=5)
        lis = srv.listener(MOUNT, headers={"Icy-MetaData": "1"})
        assert lis.open().status == 200
        metaint = int(lis.response.header("icy-metaint"))
        # the DSP sends its update to the Shoutcast socket's port, without a mount
        q = urllib.parse.urlencode([("pass", SOURCE_PASSWORD), ("mode", "updinfo"),
                                    ("song", "DSP Song \u00e9")])
        r = wirelib.simple_request(
            srv.host, port, ("GET /admin.cgi?%s HTTP/1.0\r\nUser-Agent: Shoutcast DSP\r\n\r\n"
                             % q).encode())
        assert r[0] is not None and r[0].status == 200, r
        fl.wait_title(srv, MOUNT, "DSP Song \u00e9", timeout=3)
        wirelib.wait_until(
            lambda: any(t and fl.icy_fields(t)["StreamTitle"] == "DSP Song \u00e9"
                        for _, t in fl.icy_demux(lis.snapshot(), metaint)[1]),
            5, "the title at the listener")
        lis.close()
        audio, _ = fl.icy_demux(lis.snapshot(), metaint)
        wirelib.locate_slice(data, audio)
    finally:
        src.stop()


def test_wrong_password_closes_and_is_logged(sc, data):
    srv, port = sc
    src = ShoutcastSource(srv.host, port + 1, data, password="wrong")
    assert src.connect() is None
    assert OK2 not in src.greeting
    # the socket is closed by the server
    rest = wirelib.read_until_closed(src.sock, 5)
    assert b"OK2" not in rest
    src.sock.close()
    resp = adminlib.admin(srv, "/admin/listmounts")
    assert MOUNT not in [s.get("mount") for s in resp.xml().findall("source")]
    if not IS_ICECAST:
        srv.wait_log("wrong password")
    # an HTTP request on the source port is a wrong password line too
    r, body = wirelib.simple_request(srv.host, port + 1, b"GET / HTTP/1.0\r\n\r\n")
    assert r is None and b"OK2" not in body
    assert srv.is_alive()


@pytest.mark.rimecast_only
@pytest.mark.parametrize("eager", [False, True], ids=["waits-for-OK2", "eager"])
def test_stream_auth_decides_the_shoutcast_password(server, data, eager):
    def answer(req):
        ok = (req.form.get("user"), req.form.get("pass")) == ("source", "dj-line")
        return 200, ({"icecast-auth-user": "1"} if ok else {"icecast-auth-message": "no"})
    rec = httprec.Recorder(answer)
    try:
        port = port_pair()
        extra = """<listen-socket><port>%d</port><bind-address>127.0.0.1</bind-address>
    <shoutcast-mount>%s</shoutcast-mount></listen-socket>""" % (port, MOUNT)
        srv = server(extra_xml=extra, mounts=[{"mount_name": MOUNT, "auth": {
            "type": "url", "options": {"stream_auth": rec.url("/stream")}}}])
        # the local source password is not asked: the auth server refuses it
        bad = ShoutcastSource(srv.host, port + 1, data)
        assert bad.connect() is None and OK2 not in bad.greeting
        bad.sock.close()
        assert rec.wait("stream_auth")[0].form["pass"] == SOURCE_PASSWORD
        srv.wait_log("refused by the auth server")
        src = ShoutcastSource(srv.host, port + 1, data, password="dj-line", eager=eager,
                              rate=64 * 1024, chunk=2048)
        assert src.connect() == OK2, src.greeting
        sa = rec.wait("stream_auth", 2)[1]
        assert sa.body == ("action=stream_auth&mount=%%2flive%%2emp3&ip=127%%2e0%%2e0%%2e1"
                           "&server=127%%2e0%%2e0%%2e1&port=%d&user=source&pass=dj%%2dline"
                           % (port + 1)).encode()
        src.start()
        try:
            fl.wait_mount(srv, MOUNT, timeout=5)
            lis = srv.listener(MOUNT)
            assert lis.open().status == 200
            assert lis.response.header("icy-name") == "SC Test"
            lis.wait_bytes(32 * 1024, 5)
            lis.close()
            wirelib.locate_slice(data, lis.snapshot())
        finally:
            src.stop()
        # the auth server down: refused, no answer
        rec.close()
        down = ShoutcastSource(srv.host, port + 1, data, password="dj-line")
        assert down.connect() is None and OK2 not in down.greeting
        down.sock.close()
        srv.wait_log("the auth server gave no answer")
        assert srv.is_alive()
    finally:
        rec.close()


def test_login_with_no_header_lines_starts_the_source(sc, data):
    """An encoder that sends the password line, then the blank line and no header at all."""
    srv, port = sc
    s = wirelib.connect(srv.host, port + 1)
    try:
        s.sendall(SOURCE_PASSWORD.encode() + b"\r\n")
        greeting, _ = b"", None
        deadline = time.monotonic() + 5
        while not greeting.endswith(b"\r\n\r\n") and time.monotonic() < deadline:
            chunk = s.recv(256)
            if not chunk:
                break
            greeting += chunk
        assert greeting == OK2
        s.sendall(b"\r\n" + data[:64 * 1024])
        try:
            fl.wait_mount(srv, MOUNT, timeout=5)
        except AssertionError:
            print(srv.error_log())
            raise
        lis = srv.listener(MOUNT)
        assert lis.open().status == 200
        s.sendall(data[64 * 1024:256 * 1024])
        lis.wait_bytes(16 * 1024, 5)
        lis.close()
    finally:
        s.close()
