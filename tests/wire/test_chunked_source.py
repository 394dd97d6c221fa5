# SPDX-License-Identifier: GPL-2.0-or-later
"""Sources that PUT with "Transfer-Encoding: chunked" (curl reading a pipe, ffmpeg, a raw
socket with awkward splits): listeners get exactly the unchunked bytes; bad framing, a
Content-Length next to chunked, or another transfer-coding gets 400 (or, once streaming, the
source is dropped) and nobody else notices."""

import random
import socket
import subprocess
import threading
import time

import pytest

import wirelib
from conftest import SOURCE_PASSWORD, assert_server_healthy

pytestmark = pytest.mark.rimecast_only


def chunk_encode(data, rng):
    """data as chunks of awkward sizes, some with extensions, then the last chunk + trailer."""
    out, pos = [], 0
    while pos < len(data):
        n = min(rng.choice([1, 2, 7, 100, 4095, 4096, 9000, 65536]), len(data) - pos)
        ext = rng.choice([b"", b";x=1", b" ;name=\"v\""])
        out.append(b"%x%s\r\n" % (n, ext) + data[pos:pos + n] + b"\r\n")
        pos += n
    out.append(b"0\r\nX-Trailer: done\r\n\r\n")
    return b"".join(out)


def put_head(srv, mount, extra=b"Transfer-Encoding: chunked\r\n"):
    return (b"PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: audio/mpeg\r\n%s\r\n"
            % (mount.encode(), wirelib.basic_auth("source", SOURCE_PASSWORD).encode(), extra))


def open_listener(srv, mount, timeout=5):
    def attempt():
        lis = srv.listener(mount, keep=64 << 20)
        resp = lis.open()
        if resp is not None and resp.status == 200:
            return lis
        lis.close()
        return None
    return wirelib.wait_until(attempt, timeout, "mount %s to be live" % mount, interval=0.05)


def paced_writer(write, data, rate=256 * 1024, piece=4096):
    def run():
        t0 = time.monotonic()
        for pos in range(0, len(data), piece):
            write(data[pos:pos + piece])
            ahead = (pos + piece) / rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_curl_chunked_put_from_a_pipe(server):
    srv = server()
    data = wirelib.make_data(1 << 20, seed=21)
    curl = subprocess.Popen(
        ["curl", "-sS", "-T", "-", "-H", "Transfer-Encoding: chunked",
         "-H", "Content-Type: audio/mpeg",
         "http://source:%s@%s:%d/curl.mp3" % (SOURCE_PASSWORD, srv.host, srv.port)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    def write(b):
        curl.stdin.write(b)
        curl.stdin.flush()
    writer = paced_writer(write, data[:16384], rate=64 * 1024)
    lis = open_listener(srv, "/curl.mp3")
    writer.join(10)
    writer = paced_writer(write, data[16384:])
    writer.join(30)
    curl.stdin.close()
    assert curl.wait(10) == 0, curl.stderr.read()
    lis.wait_closed(5)
    body = lis.snapshot()
    assert len(body) > 512 * 1024
    wirelib.locate_slice(data, body)
    assert body.endswith(data[-4096:]), "the end of the body did not reach the listener"
    srv.wait_log("ended its chunked body")
    lis.close()


def test_raw_socket_awkward_splits(server):
    srv = server()
    data = wirelib.make_data(768 << 10, seed=22)
    encoded = chunk_encode(data, random.Random(5))
    s = wirelib.connect(srv.host, srv.port)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # the head and the first framing bytes in one packet: decoded from the head buffer too
    s.sendall(put_head(srv, "/raw.mp3") + encoded[:5])
    resp, _ = wirelib.read_head(s, 5)
    assert resp.status == 200
    rng = random.Random(9)
    lis_box = []
    pos = 5
    while pos < len(encoded):
        n = rng.choice([1, 2, 3, 5, 13, 700, 4096, 20000])
        s.sendall(encoded[pos:pos + n])
        pos += n
        if not lis_box and pos > 40000:
            lis_box.append(open_listener(srv, "/raw.mp3"))
        if rng.random() < 0.05:
            time.sleep(0.002)
    lis = lis_box[0]
    wirelib.read_until_closed(s, 5)  # the end of the body ends the source
    s.close()
    lis.wait_closed(5)
    body = lis.snapshot()
    wirelib.locate_slice(data, body)
    assert body.endswith(data[-1000:])
    lis.close()


def test_ffmpeg_chunked_put(server):
    srv = server()
    data = wirelib.make_data(1 << 20, seed=23)
    ff = subprocess.Popen(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "data", "-i", "pipe:0",
         "-map", "0", "-c", "copy", "-f", "data", "-method", "PUT",
         "-content_type", "audio/mpeg",
         "http://source:%s@%s:%d/ff.mp3" % (SOURCE_PASSWORD, srv.host, srv.port)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    def write(b):
        ff.stdin.write(b)
        ff.stdin.flush()
    writer = paced_writer(write, data[:65536], rate=128 * 1024)
    lis = open_listener(srv, "/ff.mp3", timeout=10)
    writer.join(10)
    writer = paced_writer(write, data[65536:])
    writer.join(30)
    ff.stdin.close()
    assert ff.wait(15) == 0, ff.stderr.read()
    lis.wait_closed(5)
    body = lis.snapshot()
    assert len(body) > 256 * 1024
    wirelib.locate_slice(data, body)
    lis.close()


@pytest.mark.parametrize("extra,status,why", [
    (b"Transfer-Encoding: chunked\r\nContent-Length: 100\r\n", 400, "both Content-Length"),
    # a coding the server does not know: 501 (RFC 9112 section 6.1), whatever comes after it
    (b"Transfer-Encoding: gzip, chunked\r\n", 501, "malformed request (Not Implemented"),
    (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400,
     "malformed request (Bad Request)"),
])
def test_bad_transfer_coding_is_refused(server, extra, status, why):
    srv = server()
    resp, _ = wirelib.simple_request(srv.host, srv.port, put_head(srv, "/bad.mp3", extra))
    assert resp is not None and resp.status == status
    srv.wait_log(why)


def test_bad_framing_in_head_packet_gets_400(server):
    srv = server()
    resp, _ = wirelib.simple_request(srv.host, srv.port,
                                     put_head(srv, "/bad.mp3") + b"zz\r\nhello\r\n")
    assert resp is not None and resp.status == 400
    srv.wait_log("bad chunked framing")


def test_bad_framing_mid_stream_drops_only_that_source(server):
    srv = server()
    data = wirelib.make_data(1 << 20, seed=24)
    good = srv.source("/good.mp3", data, rate=32 * 1024, loop=True)
    assert good.connect().status == 200
    good.start()
    lis = srv.listener("/good.mp3", keep=0)
    assert lis.open().status == 200
    s = wirelib.connect(srv.host, srv.port)
    s.sendall(put_head(srv, "/bad.mp3"))
    assert wirelib.read_head(s, 5)[0].status == 200
    s.sendall(b"10\r\n" + b"a" * 16 + b"\r\n" + b"10\r\n" + b"b" * 16 + b"XX")  # no CRLF
    wirelib.read_until_closed(s, 5)
    s.close()
    srv.wait_log("dropped: bad chunked framing")
    assert_server_healthy(srv, lis)
    lis.close()
    good.stop()
