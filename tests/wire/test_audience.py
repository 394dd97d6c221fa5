# SPDX-License-Identifier: GPL-2.0-or-later
"""Audience figures from the session store: /admin/audience (XML, JSON, CSV) and /metrics.

Covers: sessions, qualified sessions (<audience><min-session>, 2 s here), TLH, ATSL, CUME
(distinct address + user agent among qualified sessions) and peak concurrent listeners, per
mount and for the server, for a period and cut into hours (period=hour); the published JSON
shape ({periods: [{start, end, mount (null: the server), ...}]}) and the same numbers in
every view; from and to as unix seconds or ISO 8601 with an offset; mount= keeps one mount;
bad periods answer 400; without a database 503; the /metrics counters
rimecast_audience_sessions_total, _qualified_sessions_total and _listening_seconds_total per
mount.
"""

import csv
import datetime
import io
import threading
import time
import xml.etree.ElementTree as ET

import pytest

import adminlib
import wirelib
from test_audience_store import db_path, rows, wait_rows
from test_sessions import live, start_server

pytestmark = pytest.mark.rimecast_only

QUALIFY = 2


def hold(srv, mount, agent, seconds):
    """A listener session of about `seconds` (a known length, not a wait for something)."""
    s = wirelib.connect(srv.host, srv.port, 5)
    s.sendall(("GET %s HTTP/1.0\r\nUser-Agent: %s\r\n\r\n" % (mount, agent)).encode())
    head, _ = wirelib.read_head(s, 5)
    assert head.status == 200
    time.sleep(seconds)
    s.close()


