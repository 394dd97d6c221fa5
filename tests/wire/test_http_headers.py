# SPDX-License-Identifier: GPL-2.0-or-later
"""Configured <http-headers> against the server's own headers.

Covers: a header set in <http-headers> (Debian's icecast.xml and our default config set
Access-Control-Allow-Origin) replaces the built-in header of the same name, compared
case-insensitively, and is sent once: on the stream head, the public XSL/JSON pages, the
CORS preflight, error pages and static files; a mount's header replaces a global one.
A headless Chromium on a page of another origin fetches /status-json.xsl and plays the
stream in an <audio crossorigin> element, which both fail when the header is doubled.
"""

import http.server
import json
import threading

import pytest

import conftest
import webuilib
import wirelib

CORS_XML = """<http-headers>
    <header name="Access-Control-Allow-Origin" value="*"/>
    <header name="x-station" value="wire"/>
  </http-headers>"""


def names(resp):
    return [k.lower() for k, _ in resp.headers]


def get_head(srv, path, method="GET", extra=""):
    raw = ("%s %s HTTP/1.0\r\nHost: x\r\nOrigin: http://elsewhere.example\r\n%s\r\n"
           % (method, path, extra)).encode()
    resp, _ = wirelib.simple_request(srv.host, srv.port, raw)
    assert resp is not None, "no response to %s %s" % (method, path)
    return resp


def assert_once(resp, name, value=None):
    got = [v for k, v in resp.headers if k.lower() == name.lower()]
    assert len(got) == 1, "%s sent %d times in %r" % (name, len(got), resp.raw)
    if value is not None:
        assert got[0] == value, resp.raw


def test_configured_cors_header_replaces_the_builtin_one(server, data):
    srv = server(extra_xml=CORS_XML)
    src = srv.source("/live.mp3", data, rate=128 * 1024)
    assert src.connect().status == 200
    src.start()
    try:
        src.wait_sent(16384, 5)
        lis = srv.listener("/live.mp3")
        resp = lis.open()
        assert resp.status == 200
        assert_once(resp, "Access-Control-Allow-Origin", "*")
        assert_once(resp, "x-station", "wire")
        assert_once(resp, "Access-Control-Expose-Headers")   # built-ins not configured stay
        lis.close()
        for path in ("/status-json.xsl", "/status.xsl", "/nothing-here", "/style.css"):
            assert_once(get_head(srv, path), "Access-Control-Allow-Origin", "*")
        pre = get_head(srv, "/live.mp3", "OPTIONS",
                       "Access-Control-Request-Method: GET\r\n")
        assert pre.status == 204
        assert_once(pre, "Access-Control-Allow-Origin", "*")
        assert_once(pre, "Access-Control-Allow-Methods")
    finally:
        src.stop()


@pytest.mark.rimecast_only
def test_configured_header_name_matches_case_insensitively_and_mount_wins(server, data):
    xml = """<http-headers>
    <header name="access-control-allow-origin" value="https://radio.example"/>
    <header name="Cache-Control" value="no-cache"/>
  </http-headers>"""
    srv = server(start=False, extra_xml=xml, mounts=[{"mount_name": "/m.mp3"}])
    srv.cfg["port"] = conftest.free_port()
    # a mount's own header of the same name replaces the global one
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "<mount-name>/m.mp3</mount-name>",
        '<mount-name>/m.mp3</mount-name><http-headers><header name="ACCESS-CONTROL-ALLOW-ORIGIN"'
        ' value="https://mount.example"/></http-headers>'))
    assert srv._spawn(10), srv.diagnostics()
    pre = get_head(srv, "/status-json.xsl")
    assert_once(pre, "Access-Control-Allow-Origin", "https://radio.example")
    src = srv.source("/m.mp3", data, rate=128 * 1024)
    assert src.connect().status == 200
    src.start()
    try:
        src.wait_sent(16384, 5)
        lis = srv.listener("/m.mp3")
        resp = lis.open()
        assert resp.status == 200
        assert_once(resp, "Access-Control-Allow-Origin", "https://mount.example")
        assert_once(resp, "Cache-Control", "no-cache")
        lis.close()
    finally:
        src.stop()


# ---------------------------------------------------------------- a browser on another origin

_missing = webuilib.missing_requirements()


class _Page(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def other_origin_page(stream_url, json_url):
    page = """<!doctype html><html><head><title>elsewhere</title></head><body>
<audio id="player" crossorigin="anonymous" preload="auto" muted src="%s"></audio>
<script>
window.__json = null; window.__jsonError = null;
fetch(%s).then(function (r) { return r.json(); })
  .then(function (j) { window.__json = j; })
  .catch(function (e) { window.__jsonError = String(e); });
</script></body></html>""" % (stream_url, json.dumps(json_url))
    handler = type("Page", (_Page,), {"body": page.encode()})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.mark.browser
@pytest.mark.skipif(_missing is not None, reason=_missing or "")
def test_page_on_another_origin_fetches_status_json_and_plays_the_stream(server):
    audio = webuilib.make_mp3(seconds=6, bitrate_k=64)
    if audio is None:
        pytest.skip("ffmpeg is needed to make real audio")
    srv = server(extra_xml=CORS_XML)
    src = srv.source("/cors.mp3", audio, rate=8000, loop=True,
                     headers={"ice-name": "Cross Origin"})
    assert src.connect().status == 200
    src.start()
    httpd = other_origin_page(srv.url("/cors.mp3"), srv.url("/status-json.xsl"))
    b = webuilib.Browser(js=True)
    try:
        src.wait_sent(8192, 5)
        b.get("http://127.0.0.1:%d/" % httpd.server_address[1])
        b.wait(lambda: b.js_run("return window.__json || window.__jsonError"), 10,
               "the cross-origin fetch to finish")
        assert b.js_run("return window.__jsonError") is None
        stats = b.js_run("return window.__json")
        sources = stats["icestats"]["source"]
        sources = sources if isinstance(sources, list) else [sources]
        assert [s.get("server_name") for s in sources] == ["Cross Origin"]
        b.js_run("var a = document.getElementById('player'); a.muted = true;"
                 " a.play().catch(function (e) { window.__playError = String(e); });")
        b.wait(lambda: b.js_run("var a = document.getElementById('player');"
                                " return a.error ? -1 : a.readyState") != 0 and
               b.js_run("return document.getElementById('player').readyState") >= 2, 15,
               "the cross-origin <audio> to decode data")
        assert b.js_run("return document.getElementById('player').error") is None
        b.wait(lambda: b.js_run("return document.getElementById('player').currentTime") > 0.2,
               15, "the player to advance")
    finally:
        b.close()
        httpd.shutdown()
        src.stop()
