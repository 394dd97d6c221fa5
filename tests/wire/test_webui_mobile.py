# SPDX-License-Identifier: GPL-2.0-or-later
"""Web UI tests at phone and desktop widths in a real headless Chromium: every admin page
(overview, a mount's details, mounts, listeners, move listeners, update metadata, users, log,
and the answers of metadata, fallbacks, killclient and killsource) and the public pages fit a
360 px wide window as well as a 1280 px one: nothing makes the page wider than the window,
every button and link is inside it, and the text columns (log messages, user agents) keep a
readable width. Needs chromium, chromedriver and python3-selenium; skipped without them.
Screenshots of every page at both widths go to $WEBUI_SHOTS (or a directory under $TMPDIR).
"""

import base64
import hashlib
import os
import shutil
import tempfile

import pytest

import webuilib
from test_webui import AUTH, _failed_login, browsers, q, settle, station  # noqa: F401 (fixtures)

_missing = webuilib.missing_requirements()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""),
              pytest.mark.rimecast_only]

PHONE = (360, 740)
DESKTOP = (1280, 800)
USER_AGENTS = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8 Pro Build/UQ1A.240205.004) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/121.0.6167.178 Mobile Safari/537.36",
    "VLC/3.0.20 LibVLC/3.0.20",
    "Lavf/60.16.100 " + "x" * 90,          # one long word: may break, must not overflow
)

# What must stay inside the window: every control a phone user taps.
CONTROLS = "main a, main button, main summary, main input, header a, footer a"

OVERFLOW_JS = """
var w = document.documentElement.clientWidth;
var out = [];
document.querySelectorAll(arguments[0]).forEach(function (el) {
  if (!el.checkVisibility()) return;
  var r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) return;
  if (r.left < -0.5 || r.right > w + 0.5)
    out.push(el.tagName + "." + el.className + " '" + (el.textContent || "").trim().slice(0, 30) +
             "' " + Math.round(r.left) + ".." + Math.round(r.right));
});
return {width: w, inner: window.innerWidth, scroll: document.documentElement.scrollWidth,
        body: document.body.scrollWidth, outside: out};
"""


def shots_dir():
    d = os.environ.get("WEBUI_SHOTS") or os.path.join(tempfile.gettempdir(), "webui-shots")
    os.makedirs(d, exist_ok=True)
    return d


def check_fits(b, name, width):
    """A screenshot; what makes the page wider than the window or leaves a control outside
    it ("" when it fits)."""
    path = os.path.join(shots_dir(), "%s-%d.png" % (name, width))
    shoot(b, path)
    got = b.js_run(OVERFLOW_JS, CONTROLS)
    # the layout is the window's width (a desktop's less its scroll bar); a phone zooms out
    # (innerWidth grows) when the page is wider than the screen
    assert width - 20 <= got["width"] <= width, got             # the window really is that wide
    if got["scroll"] <= got["width"] and got["inner"] == width and not got["outside"]:
        return ""
    return "%s at %d px (%s): %r" % (name, width, path, got)


def cell_widths(b, css):
    return b.js_run("return Array.prototype.map.call(document.querySelectorAll(arguments[0]),"
                    " function (e) { return e.getBoundingClientRect().width; })", css)


