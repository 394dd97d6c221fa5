# SPDX-License-Identifier: GPL-2.0-or-later
"""HTTPS listen sockets: listeners, sources and pages over TLS, certificates re-read on SIGHUP,
plain HTTP and stalled handshakes on a TLS port, and <tls>auto serving both on one port.

Certificates are made per test with the openssl command line tool, in the server's own
directory (readable by the user the server drops to). A second listen socket serves TLS; the
first stays plain HTTP (the harness waits for it)."""

import errno
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import warnings

import pytest

import formatlib as fl
import wirelib
from conftest import SOURCE_PASSWORD, free_port

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")]


# ---------------------------------------------------------------- helpers

def make_cert(directory, name, cn="127.0.0.1", combined=True):
    """A self-signed RSA certificate; returns (cert path, key path or None when combined)."""
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", key, "-out", cert, "-subj", "/CN=" + cn],
                   check=True, capture_output=True, timeout=60)
    if combined:
        pem = os.path.join(directory, name + ".pem")
        with open(pem, "wb") as out:
            for part in (cert, key):
                with open(part, "rb") as f:
                    out.write(f.read())
        os.chmod(pem, 0o644)
        return pem, None
    os.chmod(cert, 0o644)
    os.chmod(key, 0o644)
    return cert, key


def cert_der(path):
    with open(path) as f:
        text = f.read()
    begin = text.index("-----BEGIN CERTIFICATE-----")
    end = text.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")
    return ssl.PEM_cert_to_DER_cert(text[begin:end])


def client_context(cafile=None):
    ctx = ssl.create_default_context(cafile=cafile)
    if cafile is None:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.check_hostname = False   # CN=127.0.0.1 without a subjectAltName
    return ctx


def tls_connect(srv, port=None, timeout=5.0, cafile=None):
    raw = wirelib.connect(srv.host, port or srv.tls_port, timeout)
    return client_context(cafile).wrap_socket(raw)


def served_cert(srv, port=None):
    """The DER certificate a new handshake gets."""
    with tls_connect(srv, port) as s:
        return s.getpeercert(binary_form=True)


def tls_request(srv, raw, port=None, timeout=5.0):
    with tls_connect(srv, port, timeout) as s:
        s.sendall(raw)
        return wirelib.read_until_closed(s, timeout)


class TlsListener(wirelib.Listener):
    """wirelib's threaded listener over TLS."""

    def __init__(self, srv, mount, port=None, **kw):
        super().__init__(srv.host, port or srv.tls_port, mount, **kw)

    def open(self, timeout=5.0, start=True):
        raw = wirelib.connect(self.host, self.port, timeout)
        self.sock = client_context().wrap_socket(raw)
        self.sock.sendall(self.request_bytes())
        self.response, rest = wirelib.read_head(self.sock, timeout)
        if self.response is None:
            self.closed = True
            self.close_reason = "closed before response"
            return None
        self._add(rest)
        if start:
            self.start()
        return self.response


def tls_server(server, mode="1", combined=True, **cfg):
    """A started server with a TLS socket in `mode`; returns (server, cert, key)."""
    srv = server(start=False, tls_mode=mode, **cfg)
    cert, key = make_cert(srv.dir, "server", combined=combined)
    srv.cfg["ssl_certificate"] = cert
    if key:
        srv.cfg["ssl_private_key"] = key
    srv.start()
    return srv, cert, key


def stream_source(srv, mount, data, rate=64 * 1024):
    src = srv.source(mount, data, rate=rate)
    src.connect()
    assert src.status == 200
    src.start()
    return src


# ---------------------------------------------------------------- listening over HTTPS

def test_listener_over_https_gets_the_stream_bytes(server, data):
    srv, cert, _ = tls_server(server)
    src = stream_source(srv, "/live", data)
    try:
        src.wait_sent(64 * 1024, 10)
        lis = TlsListener(srv, "/live")
        assert lis.open().status == 200
        lis.wait_bytes(200 * 1024, 10)
        body = lis.snapshot()
        assert wirelib.locate_slice(data, body) is not None, "bytes over TLS differ from the source's"
        lis.close()
        # curl verifies the chain against the test's certificate
        out = subprocess.run(["curl", "-sS", "--cacert", cert, "--max-time", "2", "-o",
                              os.devnull, "-w", "%{http_code} %{scheme}",
                              "https://127.0.0.1:%d/live" % srv.tls_port],
                             capture_output=True, text=True, timeout=10)
        assert out.stdout.startswith("200 HTTPS"), out
    finally:
        src.close()


def kernel_tls_available():
    """Whether this kernel takes the "tls" upper-layer protocol on a TCP socket (the test's
    own probe, the way OpenSSL enables kernel TLS)."""
    tcp_ulp = 31  # TCP_ULP in linux/tcp.h
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.setsockopt(socket.IPPROTO_TCP, tcp_ulp, b"tls")
            return True
        except OSError as e:
            return e.errno == errno.ENOTCONN


