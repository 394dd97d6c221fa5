# SPDX-License-Identifier: GPL-2.0-or-later
"""A source may not create a mount on a URL the server answers itself.

Admin URLs, the *.xsl pages, /metrics, files served from the webroot and names with control
characters are refused with 403 and logged; the server's own pages keep answering, and a
mount that was refused is never listed or served."""

import pytest

import wirelib
from conftest import ADMIN_PASSWORD, ADMIN_USER

RESERVED = [
    "/admin/stats.xsl",
    "/admin/stats",
    "/admin/events",
    "/admin",
    "/admin.cgi",
    "/status.xsl",
    "/status-json.xsl",
    "/made-up-page.xsl",
    "/metrics",
    "/app.js",
    "/style.css",
]


def admin_get(srv, path):
    raw = ("GET %s HTTP/1.0\r\nAuthorization: %s\r\n\r\n"
           % (path, wirelib.basic_auth(ADMIN_USER, ADMIN_PASSWORD))).encode()
    return wirelib.simple_request(srv.host, srv.port, raw)


@pytest.mark.rimecast_only  # Icecast 2.4 lets a source take these names
@pytest.mark.parametrize("mount", RESERVED)
def test_source_cannot_take_a_url_the_server_answers(server, mount):
    srv = server()
    src = srv.source(mount)
    resp = src.connect()
    assert resp.status == 403, resp
    src.close()
    srv.wait_log("refused: mountpoint %s" % mount)
    # nothing was created: the mount list stays empty
    listing, body = admin_get(srv, "/admin/listmounts")
    assert listing.status == 200
    assert ('mount="%s"' % mount).encode() not in body


@pytest.mark.rimecast_only
@pytest.mark.parametrize("encoded", ["/evil%0d%0aSet-Cookie:%20x", "/bell%07", "/del%7f"])
def test_mount_names_with_control_characters_are_refused(server, encoded):
    srv = server()
    src = srv.source(encoded)
    assert src.connect().status == 403
    src.close()
    srv.wait_log("holds control characters")
    log = srv.error_log()
    assert "\r" not in log and "\x07" not in log and "\x7f" not in log


@pytest.mark.rimecast_only
def test_refused_source_leaves_the_status_page_to_the_server(server, data):
    """The attack this closes: a source user serving script as the admin page."""
    srv = server()
    src = srv.source("/admin/stats.xsl", data=b"<script>alert(1)</script>" * 100)
    assert src.connect().status == 403
    src.close()
    page, body = admin_get(srv, "/admin/stats.xsl")
    assert page.status == 200
    assert page.header("Content-Type", "").startswith("text/html")
    assert b"<script>alert(1)</script>" not in body
    status, body = wirelib.simple_request(srv.host, srv.port,
                                          b"GET /status.xsl HTTP/1.0\r\n\r\n")
    assert status.status == 200
    assert b"<script>alert(1)</script>" not in body


def test_ordinary_mount_names_still_work(server, data):
    srv = server()
    for mount in ("/live.mp3", "/administrator", "/xsl", "/stream.xsl.mp3"):
        src = srv.source(mount)
        assert src.connect().status == 200, mount
        src.send_now(data[:8192])
        lis = srv.listener(mount)
        assert lis.open().status == 200, mount
        lis.wait_bytes(4096, 5)
        lis.close()
        src.close()
