# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the web UI tests: a headless Chromium driven through selenium,
and real audio to stream (made with ffmpeg) so the browser's player can decode it.

Owns: finding chromium/chromedriver, starting and stopping the browser (with
JavaScript on or off, light or dark colour scheme, optional HTTP basic auth sent
on every request), screenshots, and waiting for page conditions. Does not start
servers or sources (see conftest.py and wirelib.py).
"""

import base64
import os
import shutil
import subprocess
import tempfile
import time

import wirelib

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_CANDIDATES = ("chromedriver",)


def _which(names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def missing_requirements():
    """None when the browser tests can run, else the reason they cannot."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "python selenium is not installed (Debian: python3-selenium)"
    if not _which(CHROMIUM_CANDIDATES):
        return "chromium is not installed"
    if not _which(DRIVER_CANDIDATES):
        return "chromedriver is not installed (Debian: chromium-driver)"
    return None


class Browser:
    """One headless Chromium. js=False turns JavaScript off; dark=True asks pages
    for prefers-color-scheme: dark; auth=(user, password) adds an Authorization
    header to every request the page makes (including fetch and EventSource); args are
    more command-line switches (e.g. a certificate pin for an HTTPS test)."""

    def __init__(self, js=True, dark=False, auth=None, width=1280, height=900, args=()):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="wire-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = _which(CHROMIUM_CANDIDATES)
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--no-default-browser-check", "--mute-audio",
                    "--disable-extensions", "--disable-background-networking",
                    "--autoplay-policy=no-user-gesture-required",
                    "--user-data-dir=" + self.profile,
                    "--window-size=%d,%d" % (width, height)) + tuple(args):
            opts.add_argument(arg)
        if not js:
            opts.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=_which(DRIVER_CANDIDATES), log_output=os.devnull) \
            if _service_takes_log_output() else Service(executable_path=_which(DRIVER_CANDIDATES))
        self.driver = webdriver.Chrome(service=service, options=opts)
        self.driver.set_page_load_timeout(20)
        self.js = js
        if dark:
            self.cdp("Emulation.setEmulatedMedia",
                     {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        if auth:
            token = base64.b64encode(("%s:%s" % auth).encode()).decode()
            self.cdp("Network.enable", {})
            self.cdp("Network.setExtraHTTPHeaders", {"headers": {"Authorization": "Basic " + token}})

    def cdp(self, cmd, args):
        return self.driver.execute_cdp_cmd(cmd, args)

    # -- navigation and queries
    def get(self, url):
        self.driver.get(url)
        return self

    def js_run(self, script, *args):
        return self.driver.execute_script(script, *args)

    def find(self, css):
        from selenium.webdriver.common.by import By
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def one(self, css):
        found = self.find(css)
        if not found:
            raise MissingElement("no element matches %r on %s" % (css, self.driver.current_url))
        return found[0]

    def text(self, css):
        return self.one(css).text

    def wait(self, cond, timeout=10.0, what="page condition"):
        """Polls cond() until it is truthy and returns its value. The page's scripts
        re-render tables and cards at any time, so cond must query the page afresh on
        each call (never hold elements found outside it); an element replaced while
        cond reads it (stale) or not there yet counts as "not yet", not as a failure."""
        return wirelib.wait_until(lambda: _tolerant(cond), timeout, what, interval=0.1)

    def wait_text(self, css, expected, timeout=10.0):
        self.wait(lambda: any(expected in e.text for e in self.find(css)), timeout,
                  "%r in %s" % (expected, css))

    def wait_rows(self, css, count, timeout=10.0):
        """Waits until exactly count elements match css; returns their texts."""
        def ok():
            texts = [e.text for e in self.find(css)]
            return texts if len(texts) == count else None
        return self.wait(ok, timeout, "%d elements matching %s" % (count, css))

    def wait_click(self, css, text=None, inner=None, timeout=10.0):
        """Clicks the first element matching css (whose text contains text, if given;
        on its descendant matching inner, if given) once the page lets it, re-finding
        it after each re-render."""
        def attempt():
            for e in self.find(css):
                if text is None or text in e.text:
                    (e.find_element("css selector", inner) if inner else e).click()
                    return True
            return False
        self.wait(attempt, timeout, "a clickable %s%s" % (css, " with %r" % text if text else ""))

    @property
    def html(self):
        return self.driver.page_source

    @property
    def title(self):
        return self.driver.title

    def console_errors(self):
        try:
            logs = self.driver.get_log("browser")
        except Exception:
            return []
        return [e for e in logs if e.get("level") == "SEVERE"]

    def screenshot(self, path, full=True):
        if full:
            h = self.js_run("return Math.max(document.documentElement.scrollHeight, 600)") if self.js else 1400
            w = self.driver.get_window_size()["width"]
            self.driver.set_window_size(w, min(int(h) + 120, 4000))
        self.driver.save_screenshot(path)
        return path

    def close(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


class MissingElement(AssertionError):
    """No element matches a selector (an assertion failure outside waits, "not yet" inside)."""


def _tolerant(cond):
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    try:
        return cond()
    except (StaleElementReferenceException, NoSuchElementException, MissingElement):
        return False


def _service_takes_log_output():
    import inspect
    from selenium.webdriver.chrome.service import Service
    try:
        return "log_output" in inspect.signature(Service.__init__).parameters
    except (TypeError, ValueError):
        return False


class Listener(wirelib.Listener):
    """wirelib.Listener whose headers may replace the default User-Agent."""

    def request_bytes(self):
        raw = super().request_bytes()
        if any(k.lower() == "user-agent" for k in self.extra_headers):
            raw = raw.replace(b"User-Agent: wiretest-listener/1.0\r\n", b"", 1)
        return raw


def make_mp3(seconds=8, bitrate_k=64, freq=440):
    """Real MP3 audio (a sine tone, 44.1 kHz mono, CBR) from ffmpeg; None without ffmpeg."""
    ffmpeg = shutil.which("ffmpeg")
    if not ffmpeg:
        return None
    out = subprocess.run([ffmpeg, "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                          "sine=frequency=%d:sample_rate=44100:duration=%d" % (freq, seconds),
                          "-ac", "1", "-c:a", "libmp3lame", "-b:a", "%dk" % bitrate_k,
                          "-write_xing", "0", "-id3v2_version", "0", "-f", "mp3", "-"],
                         stdout=subprocess.PIPE, check=True, timeout=60)
    return out.stdout


def admin_get(srv, path, timeout=5.0):
    """GET an admin URL with the admin credentials; returns (status, body bytes)."""
    from conftest import ADMIN_USER, ADMIN_PASSWORD
    raw = ("GET %s HTTP/1.0\r\nHost: %s:%d\r\nAuthorization: %s\r\n\r\n"
           % (path, srv.host, srv.port, wirelib.basic_auth(ADMIN_USER, ADMIN_PASSWORD))).encode()
    resp, body = wirelib.simple_request(srv.host, srv.port, raw, timeout)
    return resp.status, body


def wait_listeners(srv, mount, count, timeout=10.0):
    """Wait until /admin/stats says mount has count listeners."""
    import re
    import urllib.parse

    def ok():
        status, body = admin_get(srv, "/admin/stats?mount=" + urllib.parse.quote(mount, safe=""))
        m = re.search(rb"<listeners>(\d+)</listeners>", body.split(b"<source", 1)[-1])
        return status == 200 and m is not None and int(m.group(1)) == count
    wirelib.wait_until(ok, timeout, "%d listeners on %s" % (count, mount), interval=0.1)


def now():
    return time.monotonic()