def test_kernel_tls_use_or_fallback_is_logged_and_listeners_get_the_bytes(server, data):
    """Kernel TLS where the kernel has it, user-space encryption where not: the start-up log
    says which (matching this kernel), a listener over TLS gets the source's bytes either way,
    and the first connection sent by the kernel says so in the log."""
    srv, _, _ = tls_server(server)
    src = stream_source(srv, "/live", data)
    try:
        ktls = kernel_tls_available()
        assert srv.wait_log("TLS: kernel TLS available" if ktls else
                            "TLS: kernel TLS not available")
        src.wait_sent(64 * 1024, 10)
        lis = TlsListener(srv, "/live")
        assert lis.open().status == 200
        lis.wait_bytes(128 * 1024, 10)
        assert wirelib.locate_slice(data, lis.snapshot()) is not None
        lis.close()
        if ktls:   # whether the negotiated cipher went to the kernel is OpenSSL's choice
            print("kernel TLS in use: %s" % ("kernel TLS in use" in srv.error_log()))
        else:
            assert "kernel TLS in use" not in srv.error_log()
    finally:
        src.close()


@pytest.mark.skipif(fl.FFMPEG is None, reason="ffmpeg not installed")
def test_ffmpeg_source_and_listener_over_https_decode(server):
    """ffmpeg sends MP3 over HTTPS (icecast protocol, -tls 1) and ffmpeg decodes it over HTTPS."""
    srv, _, key = tls_server(server)
    url = "icecast://source:%s@127.0.0.1:%d/tls.mp3" % (SOURCE_PASSWORD, srv.tls_port)
    args, ctype, muxer = fl.ENCODERS["mp3"]
    enc = subprocess.Popen([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-re", "-f",
                            "lavfi", "-i", "sine=frequency=440:sample_rate=44100"] + args +
                           ["-content_type", ctype, "-tls", "1", "-tls_verify", "0", "-f", muxer,
                            url],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    try:
        fl.wait_mount(srv, "/tls.mp3", enc)
        path = os.path.join(srv.dir, "capture.mp3")
        dec = subprocess.run([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error",
                              "-tls_verify", "0", "-i",
                              "https://127.0.0.1:%d/tls.mp3" % srv.tls_port, "-t", "3",
                              "-c", "copy", "-f", "mp3", "-y", path],
                             capture_output=True, text=True, timeout=30)
        assert dec.returncode == 0, dec.stderr
        assert os.path.getsize(path) > 8000
        assert fl.ffmpeg_decode_errors(path) == ""
        assert "TLS: client" not in srv.error_log()
    finally:
        fl.stop_process(enc)


def test_source_put_over_https_reaches_plain_listeners(server, data):
    srv, _, _ = tls_server(server)
    lis = srv.listener("/put")
    body = data[:384 * 1024]
    path = os.path.join(srv.dir, "upload.bin")
    with open(path, "wb") as f:
        f.write(body)
    # curl -T FILE: a Content-Length body (Icecast sources send no chunked bodies)
    put = subprocess.Popen(["curl", "-sS", "-k", "-T", path, "--limit-rate", "96k",
                            "-H", "Content-Type: audio/mpeg", "-u", "source:" + SOURCE_PASSWORD,
                            "https://127.0.0.1:%d/put" % srv.tls_port],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        fl.wait_mount(srv, "/put", put)
        assert lis.open().status == 200
        lis.wait_bytes(96 * 1024, 10)
        assert wirelib.locate_slice(body, lis.snapshot()) is not None
    finally:
        fl.stop_process(put)
        lis.close()


def test_m3u_and_listenurl_over_tls_say_https(server, data):
    srv, _, _ = tls_server(server, mode="auto")
    src = stream_source(srv, "/pl", data)
    try:
        src.wait_sent(8192, 5)
        host = "Host: 127.0.0.1:%d\r\n" % srv.tls_port
        raw = ("GET /pl.m3u HTTP/1.0\r\n" + host + "\r\n").encode()
        resp = tls_request(srv, raw)
        assert resp.endswith(b"https://127.0.0.1:%d/pl\n" % srv.tls_port), resp
        xspf = tls_request(srv, ("GET /pl.xspf HTTP/1.0\r\n" + host + "\r\n").encode())
        assert b"<location>https://127.0.0.1:%d/pl</location>" % srv.tls_port in xspf
        js = tls_request(srv, b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
        assert b'"listenurl":"https://127.0.0.1:%d/pl"' % srv.tls_port in js, js[-400:]
        # the same port over plain HTTP says http
        _, plain = wirelib.simple_request(srv.host, srv.tls_port,
                                          ("GET /pl.m3u HTTP/1.0\r\n" + host + "\r\n").encode())
        assert plain.endswith(b"http://127.0.0.1:%d/pl\n" % srv.tls_port), plain
    finally:
        src.close()


# ---------------------------------------------------------------- one port, both protocols

def test_tls_auto_serves_https_and_plain_http_on_one_port(server):
    srv, _, _ = tls_server(server, mode="auto")
    secure = tls_request(srv, b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
    assert secure.startswith(b"HTTP/1.0 200") and b"icestats" in secure
    resp, body = wirelib.simple_request(srv.host, srv.tls_port,
                                        b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
    assert resp.status == 200 and b"icestats" in body


def test_tls_only_port_refuses_plain_http_promptly_without_bytes(server):
    srv, _, _ = tls_server(server)
    s = wirelib.connect(srv.host, srv.tls_port)
    t0 = time.monotonic()
    s.sendall(b"GET /status-json.xsl HTTP/1.0\r\nHost: x\r\n\r\n")
    s.settimeout(3)
    try:
        got = s.recv(100)
    except ConnectionResetError:
        got = b""
    assert got == b"" and time.monotonic() - t0 < 1.0
    s.close()
    srv.wait_log("plain HTTP on a TLS port")


# ---------------------------------------------------------------- bad and stalled handshakes

def test_stalled_handshakes_are_dropped_after_header_timeout(server, data):
    srv, _, _ = tls_server(server, header_timeout=2)
    src = stream_source(srv, "/keep", data)
    try:
        src.wait_sent(32 * 1024, 5)
        lis = TlsListener(srv, "/keep")
        assert lis.open().status == 200
        silent = wirelib.connect(srv.host, srv.tls_port)
        partial = wirelib.connect(srv.host, srv.tls_port)
        partial.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello's start
        t0 = time.monotonic()
        for s in (silent, partial):
            s.settimeout(6)
            try:
                assert s.recv(100) == b""
            except ConnectionResetError:
                pass
            took = time.monotonic() - t0
            assert 1.5 < took < 4.5, "dropped after %.1f s" % took
            s.close()
        # the TLS listener streamed on meanwhile
        before = lis.received
        lis.wait_bytes(before + 16 * 1024, 5)
        assert not lis.closed
        lis.close()
    finally:
        src.close()


def test_garbage_handshakes_are_logged_rate_limited_and_harm_nobody(server, data):
    srv, _, _ = tls_server(server)
    src = stream_source(srv, "/keep", data)
    try:
        lis = TlsListener(srv, "/keep")
        assert lis.open().status == 200
        for i in range(30):
            s = wirelib.connect(srv.host, srv.tls_port)
            s.sendall(b"\x16\x03\x01\x00\x05garbage-that-is-no-hello" * 3)
            s.close()
        wirelib.wait_until(lambda: "TLS: client" in srv.error_log(), 5, "a logged failure")
        time.sleep(0.5)
        logged = srv.error_log().count("TLS: client")
        assert logged <= 2, "failed handshakes are rate-limited: %d lines" % logged
        before = lis.received
        lis.wait_bytes(before + 16 * 1024, 5)
        assert srv.is_alive() and not lis.closed
        lis.close()
    finally:
        src.close()


# ---------------------------------------------------------------- certificates and reload

def test_certificate_swapped_on_sighup_while_50_listeners_stream(server, data):
    srv, cert, _ = tls_server(server, clients=300)
    old = cert_der(cert)
    assert served_cert(srv) == old
    src = stream_source(srv, "/big", data, rate=128 * 1024)
    listeners = []
    try:
        src.wait_sent(64 * 1024, 5)
        for _ in range(50):
            lis = TlsListener(srv, "/big", keep=0)
            assert lis.open().status == 200
            listeners.append(lis)
        # renew: new key and certificate written over the file in use, then SIGHUP
        new_path, _ = make_cert(srv.dir, "renewed")
        os.replace(new_path, cert)
        new = cert_der(cert)
        assert new != old
        srv.send_signal(signal.SIGHUP)
        srv.wait_log("certificate re-read")
        assert served_cert(srv) == new
        base = [lis.received for lis in listeners]
        wirelib.wait_until(lambda: all(lis.received > b + 32 * 1024
                                       for lis, b in zip(listeners, base)),
                           15, "every TLS listener to keep receiving after the reload")
        assert not [lis for lis in listeners if lis.closed]
    finally:
        for lis in listeners:
            lis.close()
        src.close()


def test_broken_certificate_on_reload_is_refused_and_the_old_one_stays(server):
    srv, cert, _ = tls_server(server)
    old = cert_der(cert)
    with open(cert, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n")
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("TLS: reload refused")
    assert served_cert(srv) == old


def test_unreadable_key_on_reload_names_the_permission_problem(server):
    srv, cert, key = tls_server(server, combined=False)
    old = cert_der(cert)
    os.chmod(key, 0o600)   # root's file: the server runs as nobody by now
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("TLS: reload refused")
    line = [l for l in srv.error_log().splitlines() if "reload refused" in l][-1]
    assert "Permission denied" in line and "readable by that user" in line, line
    assert served_cert(srv) == old


def test_tls_socket_without_usable_certificate_refuses_start(server):
    srv = server(start=False, tls_mode="1")
    srv.cfg["port"] = free_port()
    srv.cfg["tls_port"] = free_port()
    srv.cfg["ssl_certificate"] = os.path.join(srv.dir, "missing.pem")
    srv.write_config()
    from conftest import BINARY
    p = subprocess.run([BINARY, "-c", srv.config_path], capture_output=True, text=True,
                       timeout=10, cwd=srv.dir)
    assert p.returncode != 0
    assert "cannot read the TLS certificate" in p.stderr and "missing.pem" in p.stderr, p.stderr
    # and without any certificate setting: a config error naming the port
    del srv.cfg["ssl_certificate"]
    srv.write_config()
    p = subprocess.run([BINARY, "-c", srv.config_path], capture_output=True, text=True,
                       timeout=10, cwd=srv.dir)
    assert p.returncode != 0 and "serves TLS but no certificate" in p.stderr, p.stderr


def test_session_resumption_works(server):
    srv, _, _ = tls_server(server)
    ctx = client_context()
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2   # a session is known right after the handshake
    with ctx.wrap_socket(wirelib.connect(srv.host, srv.tls_port)) as s:
        s.sendall(b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
        wirelib.read_until_closed(s, 5)
        session = s.session
    with ctx.wrap_socket(wirelib.connect(srv.host, srv.tls_port), session=session) as s:
        assert s.session_reused
        assert s.version() == "TLSv1.2"
    # TLS 1.0/1.1 are refused
    old = client_context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(ssl.SSLError):
        with old.wrap_socket(wirelib.connect(srv.host, srv.tls_port)):
            pass


def test_input_openssl_holds_back_is_read_without_new_socket_data(server, data):
    """A source's head and body in one TLS record: the request reader takes 4 KB, OpenSSL keeps
    the rest decrypted; edge-triggered epoll never signals it again, yet it must be read."""
    srv, _, _ = tls_server(server)
    body = data[:12000]
    head = ("PUT /onerecord HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\n"
            "Authorization: %s\r\n\r\n" % wirelib.basic_auth("source", SOURCE_PASSWORD))
    s = tls_connect(srv)
    try:
        s.sendall(head.encode() + body)   # one SSL_write: one record
        def all_read():
            src = fl.stats_source(srv, "/onerecord")
            return src is not None and int(src.findtext("total_bytes_read") or 0) >= len(body)
        wirelib.wait_until(all_read, 5, "the whole body to be read (nothing more arrives)")
    finally:
        s.close()


def test_listener_that_stops_reading_gets_every_byte_once_when_it_reads_again(server, data):
    """A full socket makes SSL_write stop with a record encrypted but unsent: it counts as
    written and goes out first on the next write, so the stream stays one exact slice."""
    srv, _, _ = tls_server(server, tls_sndbuf=4096)
    src = stream_source(srv, "/slow", data, rate=128 * 1024)
    try:
        src.wait_sent(64 * 1024, 5)
        lis = TlsListener(srv, "/slow", rcvbuf=4096)
        assert lis.open(start=False).status == 200
        time.sleep(2.5)                      # the server's writes block meanwhile
        lis.start()
        lis.wait_bytes(400 * 1024, 15)
        assert wirelib.locate_slice(data, lis.snapshot()) is not None
        lis.close()
    finally:
        src.close()


def test_hls_parts_and_segments_over_https_keep_alive_are_the_plain_bytes(server):
    """HLS pieces over HTTPS (a small socket buffer, so answers go out in several writes) on
    one keep-alive connection: each is the same bytes as over plain HTTP, the range too."""
    import hlscheck
    from test_hls import get, playlist, start_source
    srv, _, _ = tls_server(server, tls_sndbuf=4096)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        pl = hlscheck.Checker().check(playlist(srv, mount))
        pieces = [seg["uri"] for seg in pl["segments"][-2:]]
        pieces += [part["uri"] for part in pl["segments"][-1]["parts"][:4]]
        with tls_connect(srv, timeout=10) as s:
            for u in pieces:
                resp, body = wirelib.get_kept_alive(s, mount + "/" + u)
                assert resp.status == 200, u
                assert body == get(srv, mount + "/" + u)[2], u
            resp, body = wirelib.get_kept_alive(s, mount + "/" + pieces[0],
                                                "Range: bytes=7-1999\r\n")
            assert resp.status == 206 and body == get(srv, mount + "/" + pieces[0])[2][7:2000]
    finally:
        fl.stop_process(p)
