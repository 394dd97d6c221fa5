# SPDX-License-Identifier: GPL-2.0-or-later
"""What a browser does with the server's pages and streams, in a real headless Chromium.

A page of another origin (another port of 127.0.0.1, served by a small HTTP server of the
test) tries to kill a source through the admin's cached Basic login (an <img>, a fetch, a
form): the source survives, while the admin pages' own buttons still work. Every admin page
carries a Content-Security-Policy without inline script or style, and neither it nor the
public pages break it (no violation in the browser's log; admin.js still runs). A source that
sends text/html with a script in its stream: opening the stream URL runs nothing (served as
application/octet-stream, nosniff, sandboxed). Needs chromium, chromedriver and
python3-selenium; skipped without them.
"""

import os
import re

import pytest

import httprec
import webuilib
import wirelib
from test_webui import AUTH, browsers, card, settle, station, wait_notice  # noqa: F401

_missing = webuilib.missing_requirements()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""),
              pytest.mark.rimecast_only]


# pages of another origin (another port of 127.0.0.1): other_site(pages={path: html})
other_site = httprec.recorder_fixture("other_site", None)


ATTACK = """<!doctype html><html><head><title>cats</title></head><body>
<img src="%(admin)s/admin/killsource?mount=%(mount)s" alt="">
<img src="http://%(user)s:%(pw)s@%(host)s/admin/killsource.xsl?mount=%(mount)s" alt="">
<iframe name="sink"></iframe>
<form id="f" action="%(admin)s/admin/killsource.xsl" method="get" target="sink">
<input type="hidden" name="mount" value="%(mount)s"></form>
<script>
fetch("%(admin)s/admin/killsource.json?mount=%(mount)s", {mode: "no-cors", credentials: "include"});
document.getElementById("f").submit();
</script></body></html>
"""


def refusals(srv):
    return len(re.findall(r'"GET /admin/killsource[^"]*" 403 ', srv.access_log()))


def test_a_page_of_another_origin_cannot_kill_a_source_with_the_cached_login(
        station, browsers, other_site):
    st = station({"/live.mp3": {}})
    srv = st.srv
    site = other_site(pages={"/attack.html": ATTACK % {
        "admin": "http://%s:%d" % (srv.host, srv.port), "host": "%s:%d" % (srv.host, srv.port),
        "mount": "/live.mp3", "user": AUTH[0], "pw": AUTH[1]}})
    b = browsers(js=True, auth=AUTH)   # Authorization on every request: the cached login
    b.get(site.url("/attack.html"))
    # the <img>, the fetch and the form reach the server (the <img> with a login in its URL is
    # stopped by Chromium itself) and are refused
    wirelib.wait_until(lambda: refusals(srv) >= 3, 10, "the page's three requests refused")
    srv.wait_log("refused: sent by a page of another origin (Origin")
    assert "Sec-Fetch-Site same-site" in srv.error_log()   # another port of the same host
    assert st.admin("/admin/stats?mount=/live.mp3")[0] == 200
    assert not st.sources["/live.mp3"].error
    # the admin's own page (same origin) still kills it
    b.get(st.url("/admin/stats.xsl"))
    c = card(b, "/live.mp3")
    c.find_element("css selector", "details.danger summary").click()
    c.find_element("css selector", "form.kill-source button").click()
    wait_notice(b)
    wirelib.wait_until(lambda: st.admin("/admin/stats?mount=/live.mp3")[0] == 400, 5,
                       "the source killed from the admin page")


