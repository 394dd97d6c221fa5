# SPDX-License-Identifier: GPL-2.0-or-later
"""What a browser does with the server's pages and streams, in a real headless Chromium.

A page of another origin (another port of 127.0.0.1, served by a small HTTP server of the
test) tries to kill a source through the admin's cached Basic login (an <img>, a fetch, a
form): the source survives, while the admin pages' own buttons still work. Needs chromium,
chromedriver and python3-selenium; skipped without them.
"""

import functools
import http.server
import os
import re
import shutil
import tempfile
import threading

import pytest

import conftest
import webuilib
import wirelib
from test_webui import AUTH, browsers, card, station, wait_notice  # noqa: F401 (fixtures)

_missing = webuilib.missing_requirements()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""),
              pytest.mark.rimecast_only]


class OtherSite:
    """A page server of the test's own on another port of 127.0.0.1 (another origin)."""

    def __init__(self, pages):
        self.dir = tempfile.mkdtemp(prefix="wire-othersite-")
        for name, text in pages.items():
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        handler = functools.partial(Quiet, directory=self.dir)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", conftest.free_port()), handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name):
        return "http://127.0.0.1:%d/%s" % (self.port, name)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def other_site():
    made = []

    def factory(pages):
        s = OtherSite(pages)
        made.append(s)
        return s

    yield factory
    for s in made:
        s.close()


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
    site = other_site({"attack.html": ATTACK % {
        "admin": "http://%s:%d" % (srv.host, srv.port), "host": "%s:%d" % (srv.host, srv.port),
        "mount": "/live.mp3", "user": AUTH[0], "pw": AUTH[1]}})
    b = browsers(js=True, auth=AUTH)   # Authorization on every request: the cached login
    b.get(site.url("attack.html"))
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
