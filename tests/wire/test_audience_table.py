# SPDX-License-Identifier: GPL-2.0-or-later
"""The audience table (/admin/audience.xsl) in a real Chromium at 1280 and 360 px, against a
store of known sessions (test_audience_charts.store): TLH in hours to a tenth ("< 0.1" for a
little that is not none, the exact time in its title), ATSL as a short duration (12m 13s) on
one line, times to the minute on one line, countries apart ("DE 3, FR 1"); the period form
asks with date and time pickers and sends what the server reads (2026-11-25T21:00, UTC); the
page fits the window. The XML, JSON and CSV keep their names and the server's raw values.
Screenshots under $TMPDIR (test_webui_mobile.shots_dir).
"""

import csv
import io
import os
import time
import urllib.parse

import pytest

import adminlib
from test_audience_charts import browser, hours, short, store  # noqa: F401 (fixtures)
from test_webui_mobile import check_fits, emulate

pytestmark = pytest.mark.rimecast_only

DAY = 86400

# Each figures row of the table: its cells' texts by column, the TLH cell's title, and how many
# lines each cell's text takes.
ROWS_JS = """
function lines(td) {
  var r = document.createRange(); r.selectNodeContents(td);
  var tops = {};
  Array.prototype.forEach.call(r.getClientRects(), function (b) { if (b.width) tops[Math.round(b.top)] = 1; });
  return Object.keys(tops).length;
}
return Array.prototype.map.call(document.querySelectorAll("table.audience-figures tbody tr"), function (tr) {
  var out = {lines: {}};
  Array.prototype.forEach.call(tr.cells, function (td) {
    var k = td.getAttribute("data-label");
    out[k] = td.textContent.replace(/\\s+/g, " ").trim();
    out.lines[k] = lines(td);
  });
  var t = tr.querySelector('td[data-label="TLH"] [title]');
  out.tlh_title = t ? t.getAttribute("title") : null;
  var time = tr.querySelector('td[data-label="From"] time');
  out.datetime = time ? time.getAttribute("datetime") : null;
  return out;
});
"""


def minute(iso):
    """2026-11-25T21:00:00Z as 2026-11-25 21:00."""
    return iso[:10] + " " + iso[11:16]


def decimal(text):
    """1.250 as 1.25, 2.000 as 2.0: as the table shows AAS and AQH."""
    v = ("%.3f" % float(text)).rstrip("0")
    return v + "0" if v.endswith(".") else v


@pytest.mark.parametrize("traffic", ["net", "gross"])
def test_the_table_says_which_traffic_and_switches(store, browser, traffic):
    srv, now, rows = store
    b = browser
    emulate(b, 1280, 800)
    q = "from=%d&to=%d&period=all&traffic=%s" % (now - 5 * DAY, now, traffic)
    b.get(srv.url("/admin/audience.xsl?" + q))
    lede = b.wait(lambda: b.text("p.lede"), 10, "the page")
    assert ("Net traffic" in lede) == (traffic == "net") and ("Gross traffic" in lede) == (
        traffic == "gross"), lede
    picked = b.js_run("return document.querySelector('form.audience-period"
                      " select[name=traffic]').value")
    assert picked == traffic
    # the other, through the form
    other = "gross" if traffic == "net" else "net"
    b.js_run("var f = document.querySelector('form.audience-period');"
             " f.elements.traffic.value = arguments[0];"
             " f.querySelector('button[type=submit]').click();", other)
    b.wait(lambda: "traffic=" + other in b.driver.current_url, 10, "the form sent")
    lede = b.wait(lambda: other.capitalize() + " traffic" in (b.text("p.lede") or "") and
                  b.text("p.lede"), 10, "the page of the other traffic")
    # the links to the same figures keep it
    links = b.js_run("return Array.prototype.map.call(document.querySelectorAll("
                     "'p.actions a'), function (a) { return a.getAttribute('href'); })")
    assert all("traffic=" + other in h for h in links[:3]), links