def emulate(b, width, height):
    """A phone's screen (mobile: overlay scrollbars, the viewport meta tag applies) or a
    desktop window of that size."""
    b.cdp("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})


def shoot(b, path):
    """A screenshot of the whole page (beyond the screen's height)."""
    data = b.cdp("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    with open(path, "wb") as f:
        f.write(base64.b64decode(data["data"]))


@pytest.fixture
def users_file():
    d = tempfile.mkdtemp(prefix="wire-users-")
    os.chmod(d, 0o777)
    path = os.path.join(d, "users")
    with open(path, "w") as f:
        f.write("keeper:%s\n" % hashlib.md5(b"kpw").hexdigest())
    os.chmod(path, 0o666)
    yield path
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["360px", "1280px"])
def test_every_admin_page_fits_the_window(station, browsers, users_file, size):
    width, height = size
    protected = ('<mount type="normal"><mount-name>/secret.mp3</mount-name>'
                 '<authentication type="htpasswd"><option name="filename" value="%s"/>'
                 '</authentication></mount>' % users_file)
    st = station({"/a.mp3": {"ice-name": "Morning Show on the Long Named Community Radio",
                             "ice-description": "Talk and music", "ice-genre": "Various"},
                  "/b.mp3": {"ice-name": "Beta"}, "/secret.mp3": {}, "/doomed.mp3": {}},
                 extra_xml=protected)
    st.set_title("/a.mp3", "An Artist With A Long Name - A Title That Goes On And On (Extended Mix)")
    for ua in USER_AGENTS:
        st.listen("/a.mp3", headers={"User-Agent": ua})
    st.listen("/b.mp3")
    webuilib.wait_listeners(st.srv, "/a.mp3", len(USER_AGENTS))
    webuilib.wait_listeners(st.srv, "/b.mp3", 1)
    _failed_login(st.srv, "someone-trying-a-very-long-user-name-" + "y" * 60)
    _, body = st.admin("/admin/listclients?mount=/b.mp3")
    kick_id = body.split(b"<ID>", 1)[1].split(b"</ID>", 1)[0].decode()

    b = browsers(js=True, auth=AUTH, width=width, height=height)
    emulate(b, width, height)
    pages = [
        ("overview", "/admin/stats.xsl"),
        ("details", "/admin/stats.xsl?mount=/a.mp3"),
        ("listmounts", "/admin/listmounts.xsl"),
        ("listclients", "/admin/listclients.xsl?mount=/a.mp3"),
        ("moveclients", "/admin/moveclients.xsl?mount=/a.mp3"),
        ("updatemetadata", "/admin/updatemetadata.xsl?mount=/a.mp3"),
        ("manageauth", "/admin/manageauth.xsl?mount=/secret.mp3"),
        ("log", "/admin/log.xsl"),
        ("metadata", "/admin/metadata.xsl?mode=updinfo&mount=/a.mp3&song=" + q("Another long title, "
                                                                             "for the answer page")),
        ("fallbacks", "/admin/fallbacks.xsl?mount=/b.mp3&fallback=/a.mp3"),
        ("killclient", "/admin/killclient.xsl?mount=/b.mp3&id=" + kick_id),
        ("killsource", "/admin/killsource.xsl?mount=/doomed.mp3"),
        ("status", "/status.xsl"),
        ("server_version", "/server_version.xsl"),
    ]
    problems = []
    for name, path in pages:
        b.get(st.url(path))
        if name in ("overview", "details", "listclients", "log"):
            settle(b)
        if name == "listclients":
            b.wait(lambda: len(b.find("form.kick button")) == len(USER_AGENTS), 10, "the Kick buttons")
            rects = b.js_run("return Array.prototype.map.call(document.querySelectorAll("
                             "'form.kick button'), function (e) { var r = e.getBoundingClientRect();"
                             " return [r.left, r.right]; })")
            if not all(0 <= left and right <= width for left, right in rects):
                problems.append("Kick buttons outside the window: %r" % rects)
            # a user agent is shown on lines of a readable width, not a few letters each
            if min(cell_widths(b, "td.ua")) < min(0.6 * width, 300):
                problems.append("user agents squeezed: %r" % cell_widths(b, "td.ua"))
        if name == "log":
            b.wait(lambda: b.find("tr.log-line"), 10, "log lines")
            if min(cell_widths(b, "tr.log-line td.text")) < min(0.6 * width, 500):
                problems.append("log messages squeezed: %r" % cell_widths(b, "tr.log-line td.text"))
        if name in ("metadata", "fallbacks", "killclient", "killsource"):
            b.wait(lambda: b.find(".notice.ok"), 10, "the %s answer: done" % name)
        if name == "details":
            b.wait(lambda: b.find('[data-history][data-history-updated]'), 10, "the charts")
        problems.append(check_fits(b, name, width))
        if name == "listclients":        # the kill-source confirmation, opened
            b.wait_click("details.danger summary")
            problems.append(check_fits(b, "listclients-killsource", width))
        if name == "overview":           # the compact table of the mounts, too
            b.wait_click('.view-switch [data-view="table"]')
            b.wait(lambda: b.find("table.mount-table")[0].is_displayed(), 5, "the mount table")
            problems.append(check_fits(b, "overview-table", width))
            b.wait_click('.view-switch [data-view="cards"]')
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)
    assert not [e for e in b.console_errors() if ".mp3" not in e.get("message", "")]



