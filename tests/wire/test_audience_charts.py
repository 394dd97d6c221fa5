# SPDX-License-Identifier: GPL-2.0-or-later
"""The audience charts page (/admin/audience_charts.xsl, web/audience.js with the vendored
uPlot) and /admin/audience/top.json, against a store filled with known sessions.

Covers: top.json ranks user agents and referrers of the period (and answers 400 to a bad
by= or limit=); in a real Chromium the charts plot the numbers of /admin/audience.json
(sessions, qualified sessions and TLH per hour or day, the figures of the period), the
countries and top players and referrers lists show the sessions of the store, client text as
text (an agent holding <script> runs nothing), the charts in words for screen readers; the
period and mount pickers change the query and the CSV link, which downloads a CSV of the same
numbers; a rolling period starts at a whole hour or day, each TLH bar is most of its bucket
wide (per hour and per day, at 1280 and 360 px) and the bucket going on is drawn lighter and
said to be so far; the listeners chart shows the listener history and, over a week, the peak of each
hour; a listener who leaves shows up without a reload, listeners leaving together cost one
computation; the navigation and the figures' table link the page; it fits 1280 and 360 px
(screenshots under $TMPDIR) with no console error (the admin pages' CSP allows no inline
script or style).
"""

import calendar
import csv
import io
import math
import os
import sqlite3
import time
import urllib.parse

import pytest

import adminlib
import webuilib
import wirelib
from test_audience_store import db_path, store_to_nobody, wait_rows
from test_webui import ADMIN, AUTH, WEB, mp3, not_pwned

pytestmark = pytest.mark.rimecast_only

H = 3600
DAY = 86400
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
# mount, started (seconds ago), length (s), agent, referer, country
SESSIONS = [
    ("/a", 3 * H, 600, "VLC/3.0.20 LibVLC/3.0.20", "https://radio.example/player", "DE"),
    ("/a", 2 * H, 1200, "VLC/3.0.20 LibVLC/3.0.20", None, "DE"),
    ("/a", 2 * H - 60, 30, HOSTILE, "https://evil.example/<b>x</b>", "FR"),
    ("/b", 5 * H, 3000, HOSTILE, None, None),
    ("/b", 20 * H, 90, "Lavf/60.16.100", "https://radio.example/player", "US"),
    ("/a", 1 * H, 400, "Mozilla/5.0 (X11; Linux x86_64)", "https://radio.example/player", "DE"),
    ("/a", 3 * DAY, 7200, "VLC/3.0.20 LibVLC/3.0.20", None, "NL"),
    ("/b", 4 * DAY, 100, "Lavf/60.16.100", None, "US"),
    ("/a", 20 * DAY, 500, "foobar2000/2.1", None, "GB"),
]


@pytest.fixture
def store(server):
    """A server whose store holds SESSIONS (written while it was stopped, as the user it runs
    as), with the repository's web/ and admin/ files; (srv, now, rows)."""
    srv = server(webroot=WEB, adminroot=ADMIN)
    wirelib.wait_until(lambda: os.path.exists(db_path(srv)), 10, "the store created")
    assert srv.stop() == 0
    srv.stopped = False
    now = int(time.time())
    rows = [(i + 1, m, m, (now - ago) * 1000, (now - ago + length) * 1000, 1000,
             "192.0.2.%d" % (i + 1), agent, ref, None, cc, "client_left")
            for i, (m, ago, length, agent, ref, cc) in enumerate(SESSIONS)]
    con = sqlite3.connect(db_path(srv))
    # the address and user agent columns by the names this store gives them
    cols = {c[1] for c in con.execute("PRAGMA table_info(sessions)")}
    names = ("conn_id, mount, served, start_ms, end_ms, bytes, %s, %s, referer, user, country,"
             " ended" % ("ip" if "ip" in cols else "address",
                         "user_agent" if "user_agent" in cols else "agent"))
    con.executemany("INSERT INTO sessions (%s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)" % names, rows)
    con.commit()
    con.close()
    store_to_nobody(srv)
    srv.cfg["port"] = None          # a new port: the old one may have been taken meanwhile
    srv.start()
    return srv, now, rows


def in_period(rows, start, end, mount=""):
    return [r for r in rows if r[3] < end * 1000 and r[4] > start * 1000 and
            (not mount or r[1] == mount)]


