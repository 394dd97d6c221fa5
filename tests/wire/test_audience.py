# SPDX-License-Identifier: GPL-2.0-or-later
"""Audience figures from the session store: /admin/audience (XML, JSON, CSV) and /metrics.

Covers: sessions, qualified sessions (<qualified-session-seconds>, 2 s here), TLH, ATSL, CUME
(distinct address + user agent among qualified sessions) and peak concurrent listeners, per
mount and for the server, for a period and cut into hours; the same numbers in every view;
mount= keeps one mount; bad periods answer 400; without a database 503; the /metrics
counters rimecast_audience_sessions_total, _qualified_sessions_total and
_listening_seconds_total per mount.
"""

import csv
import io
import threading
import time

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
            "listened_seconds": listened / 1000.0,
            "tlh": round(listened / 3600000.0, 6),
            "atsl_seconds": (listened // len(q)) / 1000.0 if q else 0.0,
            "cume": len({(r["address"], r["agent"]) for r in q}), "peak": peak}


@pytest.fixture
def station(server, data):
    srv = start_server(server, "<qualified-session-seconds>%d</qualified-session-seconds>"
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


def by_mount(figures):
    return {f["mount"]: f for f in figures}


def as_expected(f):
    keep = ("sessions", "qualified_sessions", "listened_seconds", "tlh", "atsl_seconds",
            "cume", "peak")
    return {k: (int(f[k]) if k in ("sessions", "qualified_sessions", "cume", "peak")
                else float(f[k])) for k in keep}


def test_figures_follow_the_definitions_for_each_mount_and_the_server(station):
    srv, db, t0, t1 = station
    doc = adminlib.admin(srv, "/admin/audience?from=%d&to=%d" % (t0, t1)).xml()
    assert doc.tag == "audience" and doc.findtext("qualified_seconds") == str(QUALIFY)
    figs = by_mount([{c.tag: (c.text or "") for c in f} for f in doc.findall("figures")])
    assert sorted(figs) == ["", "/a", "/b"]
    assert as_expected(figs["/a"]) == expected(db, "/a")
    assert as_expected(figs["/b"]) == expected(db, "/b")
    assert as_expected(figs[""]) == expected(db)
    # what the session lengths make them: 5 and 1 sessions, 3 qualified, 2 listeners
    a = figs["/a"]
    assert (int(a["sessions"]), int(a["qualified_sessions"]), int(a["cume"]),
            int(a["peak"])) == (5, 3, 2, 3)
    assert 3 * QUALIFY <= float(a["listened_seconds"]) <= 3 * (QUALIFY + 1.5)
    b = figs["/b"]
    assert (int(b["sessions"]), int(b["qualified_sessions"]), b["tlh"], int(b["peak"])) == \
        (1, 0, "0.000000", 1)
    # exact text: seconds to the millisecond, hours to six places
    ms = sum(r["end_ms"] - r["start_ms"] for r in db if r["mount"] == "/a" and
             r["end_ms"] - r["start_ms"] >= QUALIFY * 1000)
    assert a["listened_seconds"] == "%d.%03d" % divmod(ms, 1000)
    assert a["tlh"] == "%.6f" % (ms / 3600000.0)


def test_json_and_csv_say_the_same_and_mount_keeps_one_mount(station):
    srv, db, t0, t1 = station
    q = "from=%d&to=%d" % (t0, t1)
    j = adminlib.admin(srv, "/admin/audience.json?" + q).json()["audience"]
    figs = by_mount(j["figures"])
    assert as_expected(figs["/a"]) == expected(db, "/a")
    assert as_expected(figs[""]) == expected(db)
    r = adminlib.admin(srv, "/admin/audience.csv?" + q)
    assert r.status == 200 and r.header("content-type").startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(r.text)))
    assert [l["mount"] for l in lines] == ["", "/a", "/b"]
    assert as_expected(by_mount(lines)["/a"]) == expected(db, "/a")
    one = adminlib.admin(srv, "/admin/audience.csv?mount=/b&" + q).text
    lines = list(csv.DictReader(io.StringIO(one)))
    assert [l["mount"] for l in lines] == ["/b"]
    assert as_expected(lines[0]) == expected(db, "/b")


def test_by_hour_cuts_the_period_at_whole_hours(station):
    srv, db, t0, t1 = station
    start = t0 - 3 * 3600   # a period over several hours: whole buckets at hour ends
    j = adminlib.admin(srv, "/admin/audience.json?by=hour&from=%d&to=%d" % (start, t1)).json()
    server_rows = [f for f in j["audience"]["figures"] if f["mount"] == ""]
    assert len(server_rows) in (4, 5)
    edges = [(f["from"], f["to"]) for f in server_rows]
    for (_, end), (nxt, _) in zip(edges, edges[1:]):
        assert end == nxt and end.endswith(":00:00Z")
    assert sum(f["sessions"] for f in server_rows) >= 6
    assert sum(int(f["sessions"]) for f in j["audience"]["figures"] if f["mount"] == "/a") >= 5


def test_metrics_count_sessions_qualified_and_seconds_per_mount(station):
    srv, db, t0, t1 = station
    text = adminlib.admin(srv, "/metrics").text
    e = expected(db, "/a")
    assert 'rimecast_audience_sessions_total{mount="/a"} 5' in text
    assert 'rimecast_audience_qualified_sessions_total{mount="/a"} 3' in text
    assert 'rimecast_audience_listening_seconds_total{mount="/a"} %.3f' % e["listened_seconds"] \
        in text
    assert 'rimecast_audience_qualified_sessions_total{mount="/b"} 0' in text
    assert "# TYPE rimecast_audience_sessions_total counter" in text


def test_bad_periods_are_refused(station):
    srv = station[0]
    for q in ("from=abc", "from=10&to=5", "by=week", "by=hour&from=0&to=99999999"):
        r = adminlib.admin(srv, "/admin/audience?" + q)
        assert r.status == 400, q


def test_without_a_database_the_figures_answer_503(server):
    srv = start_server(server, "<audience-db>none</audience-db>")
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
    html = adminlib.admin(srv, "/admin/audience.xsl?by=hour&from=%d&to=%d" % (t0, t1))
    assert html.status == 200 and html.header("content-type").startswith("text/html")
    b = webuilib.Browser(auth=(adminlib.ADMIN_USER, adminlib.ADMIN_PASSWORD))
    try:
        for width, height in ((1280, 800), (360, 740)):
            emulate(b, width, height)
            b.get(srv.url("/admin/audience.xsl?by=hour&from=%d&to=%d" % (t0, t1)))
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
