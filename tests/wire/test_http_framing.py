# SPDX-License-Identifier: GPL-2.0-or-later
"""HTTP/1.1 message framing (RFC 9112): a chunked answer goes only to an HTTP/1.1 request, under
an HTTP/1.1 status line (the HLS part being cut); an HTTP/1.0 request for that part waits for
it to be complete and gets it with a Content-Length; stream answers keep Icecast's HTTP/1.0
status line. And what the request parser refuses: heads with bare LF line ends (400), except a
SOURCE login as DarkIce writes it, and transfer codings other than chunked (501)."""

import http.client
import re
import socket
import time

import pytest

import formatlib as fl
import hlscheck
import wirelib

# parts of a second: long enough to see one being cut
SECOND_PARTS = "<hls><sessions>0</sessions><part-target-ms>1000</part-target-ms></hls>"


def start_source(srv, mount, codec="mp3"):
    p = fl.ffmpeg_source(srv, mount, codec)
    fl.wait_mount(srv, mount, p)
    return p


def get(srv, path):
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def hint_just_begun(srv, mount):
    """The URL of the part the preload hint names, taken the moment that part begins."""
    pl = hlscheck.parse(get(srv, mount + "/hls.m3u8")[2].decode())
    m = re.search(r"/(\d+)\.(\d+)\.\w+$", "/" + pl["hint"]["URI"])
    # the moment the hinted part is complete, the next one has just begun
    status, _, body = get(srv, mount + "/hls.m3u8?_HLS_msn=%s&_HLS_part=%s" % m.groups())
    assert status == 200
    return mount + "/" + hlscheck.parse(body.decode())["hint"]["URI"]


def raw_get(srv, path, version, extra=""):
    """GET path over a socket of its own: (status line, {header: value}, file to read the body
    from, socket, seconds until the head came)."""
    sock = socket.create_connection((srv.host, srv.port), timeout=30)
    t0 = time.monotonic()
    sock.sendall(("GET %s %s\r\nHost: %s\r\n%s\r\n" % (path, version, srv.host, extra)).encode())
    f = sock.makefile("rb")
    status = f.readline().rstrip(b"\r\n")
    took = time.monotonic() - t0
    head = {}
    while (line := f.readline().rstrip(b"\r\n")):
        k, _, v = line.decode("latin-1").partition(":")
        head[k.strip().lower()] = v.strip()
    return status, head, f, sock, took


def read_chunked(f):
    """The body of a chunked answer, checked chunk by chunk, up to the last (empty) chunk."""
    body = b""
    while True:
        size = int(f.readline().split(b";")[0], 16)
        data = f.read(size + 2)
        assert data[size:] == b"\r\n", "a chunk does not end in CRLF"
        if size == 0:
            assert f.readline() == b"", "bytes after the last chunk of a closed answer"
            return body
        body += data[:size]


# ---------------------------------------------------------------- the HLS part being cut

@pytest.mark.rimecast_only
def test_part_being_cut_is_chunked_under_an_http11_status_line(server):
    srv = server(extra_xml=SECOND_PARTS)
    mount = "/live.mp3"
    p = start_source(srv, mount)
    try:
        hint = hint_just_begun(srv, mount)
        status, head, f, sock, _ = raw_get(srv, hint, "HTTP/1.1", "Connection: close\r\n")
        try:
            body = read_chunked(f)
        finally:
            f.close()
            sock.close()
        whole_status, whole_head, whole = get(srv, hint)   # asked again once complete
    finally:
        fl.stop_process(p)
    # chunked framing under an HTTP/1.0 status line is faulty (RFC 9112 section 6.1)
    assert status == b"HTTP/1.1 200 OK", status
    assert head.get("transfer-encoding") == "chunked" and "content-length" not in head, head
    assert whole_status == 200 and "transfer-encoding" not in whole_head
    assert body == whole and body[:3] == b"ID3"