def count(rows, col, none):
    out = {}
    for r in rows:
        key = none if r[col] is None else r[col]
        out[key] = out.get(key, 0) + 1
    return out


def top(srv, query):
    r = adminlib.admin(srv, "/admin/audience/top.json?" + query)
    assert r.status == 200 and r.header("content-type").startswith("application/json"), r.text
    return r.json()["audience_top"]


def test_top_json_ranks_agents_and_referrers_of_the_period(store):
    srv, now, rows = store
    start, end = now - DAY, now + 1
    q = "from=%d&to=%d" % (start, end)
    got = top(srv, q + "&by=agent")
    want = count(in_period(rows, start, end), 7, "")
    assert {e["name"]: e["sessions"] for e in got["entry"]} == want
    assert got["sessions"] == sum(want.values())
    assert [e["sessions"] for e in got["entry"]] == sorted(want.values(), reverse=True)
    assert HOSTILE in [e["name"] for e in got["entry"]]
    got = top(srv, q + "&by=referer&limit=1&mount=/a")
    assert [(e["name"], e["sessions"]) for e in got["entry"]] == [
        ("https://radio.example/player", 2)]
    assert got["sessions"] == 4 and got["mount"] == "/a"
    xml = adminlib.admin(srv, "/admin/audience/top?" + q).xml()
    assert xml.tag == "audience_top" and len(xml.findall("entry")) == len(want)
    for bad in ("by=country", "limit=0", "limit=101", "limit=x", "from=10&to=5"):
        assert adminlib.admin(srv, "/admin/audience/top.json?" + bad).status == 400, bad
    assert adminlib.admin(srv, "/admin/audience/top.xsl").status == 400


# ---------------------------------------------------------------- in Chromium

@pytest.fixture
def browser():
    missing = webuilib.missing_requirements()
    if missing:
        pytest.skip(missing)
    b = webuilib.Browser(auth=AUTH)
    yield b
    b.close()


def open_page(b, srv, query=""):
    b.get(srv.url("/admin/audience_charts.xsl" + query))
    return wait_update(b, None)


def wait_update(b, before, what="the charts drawn", timeout=15):
    """Waits for a refresh of the figures after `before` (data-updated); returns its query."""
    def done():
        v = b.js_run("var r = document.querySelector('[data-audience-charts]');"
                     " return r && r.getAttribute('data-updated');")
        return v if v and v != before else None
    b.wait(done, timeout, what)
    return b.js_run("return window.rimecastCharts.query")


def updated(b):
    return b.js_run("return document.querySelector('[data-audience-charts]')"
                    ".getAttribute('data-updated')")


def plotted(b):
    return b.js_run("return window.rimecastCharts.plotted()")


def normal(row):
    """A row of the figures (JSON or CSV, in the published shape with start, tlh_hours and
    peak_listeners, or the older one with from, tlh and peak) as {mount ("" the server),
    start (unix s), sessions, qualified_sessions, tlh, cume, peak}."""
    start = row.get("start", row.get("from"))
    pick = lambda *keys: next(row[k] for k in keys if k in row)  # noqa: E731
    return {"mount": row["mount"] or "",
            "start": calendar.timegm(time.strptime(start, "%Y-%m-%dT%H:%M:%SZ")),
            "sessions": int(row["sessions"]), "qualified_sessions": int(row["qualified_sessions"]),
            "tlh": float(pick("tlh_hours", "tlh")), "cume": int(row["cume"]),
            "peak": int(pick("peak_listeners", "peak"))}


