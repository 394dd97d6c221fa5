# SPDX-License-Identifier: GPL-2.0-or-later
"""Web UI tests in a real headless Chromium: the public status page (web/status.xsl,
web/app.js), its JSON twin (web/status-json.xsl) and the admin pages (admin/*.xsl,
web/admin.js), with and without JavaScript, against a live server with real MP3
sources.

Covers: the page renders each mount (name, title, listeners), the <audio> player
points at the stream and loads it, titles and listener counts update live (JS) and
after a reload (no JS), kicking a listener from the UI closes its socket, moving
listeners and killing a source from the UI, updating metadata through the form,
adding and deleting a mount's users through its Users page, and hostile strings
shown as text, never run. Needs chromium, chromedriver and
python3-selenium; skipped without them. Set WEBUI_SHOTS=dir to keep screenshots.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse

import pytest

import conftest
import webuilib
from conftest import ADMIN_PASSWORD, ADMIN_USER, SRCDIR
from test_tls import make_cert

_missing = webuilib.missing_requirements()
pytestmark = pytest.mark.skipif(_missing is not None, reason=_missing or "")

WEB = os.path.join(SRCDIR, "web")
ADMIN = os.path.join(SRCDIR, "admin")
AUTH = (ADMIN_USER, ADMIN_PASSWORD)
RATE = 8000                       # 64 kbit/s MP3
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> \'q\' "dq" & \\'

_MP3 = {}


def mp3(freq=440):
    if freq not in _MP3:
        _MP3[freq] = webuilib.make_mp3(seconds=6, bitrate_k=64, freq=freq)
    if _MP3[freq] is None:
        pytest.skip("ffmpeg is needed to make real audio")
    return _MP3[freq]


@pytest.fixture
def browsers():
    """Factory: browsers(js=True, dark=False, auth=None) -> webuilib.Browser; all closed at teardown."""
    made = []

    def factory(**kw):
        b = webuilib.Browser(**kw)
        made.append(b)
        return b

    yield factory
    for b in made:
        b.close()


class Station:
    """A server with our web/ and admin/ and MP3 sources on the given mounts; tls=True adds
    a TLS listen socket (srv.tls_port) with a self-signed certificate (self.cert)."""

    def __init__(self, server, mounts, tls=False, **cfg):
        self.cert = None
        if tls:
            self.srv = server(start=False, webroot=WEB, adminroot=ADMIN, tls_mode="1", **cfg)
            self.cert, _ = make_cert(self.srv.dir, "server")
            self.srv.cfg["ssl_certificate"] = self.cert
            self.srv.start()
        else:
            self.srv = server(webroot=WEB, adminroot=ADMIN, **cfg)
        self.sources = {}
        self.listeners = []
        for i, (mount, headers) in enumerate(mounts.items()):
            hdr = {"ice-bitrate": "64", "ice-public": "1"}
            hdr.update(headers or {})
            src = self.srv.source(mount, mp3(440 + 110 * i), rate=RATE, loop=True, headers=hdr)
            resp = src.connect()
            assert resp.status == 200, resp
            src.start()
            self.sources[mount] = src
        for src in self.sources.values():
            src.wait_sent(8192, 5)

    def url(self, path):
        return self.srv.url(path)

    def listen(self, mount, **kw):
        kw.setdefault("keep", 4096)
        lis = webuilib.Listener(self.srv.host, self.srv.port, mount, **kw)
        assert lis.open().status == 200
        self.listeners.append(lis)
        return lis

    def admin(self, path):
        return webuilib.admin_get(self.srv, path)

    def set_title(self, mount, song):
        status, body = self.admin("/admin/metadata?mode=updinfo&mount=%s&song=%s"
                                  % (q(mount), q(song)))
        assert status == 200 and b"<return>1</return>" in body, body

    def stats_listeners(self, mount):
        status, body = self.admin("/admin/stats?mount=" + q(mount))
        assert status == 200, body
        m = re.search(rb"<listeners>(\d+)</listeners>", body.split(b"<source", 1)[-1])
        return int(m.group(1)) if m else None

    def close(self):
        for lis in self.listeners:
            lis.close()
        for src in self.sources.values():
            src.stop()


def q(s):
    return urllib.parse.quote(s, safe="")


@pytest.fixture
def station(server):
    made = []

    def factory(mounts, **cfg):
        st = Station(server, mounts, **cfg)
        made.append(st)
        return st

    yield factory
    for st in made:
        st.close()


def shot(browser, name):
    """Keeps a screenshot when WEBUI_SHOTS names a directory."""
    d = os.environ.get("WEBUI_SHOTS")
    if d:
        os.makedirs(d, exist_ok=True)
        browser.screenshot(os.path.join(d, name + ".png"))


def card(browser, mount):
    found = [e for e in browser.find("li[data-mount]") if e.get_attribute("data-mount") == mount]
    if not found:
        raise webuilib.MissingElement("no card for %s in %s" % (mount, browser.html[:2000]))
    return found[0]


def field(el, name):
    from selenium.webdriver.common.by import By
    return el.find_element(By.CSS_SELECTOR, '[data-field="%s"]' % name).text.strip()


def reload_until_title(browser, url, mount, title, timeout=5.0):
    """Reloads a no-JS page until the mount's card shows title (stats settle quickly)."""
    deadline = time.monotonic() + timeout
    while True:
        browser.get(url)
        shown = field(card(browser, mount), "title")
        if shown == title or time.monotonic() > deadline:
            assert shown == title
            return
        time.sleep(0.2)


def wait_notice(browser, kind="ok", timeout=10.0):
    """Waits for the result page of an admin action (.notice.ok or .notice.bad)."""
    browser.wait(lambda: browser.find(".notice." + kind), timeout,
                 "a .notice.%s result page" % kind)


def settle(browser, timeout=10.0):
    """With JavaScript on, waits for the page script's first live refresh."""
    if browser.js:
        browser.wait(lambda: browser.js_run(
            "return document.documentElement.hasAttribute('data-updated')"), timeout,
            "the first live refresh")


def not_pwned(browser):
    assert browser.js_run("return typeof window.__pwned") == "undefined", "injected script ran"


# ---------------------------------------------------------------- public page

