# SPDX-License-Identifier: GPL-2.0-or-later
"""TLS details: the DHE suites of the default cipher list work (the server has DH parameters),
and every connection the server ends over TLS ends with a close_notify after the last byte
(a page with Connection: close, a listener whose source ended, a kicked listener, a listener
behind on its reads when the stream ends): a client that reads to the end sees a clean close,
not a truncated record or an EOF without close_notify (Python's ssl raises SSLEOFError then,
ffmpeg and mpv report "Error decoding the received TLS packet")."""

import os
import shutil
import subprocess
import time

import pytest

import formatlib as fl
import wirelib
from adminlib import admin
from conftest import ADMIN_PASSWORD
from test_tls import TlsListener, client_context, stream_source, tls_server

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")]


def strict_connect(srv, timeout=5.0, rcvbuf=None):
    """A TLS socket whose recv raises ssl.SSLEOFError on an EOF without close_notify."""
    raw = wirelib.connect(srv.host, srv.tls_port, timeout, rcvbuf=rcvbuf)
    return client_context().wrap_socket(raw, suppress_ragged_eofs=False)


def read_to_clean_end(sock, timeout=10.0):
    """Reads until the server's close_notify; returns the bytes. A missing close_notify raises
    ssl.SSLEOFError, a truncated record an ssl.SSLError."""
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise wirelib.WaitTimeout("connection still open after %.1fs" % timeout)
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return buf
        buf += chunk


class StrictTlsListener(TlsListener):
    """A threaded TLS listener that records how its connection ended: "eof" only for a
    close_notify."""

    def open(self, timeout=5.0, start=True):
        raw = wirelib.connect(self.host, self.port, timeout, rcvbuf=self.rcvbuf)
        self.sock = client_context().wrap_socket(raw, suppress_ragged_eofs=False)
        self.sock.sendall(self.request_bytes())
        self.response, rest = wirelib.read_head(self.sock, timeout)
        self._add(rest)
        if start:
            self.start()
        return self.response


def listener_id(srv, mount):
    return admin(srv, "/admin/listclients?mount=" + mount).xml().findtext("source/listener/ID")


# ---------------------------------------------------------------- DH parameters

def test_dhe_only_client_completes_the_handshake(server):
    """A TLS 1.2 client offering only DHE-RSA-AES128-GCM-SHA256 (in the default list) gets it."""
    srv, _, _ = tls_server(server)
    out = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % srv.tls_port,
                          "-cipher", "DHE-RSA-AES128-GCM-SHA256", "-tls1_2", "-brief"],
                         input=b"", capture_output=True, timeout=20)
    text = (out.stdout + out.stderr).decode("utf-8", "replace")
    assert out.returncode == 0, text
    assert "DHE-RSA-AES128-GCM-SHA256" in text, text


# ---------------------------------------------------------------- close_notify

def test_page_with_connection_close_ends_with_close_notify(server):
    srv, _, _ = tls_server(server)
    auth = wirelib.basic_auth("admin", ADMIN_PASSWORD)
    for path, extra in (("/status-json.xsl", ""), ("/admin/stats", "Authorization: %s\r\n" % auth)):
        with strict_connect(srv) as s:
            s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n"
                       % (path, extra)).encode())
            body = read_to_clean_end(s)
        assert body.split(b"\r\n")[0].endswith(b" 200 OK"), body[:200]


def test_listener_of_an_ended_source_gets_close_notify(server, data):
    srv, _, _ = tls_server(server)
    src = stream_source(srv, "/end", data[:256 * 1024], rate=256 * 1024)
    lis = StrictTlsListener(srv, "/end")
    assert lis.open().status == 200
    lis.wait_bytes(32 * 1024, 10)
    src.wait_done(15)
    src.close()
    lis.wait_closed(10)
    assert lis.close_reason == "eof", lis.close_reason
    lis.close()


def test_kicked_listener_and_killsource_listener_get_close_notify(server, data):
    srv, _, _ = tls_server(server)
    src = stream_source(srv, "/kick", data, rate=64 * 1024)
    try:
        kicked = StrictTlsListener(srv, "/kick")
        assert kicked.open().status == 200
        kicked.wait_bytes(8192, 10)
        r = admin(srv, "/admin/killclient?mount=/kick&id=" + listener_id(srv, "/kick"))
        assert r.status == 200
        kicked.wait_closed(10)
        assert kicked.close_reason == "eof", kicked.close_reason
        kicked.close()
        other = StrictTlsListener(srv, "/kick")
        assert other.open().status == 200
        other.wait_bytes(8192, 10)
        assert admin(srv, "/admin/killsource?mount=/kick").status == 200
        other.wait_closed(10)
        assert other.close_reason == "eof", other.close_reason
        other.close()
    finally:
        src.close()


def test_listener_behind_on_its_reads_when_the_stream_ends_gets_every_byte_then_close_notify(
        server, data):
    """The server's socket is full when the source ends: the record OpenSSL holds must still go
    out whole before the close_notify (a FIN behind half a record is what mpv reports)."""
    srv, _, _ = tls_server(server, tls_sndbuf=4096)
    sent = data[:384 * 1024]
    src = stream_source(srv, "/behind", sent, rate=512 * 1024)
    with strict_connect(srv, rcvbuf=4096) as s:
        s.sendall(b"GET /behind HTTP/1.0\r\nHost: x\r\n\r\n")
        resp, rest = wirelib.read_head(s, 5)
        assert resp.status == 200
        src.wait_done(15)
        src.close()
        wirelib.wait_until(lambda: fl.stats_source(srv, "/behind") is None, 10,
                           "the mount to end")
        body = rest + read_to_clean_end(s, 20)
    assert len(body) > 64 * 1024
    assert sent.endswith(body[-4096:]), "the stream's last bytes did not arrive"


@pytest.mark.skipif(shutil.which("mpv") is None, reason="no mpv")
def test_mpv_plays_a_short_https_stream_to_its_end_without_tls_errors(server):
    """15 plays of a short MP3 stream over HTTPS (five at a time), each ending with its source:
    mpv reports no TLS error at the end."""
    srv, _, _ = tls_server(server)
    clip = os.path.join(srv.dir, "clip.mp3")
    subprocess.run([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                    "sine=frequency=440:sample_rate=44100:duration=1", "-c:a", "libmp3lame",
                    "-b:a", "128k", "-y", clip], check=True, capture_output=True, timeout=60)
    with open(clip, "rb") as f:
        audio = f.read()
    failures = []
    for batch in range(3):
        plays = []
        for i in range(5):
            mount = "/play%d.mp3" % (batch * 5 + i)
            src = srv.source(mount, audio, rate=128 * 1024)
            src.connect()
            assert src.status == 200
            mpv = subprocess.Popen(["mpv", "--no-config", "--ao=null", "--vo=null",
                                    "--msg-level=all=error", "--tls-verify=no",
                                    "https://127.0.0.1:%d%s" % (srv.tls_port, mount)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            plays.append((mount, src, mpv))
        for mount, src, _ in plays:
            wirelib.wait_until(lambda: listeners(srv, mount) >= 1, 15, "mpv to connect")
            src.start()
        for _, src, mpv in plays:
            out, _ = mpv.communicate(timeout=60)
            src.close()
            text = out.decode("utf-8", "replace")
            if "tls" in text.lower():
                failures.append(text.strip())
    assert failures == [], "%d of 15 plays: %s" % (len(failures), failures[:2])


def listeners(srv, mount):
    src = fl.stats_source(srv, mount)
    return int(src.findtext("listeners") or 0) if src is not None else 0