# Each "·" of the listeners lines that is displayed: whether it starts a line (no character
# of the line before it on its line).
DOTS_JS = """
var found = [];
document.querySelectorAll(".listeners").forEach(function (p) {
  var chars = [], walk = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
  for (var n = walk.nextNode(); n; n = walk.nextNode()) {
    for (var i = 0; i < n.data.length; i++) {
      if (/\\s/.test(n.data[i])) continue;
      var r = document.createRange();
      r.setStart(n, i);
      r.setEnd(n, i + 1);
      var rect = r.getBoundingClientRect();
      if (rect.width || rect.height) chars.push({c: n.data[i], rect: rect});
    }
  }
  chars.forEach(function (ch, k) {
    if (ch.c !== "\\u00b7") return;
    var prev = chars[k - 1];
    found.push({line: p.textContent.replace(/\\s+/g, " ").trim(),
                starts: !prev || ch.rect.top >= prev.rect.bottom - 2});
  });
});
return found;
"""


@pytest.mark.parametrize("width", [360, 600, 1280])
def test_the_listening_line_never_starts_with_its_dot(station, browsers, width):
    limited = ('<mount type="normal"><mount-name>/capped.mp3</mount-name>'
               '<max-listeners>100000</max-listeners></mount>')
    st = station({"/capped.mp3": {"ice-name": "Capped"}, "/open.mp3": {"ice-name": "Open"}},
                 extra_xml=limited)
    for _ in range(3):
        st.listen("/capped.mp3")
    webuilib.wait_listeners(st.srv, "/capped.mp3", 3)
    b = browsers(js=True, auth=AUTH, width=width, height=800)
    emulate(b, width, 800)
    for page in ("/status.xsl", "/admin/stats.xsl"):
        b.get(st.url(page))
        settle(b)
        # as a reader with large text too, whose line must wrap
        for font in ("", "28px"):
            b.js_run("document.documentElement.style.fontSize = arguments[0]", font)
            dots = b.js_run(DOTS_JS)
            assert not [d for d in dots if d["starts"]], (page, width, font, dots)
            if width < 560:              # a narrow screen has the whole line, with its dots
                assert len(dots) >= 2, (page, dots)
        shoot(b, os.path.join(shots_dir(), "listening%s-%d.png" % (page.replace("/", "-")[:-4], width)))


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["360px", "1280px"])
def test_an_error_page_is_laid_out_at_the_screens_width(station, browsers, size, tmp_path):
    """An error page (404 here) says it is for the device's width: on a phone it is laid out at
    the screen's 360 px, not at a desktop's 980, and its text is not cut."""
    width, height = size
    st = station({})
    b = browsers(js=True, width=width, height=height)
    emulate(b, width, height)
    b.get(st.srv.url("/no/such/page"))
    b.wait(lambda: "404" in b.html, what="the error page")
    laid_out = b.js_run("return document.documentElement.clientWidth;")
    assert laid_out == width, (laid_out, width)
    assert b.js_run("return document.documentElement.scrollWidth;") <= width
    shoot(b, str(tmp_path / ("error-%d.png" % width)))