@pytest.mark.rimecast_only
@pytest.mark.parametrize("keep", [False, True])
def test_http10_request_for_the_part_being_cut_gets_it_complete_with_a_length(server, keep):
    """Never chunked to HTTP/1.0 (RFC 9112 section 7.1): the request waits for the part, as
    one for a part further ahead does, and gets it whole with its length (kept alive when it
    asked so: the length is what lets the connection go on)."""
    srv = server(extra_xml=SECOND_PARTS)
    mount = "/live.mp3"
    p = start_source(srv, mount)
    try:
        hint = hint_just_begun(srv, mount)
        status, head, f, sock, took = raw_get(srv, hint, "HTTP/1.0",
                                              "Connection: keep-alive\r\n" if keep else "")
        try:
            body = f.read(int(head["content-length"]))
            if keep:   # the connection takes another request
                sock.sendall(("GET %s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                              % hint).encode())
                again = f.readline()
                assert again.startswith(b"HTTP/1.0 200"), again
            else:
                assert f.read() == b""     # closed after the body
        finally:
            f.close()
            sock.close()
        whole_status, _, whole = get(srv, hint)
    finally:
        fl.stop_process(p)
    assert status == b"HTTP/1.0 200 OK", status
    assert "transfer-encoding" not in head, head
    assert whole_status == 200 and body == whole and body[:3] == b"ID3"
    assert head.get("connection") == ("keep-alive" if keep else "Close")
    # it was asked for as it began: it came once complete, a part (1 s) later
    assert took > 0.3, took


@pytest.mark.rimecast_only
def test_http10_request_parked_for_a_part_that_never_completes_is_answered_by_its_deadline(
        server):
    """The source leaves while the part is being cut: the waiting HTTP/1.0 request gets an
    answer (the part is gone, or did not come in time), never a hang and never chunks."""
    srv = server(extra_xml="<hls><sessions>0</sessions><target-duration>2</target-duration>"
                 "<part-target-ms>1000</part-target-ms></hls>")
    mount = "/live.mp3"
    p = start_source(srv, mount)
    try:
        hint = hint_just_begun(srv, mount)
        sock = socket.create_connection((srv.host, srv.port), timeout=30)
        sock.sendall(("GET %s HTTP/1.0\r\n\r\n" % hint).encode())
        p.kill()
        p.wait(5)
        t0 = time.monotonic()
        answer = wirelib.read_until_closed(sock, timeout=20)
        took = time.monotonic() - t0
        sock.close()
    finally:
        fl.stop_process(p)
    status = answer.split(b"\r\n", 1)[0]
    # three target durations at most (the blocking requests' deadline), then a clean error
    assert re.match(rb"HTTP/1\.0 (404|503) ", status), answer[:300]
    assert b"chunked" not in answer.split(b"\r\n\r\n", 1)[0].lower()
    assert took < 3 * 2 + 2, took


def test_stream_answer_keeps_icecast_http10_status_line(server):
    """A listener's GET of a mount, over HTTP/1.1 too: Icecast's "HTTP/1.0 200 OK" and the
    stream's bytes as they are (players expect it), no chunks."""
    srv = server()
    data = wirelib.make_data(256 * 1024, seed=5)
    src = srv.source("/live.mp3", data, rate=64 * 1024)
    assert src.connect().status == 200
    src.start()
    try:
        status, head, f, sock, _ = raw_get(srv, "/live.mp3", "HTTP/1.1")
        try:
            body = f.read(8192)
        finally:
            f.close()
            sock.close()
    finally:
        src.close()
    assert status == b"HTTP/1.0 200 OK", status
    assert "transfer-encoding" not in head and "content-length" not in head, head
    wirelib.locate_slice(data, body)


# ---------------------------------------------------------------- what the parser refuses

@pytest.mark.rimecast_only
@pytest.mark.parametrize("raw", [
    b"GET /status-json.xsl HTTP/1.1\nHost: x\n\n",
    b"GET /status-json.xsl HTTP/1.0\n\n",
    b"GET /status-json.xsl HTTP/1.1\r\nHost: x\nAccept: */*\r\n\r\n",
    b"HEAD /status-json.xsl HTTP/1.1\r\nHost: x\r\n\n",
    b"PUT /new.mp3 HTTP/1.1\nAuthorization: Basic c291cmNlOmhhY2ttZQ==\n"
    b"Content-Type: audio/mpeg\n\n",
], ids=["lf-only", "http10-lf-only", "one-header", "blank-line", "put"])
def test_bare_lf_line_ends_get_400(server, raw):
    srv = server()
    resp, _ = wirelib.simple_request(srv.host, srv.port, raw)
    assert resp is not None and resp.status == 400, resp
    assert resp.header("connection") == "Close"
    srv.wait_log("malformed request (Bad Request), answering 400")
    # the same request with CRLF line ends is answered
    fixed = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if fixed.startswith(b"GET"):
        resp, _ = wirelib.simple_request(srv.host, srv.port, fixed.replace(
            b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n", 1))
        assert resp is not None and resp.status == 200, resp


def test_darkice_source_login_with_bare_lf_goes_on_air(server):
    """DarkIce (IceCast2.cpp) writes its SOURCE login with LF line ends and CRLF CRLF at the
    end; Icecast takes it, and so must a drop-in replacement."""
    srv = server()
    mp3 = wirelib.make_data(128 * 1024, seed=11)
    head = (b"SOURCE /darkice.mp3 HTTP/1.0\nContent-type: audio/mpeg\n"
            b"Authorization: Basic " + wirelib.basic_auth("source", "hackme").split()[1].encode() +
            b"\nUser-Agent: DarkIce/1.4 (http://code.google.com/p/darkice/)\n"
            b"ice-bitrate: 128\nice-public: 0\nice-name: Dark\nice-description: lf\r\n\r\n")
    s = wirelib.connect(srv.host, srv.port)
    try:
        s.sendall(head)
        resp, _ = wirelib.read_head(s)
        assert resp is not None and resp.status == 200, resp
        fl.wait_mount(srv, "/darkice.mp3")
        lis = srv.listener("/darkice.mp3")
        assert lis.open().status == 200
        s.sendall(mp3)
        lis.wait_bytes(64 * 1024, 10)
        wirelib.locate_slice(mp3, lis.snapshot())
        lis.close()
        assert fl.stats_source(srv, "/darkice.mp3").findtext("server_name") == "Dark"
    finally:
        s.close()


@pytest.mark.rimecast_only
@pytest.mark.parametrize("method,coding", [
    ("GET", "gzip"),
    ("GET", "identity"),
    ("PUT", "identity, chunked"),
    ("PUT", "gzip, chunked"),
    ("PUT", "chunked, br"),
    ("SOURCE", "x-garbage;q=1"),
    ("GET", "@@@"),
])
def test_unknown_transfer_coding_gets_501(server, method, coding):
    """A body framed by a coding the server does not know cannot be read, nor skipped: 501
    and the connection closed (RFC 9112 section 6.1)."""
    srv = server()
    raw = ("%s /x.mp3 HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: audio/mpeg\r\n"
           "Transfer-Encoding: %s\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
           % (method, wirelib.basic_auth("source", "hackme"), coding)).encode()
    resp, _ = wirelib.simple_request(srv.host, srv.port, raw)
    assert resp is not None and resp.status == 501, resp
    assert resp.header("connection") == "Close"
    srv.wait_log("malformed request (Not Implemented: Transfer-Encoding), answering 501")