def test_status_page_without_js_shows_mount_title_and_listeners(station, browsers):
    st = station({"/live.mp3": {"ice-name": "Wire FM", "ice-description": "Tones all day",
                                "ice-genre": "Test", "ice-url": "https://example.org/fm"}})
    st.listen("/live.mp3")
    st.set_title("/live.mp3", "Sine Band - Four Forty")
    webuilib.wait_listeners(st.srv, "/live.mp3", 1)
    b = browsers(js=False)
    b.get(st.url("/status.xsl"))
    c = card(b, "/live.mp3")
    assert c.find_element("css selector", "h2").text == "Wire FM"
    assert "Tones all day" in c.text and "Test" in c.text and "64 kbit/s" in c.text
    assert field(c, "title") == "Sine Band - Four Forty"
    assert field(c, "listeners") == "1"
    audio = c.find_element("css selector", "audio")
    assert audio.get_attribute("preload") == "none"
    assert audio.get_attribute("controls") is not None
    assert audio.get_attribute("src") == st.url("/live.mp3")
    hrefs = [a.get_attribute("href") for a in c.find_elements("css selector", "a")]
    assert st.url("/live.mp3.m3u") in hrefs and st.url("/live.mp3") in hrefs
    assert "https://example.org/fm" in hrefs
    # a title change shows after a reload, without any script
    st.set_title("/live.mp3", "Second Song")
    reload_until_title(b, st.url("/status.xsl"), "/live.mp3", "Second Song")
    shot(b, "status-nojs")


def test_status_page_empty_and_server_version(station, server, browsers):
    srv = server(webroot=WEB, adminroot=ADMIN)
    b = browsers(js=False)
    b.get(srv.url("/status.xsl"))
    assert b.find(".empty") and not b.find("li[data-mount]")
    b.get(srv.url("/server_version.xsl"))
    assert b.text('[data-field="server_id"]').strip()


def test_status_json_is_valid_with_source_always_an_array(station):
    st = station({"/one.mp3": {"ice-name": HOSTILE}})
    st.set_title("/one.mp3", 'tab\there "quoted" \\ back <b>')
    doc = None

    def titled():
        nonlocal doc
        status, body = webuilib.admin_get(st.srv, "/status-json.xsl")
        assert status == 200
        doc = json.loads(body.decode("utf-8"))
        return all("title" in s for s in doc["icestats"]["source"])
    webuilib.wirelib.wait_until(titled, 5, "the title in status-json", interval=0.1)
    stats = doc["icestats"]
    for key in ("admin", "host", "location", "server_id", "server_start", "server_start_iso8601"):
        assert isinstance(stats[key], str), key
    assert isinstance(stats["source"], list) and len(stats["source"]) == 1
    src = stats["source"][0]
    assert src["server_name"] == HOSTILE
    assert src["title"] == 'tab\there "quoted" \\ back <b>'
    assert isinstance(src["listeners"], int) and isinstance(src["listener_peak"], int)
    assert src["listenurl"].endswith("/one.mp3")
    for hidden in ("source_ip", "user_agent", "public", "max_listeners", "total_bytes_read"):
        assert hidden not in src


def test_status_json_with_no_and_many_mounts(server, station):
    srv = server(webroot=WEB, adminroot=ADMIN)
    status, body = webuilib.admin_get(srv, "/status-json.xsl")
    assert status == 200 and json.loads(body)["icestats"]["source"] == []
    st = station({"/a.mp3": {}, "/b.mp3": {}})
    status, body = webuilib.admin_get(st.srv, "/status-json.xsl")
    mounts = sorted(s["listenurl"].rsplit("/", 1)[-1] for s in json.loads(body)["icestats"]["source"])
    assert mounts == ["a.mp3", "b.mp3"]


def test_player_loads_the_stream(station, browsers):
    st = station({"/live.mp3": {"ice-name": "Player Test"}})
    b = browsers(js=True)
    b.get(st.url("/status.xsl"))
    audio = card(b, "/live.mp3").find_element("css selector", "audio")
    assert b.js_run("return arguments[0].readyState", audio) == 0      # preload="none"
    b.js_run("arguments[0].muted = true; arguments[0].play().catch(function (e) {"
             " window.__playError = String(e); });", audio)
    b.wait(lambda: b.js_run("return arguments[0].readyState", audio) >= 2, 15,
           "the player to have decoded data")
    b.wait(lambda: b.js_run("return arguments[0].currentTime", audio) > 0.2, 15,
           "the player to advance")
    assert b.js_run("return arguments[0].error", audio) is None
    assert b.js_run("return arguments[0].networkState", audio) in (1, 2)   # IDLE or LOADING
    assert b.js_run("return window.__playError || null") is None
    assert b.js_run("return arguments[0].currentSrc", audio) == st.url("/live.mp3")
    webuilib.wait_listeners(st.srv, "/live.mp3", 1)                      # the browser is a listener
    b.js_run("arguments[0].pause(); arguments[0].removeAttribute('src'); arguments[0].load();", audio)
    webuilib.wait_listeners(st.srv, "/live.mp3", 0)