def concurrently(*calls):
    threads = [threading.Thread(target=f, args=a) for f, *a in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def expected(db_rows, mount=None):
    """The figures by their definitions, from the stored rows (all inside the period)."""
    rs = [r for r in db_rows if mount is None or r["mount"] == mount]
    q = [r for r in rs if r["end_ms"] - r["start_ms"] >= QUALIFY * 1000]
    listened = sum(r["end_ms"] - r["start_ms"] for r in q)
    events = sorted([(r["start_ms"], 1) for r in rs] + [(r["end_ms"], -1) for r in rs],
                    key=lambda e: (e[0], e[1]))
    peak = now = 0
    for _, d in events:
        now += d
        peak = max(peak, now)
    return {"sessions": len(rs), "qualified_sessions": len(q),
            "tlh_hours": round(listened / 3600000.0, 6),
            "atsl_seconds": (listened // len(q)) / 1000.0 if q else 0.0,
            "cume": len({(r["ip"], r["user_agent"]) for r in q}), "peak_listeners": peak,
            "prerolls": 0, "in_progress": 0}


@pytest.fixture
def station(server, data):
    srv = start_server(server, audience_xml="<min-session>%d</min-session>"
                       % QUALIFY)
    srcs = [live(srv, data, "/a"), live(srv, data, "/b")]
    t0 = int(time.time()) - 1
    # on /a: three long sessions at once (two of one listener), then two short ones
    concurrently((hold, srv, "/a", "x", QUALIFY + 0.5), (hold, srv, "/a", "x", QUALIFY + 0.5),
                 (hold, srv, "/a", "y", QUALIFY + 0.5))
    hold(srv, "/a", "z", 0.2)
    hold(srv, "/a", "z", 0.2)
    hold(srv, "/b", "x", 0.2)   # /b: one short session
    db = wait_rows(srv, 6)
    t1 = int(time.time()) + 1
    yield srv, db, t0, t1
    for s in srcs:
        s.stop()


PUBLISHED = ["start", "end", "mount", "sessions", "qualified_sessions", "tlh_hours",
             "atsl_seconds", "cume", "peak_listeners", "prerolls", "in_progress", "countries",
             "active_sessions", "sessions_started", "tsl_hours", "aas", "aqh"]
COUNTS = ("sessions", "qualified_sessions", "cume", "peak_listeners", "prerolls",
          "in_progress")


def by_mount(figures):
    return {f["mount"] or "": f for f in figures}


def as_expected(f):
    keep = COUNTS + ("tlh_hours", "atsl_seconds")
    return {k: (int(f[k]) if k in COUNTS else float(f[k])) for k in keep}


def test_figures_follow_the_definitions_for_each_mount_and_the_server(station):
    srv, db, t0, t1 = station
    doc = adminlib.admin(srv, "/admin/audience?period=all&from=%d&to=%d" % (t0, t1)).xml()
    xml = adminlib.admin(srv, "/admin/audience.xml?period=all&from=%d&to=%d" % (t0, t1))
    assert xml.header("content-type").startswith("text/xml")
    assert ET.tostring(xml.xml()) == ET.tostring(doc)      # the same document by its .xml name
    assert doc.tag == "audience" and doc.findtext("min_session") == str(QUALIFY)
    assert [s.text for s in doc.findall("servers/server")] == sorted({r["server"] for r in db})
    figs = by_mount([{c.tag: (c.text or "") for c in f} for f in doc.findall("figures")])
    assert sorted(figs) == ["", "/a", "/b"]
    assert as_expected(figs["/a"]) == expected(db, "/a")
    assert as_expected(figs["/b"]) == expected(db, "/b")
    assert as_expected(figs[""]) == expected(db)
    # what the session lengths make them: 5 and 1 sessions, 3 qualified, 2 listeners
    a = figs["/a"]
    assert (int(a["sessions"]), int(a["qualified_sessions"]), int(a["cume"]),
            int(a["peak_listeners"])) == (5, 3, 2, 3)
    assert 3 * QUALIFY <= float(a["tlh_hours"]) * 3600 <= 3 * (QUALIFY + 1.5)
    b = figs["/b"]
    assert (int(b["sessions"]), int(b["qualified_sessions"]), b["tlh_hours"],
            int(b["peak_listeners"])) == (1, 0, "0.000000", 1)
    # exact text: seconds to the millisecond, hours to six places
    ms = sum(r["end_ms"] - r["start_ms"] for r in db if r["mount"] == "/a" and
             r["end_ms"] - r["start_ms"] >= QUALIFY * 1000)
    assert a["atsl_seconds"] == "%d.%03d" % divmod(ms // 3, 1000)
    assert a["tlh_hours"] == "%.6f" % (ms / 3600000.0)


def test_json_has_the_published_shape_and_csv_says_the_same(station):
    srv, db, t0, t1 = station
    q = "period=all&from=%d&to=%d" % (t0, t1)
    r = adminlib.admin(srv, "/admin/audience.json?" + q)
    assert r.header("content-type").startswith("application/json")
    j = r.json()
    assert list(j) == ["periods", "servers", "traffic"]
    assert j["traffic"] == "net"   # the valid sessions only, by default
    # the servers with sessions in the period (for a picker): this one, as its records say
    assert j["servers"] == sorted({r["server"] for r in db}) and len(j["servers"]) == 1
    assert [p["mount"] for p in j["periods"]] == [None, "/a", "/b"]
    for p in j["periods"]:
        assert sorted(p) == sorted(PUBLISHED)
        assert (p["start"], p["end"]) == (iso(t0), iso(t1))
        assert all(isinstance(p[k], int) for k in COUNTS)
        assert isinstance(p["tlh_hours"], float) and isinstance(p["atsl_seconds"], float)
        assert p["countries"] == {"unknown": p["sessions"]}   # no GeoIP database here
    figs = by_mount(j["periods"])
    assert as_expected(figs["/a"]) == expected(db, "/a")
    assert as_expected(figs[""]) == expected(db)
    r = adminlib.admin(srv, "/admin/audience.csv?" + q)
    assert r.status == 200 and r.header("content-type").startswith("text/csv")
    assert r.text.splitlines()[0].split(",") == PUBLISHED
    lines = list(csv.DictReader(io.StringIO(r.text)))
    assert [l["mount"] for l in lines] == ["", "/a", "/b"]
    assert lines[1]["countries"] == "unknown=5"
    assert as_expected(by_mount(lines)["/a"]) == expected(db, "/a")
    # empty parameters, as a form sends them, are the defaults: every mount and the server
    blank = adminlib.admin(srv, "/admin/audience.csv?from=&to=&mount=&period=all")
    assert [l["mount"] for l in csv.DictReader(io.StringIO(blank.text))] == ["", "/a", "/b"]
    one = adminlib.admin(srv, "/admin/audience.csv?mount=/b&" + q).text
    lines = list(csv.DictReader(io.StringIO(one)))
    assert [l["mount"] for l in lines] == ["/b"]
    assert as_expected(lines[0]) == expected(db, "/b")


def iso(t, offset_minutes=0):
    tz = datetime.timezone(datetime.timedelta(minutes=offset_minutes))
    text = datetime.datetime.fromtimestamp(t, tz).strftime("%Y-%m-%dT%H:%M:%S")
    if not offset_minutes:
        return text + "Z"
    sign = "+" if offset_minutes > 0 else "-"
    return text + "%s%02d:%02d" % ((sign,) + divmod(abs(offset_minutes), 60))


def test_period_hour_cuts_the_period_at_whole_hours(station):
    srv, db, t0, t1 = station
    start = t0 - 3 * 3600   # a period over several hours: whole buckets at hour ends
    j = adminlib.admin(srv, "/admin/audience.json?period=hour&from=%d&to=%d"
                       % (start, t1)).json()
    server_rows = [f for f in j["periods"] if f["mount"] is None]
    assert len(server_rows) in (4, 5)
    edges = [(f["start"], f["end"]) for f in server_rows]
    for (_, end), (nxt, _) in zip(edges, edges[1:]):
        assert end == nxt and end.endswith(":00:00Z")
    assert sum(f["sessions"] for f in server_rows) >= 6
    assert sum(f["sessions"] for f in j["periods"] if f["mount"] == "/a") >= 5


def test_the_period_is_a_day_by_default(station):
    srv, db, t0, t1 = station
    span = "from=%d&to=%d" % (t0 - 2 * 86400, t1)   # three days, or four across a midnight
    by_default = adminlib.admin(srv, "/admin/audience.json?" + span).json()
    assert by_default == adminlib.admin(srv, "/admin/audience.json?period=day&" + span).json()
    server_rows = [f for f in by_default["periods"] if f["mount"] is None]
    assert len(server_rows) in (3, 4)
    for f in server_rows[1:]:
        assert f["start"].endswith("T00:00:00Z")
    assert adminlib.admin(srv, "/admin/audience?" + span).xml().findtext("period") == "day"


def test_from_and_to_take_iso_8601_with_an_offset_and_a_mount(station):
    srv, db, t0, t1 = station
    for q in ("from=%s&to=%s" % (iso(t0), iso(t1)),
              "from=%s&to=%s" % (iso(t0, 120).replace("+", "%2B"), iso(t1, -330))):
        j = adminlib.admin(srv, "/admin/audience.json?period=all&mount=/a&" + q).json()
        assert [(p["start"], p["end"], p["mount"]) for p in j["periods"]] == \
            [(iso(t0), iso(t1), "/a")], q
        assert as_expected(j["periods"][0]) == expected(db, "/a")


def test_metrics_count_sessions_qualified_and_seconds_per_mount(station):
    srv, db, t0, t1 = station
    text = adminlib.admin(srv, "/metrics").text
    assert 'rimecast_audience_sessions_total{mount="/a"} 5' in text
    assert 'rimecast_audience_qualified_sessions_total{mount="/a"} 3' in text
    listened = sum(r["end_ms"] - r["start_ms"] for r in db if r["mount"] == "/a" and
                   r["end_ms"] - r["start_ms"] >= QUALIFY * 1000)
    assert 'rimecast_audience_listening_seconds_total{mount="/a"} %d.%03d' \
        % divmod(listened, 1000) in text
    assert 'rimecast_audience_qualified_sessions_total{mount="/b"} 0' in text
    assert "# TYPE rimecast_audience_sessions_total counter" in text


def test_bad_periods_are_refused(station):
    srv = station[0]
    for q in ("from=abc", "from=10&to=5", "period=week", "period=hour&from=0&to=99999999",
              "from=2026-11-26T10:00:00%2B25:00"):
        r = adminlib.admin(srv, "/admin/audience?" + q)
        assert r.status == 400, q


def test_without_a_database_the_figures_answer_503(server):
    srv = start_server(server, audience_xml="<database>none</database>")
    assert adminlib.admin(srv, "/admin/audience").status == 503
    assert adminlib.admin(srv, "/admin/audience.csv").status == 503


@pytest.mark.browser
def test_the_audience_page_shows_the_figures_and_fits_1280_and_360_px(station):
    """The XSLT view in a real Chromium at desktop and phone widths."""
    import webuilib
    from test_webui_mobile import check_fits, emulate
    missing = webuilib.missing_requirements()
    if missing:
        pytest.skip(missing)
    srv, db, t0, t1 = station
    html = adminlib.admin(srv, "/admin/audience.xsl?period=hour&from=%d&to=%d" % (t0, t1))
    assert html.status == 200 and html.header("content-type").startswith("text/html")
    b = webuilib.Browser(auth=(adminlib.ADMIN_USER, adminlib.ADMIN_PASSWORD))
    try:
        for width, height in ((1280, 800), (360, 740)):
            emulate(b, width, height)
            b.get(srv.url("/admin/audience.xsl?period=hour&from=%d&to=%d" % (t0, t1)))
            b.wait(lambda: b.find("table.audience-figures tbody tr"), 10, "the figures")
            cells = [[td.text for td in tr.find_elements("css selector", "td")]
                     for tr in b.find("table.audience-figures tbody tr")]
            a = [c for c in cells if c[1] == "/a"]
            assert sum(int(c[2]) for c in a) == 5 and sum(int(c[3]) for c in a) == 3
            assert "server" in [c[1] for c in cells]
            assert check_fits(b, "audience", width) == ""
            assert not [e for e in b.console_errors() if "favicon" not in e], width
    finally:
        b.close()


def test_a_session_going_on_counts_once_qualified_as_in_progress(server, data):
    srv = start_server(server, audience_xml="<min-session>1</min-session>")
    src = live(srv, data, "/a")
    lis = srv.listener("/a", headers={"User-Agent": "still-here"})
    assert lis.open().status == 200
    t0 = time.time()

    def now_figures():
        j = adminlib.admin(srv, "/admin/audience.json?period=all&mount=/a").json()
        return j["periods"][0] if j["periods"] else None

    # not yet qualified: not counted (it may still end short); then counted as far as it went
    first = now_figures()
    if time.time() - t0 < 0.9:
        assert first is None
    f = wirelib.wait_until(lambda: (now_figures() or {}).get("in_progress") == 1 and
                           now_figures(), 10, "the session going on in the figures")
    assert (f["sessions"], f["qualified_sessions"], f["cume"], f["peak_listeners"]) == \
        (1, 1, 1, 1)
    assert 1.0 / 3600 <= f["tlh_hours"] <= (time.time() - t0 + 1) / 3600
    assert f["atsl_seconds"] >= 1.0
    assert rows(srv) == []      # nothing ended: the store has no record of it yet
    lis.close()
    wait_rows(srv, 1)
    f = wirelib.wait_until(lambda: (now_figures() or {}).get("in_progress") == 0 and
                           now_figures(), 10, "the ended session")
    assert (f["sessions"], f["qualified_sessions"]) == (1, 1)
    src.stop()
