# SPDX-License-Identifier: GPL-2.0-or-later
"""Static files from the webroot: types, conditional and range requests, HEAD,
keep-alive, large files, and nothing outside the webroot ever served."""

import email.utils
import http.client
import os

import pytest

from adminlib import Station, raw, request, write

pytestmark = pytest.mark.rimecast_only

DIGITS = bytes(range(256)) * 8


@pytest.fixture
def station(server):
    st = Station(server, [])
    yield st
    st.close()


def test_files_have_type_length_and_last_modified(station):
    r = request(station.srv, "/hello.txt")
    assert r.status == 200 and r.body == b"hello world\n"
    assert r.header("content-type").startswith("text/plain")
    assert r.header("content-length") == "12" and r.header("accept-ranges") == "bytes"
    mtime = os.stat(os.path.join(station.webroot, "hello.txt")).st_mtime
    assert email.utils.parsedate_to_datetime(r.header("last-modified")).timestamp() == int(mtime)
    assert request(station.srv, "/style.css").header("content-type").startswith("text/css")
    assert "javascript" in request(station.srv, "/app.js").header("content-type")
    assert request(station.srv, "/data.unknownext").header("content-type") == \
        "application/octet-stream"
    assert request(station.srv, "/sub/").body == b"<p>sub index</p>\n"
    assert request(station.srv, "/sub").body == b"<p>sub index</p>\n"


def test_head_and_if_modified_since(station):
    r = request(station.srv, "/digits.bin", method="HEAD")
    assert r.status == 200 and r.body == b"" and r.header("content-length") == str(len(DIGITS))
    lm = request(station.srv, "/digits.bin").header("last-modified")
    r = request(station.srv, "/digits.bin", headers={"If-Modified-Since": lm})
    assert r.status == 304 and r.body == b""
    r = request(station.srv, "/digits.bin",
                headers={"If-Modified-Since": "Mon, 01 Jan 1990 00:00:00 GMT"})
    assert r.status == 200 and r.body == DIGITS
    r = request(station.srv, "/digits.bin", headers={"If-Modified-Since": "garbage"})
    assert r.status == 200


@pytest.mark.parametrize("spec,status,want", [
    ("bytes=0-9", 206, (0, 10)),
    ("bytes=100-", 206, (100, 2048)),
    ("bytes=-16", 206, (2032, 2048)),
    ("bytes=2000-999999", 206, (2000, 2048)),
    ("bytes=-99999", 206, (0, 2048)),
    ("bytes=2048-", 416, None),
    ("bytes=5-2", 416, None),
    ("bytes=abc", 416, None),
    ("bytes=-0", 416, None),
    ("items=0-1", 416, None),
    ("bytes=0-1,5-6", 200, (0, 2048)),
])
def test_single_range_requests(station, spec, status, want):
    r = request(station.srv, "/digits.bin", headers={"Range": spec})
    assert r.status == status, (spec, r.status)
    if status == 206:
        a, b = want
        assert r.body == DIGITS[a:b]
        assert r.header("content-range") == "bytes %d-%d/%d" % (a, b - 1, len(DIGITS))
    elif status == 416:
        assert r.header("content-range") == "bytes */%d" % len(DIGITS)
    else:
        assert r.body == DIGITS


def test_large_file_is_sent_whole(station):
    blob = os.urandom(3 << 20)
    write(os.path.join(station.webroot, "big.bin"), blob)
    r = request(station.srv, "/big.bin", timeout=20)
    assert r.status == 200 and r.body == blob
    r = request(station.srv, "/big.bin", headers={"Range": "bytes=1000000-"})
    assert r.body == blob[1000000:]


def test_keep_alive_serves_several_files_on_one_connection(station):
    conn = http.client.HTTPConnection(station.srv.host, station.srv.port, timeout=5)
    for path, body in (("/hello.txt", b"hello world\n"), ("/digits.bin", DIGITS),
                       ("/style.css", None), ("/hello.txt", b"hello world\n")):
        conn.request("GET", path)
        r = conn.getresponse()
        got = r.read()
        assert r.status == 200 and r.getheader("Connection") == "keep-alive"
        if body is not None:
            assert got == body
    conn.request("GET", "/nope")
    r = conn.getresponse()
    r.read()
    assert r.status == 404 and r.will_close  # errors close the connection
    conn.close()
    # HTTP/1.0 without keep-alive closes
    resp, body = raw(station.srv, b"GET /hello.txt HTTP/1.0\r\n\r\n")
    assert resp.status == 200 and resp.header("connection").lower() == "close"
    assert body == b"hello world\n"


TRAVERSALS = ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/%2E%2E%2Fetc%2Fpasswd",
              "/sub/..%2f..%2f..%2fetc/passwd", "/hello.txt.", "/hello.txt/", "/hello.txt..", "/sub/..",
              "/..\\..\\etc\\passwd", "/%5c..%5cetc/passwd", "/hello.txt%00.css",
              "/passwd-link", "/etc-link/passwd", "/etc-link/", "//etc/passwd",
              "/sub/%2e%2e/%2e%2e/etc/passwd", "/.%2e/etc/passwd"]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_nothing_outside_the_webroot_is_served(station, path):
    resp, body = raw(station.srv, ("GET %s HTTP/1.0\r\n\r\n" % path).encode())
    assert resp is not None and resp.status in (400, 403, 404), (path, resp)
    assert b"root:" not in body
    assert station.srv.is_alive()


def test_fileserve_off_serves_no_files(server):
    st = Station(server, [], extra_xml="<fileserve>0</fileserve>")
    try:
        if "<fileserve>0" not in open(st.srv.config_path).read():
            pytest.skip("no fileserve override")
        assert request(st.srv, "/hello.txt").status == 404
    finally:
        st.close()
