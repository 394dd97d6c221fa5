# SPDX-License-Identifier: GPL-2.0-or-later
"""The Ads tables of the audience page (/admin/audience.xsl) in a real Chromium at 1280 and
360 px, against a store of known ad decisions: per mount (the server's row first) requests,
fills, the fill rate as a percentage, impressions, starts, completes, the completion rate and
the time of ads delivered; per creative its id, the ad's title and id, each quartile; a title
and a mount name holding markup are shown as text (no script runs); the page fits the window;
its links give the same figures as XML, JSON and CSV. Without decisions in the period the page
says so. Screenshots under $TMPDIR (test_webui_mobile.shots_dir).
"""

import os
import sqlite3
import time

import pytest

import adminlib
import wirelib
from test_audience_charts import HOSTILE, browser  # noqa: F401 (a fixture)
from test_audience_store import db_path, store_to_nobody
from test_webui import ADMIN, WEB, not_pwned
from test_webui_mobile import check_fits, emulate

pytestmark = pytest.mark.rimecast_only

MOUNT = "/ads <b>&amp;</b>"
ALL, HALF = 63, 15        # events: every one; start, impression, first quartile, midpoint

# (record id, seq, session, mount, seconds ago, outcome, creative, ad id, title, events, ms)
DECISIONS = [
    ("01" * 16, 1, 1, "/a", 600, "filled", "cr-1", "ad-1", "Spring sale", ALL, 15000),
    ("01" * 16, 2, 1, "/a", 600, "filled", "url:0011223344556677", "ad-2", HOSTILE, HALF, 9000),
    ("02" * 16, 1, 2, "/a", 500, "filled", "cr-1", "ad-1", "Spring sale", ALL, 15000),
    ("03" * 16, 0, 3, "/a", 400, "timeout", None, None, None, 0, None),
    ("04" * 16, 1, 4, MOUNT, 300, "filled", "cr-1", "ad-1", "Spring sale", HALF, 8000),
    ("05" * 16, 0, 5, MOUNT, 200, "empty", None, None, None, 0, None),
]

ROWS_JS = """
return Array.prototype.map.call(document.querySelectorAll(arguments[0] + " tbody tr"),
  function (tr) {
    var out = {};
    Array.prototype.forEach.call(tr.cells, function (td) {
      out[td.getAttribute("data-label")] = td.textContent.replace(/\\s+/g, " ").trim();
    });
    return out;
  });
"""


@pytest.fixture
def ads_store(server):
    """A server whose SQLite store holds DECISIONS (written while it was stopped), with the
    repository's web/ and admin/ files; (srv, now)."""
    srv = server(webroot=WEB, adminroot=ADMIN)
    wirelib.wait_until(lambda: os.path.exists(db_path(srv)), 10, "the store created")
    assert srv.stop() == 0
    srv.stopped = False
    now = int(time.time())
    con = sqlite3.connect(db_path(srv))
    con.executemany(
        "INSERT INTO ads (record_id, seq, server, session_id, mount, hls, asked_ms, ended_ms,"
        " outcome, vast_code, break_ms, ad_id, creative_id, title, duration_ms, delivered_ms,"
        " events, reached) VALUES (?,?,'edge-1',?,?,0,?,?,?,0,30000,?,?,?,?,?,?,NULL)",
        [(rid, seq, sess, mount, (now - ago) * 1000, (now - ago + 30) * 1000, outcome, ad, cr,
          title, 15000 if cr else None, ms, ev)
         for rid, seq, sess, mount, ago, outcome, cr, ad, title, ev, ms in DECISIONS])
    con.commit()
    con.close()
    store_to_nobody(srv)
    srv.cfg["port"] = None
    srv.start()
    return srv, now


def table(b, css):
    return b.wait(lambda: b.js_run(ROWS_JS, css), 10, css)


@pytest.mark.parametrize("size", [(1280, 800), (360, 740)], ids=["1280px", "360px"])
def test_the_ads_tables_show_each_mount_and_creative_as_text(ads_store, browser, size):
    srv, now = ads_store
    b = browser
    width, height = size
    emulate(b, width, height)
    q = "from=%d&to=%d&period=all" % (now - 3600, now + 60)
    b.get(srv.url("/admin/audience.xsl?" + q))
    mounts = table(b, "table.audience-ads")
    got = {r["Mount"]: r for r in mounts}
    assert [r["Mount"] for r in mounts] == ["server", MOUNT, "/a"] or \
        [r["Mount"] for r in mounts] == ["server", "/a", MOUNT], mounts
    assert {k: got["/a"][k] for k in ("Requests", "Fills", "Fill rate", "Impressions",
                                      "Starts", "Completes", "Completion", "Ad time")} == {
        "Requests": "3", "Fills": "3", "Fill rate": "100.0%", "Impressions": "3",
        "Starts": "3", "Completes": "2", "Completion": "66.7%", "Ad time": "39s"}, got["/a"]
    assert {k: got[MOUNT][k] for k in ("Requests", "Fills", "Fill rate", "Completes")} == {
        "Requests": "2", "Fills": "1", "Fill rate": "50.0%", "Completes": "0"}, got[MOUNT]
    assert got["server"]["Requests"] == "5" and got["server"]["Fill rate"] == "80.0%"
    creatives = {r["Creative"]: r for r in table(b, "table.audience-creatives")}
    assert set(creatives) == {"cr-1", "url:0011223344556677"}
    assert creatives["cr-1"]["Ad"] == "Spring sale (ad-1)"
    assert {k: creatives["cr-1"][k] for k in ("Impressions", "Q1", "Mid", "Q3", "Completes",
                                             "Completion")} == {
        "Impressions": "3", "Q1": "3", "Mid": "3", "Q3": "2", "Completes": "2",
        "Completion": "66.7%"}
    assert creatives["url:0011223344556677"]["Ad"] == HOSTILE + " (ad-2)"   # as text
    not_pwned(b)
    assert check_fits(b, "audience-ads", width) == ""
    # the links give the same figures
    links = b.js_run("return Array.prototype.map.call(document.querySelectorAll("
                     "'#ads + p.actions a'), function (a) { return a.getAttribute('href'); })")
    assert [l.split("?")[0] for l in links] == ["/admin/audience/ads", "/admin/audience/ads.json",
                                                "/admin/audience/ads.csv"], links
    j = adminlib.admin(srv, links[1]).json()
    assert {m["mount"] or "server": m["requests"] for m in j["mounts"]} == {
        "server": 5, "/a": 3, MOUNT: 2}
    assert HOSTILE in [c["title"] for c in j["creatives"]]


def test_without_ad_decisions_in_the_period_the_page_says_so(ads_store, browser):
    srv, now = ads_store
    b = browser
    emulate(b, 1280, 800)
    b.get(srv.url("/admin/audience.xsl?from=%d&to=%d&period=all" % (now - 90 * 86400,
                                                                     now - 80 * 86400)))
    b.wait(lambda: b.text("p.empty"), 10, "the page")
    assert b.text("p.empty") == "No ad decisions in this period."
    assert not b.find("table.audience-ads")