def spki_pin(pem):
    """Chromium's pin for a certificate: base64 of the SHA-256 of its public key (SPKI)."""
    pub = subprocess.run(["openssl", "x509", "-pubkey", "-noout", "-in", pem],
                         capture_output=True, check=True, timeout=30).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub,
                         capture_output=True, check=True, timeout=30).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def test_status_page_player_plays_over_https(station, browsers):
    """The status page opened over HTTPS (a certificate the browser is told to trust by its
    key, nothing else ignored) offers the stream at an https:// URL, the player decodes it
    over TLS, and live updates arrive over the same TLS port."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl tool")
    st = station({"/live.mp3": {"ice-name": "Secure Player"}}, tls=True)
    b = browsers(js=True, args=["--ignore-certificate-errors-spki-list=" + spki_pin(st.cert)])
    origin = "https://%s:%d" % (st.srv.host, st.srv.tls_port)
    b.get(origin + "/status.xsl")
    assert b.js_run("return window.isSecureContext") is True
    b.wait(lambda: card(b, "/live.mp3").find_element("css selector", "audio"), 10,
           "the player on the page")
    src = b.wait(lambda: card(b, "/live.mp3").find_element("css selector", "audio")
                 .get_attribute("src"), 10, "the player's stream URL")
    assert src == origin + "/live.mp3"
    audio = card(b, "/live.mp3").find_element("css selector", "audio")
    b.js_run("arguments[0].muted = true; arguments[0].play().catch(function (e) {"
             " window.__playError = String(e); });", audio)
    b.wait(lambda: b.js_run("return arguments[0].readyState",
                            card(b, "/live.mp3").find_element("css selector", "audio")) >= 2,
           15, "the player to have decoded data over HTTPS")
    b.wait(lambda: b.js_run("return arguments[0].currentTime",
                            card(b, "/live.mp3").find_element("css selector", "audio")) > 0.2,
           15, "the player to advance")
    audio = card(b, "/live.mp3").find_element("css selector", "audio")
    assert b.js_run("return arguments[0].error", audio) is None
    assert b.js_run("return window.__playError || null") is None
    assert b.js_run("return arguments[0].currentSrc", audio) == origin + "/live.mp3"
    webuilib.wait_listeners(st.srv, "/live.mp3", 1)
    # the page's live updates come over the TLS port too
    st.set_title("/live.mp3", "Over TLS")
    b.wait_text('li[data-mount] [data-field="title"]', "Over TLS", timeout=10)
    assert not [e for e in b.console_errors() if "live.mp3" not in e.get("message", "")]


def test_status_page_updates_title_and_listeners_live(station, browsers):
    st = station({"/live.mp3": {"ice-name": "Live Wire"}})
    st.set_title("/live.mp3", "First")
    b = browsers(js=True)
    b.get(st.url("/status.xsl"))
    b.wait(lambda: (field(card(b, "/live.mp3"), "title"), field(card(b, "/live.mp3"), "listeners"))
           == ("First", "0"), 5, "the first title and no listeners")
    st.set_title("/live.mp3", "Artist - Brand New Title")
    b.wait_text('li[data-mount] [data-field="title"]', "Artist - Brand New Title", timeout=10)
    st.listen("/live.mp3")
    st.listen("/live.mp3")
    b.wait_text('li[data-mount] [data-field="listeners"]', "2", timeout=10)
    assert not b.console_errors(), b.console_errors()
    shot(b, "status-live")


STATUS_INTERVAL = 4.0               # app.js polls the status every 4 s


def _shown_mounts(b):
    return [c.get_attribute("data-mount") for c in b.find("ul.mounts > li[data-mount]")]


def _on_air_line(b):
    return " ".join(b.text("section.intro p.lede").split())


def _start_source(st, mount, name):
    src = st.srv.source(mount, mp3(), rate=RATE, loop=True,
                        headers={"ice-public": "1", "ice-name": name, "ice-bitrate": "64"})
    assert src.connect().status == 200
    src.start()
    st.sources[mount] = src
    src.wait_sent(8192, 5)


def _stop_source(st, mount):
    st.sources.pop(mount).stop()
    webuilib.wirelib.wait_until(lambda: st.admin("/admin/stats?mount=" + q(mount))[0] == 400, 10,
                                "%s off the air" % mount)


def _no_banner(b):
    return not [e for e in b.find(".live-note") if e.is_displayed()]


def test_status_page_follows_mounts_that_come_and_go_without_a_reload(station, browsers):
    st = station({"/one.mp3": {"ice-name": "One"}, "/two.mp3": {"ice-name": "Two"}})
    b = browsers(js=True)
    b.get(st.url("/status.xsl"))
    settle(b)
    assert _shown_mounts(b) == ["/one.mp3", "/two.mp3"]
    assert _on_air_line(b).startswith("2 streams on air")
    b.js_run("window.__samePage = true")            # gone after a reload
    # the listener plays /one.mp3
    b.js_run("var a = document.querySelector('li[data-mount=\"/one.mp3\"] audio'); window.__audio = a;"
             " a.muted = true; a.play().catch(function (e) { window.__playError = String(e); });")
    played = lambda: b.js_run("return window.__audio.currentTime")        # noqa: E731
    b.wait(lambda: played() > 0.3, 15, "the player of /one.mp3 to play")

    # a mount that ends: its card goes and the count follows, within the update interval
    _stop_source(st, "/two.mp3")
    b.wait(lambda: _shown_mounts(b) == ["/one.mp3"], STATUS_INTERVAL + 2, "the card of /two.mp3 gone")
    b.wait(lambda: _on_air_line(b).startswith("1 stream on air"), 2, "the count at 1")
    # a new one appears likewise, in the server's order, a whole card with its player
    _start_source(st, "/three.mp3", "Three")
    b.wait(lambda: _shown_mounts(b) == ["/one.mp3", "/three.mp3"], STATUS_INTERVAL + 2,
           "a card for /three.mp3")
    b.wait(lambda: _on_air_line(b).startswith("2 streams on air"), 2, "the count at 2")
    three = card(b, "/three.mp3")
    assert three.find_element("css selector", "h2").text == "Three"
    assert three.find_element("css selector", "audio").get_attribute("src") == st.url("/three.mp3")
    ids = b.js_run("return Array.prototype.map.call(document.querySelectorAll('[id]'),"
                   " function (e) { return e.id; })")
    assert len(ids) == len(set(ids)), ids
    # all along the same page, no banner, and the player kept playing
    assert b.js_run("return window.__samePage === true")
    assert _no_banner(b)
    assert b.js_run("return window.__audio.isConnected && !window.__audio.paused")
    t = played()
    b.wait(lambda: played() > t + 0.5, 10, "the player of /one.mp3 still advancing")

    # the mount being played ends: its card stays and says so; the count follows
    _stop_source(st, "/one.mp3")
    b.wait(lambda: "ended" in card(b, "/one.mp3").text, STATUS_INTERVAL + 2,
           "the card being played saying its stream ended")
    b.wait(lambda: _on_air_line(b).startswith("1 stream on air"), 2, "the count at 1")
    assert _shown_mounts(b) == ["/one.mp3", "/three.mp3"]
    assert b.js_run("return window.__samePage === true") and _no_banner(b)
    assert b.js_run("return window.__playError || null") is None
    assert not [e for e in b.console_errors() if ".mp3" not in e.get("message", "")]
    shot(b, "status-ended")
    # once the listener stops it, the ended card goes too
    b.js_run("window.__audio.pause()")
    b.wait(lambda: _shown_mounts(b) == ["/three.mp3"], STATUS_INTERVAL + 2, "the ended card gone")
    # from the last mount to none, and back
    _stop_source(st, "/three.mp3")
    b.wait(lambda: b.find("main p.empty") and not _shown_mounts(b), STATUS_INTERVAL + 2,
           "the page saying nothing is on air")
    assert _on_air_line(b).startswith("0 streams on air")
    _start_source(st, "/four.mp3", "Four")
    b.wait(lambda: _shown_mounts(b) == ["/four.mp3"] and not b.find("main p.empty"),
           STATUS_INTERVAL + 2, "a card for /four.mp3")
    assert _on_air_line(b).startswith("1 stream on air")
    assert b.js_run("return window.__samePage === true") and _no_banner(b)


def test_hostile_strings_are_text_on_the_status_page(station, browsers):
    st = station({"/evil.mp3": {"ice-name": HOSTILE, "ice-description": HOSTILE, "ice-genre": HOSTILE,
                                "ice-url": "javascript:window.__pwned=3"}})
    st.set_title("/evil.mp3", HOSTILE)
    b = browsers(js=True)
    reload_until_title(b, st.url("/status.xsl"), "/evil.mp3", HOSTILE.strip())
    c = card(b, "/evil.mp3")
    assert c.find_element("css selector", "h2").text == HOSTILE.strip()
    assert field(c, "title") == HOSTILE.strip()
    assert not b.find("img[src='x']")
    assert all(not (a.get_attribute("href") or "").startswith("javascript:") for a in b.find("a"))
    time.sleep(0.5)
    not_pwned(b)


@pytest.mark.rimecast_only
def test_hostile_strings_are_text_on_admin_pages(station, browsers):
    st = station({"/evil.mp3": {"ice-name": HOSTILE, "ice-description": HOSTILE, "ice-genre": HOSTILE}})
    st.set_title("/evil.mp3", HOSTILE)
    st.listen("/evil.mp3", headers={"User-Agent": HOSTILE})
    b = browsers(js=True, auth=AUTH)
    for page in ("/admin/stats.xsl", "/admin/listclients.xsl?mount=/evil.mp3",
                 "/admin/listmounts.xsl", "/admin/killclient.xsl?mount=/evil.mp3&id=999999"):
        b.get(st.url(page))
        assert not b.find("img[src='x']"), page
        time.sleep(0.3)
        not_pwned(b)
    b.get(st.url("/admin/listclients.xsl?mount=/evil.mp3"))
    b.wait(lambda: HOSTILE.strip() in [e.text for e in b.find("td.ua")], what="the agent as text")
    b.get(st.url("/admin/stats.xsl"))
    b.wait(lambda: card(b, "/evil.mp3").find_element("css selector", "h3").text
           == HOSTILE.strip(), what="the hostile name as text")
    b.wait(lambda: field(card(b, "/evil.mp3"), "title") == HOSTILE.strip(),
           what="the hostile title as text")


# ---------------------------------------------------------------- admin pages

@pytest.mark.rimecast_only
def test_admin_overview_renders_with_credentials(station, browsers):
    st = station({"/live.mp3": {"ice-name": "Overview FM"}, "/other.mp3": {}})
    st.listen("/live.mp3")
    st.set_title("/live.mp3", "Shown In Admin")
    webuilib.wait_listeners(st.srv, "/live.mp3", 1)
    anon = browsers(js=False)
    anon.get(st.url("/admin/stats.xsl"))
    assert not anon.find("li[data-mount]")               # 401: no data without credentials
    b = browsers(js=False, auth=AUTH)
    b.get(st.url("/admin/stats.xsl"))
    c = card(b, "/live.mp3")
    assert "Overview FM" in c.text
    assert field(c, "listeners") == "1"
    assert field(c, "title") == "Shown In Admin"
    assert field(c, "source_ip") == "127.0.0.1"
    assert "audio/mpeg" in c.text and "64 kbit/s" in c.text
    links = [a.get_attribute("href") for a in c.find_elements("css selector", "a")]
    assert st.url("/admin/listclients.xsl?mount=/live.mp3") in links
    assert st.url("/admin/updatemetadata.xsl?mount=/live.mp3") in links
    assert b.text('[data-live="stats"] [data-field="sources"]') == "2"
    card(b, "/other.mp3")
    b.get(st.url("/admin/listmounts.xsl"))
    assert {r.get_attribute("data-mount") for r in b.find("tr[data-mount]")} == {"/live.mp3", "/other.mp3"}


@pytest.mark.rimecast_only
def test_admin_overview_updates_live_from_events(station, browsers):
    st = station({"/live.mp3": {"ice-name": "Events FM"}})
    b = browsers(js=True, auth=AUTH)
    b.get(st.url("/admin/stats.xsl"))
    b.wait(lambda: b.one(".conn").get_attribute("data-state") == "live", 10, "the event stream to open")
    b.wait(lambda: field(card(b, "/live.mp3"), "listeners") == "0", 5, "no listeners")
    st.listen("/live.mp3")
    b.wait_text('li[data-mount] [data-field="listeners"]', "1", timeout=5)
    b.wait_text('[data-live="stats"] [data-field="listeners"]', "1", timeout=5)
    st.set_title("/live.mp3", "Pushed By Events")
    b.wait_text('li[data-mount] [data-field="title"]', "Pushed By Events", timeout=5)
    assert not b.console_errors(), b.console_errors()
    shot(b, "admin-live")


@pytest.mark.rimecast_only
def test_admin_mount_details_page_stays_live_without_a_reload_note(station, browsers):
    st = station({"/one.mp3": {"ice-name": "One"}, "/two.mp3": {"ice-name": "Two"}})
    b = browsers(js=True, auth=AUTH)
    b.get(st.url("/admin/stats.xsl?mount=/one.mp3"))
    settle(b)
    st.listen("/one.mp3")
    b.wait_text('li[data-mount] [data-field="listeners"]', "1", timeout=5)
    time.sleep(0.5)                                       # a refresh or two more
    assert b.js_run("return document.querySelector('.live-note').hidden"), b.text(".live-note")
    assert len(b.find("li[data-mount]")) == 1
    assert not b.console_errors(), b.console_errors()


def _with_userinfo(url):
    return url.replace("http://", "http://%s:%s@" % (ADMIN_USER, ADMIN_PASSWORD), 1)


@pytest.mark.rimecast_only
def test_admin_page_opened_with_credentials_in_the_url_updates_live(station, browsers):
    st = station({"/live.mp3": {"ice-name": "Userinfo FM"}})
    b = browsers(js=True)                                 # no Authorization header: only the URL's
    b.get(_with_userinfo(st.url("/admin/stats.xsl")))
    settle(b)
    b.wait(lambda: b.one(".conn").get_attribute("data-state") == "live", 10, "the event stream to open")
    st.listen("/live.mp3")
    b.wait_text('li[data-mount] [data-field="listeners"]', "1", timeout=5)
    st.set_title("/live.mp3", "Seen Through Userinfo")
    b.wait_text('li[data-mount] [data-field="title"]', "Seen Through Userinfo", timeout=5)
    assert not b.console_errors(), b.console_errors()


@pytest.mark.rimecast_only
def test_admin_page_shows_why_live_updates_fail_and_recovers(station, browsers):
    st = station({"/live.mp3": {}})
    b = browsers(js=True, auth=AUTH)
    b.get(st.url("/admin/stats.xsl"))
    settle(b)
    # The stats fetches start failing (as they would behind a proxy that lost the session).
    b.js_run("""window.__realFetch = window.fetch;
        window.fetch = function () { return Promise.reject(new TypeError('simulated outage')); };
        window.rimecastAdmin.refresh();""")
    b.wait(lambda: b.one(".conn").get_attribute("data-state") == "error", 5, "the error state")
    assert "Live updates unavailable: simulated outage" in b.text(".conn")
    shot(b, "admin-live-error")
    b.js_run("window.fetch = window.__realFetch;")
    st.listen("/live.mp3")                                # retried with backoff, no event needed
    b.wait_text('li[data-mount] [data-field="listeners"]', "1", timeout=10)
    b.wait(lambda: b.one(".conn").get_attribute("data-state") == "live", 10, "back to live")


def _raw_source(srv, mount, bitrate, name, data):
    """A source over a plain socket: the request, the answer, a few KB; the socket stays open."""
    sock = socket.create_connection((srv.host, srv.port), timeout=10)
    sock.sendall(("SOURCE %s HTTP/1.0\r\nAuthorization: %s\r\nContent-Type: audio/mpeg\r\n"
                  "ice-name: %s\r\nice-bitrate: %d\r\nice-public: 0\r\n\r\n"
                  % (mount, webuilib.wirelib.basic_auth("source", conftest.SOURCE_PASSWORD),
                     name, bitrate)).encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(1024)
        assert chunk, "source %s refused: %r" % (mount, answer)
        answer += chunk
    assert answer.split(b" ", 2)[1] == b"200", answer
    sock.sendall(data)
    return sock


def _table_mounts(b):
    return [r.get_attribute("data-mount") for r in b.find("table[data-mount-table] tbody tr")]


@pytest.mark.rimecast_only
def test_admin_mount_table_with_200_live_mounts_sorts_and_stays_live(server, browsers):
    srv = server(webroot=WEB, adminroot=ADMIN, sources=210, clients=600, source_timeout=120)
    audio = mp3()[:4096]
    socks = []
    try:
        for i in range(200):
            socks.append(_raw_source(srv, "/m%03d.mp3" % i, (32, 64, 128, 256)[i % 4], "Station %03d" % i, audio))
        listeners = [webuilib.Listener(srv.host, srv.port, m, keep=1024) for m in
                     ["/m150.mp3"] * 3 + ["/m010.mp3"] * 2]
        for lis in listeners:
            assert lis.open().status == 200
        webuilib.wait_listeners(srv, "/m150.mp3", 3)
        b = browsers(js=True, auth=AUTH)
        t0 = time.monotonic()
        b.get(srv.url("/admin/stats.xsl"))
        settle(b, timeout=15)
        load = time.monotonic() - t0
        assert len(_table_mounts(b)) == 200
        assert load < 10.0, "the overview with 200 mounts took %.1f s" % load
        b.wait_click('.view-switch [data-view="table"]')
        assert b.one("table[data-mount-table]").is_displayed()
        assert not b.one("ul.admin-mounts").is_displayed()
        assert _table_mounts(b)[:2] == ["/m000.mp3", "/m001.mp3"]          # by name
        b.wait_click('th[data-sort="listeners"] button')
        assert _table_mounts(b)[:2] == ["/m150.mp3", "/m010.mp3"]
        assert b.one('th[data-sort="listeners"]').get_attribute("aria-sort") == "descending"
        b.wait_click('th[data-sort="bitrate"] button')
        top = b.find("table[data-mount-table] tbody tr")[:50]
        assert all(r.get_attribute("data-bitrate") == "256" for r in top)
        b.wait_click('th[data-sort="bitrate"] button')                      # reversed
        assert b.find("table[data-mount-table] tbody tr")[0].get_attribute("data-bitrate") == "32"
        b.wait_click('th[data-sort="name"] button')
        assert _table_mounts(b)[0] == "/m000.mp3"
        b.wait_click('th[data-sort="name"] button')
        assert _table_mounts(b)[0] == "/m199.mp3"
        b.wait_click('th[data-sort="uptime"] button')                       # longest first
        assert _table_mounts(b)[0] == "/m000.mp3"
        # Live: listeners arriving on another mount move it to the top of the listener sort.
        b.wait_click('th[data-sort="listeners"] button')
        more = [webuilib.Listener(srv.host, srv.port, "/m199.mp3", keep=1024) for _ in range(4)]
        for lis in more:
            assert lis.open().status == 200
        listeners += more
        b.wait(lambda: _table_mounts(b)[0] == "/m199.mp3", 10, "/m199.mp3 on top with 4 listeners")
        row = b.find("table[data-mount-table] tbody tr")[0]
        assert row.find_element("css selector", '[data-field="listeners"]').text == "4"
        shot(b, "admin-mount-table")
        for lis in listeners:
            lis.close()
    finally:
        for sock in socks:
            sock.close()


def _kick_test(st, b):
    keep = st.listen("/live.mp3", headers={"User-Agent": "keeper/1"})
    victim = st.listen("/live.mp3", headers={"User-Agent": "victim/1"})
    webuilib.wait_listeners(st.srv, "/live.mp3", 2)
    b.get(st.url("/admin/listclients.xsl?mount=/live.mp3"))
    settle(b)
    b.wait_rows("tr[data-id]", 2)
    b.wait_click("tr[data-id]", text="victim/1", inner="form.kick button")   # the rows may be rebuilt
    victim.wait_closed(5)
    assert victim.close_reason == "eof"
    webuilib.wait_listeners(st.srv, "/live.mp3", 1)
    assert not keep.closed
    return keep


@pytest.mark.rimecast_only
def test_admin_kick_listener_without_js(station, browsers):
    st = station({"/live.mp3": {}})
    b = browsers(js=False, auth=AUTH)
    _kick_test(st, b)
    wait_notice(b)
    assert "removed" in b.text("#response-message")


@pytest.mark.rimecast_only
def test_admin_kick_listener_with_js_updates_the_table(station, browsers):
    st = station({"/live.mp3": {}})
    b = browsers(js=True, auth=AUTH)
    _kick_test(st, b)
    assert b.driver.current_url.endswith("/admin/listclients.xsl?mount=/live.mp3")   # stayed
    b.wait_text('[data-field="client-count"]', "1", timeout=5)
    b.wait_rows("tr[data-id]", 1, timeout=5)                    # the kicked row went
    st.listen("/live.mp3", headers={"User-Agent": "newcomer/1"})
    b.wait(lambda: any("newcomer/1" in r.text for r in b.find("tr[data-id]")), 5, "the new listener's row")
    shot(b, "admin-listclients")


@pytest.mark.rimecast_only
def test_admin_metadata_form_sets_the_title(station, browsers):
    st = station({"/live.mp3": {}})
    b = browsers(js=False, auth=AUTH)
    b.get(st.url("/admin/updatemetadata.xsl?mount=/live.mp3"))
    b.one("#song").send_keys("Form Artist - Form <Title> & \"more\"")
    b.one("#metadata-form button").click()
    wait_notice(b)
    reload_until_title(b, st.url("/status.xsl"), "/live.mp3", 'Form Artist - Form <Title> & "more"')


def _login_status(st, user, password, mount="/secret.mp3"):
    """The status a listener logging in to mount as user gets."""
    lis = webuilib.Listener(st.srv.host, st.srv.port, mount, keep=4096, headers={
        "Authorization": webuilib.wirelib.basic_auth(user, password)})
    resp = lis.open()
    lis.close()
    return resp.status if resp else None


def _users_listed(b):
    return [td.text for td in b.find("tbody td.mono")]


@pytest.mark.rimecast_only
def test_admin_users_page_adds_and_deletes_listener_logins(station, browsers):
    d = tempfile.mkdtemp(prefix="wire-users-")
    try:
        os.chmod(d, 0o777)  # the server (nobody) writes its new file beside the old one
        users = os.path.join(d, "users")
        with open(users, "w") as f:
            f.write("keeper:%s\n" % hashlib.md5(b"kpw").hexdigest())
        os.chmod(users, 0o666)
        protected = ('<mount type="normal"><mount-name>/secret.mp3</mount-name>'
                     '<authentication type="htpasswd"><option name="filename" value="%s"/>'
                     '</authentication></mount>' % users)
        st = station({"/secret.mp3": {}, "/open.mp3": {}}, extra_xml=protected)
        b = browsers(js=True, auth=AUTH)
        b.get(st.url("/admin/stats.xsl"))
        settle(b)
        # the Users tab is on the protected mount's card only
        assert "Users" not in [a.text for a in card(b, "/open.mp3").find_elements(
            "css selector", "ul.tabs a")]
        b.wait_click('li[data-mount="/secret.mp3"] ul.tabs a', text="Users")
        b.wait(lambda: "/admin/manageauth.xsl?mount=/secret.mp3" in b.driver.current_url, 10,
               "the users page")
        assert _users_listed(b) == ["keeper"]
        assert _login_status(st, "newbie", "n3w&pw") == 401
        # add through the form
        b.one("#username").send_keys("newbie")
        b.one("#password").send_keys("n3w&pw")
        b.wait_click("section.panel form button", text="Add user")
        b.wait_text("p.notice", "User added")
        b.wait(lambda: _users_listed(b) == ["keeper", "newbie"], 10, "newbie in the list")
        assert _login_status(st, "newbie", "n3w&pw") == 200
        assert _login_status(st, "newbie", "wrong") == 401
        # delete with the row's button
        b.wait_click("tbody tr", text="newbie", inner="form.delete-user button")
        b.wait_text("p.notice", "User deleted")
        b.wait(lambda: _users_listed(b) == ["keeper"], 10, "newbie gone from the list")
        assert _login_status(st, "newbie", "n3w&pw") == 401
        assert _login_status(st, "keeper", "kpw") == 200
        # the page's own form did it: no listener kick was tried on the way
        assert "/admin/killclient" not in st.srv.access_log()
        assert not b.console_errors(), b.console_errors()
        shot(b, "admin-users")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.rimecast_only
def test_admin_move_listeners_keeps_them_connected(station, browsers):
    st = station({"/a.mp3": {}, "/b.mp3": {}})
    lis = st.listen("/a.mp3")
    webuilib.wait_listeners(st.srv, "/a.mp3", 1)
    b = browsers(js=False, auth=AUTH)
    b.get(st.url("/admin/moveclients.xsl?mount=/a.mp3"))
    rows = [r for r in b.find("tr[data-mount]") if r.get_attribute("data-mount") == "/b.mp3"]
    assert len(rows) == 1 and not [r for r in b.find("tr[data-mount]")
                                   if r.get_attribute("data-mount") == "/a.mp3"]
    rows[0].find_element("css selector", "button").click()
    wait_notice(b)
    webuilib.wait_listeners(st.srv, "/b.mp3", 1)
    assert st.stats_listeners("/a.mp3") == 0
    before = lis.received
    lis.wait_bytes(before + 4000, 5)
    assert not lis.closed


@pytest.mark.rimecast_only
def test_admin_kill_source_asks_first(station, browsers):
    st = station({"/doomed.mp3": {}})
    b = browsers(js=False, auth=AUTH)
    b.get(st.url("/admin/stats.xsl"))
    c = card(b, "/doomed.mp3")
    button = c.find_element("css selector", "form.kill-source button")
    assert not b.js_run("return arguments[0].checkVisibility()", button)   # behind <details>
    c.find_element("css selector", "details.danger summary").click()
    button.click()
    wait_notice(b)
    src = st.sources["/doomed.mp3"]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and st.admin("/admin/stats?mount=/doomed.mp3")[0] == 200:
        time.sleep(0.1)
    assert st.admin("/admin/stats?mount=/doomed.mp3")[0] == 400
    src.stop()


@pytest.mark.rimecast_only
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_pages_render_in_both_colour_schemes(station, browsers, dark):
    st = station({"/live.mp3": {"ice-name": "Scheme FM"}})
    b = browsers(js=True, dark=dark, auth=AUTH)
    for page in ("/status.xsl", "/admin/stats.xsl"):
        b.get(st.url(page))
        bg = b.js_run("return getComputedStyle(document.body).backgroundColor")
        rgb = [int(x) for x in re.findall(r"\d+", bg)[:3]]
        assert (sum(rgb) / 3 < 80) == dark, (page, bg)
        assert not b.console_errors(), b.console_errors()
        shot(b, "%s-%s" % (page.strip("/").replace("/", "-").replace(".xsl", ""),
                           "dark" if dark else "light"))


@pytest.mark.rimecast_only
def test_admin_history_command_has_the_listener_count_of_its_samples(station):
    st = station({"/h.mp3": {}})
    st.listen("/h.mp3")
    st.listen("/h.mp3")
    webuilib.wait_listeners(st.srv, "/h.mp3", 2)

    def sampled():                     # the timer samples every 10 s
        status, body = st.admin("/admin/history?mount=/h.mp3")
        assert status == 200, body
        return b"<listeners>2</listeners>" in body and body
    body = webuilib.wirelib.wait_until(sampled, 25, "a history sample with 2 listeners", interval=0.5)
    assert b'<history mount="/h.mp3">' in body
    assert b'<range name="hour" step="10">' in body and b'<range name="day" step="300"' in body
    status, body = st.admin("/admin/history.json?mount=/h.mp3")
    assert status == 200
    doc = json.loads(body)
    hour = [r for r in doc["history"]["range"] if r["name"] == "hour"][0]
    samples = hour["sample"] if isinstance(hour["sample"], list) else [hour["sample"]]
    assert any(s["listeners"] == 2 for s in samples)
    status, body = st.admin("/admin/history")                 # the server's series
    assert status == 200 and b'<history mount="">' in body
    assert re.search(rb"<listeners>[2-9]</listeners>", body), body


def _failed_login(srv, user):
    """A request with a wrong password: the error log gets a line naming the user tried."""
    raw = ("GET /admin/stats HTTP/1.0\r\nHost: x\r\nAuthorization: %s\r\n\r\n"
           % webuilib.wirelib.basic_auth(user, "wrong")).encode()
    resp, _ = webuilib.wirelib.simple_request(srv.host, srv.port, raw, 5.0)
    assert resp.status == 401


@pytest.mark.rimecast_only
def test_admin_log_page_shows_recent_lines_as_text(station, browsers):
    st = station({"/live.mp3": {}})
    _failed_login(st.srv, HOSTILE)
    b = browsers(js=True, auth=AUTH)
    b.get(st.url("/admin/stats.xsl"))
    b.wait_click("header.site nav a", text="Log")
    b.wait(lambda: "/admin/log.xsl" in b.driver.current_url, 10, "the log page")
    assert b.one('header.site nav a[aria-current="page"]').text == "Log"
    hostile = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'

    def shown():
        return [e.text for e in b.find("tr.log-line td.text") if hostile in e.text]
    b.wait(shown, 5, "the failed login line, as text")
    rows = b.find("tr.log-line")
    assert 0 < len(rows) <= 200
    first = b.one("tr.log-line")                       # newest first: the failed login is near the top
    assert first.get_attribute("data-level") in ("error", "warn", "info", "debug")
    assert not b.find("img[src='x']")
    time.sleep(0.3)
    not_pwned(b)
    assert not b.console_errors(), b.console_errors()
    shot(b, "admin-log")


@pytest.mark.rimecast_only
def test_admin_mount_details_page_is_titled_with_the_mount_and_shows_its_figures(station, browsers):
    odd = "/it's-odd.mp3"                               # a quote reaches the stylesheet parameter
    st = station({"/one.mp3": {"ice-name": "One FM"}, odd: {}})
    st.listen("/one.mp3")
    st.listen("/one.mp3")
    st.listen(odd)
    webuilib.wait_listeners(st.srv, "/one.mp3", 2)
    webuilib.wait_listeners(st.srv, odd, 1)
    b = browsers(js=True, auth=AUTH)
    b.get(st.url("/admin/stats.xsl?mount=/one.mp3"))
    assert b.text("main h1") == "/one.mp3"
    assert b.title.startswith("/one.mp3")
    assert "One FM" in b.text("p.lede")
    assert not b.find('[data-live="stats"]')              # no server totals
    assert not b.find("table.mount-table")
    b.wait(lambda: b.text('.mount-totals [data-field="listeners"]') == "2", 5, "its own listeners")
    st.listen("/one.mp3")
    b.wait(lambda: b.text('.mount-totals [data-field="listeners"]') == "3", 10, "live: 3 listeners")
    shot(b, "admin-mount-details")
    b.get(st.url("/admin/stats.xsl?mount=" + q(odd)))
    assert b.text("main h1") == odd
    b.wait(lambda: b.text('.mount-totals [data-field="listeners"]') == "1", 5, "its own listeners")
    b.get(st.url("/admin/stats.xsl"))
    assert b.text("main h1") == "Overview"
    assert b.text('[data-live="stats"] [data-field="listeners"]') == "4"
    assert not b.console_errors(), b.console_errors()


def _hour_samples(st, mount=None):
    status, body = st.admin("/admin/history.json" + ("?mount=" + q(mount) if mount else ""))
    assert status == 200, body
    hour = [r for r in json.loads(body)["history"]["range"] if r["name"] == "hour"][0]
    return hour.get("sample", [])


def _chart_points(b, key):
    return int(b.one('[data-chart="%s"] svg' % key).get_attribute("data-points") or -1)


def _chart_runs(b, key):
    """The chart's line as its subpaths, each a list of (x, y): one per run of samples
    (a lone sample is a dot, not part of the line)."""
    lines = b.find('[data-chart="%s"] svg path.line' % key)
    d = lines[0].get_attribute("d") if lines else ""
    return [[(float(x), float(y)) for x, y in re.findall(r"([\d.]+),([\d.]+)", part)]
            for part in d.split("M")[1:]]


def _chart_span(b, key):
    """(start, length) of the chart's time axis, in server seconds."""
    svg = b.one('[data-chart="%s"] svg' % key)
    start, end = int(svg.get_attribute("data-start")), int(svg.get_attribute("data-end"))
    return start, end - start