def test_opening_the_stream_of_a_source_that_sends_a_page_runs_no_script(server, browsers,
                                                                           other_site):
    from selenium.common.exceptions import TimeoutException
    site = other_site(pages={"/start.html": "<title>start</title>",
                             "/after.html": "<title>after</title><script>fetch('/after')</script>"})
    srv = server()
    page = ("<html><head><title>clean</title></head><body><script>document.title='pwned';"
            "fetch('%s')</script><p>" % site.url("/hit")).encode() + b"x" * 65536
    src = srv.source("/page", page, rate=32 * 1024, loop=True, content_type="text/html")
    assert src.connect().status == 200
    src.start()
    src.wait_sent(len(page), 10)
    b = browsers(js=True)
    b.get(site.url("/start.html"))
    b.driver.set_page_load_timeout(5)
    try:
        b.get(srv.url("/page"))
    except TimeoutException:
        pass   # a page that never ends loading (what an unprotected server sends)
    # the browser asked for the stream and got its first bytes (a listener, or its log line)
    wirelib.wait_until(lambda: '"GET /page ' in srv.access_log() or
                       "<listeners>1</listeners>" in webuilib.admin_get(
                           srv, "/admin/stats?mount=/page")[1].decode(), 10, "the stream opened")
    b.driver.set_page_load_timeout(20)
    if b.driver.current_url.startswith(srv.url("/page")):
        assert b.title != "pwned"
        assert b.js_run("return document.contentType") != "text/html"
    # a later page of the test's site runs its script: the browser did not stop running them
    b.get(site.url("/after.html"))
    wirelib.wait_until(lambda: "/after" in site.paths(), 10, "the later page's fetch")
    assert "/hit" not in site.paths()
    src.stop()


ADMIN_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; "
             "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def csp_violations(b):
    try:
        logs = b.driver.get_log("browser")
    except Exception:
        return []
    return [e for e in logs if "Content Security Policy" in e.get("message", "")]


def test_admin_pages_forbid_inline_script_and_need_none(station, browsers, tmp_path):
    users = tmp_path / "users"
    users.write_text("keeper:0cc175b9c0f1b6a831c399e269772661\n")
    os.chmod(str(tmp_path), 0o755)
    users.chmod(0o644)
    protected = ('<mount type="normal"><mount-name>/secret.mp3</mount-name>'
                 '<authentication type="htpasswd"><option name="filename" value="%s"/>'
                 '</authentication></mount>' % users)
    st = station({"/live.mp3": {}, "/other.mp3": {}}, extra_xml=protected)
    lis = st.listen("/live.mp3")
    webuilib.wait_listeners(st.srv, "/live.mp3", 1)
    b = browsers(js=True, auth=AUTH)
    b.get(st.url("/status.xsl"))   # the browser's first messages (none of ours) go first
    csp_violations(b)
    admin_pages = ["/admin/", "/admin/stats.xsl?mount=/live.mp3", "/admin/listmounts.xsl",
                   "/admin/listclients.xsl?mount=/live.mp3",
                   "/admin/moveclients.xsl?mount=/live.mp3",
                   "/admin/updatemetadata.xsl?mount=/live.mp3",
                   "/admin/manageauth.xsl?mount=/secret.mp3", "/admin/log.xsl",
                   "/admin/metadata.xsl?mount=/live.mp3&mode=updinfo&song=csp",
                   "/admin/fallbacks.xsl?mount=/live.mp3&fallback=/other.mp3"]
    for page in admin_pages:
        status, head = _head(st.srv, page)
        assert status == 200 and head.header("content-security-policy") == ADMIN_CSP, page
        b.get(st.url(page))
        b.wait(lambda: b.js_run("return document.readyState") == "complete", 10, "loaded")
        if page.startswith("/admin/stats") or page == "/admin/":
            settle(b)   # admin.js ran (script from the server itself is allowed)
        assert not csp_violations(b), (page, csp_violations(b))
    # the spacing the pages had inline comes from the style sheet now
    b.get(st.url("/admin/listclients.xsl?mount=/live.mp3"))
    assert b.js_run("return getComputedStyle(document.querySelector('section.spaced'))"
                    ".marginTop") == "22px"
    for page in ("/status.xsl", "/server_version.xsl"):
        b.get(st.url(page))
        b.wait(lambda: b.js_run("return document.readyState") == "complete", 10, "loaded")
        assert not csp_violations(b), (page, csp_violations(b))
        # nothing inline that the admin pages' policy would refuse
        assert b.js_run("""return [...document.querySelectorAll('script:not([src]), [style]')]
                          .length + [...document.querySelectorAll('*')].filter(e =>
                          [...e.attributes].some(a => a.name.startsWith('on'))).length""") == 0
    lis.close()


def _head(srv, path):
    raw = ("GET %s HTTP/1.0\r\nHost: %s:%d\r\nAuthorization: %s\r\n\r\n"
           % (path, srv.host, srv.port, wirelib.basic_auth(*AUTH))).encode()
    resp, _ = wirelib.simple_request(srv.host, srv.port, raw)
    return resp.status, resp
