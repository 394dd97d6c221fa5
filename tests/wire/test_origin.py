# SPDX-License-Identifier: GPL-2.0-or-later
"""Admin commands that change the server, sent by a browser from a page of another origin.

A browser sends the admin's cached Basic login with any request to the server, whatever page
asks for it (an <img>, a form, a fetch). A command that changes something (killsource,
killclient, moveclients, metadata, fallbacks, manageauth, /admin.cgi) is refused with 403
when the browser marks it as sent from another origin: Sec-Fetch-Site other than same-origin
or none, or an Origin that is not the request's own scheme, host and port (another port of
the same host is another origin; "Origin: null" too). Scripts and Icecast tools send neither
header and keep working, as do the admin's own pages (same origin) and typed-in addresses.
The refusal is logged (escaped, rate-limited). Read-only commands are not affected.
"""

import socket
import threading
import urllib.parse

import pytest

import wirelib
from conftest import ADMIN_PASSWORD, ADMIN_USER, IS_ICECAST
from test_tls import make_cert, tls_request

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live.mp3"
OTHER = "/other.mp3"
DATA = wirelib.make_data(256 * 1024)


def admin_raw(srv, path, headers=(), host=None, port=None, tls=False):
    """A GET as curl or a browser would send it, with the admin's Basic login; (status, body)."""
    port = port or (srv.tls_port if tls else srv.port)
    lines = ["GET %s HTTP/1.1" % path, "Connection: close",
             "Authorization: " + wirelib.basic_auth(ADMIN_USER, ADMIN_PASSWORD)]
    if host is not False:
        lines.append("Host: %s" % (host or "%s:%d" % (srv.host, port)))
    lines += ["%s: %s" % kv for kv in headers]
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    if tls:
        data = tls_request(srv, raw, port=port)
        resp, rest = wirelib.parse_head(data.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"), \
            data.split(b"\r\n\r\n", 1)[1]
        return resp.status, rest
    resp, body = wirelib.simple_request(srv.host, port, raw)
    return resp.status, body


def live(srv, mount=MOUNT):
    src = srv.source(mount, DATA, rate=32 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    wirelib.wait_until(lambda: admin_raw(srv, "/admin/listmounts")[1].count(mount.encode()) > 0,
                       5, "%s listed" % mount)
    return src


def has_source(srv, mount=MOUNT):
    return ('mount="%s"' % mount).encode() in admin_raw(srv, "/admin/listmounts")[1]


def title(srv, mount=MOUNT):
    body = admin_raw(srv, "/admin/stats?mount=" + urllib.parse.quote(mount, safe=""))[1]
    return body.split(b"<title>", 1)[1].split(b"</title>", 1)[0].decode() if b"<title>" in body \
        else None


@pytest.fixture
def station(server):
    srv = server()
    src = live(srv)
    yield srv
    src.stop()


def own(srv):
    return "http://%s:%d" % (srv.host, srv.port)


CROSS = {
    "fetch-site-cross-site": lambda srv: [("Sec-Fetch-Site", "cross-site")],
    "fetch-site-same-site": lambda srv: [("Sec-Fetch-Site", "same-site")],
    "fetch-site-unknown": lambda srv: [("Sec-Fetch-Site", "sideways")],
    "origin-other-host": lambda srv: [("Origin", "http://evil.example")],
    "origin-other-port": lambda srv: [("Origin", "http://%s:%d" % (srv.host, srv.port + 1))],
    "origin-other-scheme": lambda srv: [("Origin", "https://%s:%d" % (srv.host, srv.port))],
    "origin-null": lambda srv: [("Origin", "null")],
    "origin-with-path": lambda srv: [("Origin", own(srv) + "/x")],
    "same-origin-but-other-origin": lambda srv: [("Sec-Fetch-Site", "same-origin"),
                                                 ("Origin", "http://evil.example")],
    "cross-site-but-own-origin": lambda srv: [("Sec-Fetch-Site", "cross-site"),
                                              ("Origin", own(srv))],
}

SAME = {
    "script-no-headers": lambda srv: [],
    "fetch-site-same-origin": lambda srv: [("Sec-Fetch-Site", "same-origin")],
    "fetch-site-none": lambda srv: [("Sec-Fetch-Site", "none")],
    "own-origin": lambda srv: [("Origin", own(srv)), ("Sec-Fetch-Site", "same-origin")],
    "own-origin-other-case": lambda srv: [("Origin", own(srv).upper().replace("HTTP", "http"))],
}


@pytest.mark.parametrize("case", sorted(CROSS))
def test_a_command_from_another_origin_is_refused_and_the_source_survives(station, case):
    srv = station
    status, body = admin_raw(srv, "/admin/killsource?mount=" + MOUNT, CROSS[case](srv))
    assert status == 403, body
    assert b"another site" in body
    status, _ = admin_raw(srv, "/admin/metadata?mount=%s&mode=updinfo&song=evil" % MOUNT,
                          CROSS[case](srv))
    assert status == 403
    assert has_source(srv) and title(srv) != "evil"
    srv.wait_log("admin killsource from 127.0.0.1 refused: sent by a page of another origin")


@pytest.mark.parametrize("case", sorted(SAME))
def test_scripts_typed_in_addresses_and_own_pages_still_change_the_server(station, case):
    srv = station
    song = "song-" + case
    status, body = admin_raw(srv, "/admin/metadata?mount=%s&mode=updinfo&song=%s"
                             % (MOUNT, song), SAME[case](srv))
    assert status == 200, body
    assert title(srv) == song
    status, body = admin_raw(srv, "/admin/killsource?mount=" + MOUNT, SAME[case](srv))
    assert status == 200, body
    wirelib.wait_until(lambda: not has_source(srv), 5, "source killed")


def test_the_host_header_decides_the_own_origin(station):
    srv = station
    other = [("Origin", "http://localhost:%d" % srv.port)]
    assert admin_raw(srv, "/admin/killsource?mount=" + MOUNT, other)[0] == 403
    assert admin_raw(srv, "/admin/killsource?mount=" + MOUNT, other, host=False)[0] == 403
    assert has_source(srv)
    ok = admin_raw(srv, "/admin/killsource?mount=" + MOUNT, other,
                   host="localhost:%d" % srv.port)
    assert ok[0] == 200


CHANGING = [
    "killsource?mount=%s" % MOUNT,
    "killclient?mount=%s&id=1" % MOUNT,
    "moveclients?mount=%s&destination=%s" % (MOUNT, OTHER),
    "metadata?mount=%s&mode=updinfo&song=x" % MOUNT,
    "fallbacks?mount=%s&fallback=%s" % (MOUNT, OTHER),
    "manageauth?mount=%s&action=add&username=u&password=p" % MOUNT,
]
READING = ["stats", "listmounts", "listclients?mount=%s" % MOUNT,
           "updatemetadata?mount=%s" % MOUNT, "history", "log"]


def test_every_changing_command_is_refused_and_reading_ones_are_not(station):
    srv = station
    src2 = live(srv, OTHER)
    cross = [("Sec-Fetch-Site", "cross-site")]
    for cmd in CHANGING:
        for view in ("", ".xsl", ".json"):
            name, _, query = cmd.partition("?")
            status, body = admin_raw(srv, "/admin/%s%s?%s" % (name, view, query), cross)
            assert status == 403, (cmd, view, body)
    assert admin_raw(srv, "/admin.cgi?pass=%s&mode=updinfo&song=x" % ADMIN_PASSWORD,
                     cross)[0] == 403
    assert has_source(srv) and has_source(srv, OTHER) and title(srv) != "x"
    for cmd in READING:
        status, body = admin_raw(srv, "/admin/" + cmd, cross)
        assert status == 200, (cmd, body)
    src2.stop()


def test_the_refusal_is_logged_escaped_and_rate_limited(station):
    srv = station
    evil = 'http://e"vil\u00e9.example <script>'
    for _ in range(5):
        assert admin_raw(srv, "/admin/killsource?mount=" + MOUNT, [("Origin", evil)])[0] == 403
    srv.wait_log("refused: sent by a page of another origin")
    lines = [l for l in srv.error_log().splitlines() if "another origin" in l]
    assert len(lines) == 1, lines
    assert '\\"vil\\xC3\\xA9' in lines[0], lines  # quote and bytes escaped
    assert has_source(srv)


def test_over_tls_the_own_origin_is_https(server, tmp_path):
    srv = server(start=False, tls_mode="1")
    cert, key = make_cert(srv.dir, "server")
    srv.cfg["ssl_certificate"] = cert
    srv.start()
    src = live(srv)
    host = "%s:%d" % (srv.host, srv.tls_port)
    path = "/admin/metadata?mount=%s&mode=updinfo&song=" % MOUNT
    assert admin_raw(srv, path + "a", [("Origin", "http://" + host)], tls=True)[0] == 403
    assert admin_raw(srv, path + "b", [("Origin", "https://" + host)], tls=True)[0] == 200
    assert title(srv) == "b"
    src.stop()


# ---------------------------------------------------------------- stream responses

PAGE = b"<html><head><title>clean</title></head><body><script>document.title='pwned'</script>"

KEPT = ["audio/mpeg", "audio/aacp", "audio/aac", "audio/AAC", "video/webm", "audio/webm",
        "audio/flac", "application/octet-stream", "audio/mpeg; codecs=mp3"]
REPLACED = ["text/html", "text/html; charset=utf-8", "image/svg+xml", "application/xhtml+xml",
            "text/plain", "audio/mpeg, text/html", "audio/", "audiox/mpeg",
            "application/oggx", "multipart/x-mixed-replace; boundary=x"]


def stream_head(srv, mount):
    lis = srv.listener(mount)
    resp = lis.open(start=False)
    lis.close()
    return resp


def test_stream_responses_never_serve_a_page(server):
    srv = server(sources=len(KEPT + REPLACED))
    mounts = {}
    for n, ctype in enumerate(KEPT + REPLACED):
        mount = "/m%d" % n
        src = srv.source(mount, PAGE + DATA, rate=32 * 1024, loop=True, content_type=ctype)
        assert src.connect().status == 200, ctype
        src.start()
        mounts[mount] = (ctype, src)
    for mount, (ctype, src) in mounts.items():
        wirelib.wait_until(lambda: src.sent > 16 * 1024, 5, "data on " + mount)
        resp = stream_head(srv, mount)
        assert resp.status == 200, (ctype, resp)
        assert resp.header("x-content-type-options") == "nosniff", ctype
        assert resp.header("content-security-policy") == "sandbox", ctype
        want = ctype if ctype in KEPT else "application/octet-stream"
        assert resp.header("content-type") == want, (ctype, resp)
    srv.wait_log('content type "')
    lines = [l for l in srv.error_log().splitlines() if "served as application/octet-stream" in l]
    assert len(lines) == 1, lines   # rate-limited
    for _, src in mounts.values():
        src.stop()


class HtmlUpstream:
    """An upstream server that answers any GET with an endless text/html stream."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            conn.settimeout(5)
            wirelib.read_head(conn)
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n" + PAGE)
            while not self.stop.is_set():
                conn.sendall(DATA[:4096])
                self.stop.wait(0.05)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


def test_a_relayed_page_is_not_served_as_a_page(server):
    up = HtmlUpstream()
    try:
        srv = server(extra_xml="<relay><server>127.0.0.1</server><port>%d</port>"
                     "<mount>/up</mount><local-mount>/relayed</local-mount></relay>" % up.port)
        wirelib.wait_until(lambda: has_source(srv, "/relayed"), 10, "the relay up")
        resp = stream_head(srv, "/relayed")
        assert resp.status == 200
        assert resp.header("content-type") == "application/octet-stream"
        assert resp.header("x-content-type-options") == "nosniff"
        assert resp.header("content-security-policy") == "sandbox"
    finally:
        up.close()