def _chart_x(t, start):
    return 3 + 294 * (t - start) / 3600          # the SVG is 300 wide, 3 of padding each side


@pytest.mark.rimecast_only
def test_admin_history_charts_draw_the_samples_and_refresh(station, browsers):
    st = station({"/h.mp3": {}})
    st.listen("/h.mp3")
    st.listen("/h.mp3")
    webuilib.wait_listeners(st.srv, "/h.mp3", 2)

    def two_samples():                 # the server samples every 10 s
        s = _hour_samples(st, "/h.mp3")
        return len(s) >= 2 and s[-1]["listeners"] == 2 and s
    webuilib.wirelib.wait_until(two_samples, 30, "two history samples, the last with 2 listeners",
                                interval=0.5)
    b = browsers(js=True, auth=AUTH)
    before = len(_hour_samples(st, "/h.mp3"))
    b.get(st.url("/admin/stats.xsl?mount=/h.mp3"))
    b.wait(lambda: b.find('[data-history="/h.mp3"][data-history-updated]'), 10, "the charts drawn")
    after = len(_hour_samples(st, "/h.mp3"))
    points = _chart_points(b, "listeners")
    assert before <= points <= after, (before, points, after)
    assert _chart_points(b, "bytes_per_s") == points
    runs = _chart_runs(b, "listeners")
    assert len(runs) == 1 and len(runs[0]) == points, runs        # one line through every sample
    assert _chart_span(b, "listeners")[1] == 3600
    assert b.text('[data-chart="listeners"] [data-chart-now]') == "2"
    assert "kbit/s" in b.text('[data-chart="bytes_per_s"] [data-chart-now]')
    shot(b, "admin-history-mount")
    # the server's charts on the overview, redrawn without a reload when a sample comes
    b.get(st.url("/admin/stats.xsl"))
    b.wait(lambda: b.find('[data-history=""][data-history-updated]'), 10, "the server's charts")
    first = _chart_points(b, "listeners")
    assert first >= 2
    b.wait(lambda: _chart_points(b, "listeners") > first, 25, "a new point within 10 s or so")
    assert not b.console_errors(), b.console_errors()
    shot(b, "admin-history-server")