def test_the_figures_views_keep_their_names_and_raw_values(store):
    srv, now, rows = store
    q = "from=%d&to=%d&period=day" % (now - 5 * DAY, now)
    doc = adminlib.admin(srv, "/admin/audience?" + q).xml()
    figs = doc.findall("figures")
    assert figs and all(len(f.findtext("tlh_hours").split(".")[1]) == 6 for f in figs)
    assert all(len(f.findtext("atsl_seconds").split(".")[1]) == 3 for f in figs)
    js = adminlib.admin(srv, "/admin/audience.json?" + q).json()["periods"]
    assert [p["tlh_hours"] for p in js] == [float(f.findtext("tlh_hours")) for f in figs]
    assert [p["start"] for p in js] == [f.findtext("start") for f in figs]
    text = adminlib.admin(srv, "/admin/audience.csv?" + q).text
    lines = list(csv.DictReader(io.StringIO(text)))
    assert [l["tlh_hours"] for l in lines] == [f.findtext("tlh_hours") for f in figs]
    assert text.splitlines()[0] == ("start,end,mount,sessions,qualified_sessions,tlh_hours,"
                                    "atsl_seconds,cume,peak_listeners,prerolls,in_progress,countries,"
                                    "active_sessions,sessions_started,tsl_hours,aas,aqh")


@pytest.mark.parametrize("size", [(1280, 800), (360, 740)], ids=["1280px", "360px"])
def test_the_table_shows_figures_rounded_and_on_one_line(store, browser, size):
    srv, now, rows = store
    b = browser
    width, height = size
    emulate(b, width, height)
    q = "from=%d&to=%d&period=day" % (now - 5 * DAY, now)
    figs = adminlib.admin(srv, "/admin/audience?" + q).xml().findall("figures")
    b.get(srv.url("/admin/audience.xsl?" + q))
    shown = b.wait(lambda: b.js_run(ROWS_JS), 10, "the table")
    assert len(shown) == len(figs)
    assert check_fits(b, "audience-table", width) == ""
    for f, row in zip(figs, shown):
        tlh, atsl = float(f.findtext("tlh_hours")), float(f.findtext("atsl_seconds"))
        countries = ", ".join("%s %s" % (c.get("code"), c.text) for c in f.findall("countries/country"))
        want = {"From": minute(f.findtext("start")), "Mount": f.findtext("mount") or "server",
                "TLH": hours(tlh), "ATSL": short(atsl), "Countries": countries,
                # Webcast Metrics' figures beside them
                "AS": f.findtext("active_sessions"), "SS": f.findtext("sessions_started"),
                "TSL": short(round(float(f.findtext("tsl_hours")) * 3600)),
                "AAS": decimal(f.findtext("aas")), "AQH": decimal(f.findtext("aqh"))}
        assert {k: row[k] for k in want} == want, (row, want)
        assert row["tlh_title"] == short(round(tlh * 3600)) and row["datetime"] == f.findtext("start")
        # nothing but the countries (several of them) takes more than a line
        assert all(n <= 1 for k, n in row["lines"].items() if k != "Countries"), row
    assert any(", " in r["Countries"] for r in shown)
    assert any(r["TLH"] == "< 0.1" for r in shown)
    # two whole hours show their tenth: the 2-hour session of three days ago alone in its period
    # (by day it may straddle midnight, by the time of day the suite runs)
    q = "from=%d&to=%d&period=all&mount=/a" % (now - 3 * DAY - 60, now - 3 * DAY + 7260)
    b.get(srv.url("/admin/audience.xsl?" + q))
    shown = b.wait(lambda: b.js_run(ROWS_JS), 10, "the table of one session")
    assert [r["TLH"] for r in shown] == ["2.0"], shown