def short(seconds):
    """Seconds as the audience pages write them: 12m 13s, 2h 00m, 1d 03h, 45s."""
    n = int(math.floor(seconds))
    if n >= DAY:
        return "%dd %02dh" % (n // DAY, n % DAY // 3600)
    if n >= 3600:
        return "%dh %02dm" % (n // 3600, n % 3600 // 60)
    if n >= 60:
        return "%dm %02ds" % (n // 60, n % 60)
    return "%ds" % n


def hours(h):
    """Hours as the audience pages write them: to a tenth, "< 0.1" for a little."""
    return "< 0.1" if 0 < h < 0.05 else "{:,.1f}".format(h)


def figures(srv, query, by=None):
    """/admin/audience.json?query, cut by hour or day (by) whichever name the server takes."""
    if by:
        query += "&by=%s&period=%s" % (by, by)
    r = adminlib.admin(srv, "/admin/audience.json?" + query)
    assert r.status == 200, r.text
    doc = r.json()
    return [normal(f) for f in (doc["periods"] if "periods" in doc else
                                doc["audience"]["figures"])]


def series_of(rows, mount, key):
    """{bucket start (unix s): value} of one mount ("" the server)."""
    return {f["start"]: float(f[key]) for f in rows if f["mount"] == mount}


def check_buckets(b, srv, q):
    """The sessions and TLH charts plot the figures of audience.json for the page's query."""
    doc = figures(srv, "from=%d&to=%d" % (q["from"], q["to"]) +
                  ("&mount=" + urllib.parse.quote(q["mount"]) if q["mount"] else ""), q["by"])
    p = plotted(b)
    xs = p["sessions"]["x"]
    assert xs and xs[0] == q["from"] and xs == p["tlh"]["x"]
    for key, chart, label in (("sessions", "sessions", "Sessions"),
                              ("qualified_sessions", "sessions", "Qualified"),
                              ("tlh", "tlh", "TLH")):
        want = series_of(doc, q["mount"], key)
        assert set(want) <= set(xs), (key, want, xs)
        got = dict(zip(xs, p[chart][label]))
        assert all(abs(got[t] - want.get(t, 0.0)) < 1e-6 for t in xs), (key, got, want)
    return doc


def listed(b, name):
    return b.js_run("return Array.prototype.map.call(document.querySelectorAll("
                    "'[data-list=\"' + arguments[0] + '\"] li[data-name]'), function (li) {"
                    " return [li.getAttribute('data-name'), Number(li.getAttribute('data-sessions')),"
                    " li.querySelector('.ac-name').textContent]; })", name)


def test_charts_show_the_figures_and_lists_of_the_store(store, browser):
    srv, now, rows = store
    b = browser
    q = open_page(b, srv)
    # the last 24 hours from a whole hour: 24 buckets, the last one going on
    assert q["by"] == "hour" and q["from"] % H == 0 and DAY - H < q["to"] - q["from"] <= DAY
    assert q["mount"] == ""
    check_buckets(b, srv, q)
    # the figures of the whole period, as the server gives them
    [whole] = [f for f in figures(srv, "period=all&from=%d&to=%d" % (q["from"], q["to"])) if f["mount"] == ""]
    shown = {k: b.text('[data-figure="%s"]' % k) for k in ("sessions", "qualified_sessions", "cume",
                                                          "peak", "tlh")}
    assert shown == {"sessions": str(whole["sessions"]),
                     "qualified_sessions": str(whole["qualified_sessions"]),
                     "cume": str(whole["cume"]), "peak": str(whole["peak"]),
                     "tlh": hours(float(whole["tlh"]))}
    [raw] = [p for p in adminlib.admin(srv, "/admin/audience.json?period=all&from=%d&to=%d"
                                       % (q["from"], q["to"])).json()["periods"] if p["mount"] is None]
    assert b.text('[data-figure="atsl_seconds"]') == short(raw["atsl_seconds"])
    period = in_period(rows, q["from"], q["to"])
    assert whole["sessions"] == len(period)
    # the charts in words, for screen readers
    most = max(plotted(b)["sessions"]["Sessions"])
    assert "Sessions: at most %d, last" % most in b.one('[data-plot="sessions"]').get_attribute(
        "aria-label")
    # countries, players and referrers: the sessions of the store, names as text
    countries = listed(b, "countries")
    assert {c: n for c, n, _ in countries} == count(period, 10, "unknown")
    assert dict((c, t) for c, _, t in countries)["DE"] == "Germany (DE)"
    agents = listed(b, "agents")
    assert {a: n for a, n, _ in agents} == count(period, 7, "")
    assert [t for a, _, t in agents if a == HOSTILE] == [HOSTILE]
    referers = listed(b, "referers")
    assert {r: n for r, n, _ in referers} == count(period, 8, "")
    assert "https://evil.example/<b>x</b>" in [t for _, _, t in referers]
    assert b.js_run("return document.querySelectorAll('.audience-charts img, "
                    ".audience-charts b').length") == 0
    not_pwned(b)
    assert not b.console_errors(), b.console_errors()
    # a mount name in the page's address is text too
    open_page(b, srv, "?mount=" + urllib.parse.quote(HOSTILE))
    assert b.js_run("return document.querySelector('[data-ac=\"mount\"]').value") == HOSTILE
    assert b.js_run("return window.rimecastCharts.query.mount") == HOSTILE
    not_pwned(b)


def test_the_charts_are_linked_from_the_navigation_and_the_table(store, browser):
    srv, now, rows = store
    b = browser
    b.get(srv.url("/admin/stats.xsl"))
    b.wait_click("header.site nav a", text="Charts")
    q = wait_update(b, None)
    assert b.one('header.site nav a[aria-current="page"]').text == "Charts"
    assert q["mount"] == ""
    # the table of one mount's figures links the charts of that mount
    b.get(srv.url("/admin/audience.xsl?mount=/b"))
    b.wait_click("a[data-charts]")
    q = wait_update(b, None)
    assert q["mount"] == "/b"
    assert b.js_run("return document.querySelector('[data-ac=\"mount\"]').value") == "/b"


def pick(b, name, value):
    """Chooses value in the picker data-ac=name as a user would (a change event)."""
    from selenium.webdriver.support.ui import Select
    Select(b.one('[data-ac="%s"]' % name)).select_by_value(value)


def set_day(b, name, value):
    b.js_run("var el = document.querySelector('[data-ac=\"' + arguments[0] + '\"]');"
             " el.value = arguments[1]; el.dispatchEvent(new Event('change', {bubbles: true}));",
             name, value)


def test_the_pickers_change_the_query_and_the_csv_link(store, browser):
    srv, now, rows = store
    b = browser
    q = open_page(b, srv)
    before = updated(b)
    pick(b, "period", "7d")
    q = wait_update(b, before, "the 7-day figures")
    assert q["by"] == "day" and q["from"] % DAY == 0 and 6 * DAY < q["to"] - q["from"] <= 7 * DAY
    check_buckets(b, srv, q)
    assert "period=7d" in b.js_run("return location.search")
    query = "from=%d&to=%d&by=day&period=day" % (q["from"], q["to"])
    assert b.one('[data-ac="csv"]').get_attribute("href").endswith("/admin/audience.csv?" + query)
    assert "NL" in [c for c, _, _ in listed(b, "countries")]
    # one mount: its own buckets, lists and figures
    before = updated(b)
    pick(b, "mount", "/b")
    q = wait_update(b, before, "the figures of /b")
    assert q["mount"] == "/b"
    doc = check_buckets(b, srv, q)
    assert sum(f["sessions"] for f in doc) > 0
    assert {a: n for a, n, _ in listed(b, "agents")} == \
        count(in_period(rows, q["from"], q["to"], "/b"), 7, "")
    assert b.one('[data-ac="csv"]').get_attribute("href").endswith("&mount=%2Fb")
    # whole UTC days, the last one included
    before = updated(b)
    pick(b, "mount", "")
    pick(b, "period", "custom")
    first = time.strftime("%Y-%m-%d", time.gmtime(now - 21 * DAY))
    last = time.strftime("%Y-%m-%d", time.gmtime(now))
    set_day(b, "from", first)
    set_day(b, "to", last)
    day0 = (now - 21 * DAY) // DAY * DAY
    b.wait(lambda: (b.js_run("return window.rimecastCharts.query") or {}).get("from") == day0,
           15, "the custom period")
    q = wait_update(b, None)
    assert q["to"] == now // DAY * DAY + DAY and q["by"] == "day"
    check_buckets(b, srv, q)
    assert "GB" in [c for c, _, _ in listed(b, "countries")]
    assert "from=%s" % first in b.js_run("return location.search")
    not_pwned(b)


def test_the_csv_link_downloads_the_plotted_numbers(store, browser, tmp_path):
    srv, now, rows = store
    b = browser
    os.chmod(str(tmp_path), 0o777)
    b.cdp("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)})
    # a download does not carry the test's extra Authorization header: the browser logs in as
    # a user does, and sends those credentials with the download
    b.get(srv.url("/admin/audience_charts.xsl").replace("http://", "http://%s:%s@" % AUTH))
    q = wait_update(b, None)
    b.one('[data-ac="csv"]').click()
    path = os.path.join(str(tmp_path), "audience.csv")
    wirelib.wait_until(lambda: os.path.exists(path) and not [
        n for n in os.listdir(str(tmp_path)) if n.endswith(".crdownload")], 15, "the download")
    with open(path, encoding="utf-8") as f:
        lines = [normal(l) for l in csv.DictReader(io.StringIO(f.read()))]
    server = series_of(lines, "", "sessions")
    p = plotted(b)
    assert server == dict(zip(p["sessions"]["x"], p["sessions"]["Sessions"]))
    tlh = series_of(lines, "", "tlh")
    assert all(abs(tlh[t] - v) < 1e-6 for t, v in zip(p["tlh"]["x"], p["tlh"]["TLH"]))
    assert sum(server.values()) >= len(in_period(rows, q["from"], q["to"]))


def history_points(srv, mount):
    r = adminlib.admin(srv, "/admin/history.json?mount=" + urllib.parse.quote(mount))
    ranges = r.json()["history"]["range"]
    [hour] = [x for x in ranges if x["name"] == "hour"]
    return {s["time"]: s["listeners"] for s in hour.get("sample", [])}


def test_listeners_follow_the_history_and_a_leaving_listener_shows_up_live(store, browser):
    srv, now, rows = store
    b = browser
    src = srv.source("/a", mp3(), rate=8000, loop=True,
                     headers={"ice-bitrate": "64"})
    assert src.connect().status == 200
    src.start()
    src.wait_sent(8192, 5)
    held = srv.listener("/a", keep=4096)
    assert held.open().status == 200
    wirelib.wait_until(lambda: 1 in history_points(srv, "/a").values(), 25,
                       "a history sample with the listener")
    open_page(b, srv, "?mount=/a")
    b.wait(lambda: 1 in plotted(b)["listeners"]["Listeners"], 15, "the listener plotted")
    hist = history_points(srv, "/a")
    p = plotted(b)["listeners"]
    points = [(t, v) for t, v in zip(p["x"], p["Listeners"]) if v is not None]
    assert points and all(hist.get(t) == v for t, v in points), (points, hist)
    # a week: the peak of each hour of the ended sessions
    b.wait_click('[data-range="week"]')
    b.wait(lambda: len(plotted(b)["listeners"]["x"]) == 7 * 24, 15, "a week of hours")
    p = plotted(b)["listeners"]
    doc = figures(srv, "from=%d&to=%d&mount=/a" % (p["x"][0], p["x"][-1] + H), "hour")
    peaks = series_of(doc, "/a", "peak")
    assert peaks and all(dict(zip(p["x"], p["Listeners"]))[t] == v for t, v in peaks.items())
    # the listener leaves: its session is in the figures without a reload
    before = plotted(b)["sessions"]
    mark = updated(b)
    held.close()
    wait_rows(srv, len(rows) + 1)
    wait_update(b, mark, "the figures after the listener left", 30)  # at most every 10 s
    after = plotted(b)["sessions"]
    assert sum(after["Sessions"]) == sum(before["Sessions"]) + 1
    src.stop()


def top_requests(srv):
    return srv.access_log().count("/admin/audience/top.json?by=agent")


def test_listeners_leaving_together_cost_one_computation_of_the_figures(store, browser):
    """The events feed asks for the figures again at most every 10 s: five listeners who leave
    within seconds of the page's first figures bring one more computation, 10 s after it. The
    mount picker offers the live mount before any of its sessions ended."""
    srv, now, rows = store
    b = browser
    src = srv.source("/c", mp3(), rate=8000, loop=True, headers={"ice-bitrate": "64"})
    assert src.connect().status == 200
    src.start()
    src.wait_sent(8192, 5)
    first = b.js_run("return Date.now()")
    open_page(b, srv)
    mark = updated(b)
    assert top_requests(srv) == 1
    # a live mount without a session yet is offered too
    assert "/c" in b.js_run("return Array.prototype.map.call(document.querySelector("
                            "'[data-ac=\"mount\"]').options, function (o) { return o.value; })")
    for _ in range(5):
        held = srv.listener("/c", keep=4096)
        assert held.open().status == 200
        held.close()
    wait_rows(srv, len(rows) + 5)
    wait_update(b, mark, "the figures after the listeners left", 30)
    assert int(updated(b)) - first >= 10000
    assert top_requests(srv) == 2
    assert sum(plotted(b)["sessions"]["Sessions"]) >= 5
    src.stop()


# The colours of the canvas at points of it (CSS pixels), as [r, g, b, a].
PIXELS_JS = """
var c = document.querySelector('[data-plot="' + arguments[0] + '"] canvas');
var k = c.width / c.getBoundingClientRect().width, ctx = c.getContext("2d");
return arguments[1].map(function (p) {
  return Array.prototype.slice.call(ctx.getImageData(Math.floor(p[0] * k), Math.floor(p[1] * k), 1, 1).data);
});
"""


@pytest.mark.parametrize("size", [(1280, 800), (360, 740)], ids=["1280px", "360px"])
@pytest.mark.parametrize("period,step,count", [("24h", H, 24), ("7d", DAY, 7), ("30d", DAY, 30)])
def test_tlh_bars_are_as_wide_as_their_buckets(store, browser, size, period, step, count):
    """A rolling period starts at a whole hour or day, so no first bucket of a few minutes reads
    like an hour or day with few listeners, and each bar is drawn 70 % of its bucket wide
    (a first bucket of a minute made every bar a pixel or two wide); the bucket going on is
    the last, lighter, and the page says it is counted so far."""
    from test_webui_mobile import emulate, shoot, shots_dir
    srv, now, rows = store
    b = browser
    emulate(b, *size)
    q = open_page(b, srv, "?period=" + period)
    assert q["from"] % step == 0 and q["step"] == step, q
    assert (count - 1) * step < q["to"] - q["from"] <= count * step, q
    p = plotted(b)["tlh"]
    assert p["x"] == [q["from"] + i * step for i in range(len(p["x"]))] and len(p["x"]) == count
    bars = b.js_run("return window.rimecastCharts.bars().tlh")
    shoot(b, os.path.join(shots_dir(), "audience-charts-%s-%d.png" % (period, size[0])))
    assert [r["start"] for r in bars] == p["x"], bars
    bucket = bars[0]["bucket"]
    # a bucket is a fair share of the chart: the canvas less its axis, over the buckets
    canvas = b.js_run("return document.querySelector('[data-plot=\"tlh\"] canvas')"
                      ".getBoundingClientRect().width")
    assert bucket > (canvas - 80) / count, (bucket, canvas)
    for r in bars:
        assert abs(r["bucket"] - bucket) < 0.5 and 0.6 * bucket <= r["width"] <= 0.8 * bucket, r
        assert r["width"] >= 3, r
    # the bucket going on: the last, the only one drawn lighter, and said so
    going = now // step * step
    assert [r["start"] for r in bars if r["partial"]] == [going] == [p["x"][-1]]
    assert b.one('[data-ac="partial"]').is_displayed()
    assert "so far" in b.text('[data-ac="partial"]')
    # the legend says so too, with the pointer over that bar, and not over a whole bucket's
    legend = '[data-plot="tlh"] .u-legend'
    for r in (bars[-1], bars[-2]):
        b.js_run("var box = document.querySelector('[data-plot=\"tlh\"]'), c = box.querySelector('canvas');"
                 " c.scrollIntoView({block: 'center'}); var at = c.getBoundingClientRect();"
                 " box.querySelector('.u-over').dispatchEvent(new MouseEvent('mousemove', {bubbles: true,"
                 " clientX: at.left + arguments[0], clientY: at.top + arguments[1]}));",
                 r["left"] + r["width"] / 2, r["top"] + r["height"] / 2)
        tm = time.gmtime(r["start"])
        when = "%d %s" % (tm.tm_mday, time.strftime("%b %H:%M", tm))     # 29 Nov 04:00
        b.wait(lambda: when in b.text(legend), 5, "the legend of the bar at " + when)
        assert ("so far" in b.text(legend)) == r["partial"], (r, b.text(legend))
    # on the canvas, a row of pixels across each bar tall enough to hit: its outline (the
    # line colour, the same for every bar) at both edges, filled with it for a whole bucket
    # and lighter for the one going on, and no bar between two
    tall = [r for r in bars if r["height"] >= 6]
    points = []
    for r in tall:
        y, right = math.floor(r["top"] + r["height"] / 2), r["left"] + r["width"]
        points += [(math.floor(r["left"] + 1), y), (math.floor(r["left"] + r["width"] / 2), y),
                   (math.floor(right - 1), y), (math.floor(r["left"] - (bucket - r["width"]) / 2), y)]
    colours = b.js_run(PIXELS_JS, "tlh", points)
    near = lambda c, d: max(abs(x - y) for x, y in zip(c[:3], d[:3])) <= 8  # noqa: E731
    assert tall, bars
    line = colours[0]
    for i, r in enumerate(tall):
        left, middle, right, between = colours[4 * i:4 * i + 4]
        assert near(left, line) and near(right, line) and left[3] > 200 and right[3] > 200, (r, left, right)
        assert middle[3] > 200 and near(middle, line) != r["partial"], (r, middle, line)
        assert between[3] < 50 or not near(between, line), (r, between)
    assert not b.console_errors(), b.console_errors()


@pytest.mark.parametrize("size", [(1280, 800), (360, 740)], ids=["1280px", "360px"])
def test_the_charts_page_fits_the_window(store, browser, size):
    from test_webui_mobile import check_fits, emulate
    srv, now, rows = store
    b = browser
    width, height = size
    emulate(b, width, height)
    q = open_page(b, srv, "?period=30d")
    assert q["by"] == "day"
    assert check_fits(b, "audience-charts", width) == ""
    # each chart as wide as its card, none wider than the window
    widths = b.js_run("return Array.prototype.map.call(document.querySelectorAll('.ac-plot canvas'),"
                      " function (c) { return c.getBoundingClientRect().right; })")
    assert widths and max(widths) <= width
    assert not b.console_errors(), b.console_errors()


def test_the_traffic_picker_shows_net_or_gross_figures_and_says_which(store, browser):
    """Two robots' sessions added to the store: in the gross figures only."""
    srv, now, rows = store
    con = sqlite3.connect(db_path(srv), timeout=5)
    with con:
        con.executemany("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip,"
                        " user_agent, ended, invalid) VALUES (?, '/a', '/a', ?, ?, 1,"
                        " '198.51.100.1', 'ExampleBot/1.0', 'client_left', 'bot')",
                        [(9000 + i, (now - 3600) * 1000, (now - 1800) * 1000) for i in range(2)])
    con.close()
    b = browser
    q = open_page(b, srv)
    note = b.text('[data-ac="traffic-note"]')
    assert note.startswith("Net traffic"), note
    period = "period=all&from=%d&to=%d" % (q["from"], q["to"])
    net = [f for f in figures(srv, period) if f["mount"] == ""][0]
    assert b.text('[data-figure="sessions"]') == str(net["sessions"])
    before = updated(b)
    pick(b, "traffic", "gross")
    q = wait_update(b, before, "the gross figures")
    assert b.text('[data-ac="traffic-note"]').startswith("Gross traffic")
    assert "traffic=gross" in b.js_run("return location.search")
    gross = [p for p in adminlib.admin(srv, "/admin/audience.json?traffic=gross&" + period)
             .json()["periods"] if p["mount"] is None][0]
    assert gross["sessions"] == net["sessions"] + 2
    b.wait(lambda: b.text('[data-figure="sessions"]') == str(gross["sessions"]), 10,
           "the gross sessions shown")
    for link in ("csv", "table"):
        assert "traffic=gross" in b.one('[data-ac="%s"]' % link).get_attribute("href")
    # the robot is among the players of the gross list only
    assert "ExampleBot/1.0" in [a for a, _, _ in listed(b, "agents")]
    # the listeners over a week come from the store: the gross peaks, and the note says so;
    # over the last hour they are the connections counted now, and the note says that
    b.wait_click('[data-range="week"]')
    b.wait(lambda: "gross" in b.text('[data-ac="listeners-note"]'), 15, "the week's note")
    p = plotted(b)["listeners"]
    doc = figures(srv, "traffic=gross&from=%d&to=%d" % (p["x"][0], p["x"][-1] + H), "hour")
    peaks = series_of(doc, "", "peak")
    robots_hour = (now - 3600) // H * H
    assert peaks[robots_hour] >= 2
    shown = dict(zip(p["x"], p["Listeners"]))
    assert all(shown[t] == v for t, v in peaks.items()), (peaks, shown)
    b.wait_click('[data-range="hour"]')
    b.wait(lambda: "every connection" in b.text('[data-ac="listeners-note"]'), 15,
           "the hour's note")
    before = updated(b)
    pick(b, "traffic", "net")
    wait_update(b, before, "the net figures again")
    assert "ExampleBot/1.0" not in [a for a, _, _ in listed(b, "agents")]
    assert b.text('[data-figure="sessions"]') == str(net["sessions"])