@pytest.mark.rimecast_only
def test_admin_history_chart_spans_the_hour_and_leaves_a_time_off_air_blank(station, browsers):
    st = station({"/g.mp3": {}})
    st.listen("/g.mp3")
    wait = webuilib.wirelib.wait_until
    before = wait(lambda: len(_hour_samples(st, "/g.mp3")) >= 2 and _hour_samples(st, "/g.mp3"),
                  30, "two samples of /g.mp3 on the air")
    # off the air for two samples of the server (20 s or more), then back
    st.sources.pop("/g.mp3").stop()
    wait(lambda: st.admin("/admin/stats?mount=/g.mp3")[0] == 400, 10, "/g.mp3 gone")
    last_on = _hour_samples(st, "/g.mp3")[-1]["time"]
    wait(lambda: len([s for s in _hour_samples(st) if s["time"] > last_on]) >= 2, 30,
         "two samples of the server while /g.mp3 is off the air")
    src = st.srv.source("/g.mp3", mp3(), rate=RATE, loop=True, headers={"ice-public": "1"})
    assert src.connect().status == 200
    src.start()
    st.sources["/g.mp3"] = src
    st.listen("/g.mp3")
    st.listen("/g.mp3")
    after = wait(lambda: [s for s in _hour_samples(st, "/g.mp3") if s["time"] > last_on][1:] and
                 [s for s in _hour_samples(st, "/g.mp3") if s["time"] > last_on], 30,
                 "two samples of /g.mp3 back on the air")
    back_on = after[0]["time"]
    assert back_on - last_on >= 20
    b = browsers(js=True, auth=AUTH)
    b.get(st.url("/admin/stats.xsl?mount=/g.mp3"))
    b.wait(lambda: b.find('[data-history="/g.mp3"][data-history-updated]'), 10, "the charts drawn")
    # the axis is the whole hour, ending at the server's now
    start, span = _chart_span(b, "listeners")
    assert span == 3600
    assert abs(start + span - time.time()) < 15
    # two runs of samples with nothing drawn between them; each point where its time says
    runs = _chart_runs(b, "listeners")
    assert len(runs) == 2, runs
    gap = (_chart_x(last_on, start), _chart_x(back_on, start))
    assert runs[0][-1][0] <= gap[0] + 0.1 and runs[1][0][0] >= gap[1] - 0.1, (runs, gap)
    assert abs(runs[0][0][0] - _chart_x(before[0]["time"], start)) < 0.2, (runs, before)
    assert runs[0][0][0] > 270          # the samples are of the last minutes: at the right end
    assert b.one('[data-chart="listeners"] svg').get_attribute("data-gaps") == "1"
    for run in _chart_runs(b, "bytes_per_s"):   # no bandwidth line across the gap either
        assert run[-1][0] <= gap[0] + 0.1 or run[0][0] >= gap[1] - 0.1, (run, gap)
    assert "gap" in b.one('[data-chart="listeners"] svg').get_attribute("aria-label")
    assert not b.console_errors(), b.console_errors()
    shot(b, "admin-history-gap")