@pytest.mark.parametrize("size", [(1280, 800), (360, 740)], ids=["1280px", "360px"])
def test_the_period_form_picks_utc_times_and_sends_what_the_server_reads(store, browser, size):
    srv, now, rows = store
    b = browser
    width, height = size
    emulate(b, width, height)
    b.get(srv.url("/admin/audience.xsl?period=hour&mount=/a"))
    b.wait(lambda: b.find("form.audience-period"), 10, "the period form")
    doc = adminlib.admin(srv, "/admin/audience?period=hour&mount=/a").xml()
    picks = b.js_run("return Array.prototype.map.call(document.querySelectorAll("
                     "'form.audience-period input[name=from], form.audience-period input[name=to]'),"
                     " function (e) { return [e.type, e.value]; })")
    # the server's period, to the minute, in the browser's own date and time pickers
    assert picks == [["datetime-local", doc.findtext("from")[:16]],
                     ["datetime-local", doc.findtext("to")[:16]]], picks
    assert check_fits(b, "audience-form", width) == ""
    first = time.strftime("%Y-%m-%dT%H:00", time.gmtime(now - 3 * DAY))
    last = time.strftime("%Y-%m-%dT%H:00", time.gmtime(now - 3 * DAY + 6 * 3600))
    b.js_run("var f = document.querySelector('form.audience-period');"
             " f.elements.from.value = arguments[0]; f.elements.to.value = arguments[1];"
             " f.querySelector('button[type=submit]').click();", first, last)
    b.wait(lambda: "from=" in b.driver.current_url, 10, "the form sent")
    sent = urllib.parse.parse_qs(urllib.parse.urlsplit(b.driver.current_url).query)
    assert sent == {"from": [first], "to": [last], "period": ["hour"], "traffic": ["net"],
                    "mount": ["/a"]}, sent
    # the server read them as UTC: the page shows that period, an hour a row
    lede = b.wait(lambda: b.text("p.lede"), 10, "the new page")
    assert "From %s to %s (UTC), by hour" % (first.replace("T", " "), last.replace("T", " ")) in lede
    starts = b.js_run("return Array.prototype.map.call(document.querySelectorAll("
                      "'table.audience-figures time'), function (t) { return t.getAttribute('datetime'); })")
    figs = adminlib.admin(srv, "/admin/audience?from=%s&to=%s&period=hour&mount=/a"
                          % (first, last)).xml().findall("figures")
    assert starts == [f.findtext("start") for f in figs] and starts[0] == first + ":00Z"


def test_the_form_and_the_links_keep_the_server_asked(store, browser):
    """A server picked (server=, on a store several servers share) stays picked: the period form
    sends it again, and the XML, JSON, CSV and charts links carry it (and the Ads tables' XML,
    JSON and CSV links)."""
    srv, now, rows = store
    b = browser
    server = "edge 1&2"             # a name that has to be encoded in a URL
    q = urllib.parse.urlencode({"period": "day", "mount": "/a", "server": server})
    b.get(srv.url("/admin/audience.xsl?" + q))
    b.wait(lambda: b.find("form.audience-period"), 10, "the period form")
    links = b.js_run("return Array.prototype.map.call(document.querySelectorAll("
                     "'p.actions a'), function (a) { return a.href; })")
    assert len(links) == 4 + 3, links
    for href in links:
        sent = urllib.parse.parse_qs(urllib.parse.urlsplit(href).query)
        assert sent.get("server") == [server] and sent.get("mount") == ["/a"], href
    first = time.strftime("%Y-%m-%dT%H:00", time.gmtime(now - 2 * DAY))
    b.js_run("var f = document.querySelector('form.audience-period');"
             " f.elements.from.value = arguments[0];"
             " f.querySelector('button[type=submit]').click();", first)
    b.wait(lambda: first in urllib.parse.unquote(b.driver.current_url), 10, "the form sent")
    sent = urllib.parse.parse_qs(urllib.parse.urlsplit(b.driver.current_url).query)
    assert sent["server"] == [server] and sent["mount"] == ["/a"], sent
    assert sent["from"] == [first] and sent["period"] == ["day"], sent
    # the page answered is that server's: its XML says so, and its form keeps it again
    b.wait(lambda: b.text("p.lede"), 10, "the new page")
    kept = b.js_run("var e = document.querySelector('form.audience-period input[name=server]');"
                    " return e && e.value;")
    assert kept == server
