# SPDX-License-Identifier: GPL-2.0-or-later
"""The inputs behind Icecast's security history, one test each.

Each test is named after the CVE (or the Icecast crash fix) whose input it sends. All tests
share one server with a live source, a live listener and a Shoutcast-compat socket; each
checks a clean answer (the right status, or a clean close), that the logs hold no raw
control byte, and that the listener kept receiving data meanwhile."""

import base64
import re
import socket
import struct
import subprocess
import time

import pytest

import adminlib
import formatlib as fl
import wirelib
from conftest import (BINARY, IS_ICECAST, SOURCE_PASSWORD, Server, assert_server_healthy,
                      free_port, port_pair)

pytestmark = pytest.mark.skipif(IS_ICECAST, reason="Rimecast's answers are pinned down here")

HEADER_TIMEOUT = 2
LIVE = "/live.mp3"
SC_MOUNT = "/sc.mp3"



@pytest.fixture(scope="module")
def env():
    sc_port = port_pair()
    extra = """<listen-socket><port>%d</port><bind-address>127.0.0.1</bind-address>
    <shoutcast-mount>%s</shoutcast-mount></listen-socket>""" % (sc_port, SC_MOUNT)
    srv = Server(header_timeout=HEADER_TIMEOUT, clients=200, extra_xml=extra).start()
    src = srv.source(LIVE, wirelib.make_data(4 << 20, seed=11), rate=32 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    src.wait_sent(8192, 5)
    lis = srv.listener(LIVE, keep=0)
    assert lis.open().status == 200
    srv.sc_port = sc_port + 1
    yield srv, lis
    lis.close()
    src.stop()
    alive = srv.is_alive()
    code = srv.stop()
    if not alive or code != 0:
        print(srv.diagnostics())
    assert alive, "server died"
    assert code == 0, "exit code %r after SIGTERM" % code


RAW_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


def assert_logs_clean(srv):
    """No raw control byte inside any line of error.log or access.log."""
    with open(srv.error_log_path, "rb") as f:
        err = f.read()
    for name, data in (("error.log", err), ("access.log", srv.access_log_bytes())):
        for ln in data.split(b"\n"):
            assert not RAW_CONTROL.search(ln.replace(b"\t", b" ")), \
                "raw control byte in %s: %r" % (name, ln[:200])


_next_addr = [1]


def connect_from_fresh_address(host, port, timeout=5.0):
    """A connection from 127.0.1.N, a new N each time: wrong credentials sent on purpose
    must not put the tests' own address under the login back-off."""
    _next_addr[0] += 1
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.%d.%d" % (1 + _next_addr[0] // 250, 1 + _next_addr[0] % 250), 0))
    s.settimeout(timeout)
    s.connect((host, port))
    return s


def answer(srv, raw, timeout=HEADER_TIMEOUT + 4, port=None):
    """Send raw bytes; (status or None if closed without an answer, body until close)."""
    s = connect_from_fresh_address(srv.host, port or srv.port)
    try:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            return None, b""
        try:
            resp, rest = wirelib.read_head(s, timeout)
        except ConnectionResetError:
            return None, b""
        if resp is None:
            return None, rest
        if resp.status >= 300 or raw.startswith(b"HEAD"):
            try:
                rest += wirelib.read_until_closed(s, timeout, limit=1 << 16)
            except (wirelib.WaitTimeout, ConnectionResetError):
                pass
        return resp.status, rest
    finally:
        s.close()


def check(srv, lis):
    assert_server_healthy(srv, lis)
    assert_logs_clean(srv)


def get(path, *headers):
    return b"GET " + path + b" HTTP/1.0\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n"


# ---------------------------------------------------------------- CVEs

def test_cve_2001_0197_format_specifiers_in_url_and_agent(env):
    srv, lis = env
    status, _ = answer(srv, get(b"/%n%s%x%p%n.mp3", b"User-Agent: %n%s%s%s%n%x",
                                b"Referer: %999999999s%n"))
    assert status == 400  # "%n" is no percent-escape: refused before any lookup
    status, _ = answer(srv, get(b"/%25n%25s%25x.mp3", b"User-Agent: %n%s%s%s%n%x"))
    assert status == 404
    wirelib.wait_until(lambda: b"%n%s%s%s%n%x" in srv.access_log_bytes(), 5, "access log entry")
    check(srv, lis)


def test_cve_2001_0784_encoded_dotdot_traversal(env):
    srv, lis = env
    for path in (b"/%2e%2e/%2e%2e/%2e%2e/etc/passwd", b"/%2E%2E%2f%2E%2E%2fetc%2fpasswd",
                 b"/web/%2e%2e/%2e%2e/%2e%2e/etc/passwd", b"/..%2f..%2f..%2fetc/passwd"):
        status, body = answer(srv, get(path))
        assert status in (400, 403, 404), (path, status)
        assert b"root:" not in body
    check(srv, lis)


@pytest.mark.parametrize("path,statuses", [
    (b"/status.xsl/", (400, 404)), (b"/style.css//", (400, 404)), (b"/style.css.", (400, 404)),
    (b"/style.css\\", (400, 404)), (b"/admin/stats.", (400, 401)), (b"/x/", (400, 404)),
    (b"/.", (200,)),  # the root page, as "/"
])
def test_cve_2001_1083_url_ending_in_dot_slash_or_backslash(env, path, statuses):
    srv, lis = env
    status, body = answer(srv, get(path))
    assert status in statuses, (path, status)
    assert b"xsl:stylesheet" not in body
    check(srv, lis)


def test_cve_2001_1229_1230_overlong_request_fields(env):
    srv, lis = env
    cases = [
        b"G" * 5000 + b" / HTTP/1.0\r\n\r\n",                          # method
        b"GET / HTTP/" + b"1" * 5000 + b"\r\n\r\n",                    # protocol
        get(b"/", b"X-" + b"n" * 17000 + b": v"),                      # header name
        get(b"/", b"Host: " + b"h" * 17000),                           # header value
        get(b"/live.mp3?" + b"q=" + b"a" * 9000),                      # query
    ]
    for raw in cases:
        status, _ = answer(srv, raw)
        assert status in (400, 414, 431, 501), (raw[:40], status)
    check(srv, lis)


def test_cve_2002_0177_long_request_line(env):
    srv, lis = env
    for n in (8200, 20000, 70000):
        status, _ = answer(srv, b"GET /" + b"A" * n + b".mp3 HTTP/1.0\r\n\r\n")
        assert status in (400, 414, 431), (n, status)
    check(srv, lis)


def test_cve_2004_2027_long_basic_authorization(env):
    srv, lis = env
    for n in (3000, 12000):
        value = base64.b64encode(b"admin:" + b"x" * n)
        status, _ = answer(srv, get(b"/admin/stats", b"Authorization: Basic " + value))
        assert status in (401, 431), (n, status)
    status, _ = answer(srv, get(b"/admin/stats", b"Authorization: Basic " + b"QUFB" * 5000))
    assert status in (400, 431)
    check(srv, lis)


def test_cve_2004_1561_many_request_headers(env):
    srv, lis = env
    # 40 headers (past Icecast 2.0's 32) is a normal request
    status, _ = answer(srv, get(b"/nothing-here", *[b"X-H%d: v" % i for i in range(40)]))
    assert status == 404
    # past the parser's table of 64: refused, nothing written past it
    for n in (65, 200, 2000):
        status, _ = answer(srv, get(b"/nothing-here", *[b"X-H%d: v" % i for i in range(n)]))
        assert status in (400, 431), (n, status)
    check(srv, lis)


def test_cve_2005_0837_status_xsl_with_trailing_dot(env):
    srv, lis = env
    for path in (b"/status.xsl.", b"/status.xsl%2e", b"/status.xsl%20", b"/status.xsl::$DATA",
                 b"/admin/stats.xsl."):
        status, body = answer(srv, get(path))
        assert status in (400, 401, 404), (path, status)
        assert b"xsl:stylesheet" not in body and b"xsl:template" not in body
    check(srv, lis)


def test_cve_2011_4612_crlf_in_url_stays_out_of_error_log(env):
    srv, lis = env
    marker = b"INJ%d" % int(time.time() * 1000)
    status, _ = answer(srv, get(b"/x%0d%0a" + marker + b"%0d%0a%1b[31m.mp3",
                                b"User-Agent: a%0d%0a" + marker))
    assert status in (400, 404)
    status, _ = answer(srv, b"SOURCE /y%0d%0a" + marker + b" HTTP/1.0\r\n\r\n")
    assert status in (400, 401, 403)
    wirelib.wait_until(lambda: marker in srv.access_log_bytes(), 5, "access log entry")
    for log in (srv.access_log_bytes(), open(srv.error_log_path, "rb").read()):
        assert not any(ln.startswith(marker) for ln in log.split(b"\n"))
    check(srv, lis)


def test_cve_2015_3026_source_without_credentials(env):
    srv, lis = env
    for method in (b"PUT", b"SOURCE"):
        raw = method + b" /noauth.mp3 HTTP/1.0\r\nContent-Type: audio/mpeg\r\n\r\n"
        status, _ = answer(srv, raw)
        assert status == 401, (method, status)
    # an empty Authorization header and a scheme other than Basic
    for auth in (b"Authorization:", b"Authorization: Basic", b"Authorization: Digest x=y"):
        raw = b"PUT /noauth.mp3 HTTP/1.1\r\nContent-Type: audio/mpeg\r\n" + auth + b"\r\n\r\n"
        status, _ = answer(srv, raw)
        assert status in (400, 401), (auth, status)
    # admin commands without credentials, with a mount that exists
    status, _ = answer(srv, get(b"/admin/metadata?mount=/live.mp3&mode=updinfo&song=x"))
    assert status == 401
    check(srv, lis)


def test_cve_2018_18820_long_forwarded_header_values(env):
    srv, lis = env
    # values that would be forwarded to an auth server: each just under the head limit
    # together, one at a time, then together past it
    for name in (b"User-Agent", b"Referer", b"X-Forwarded-For", b"Icy-MetaData"):
        fresh = wirelib.Listener(srv.host, srv.port, LIVE, keep=0,
                                 headers={name.decode(): "v" * 12000})
        resp = fresh.open()
        assert resp.status == 200, name
        fresh.wait_bytes(4096, 5)
        fresh.close()
    status, _ = answer(srv, get(LIVE.encode(), b"User-Agent: " + b"u" * 9000,
                                b"Referer: " + b"r" * 9000))
    assert status == 431
    check(srv, lis)


# ---------------------------------------------------------------- Icecast crash fixes

def ogg_page(serial, seqno, flags, packet):
    lacing = bytes([255] * (len(packet) // 255) + [len(packet) % 255])
    head = (b"OggS" + bytes([0, flags]) + struct.pack("<qIII", 0, serial, seqno, 0) +
            bytes([len(lacing)]) + lacing)
    page = head + packet
    crc = fl.ogg_crc(page)
    return page[:22] + struct.pack("<I", crc) + page[26:]


def test_opus_bos_shorter_than_8_bytes(env):
    srv, lis = env
    data = ogg_page(77, 0, 2, b"OpusH") + ogg_page(77, 1, 0, b"\x00" * 100) * 40
    src = srv.source("/short-opus.ogg", data, content_type="application/ogg", rate=1 << 20)
    resp = src.connect()
    assert resp.status == 200
    src.start()
    src.wait_done(5)
    src.close()
    check(srv, lis)


def test_oversized_ice_and_icy_source_headers(env):
    srv, lis = env
    big = {"ice-name": "N" * 6000, "ice-description": "D" * 6000, "icy-genre": "G" * 3000,
           "ice-url": "http://" + "u" * 1000}
    src = srv.source("/bighead.mp3", wirelib.make_data(1 << 20, seed=3), rate=64 * 1024,
                     loop=True, headers=big)
    assert src.connect().status == 200
    src.start()
    try:
        src.wait_sent(8192, 5)
        # the listener's head is built from them: whole, and within what a client reads
        fresh = wirelib.Listener(srv.host, srv.port, "/bighead.mp3", keep=0)
        resp = fresh.open()
        assert resp.status == 200
        assert len(resp.raw) < 65536
        name = resp.header("icy-name") or ""
        assert set(name) <= {"N"}
        fresh.wait_bytes(4096, 5)
        fresh.close()
    finally:
        src.stop()
    check(srv, lis)


def test_metadata_longer_than_4080_bytes(env):
    srv, lis = env
    icy_lis = wirelib.Listener(srv.host, srv.port, LIVE, keep=1 << 20,
                               headers={"Icy-MetaData": "1"})
    resp = icy_lis.open()
    assert resp.status == 200
    metaint = int(resp.header("icy-metaint"))
    song = "S" * 5000
    r = adminlib.admin(srv, "/admin/metadata?mount=%s&mode=updinfo&song=%s" % (LIVE, song))
    assert r.status in (200, 400)
    r2 = adminlib.admin(srv, "/admin/metadata?mount=%s&mode=updinfo&song=after" % LIVE)
    assert r2.status == 200
    wirelib.wait_until(lambda: b"StreamTitle='after';" in bytes(icy_lis.body), 10,
                       "the short title after the long one")
    body = bytes(icy_lis.body)
    icy_lis.close()
    # every metadata block is within the 255 * 16 bytes the length byte can say
    audio, metas = fl.icy_demux(body, metaint)
    assert metas
    for m in metas:
        assert len(m) <= 4080
    check(srv, lis)


def test_source_mount_not_starting_with_slash(env):
    srv, lis = env
    for mount in (b"live2.mp3", b"*", b"%2flive2.mp3", b"\\live2.mp3"):
        raw = (b"SOURCE " + mount + b" HTTP/1.0\r\nAuthorization: Basic " +
               base64.b64encode(b"source:" + SOURCE_PASSWORD.encode()) +
               b"\r\nContent-Type: audio/mpeg\r\n\r\n")
        status, _ = answer(srv, raw)
        assert status in (400, 403, 404), (mount, status)
    check(srv, lis)


def test_dotdot_in_uri(env):
    srv, lis = env
    status, body = answer(srv, get(b"/../../../../etc/passwd"))
    assert status in (400, 403, 404) and b"root:" not in body
    status, body = answer(srv, get(b"/a/b/../../../etc/passwd"))
    assert status in (400, 403, 404) and b"root:" not in body
    raw = (b"SOURCE /x/../live.mp3 HTTP/1.0\r\nAuthorization: Basic " +
           base64.b64encode(b"source:" + SOURCE_PASSWORD.encode()) +
           b"\r\nContent-Type: audio/mpeg\r\n\r\n")
    status, _ = answer(srv, raw)
    assert status in (400, 403), status
    check(srv, lis)


def test_header_block_over_4095_bytes(env):
    srv, lis = env
    # 6 KB of headers is within the limit: a listener is served
    fresh = wirelib.Listener(srv.host, srv.port, LIVE, keep=0,
                             headers={"X-Pad%d" % i: "p" * 500 for i in range(12)})
    assert fresh.open().status == 200
    fresh.wait_bytes(4096, 5)
    fresh.close()
    # past the 16 KB limit: 431
    status, _ = answer(srv, get(LIVE.encode(), *[b"X-Pad%d: " % i + b"p" * 1000
                                                  for i in range(20)]))
    assert status == 431
    check(srv, lis)


def test_icy_password_line_without_newline(env):
    srv, lis = env
    s = wirelib.connect(srv.host, srv.sc_port)
    t0 = time.monotonic()
    try:
        s.sendall(SOURCE_PASSWORD.encode())
        s.settimeout(HEADER_TIMEOUT + 5)
        try:
            got = s.recv(4096)
        except ConnectionResetError:
            got = b""
    finally:
        s.close()
    assert got == b"", got
    assert time.monotonic() - t0 < HEADER_TIMEOUT + 4
    # a password line filling the whole login buffer without a newline: closed at once
    s = wirelib.connect(srv.host, srv.sc_port)
    try:
        try:
            s.sendall(b"p" * 20000)
            s.settimeout(HEADER_TIMEOUT + 5)
            got = s.recv(4096)
        except (BrokenPipeError, ConnectionResetError):
            got = b""
    finally:
        s.close()
    assert got == b""
    check(srv, lis)


def test_icy_password_line_with_nul_byte(env):
    srv, lis = env
    s = wirelib.connect(srv.host, srv.sc_port)
    try:
        s.sendall(SOURCE_PASSWORD.encode() + b"\0junk\r\n")
        s.settimeout(HEADER_TIMEOUT + 5)
        try:
            got = s.recv(4096)
        except ConnectionResetError:
            got = b""
    finally:
        s.close()
    assert not got.startswith(b"OK2"), got
    check(srv, lis)


def test_basic_auth_without_colon(env):
    srv, lis = env
    for target in (b"PUT /nocolon.mp3 HTTP/1.1", b"GET /admin/stats HTTP/1.0"):
        raw = (target + b"\r\nContent-Type: audio/mpeg\r\nAuthorization: Basic " +
               base64.b64encode(b"sourcehackme") + b"\r\n\r\n")
        status, _ = answer(srv, raw)
        assert status in (400, 401), (target, status)
    check(srv, lis)


def test_basic_auth_invalid_base64(env):
    srv, lis = env
    for value in (b"!!!not*base64===", b"c291cmNl=OmhhY2ttZQ", b"====", b"\xff\xfe",
                  b"c291cmNlOmhhY2ttZQ==" + b"=" * 100):
        raw = (b"PUT /badb64.mp3 HTTP/1.1\r\nContent-Type: audio/mpeg\r\nAuthorization: Basic " +
               value + b"\r\n\r\n")
        status, _ = answer(srv, raw)
        assert status in (400, 401), (value, status)
    check(srv, lis)


@pytest.mark.parametrize("xml", [
    "<listen-socket><port/></listen-socket>",
    "<paths><logdir/></paths>",
    "<hostname/>",
    "<limits><clients/></limits>",
    "<authentication><source-password/></authentication>",
])
def test_empty_config_values_are_refused_at_start(xml):
    srv = Server(extra_xml=xml)
    srv.cfg["port"] = free_port()
    srv.write_config()
    name = re.search(r"<([a-z-]+)/>", xml).group(1)
    p = subprocess.run([BINARY, "-c", srv.config_path], capture_output=True, timeout=10)
    assert p.returncode == 1, (p.returncode, p.stderr)  # an exit, not a signal
    assert ("<%s> is empty" % name).encode() in p.stderr, p.stderr