def _bad_source_login(srv, mount, user="source"):
    """A source login with a wrong password (the server logs it); returns the status code."""
    sock = socket.create_connection((srv.host, srv.port), timeout=10)
    try:
        sock.sendall(("SOURCE %s HTTP/1.0\r\nAuthorization: %s\r\nContent-Type: audio/mpeg\r\n\r\n"
                      % (mount, webuilib.wirelib.basic_auth(user, "wrong"))).encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(1024)
            if not chunk:
                break
            answer += chunk
        return int(answer.split(b" ", 2)[1])
    finally:
        sock.close()


def _log_texts(b):
    return [e.text for e in b.find("tbody[data-log-lines] td.text")]


@pytest.mark.rimecast_only
def test_admin_log_shows_new_lines_live_as_text(station, browsers):
    st = station({"/live.mp3": {}})
    b = browsers(js=True, auth=AUTH)
    b.get(st.url("/admin/log.xsl"))
    settle(b)
    b.wait(lambda: b.one(".conn").get_attribute("data-state") == "poll", 5, "polling")
    assert b.text(".conn") == "Refreshing every 2 s"
    count = int(b.text('[data-field="log-count"]'))
    assert count == len(_log_texts(b))
    b.js_run("document.documentElement.setAttribute('data-marker', '1')")   # gone on a reload

    # a hostile user name in a failed source login: shown as text, run never
    assert _bad_source_login(st.srv, "/live.mp3", user=HOSTILE) == 401
    b.wait(lambda: any("failed login" in t and "<script>window.__pwned=1</script>" in t
                       for t in _log_texts(b)), 10, "the failed login line, as text")
    assert "failed login" in _log_texts(b)[0]                           # newest first
    assert not b.find("img[src='x']")
    not_pwned(b)
    assert b.js_run("return document.documentElement.getAttribute('data-marker')") == "1"

    # a failing fetch is shown, and the page recovers with the lines logged meanwhile
    b.js_run("""window.__realFetch = window.fetch;
        window.fetch = function () { return Promise.reject(new TypeError('simulated outage')); };
        window.rimecastAdmin.refresh();""")
    b.wait(lambda: b.one(".conn").get_attribute("data-state") == "error", 5, "the error state")
    assert "Live updates unavailable: simulated outage" in b.text(".conn")
    assert _bad_source_login(st.srv, "/during-outage.mp3") == 401
    b.js_run("window.fetch = window.__realFetch;")
    b.wait(lambda: any("/during-outage.mp3" in t for t in _log_texts(b)), 10,
           "the line logged during the outage")
    b.wait(lambda: b.one(".conn").get_attribute("data-state") == "poll", 10, "polling again")
    b.wait(lambda: int(b.text('[data-field="log-count"]')) == len(_log_texts(b)), 5,
           "the count matching the rows")
    not_pwned(b)
    assert not b.console_errors(), b.console_errors()
