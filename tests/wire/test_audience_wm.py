# SPDX-License-Identifier: GPL-2.0-or-later
"""Webcast Metrics' figures in /admin/audience: active_sessions (AS), sessions_started (SS),
tsl_hours (TLH / CUME), aas (TLH / hours) and aqh (listeners with five minutes of each whole
clock quarter-hour, averaged), on the SQLite store and on PostgreSQL.

Covers: curl listening 65 s counts in AS and SS, curl listening 45 s does not (a session
counts from one minute), on both stores, in JSON, CSV and XML; the worked example of
docs/AUDIENCE.md (sessions of 59 and 61 s, one over a quarter-hour's edge, one begun the
hour before) written into both stores gives the example's figures, the same on both; a
session of 30 hours counts its first 24 only (example K), on both stores, its record whole.
"""

import csv
import io
import sqlite3
import subprocess
import threading
import time
import xml.etree.ElementTree as ET

import pytest

import adminlib
import wirelib
from test_audience_pg import cluster, pg_rows, pg_server   # noqa: F401 (a fixture)
from test_audience_store import db_path, wait_rows
from test_sessions import live, start_server

pytestmark = pytest.mark.rimecast_only

WM = ("active_sessions", "sessions_started", "tsl_hours", "aas", "aqh")


def curl_for(srv, seconds, agent):
    """curl listening to /live for `seconds` (its --max-time ends it)."""
    subprocess.run(["curl", "-s", "-o", "/dev/null", "-A", agent, "--max-time", str(seconds),
                    "http://%s:%d/live" % (srv.host, srv.port)], check=False, timeout=seconds + 10)


def wm_json(srv, query):
    j = adminlib.admin(srv, "/admin/audience.json?" + query).json()
    return {(p["start"], p["mount"] or ""): {k: p[k] for k in WM + ("sessions", "cume",
                                                                     "tlh_hours")}
            for p in j["periods"]}


def wm_csv(srv, query):
    text = adminlib.admin(srv, "/admin/audience.csv?" + query).text
    return {(l["start"], l["mount"]): l for l in csv.DictReader(io.StringIO(text))}


def wm_xml(srv, query):
    doc = adminlib.admin(srv, "/admin/audience?" + query).xml()
    return {(f.findtext("start"), f.findtext("mount") or ""): f for f in doc.findall("figures")}


@pytest.mark.slow
def test_a_session_counts_in_as_and_ss_from_one_minute_on_both_stores(server, data, cluster):
    db = cluster.new_database()
    lite = start_server(server, audience_xml="<min-session>2</min-session>")
    pg = pg_server(server, cluster.uri(db), "edge-wm")
    srcs = [live(s, data, "/live") for s in (lite, pg)]
    t0 = int(time.time()) - 1
    runs = [threading.Thread(target=curl_for, args=(s, n, "curl-%d" % n))
            for s in (lite, pg) for n in (65, 45)]
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    stored = wait_rows(lite, 2)
    wirelib.wait_until(lambda: len(pg_rows(cluster, db)) >= 2, 15, "2 rows in PostgreSQL")
    t1 = int(time.time()) + 1
    q = "period=all&from=%d&to=%d" % (t0, t1)
    for srv in (lite, pg):
        f = wm_json(srv, q)
        live_row = [v for (_, m), v in f.items() if m == "/live"][0]
        # both sessions in the store's own figures (over min-session), one a session by
        # Webcast Metrics' rule
        assert live_row["sessions"] == 2 and live_row["active_sessions"] == 1
        assert live_row["sessions_started"] == 1
        assert live_row["aqh"] == 0.0            # no whole quarter-hour in about 66 s
        tlh = live_row["tlh_hours"]
        assert abs(live_row["tsl_hours"] - tlh / live_row["cume"]) <= 1.5e-6
        assert abs(live_row["aas"] - round(tlh * 3600 / (t1 - t0), 3)) <= 0.0015
        c = wm_csv(srv, q)
        line = [v for (_, m), v in c.items() if m == "/live"][0]
        assert (int(line["active_sessions"]), int(line["sessions_started"])) == (1, 1)
        assert float(line["tsl_hours"]) == live_row["tsl_hours"]
        x = [v for (_, m), v in wm_xml(srv, q).items() if m == "/live"][0]
        assert [x.findtext(k) for k in ("active_sessions", "sessions_started")] == ["1", "1"]
    lengths = sorted(r["end_ms"] - r["start_ms"] for r in stored)
    assert lengths[0] < 60000 <= lengths[1]
    for s in srcs:
        s.stop()


# The worked example of docs/AUDIENCE.md, on the day before yesterday: (address, agent,
# start, end) as seconds from 10:00 UTC.
EXAMPLE = [("192.0.2.1", "a", 0, 59), ("192.0.2.2", "b", 0, 61),
           ("192.0.2.2", "b", 720, 1200), ("192.0.2.4", "d", -600, 2400)]


def test_the_worked_example_gives_its_figures_on_both_stores(server, cluster):
    db = cluster.new_database()
    lite = start_server(server, audience_xml="<min-session>60</min-session>")
    pg = start_server(server, audience_xml="<database>%s</database><server-name>edge-wm"
                      "</server-name><min-session>60</min-session>" % cluster.uri(db))
    for s in (lite, pg):
        s.wait_log("audience store: sessions are kept in", 10)
    day = (int(time.time()) // 86400 - 2) * 86400
    ten = (day + 10 * 3600) * 1000
    con = sqlite3.connect(db_path(lite), timeout=5)
    with con:
        for i, (ip, ua, a, b) in enumerate(EXAMPLE):
            con.execute("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes,"
                        " ip, user_agent, ended) VALUES (?, '/wm', '/wm', ?, ?, 1, ?, ?,"
                        " 'client_left')", (i + 1, ten + a * 1000, ten + b * 1000, ip, ua))
    con.close()
    values = ",".join("(gen_random_uuid(), 'edge-wm', %d, '/wm', '/wm', %d, %d, 1, '%s', '%s',"
                      " 'client_left')" % (i + 1, ten + a * 1000, ten + b * 1000, ip, ua)
                      for i, (ip, ua, a, b) in enumerate(EXAMPLE))
    cluster.psql("INSERT INTO sessions (record_id, server, conn_id, mount, served, start_ms,"
                 " end_ms, bytes, ip, user_agent, ended) VALUES " + values, db)
    q = "period=hour&from=%d&to=%d" % (day + 9 * 3600, day + 11 * 3600)
    got = [wm_json(s, q) for s in (lite, pg)]
    assert got[0] == got[1]
    start = time.strftime("%Y-%m-%dT10:00:00Z", time.gmtime(day))
    assert got[0][(start, "/wm")] == {
        "active_sessions": 3, "sessions_started": 2, "tsl_hours": 0.408472, "aas": 0.817,
        "aqh": 1.0, "sessions": 4, "cume": 2, "tlh_hours": 0.816944}
    nine = time.strftime("%Y-%m-%dT09:00:00Z", time.gmtime(day))
    # the hour before: D alone, begun in it, 10 min of 09:45-10:00: one listener in one
    # quarter-hour of four
    assert got[0][(nine, "/wm")]["sessions_started"] == 1
    assert got[0][(nine, "/wm")]["aqh"] == 0.25
    # asked again on PostgreSQL: the hours kept in its cache, the same answer
    assert wm_json(pg, q) == got[1]
    assert [int(v[0]) for v in cluster.psql("SELECT version FROM rimecast_schema ORDER BY 1",
                                            db)] == [1, 2, 3, 4, 5, 6, 7]
    csv_rows = [wm_csv(s, q)[(start, "/wm")] for s in (lite, pg)]
    assert [r["aqh"] for r in csv_rows] == ["1.000", "1.000"]
    assert ET.tostring(wm_xml(lite, q)[(start, "/wm")]) == ET.tostring(wm_xml(pg, q)[(start, "/wm")])


def test_a_session_counts_its_first_24_hours_only_on_both_stores(server, cluster):
    """Example K of docs/AUDIENCE.md: m listens 30 hours, 12:00 of day 1 to 18:00 of day 2;
    n half an hour, 23:00-23:30 of day 1."""
    db = cluster.new_database()
    lite = start_server(server)
    pg = start_server(server, audience_xml="<database>%s</database><server-name>edge-cap"
                      "</server-name>" % cluster.uri(db))
    for s in (lite, pg):
        s.wait_log("audience store: sessions are kept in", 10)
    day = (int(time.time()) // 86400 - 4) * 86400
    hour = 3600 * 1000
    example = [("198.51.100.1", "m", (day * 1000 + 12 * hour), (day * 1000 + 42 * hour)),
               ("198.51.100.2", "n", (day * 1000 + 23 * hour), (day * 1000 + 47 * hour // 2))]
    con = sqlite3.connect(db_path(lite), timeout=5)
    with con:
        for i, (ip, ua, a, b) in enumerate(example):
            con.execute("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes,"
                        " ip, user_agent, ended) VALUES (?, '/cap', '/cap', ?, ?, 1, ?, ?,"
                        " 'client_left')", (i + 1, a, b, ip, ua))
    con.close()
    values = ",".join("(gen_random_uuid(), 'edge-cap', %d, '/cap', '/cap', %d, %d, 1, '%s',"
                      " '%s', 'client_left')" % (i + 1, a, b, ip, ua)
                      for i, (ip, ua, a, b) in enumerate(example))
    cluster.psql("INSERT INTO sessions (record_id, server, conn_id, mount, served, start_ms,"
                 " end_ms, bytes, ip, user_agent, ended) VALUES " + values, db)
    q = "period=day&from=%d&to=%d" % (day, day + 3 * 86400)
    got = [wm_json(s, q) for s in (lite, pg)]
    assert got[0] == got[1]
    d1, d2 = (time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime(day + n * 86400))
              for n in (0, 1))
    # day 1: m's 12 hours and n's half hour; day 2: m's first 12 hours, not its last 6
    assert got[0][(d1, "/cap")]["tlh_hours"] == 12.5
    assert got[0][(d1, "/cap")]["active_sessions"] == 2
    assert got[0][(d2, "/cap")]["tlh_hours"] == 12.0
    assert (got[0][(d2, "/cap")]["active_sessions"], got[0][(d2, "/cap")]["sessions_started"]) \
        == (1, 0)
    # 13:00-14:00 of day 2: after m's 24 hours, no session at all
    late = "period=all&from=%d&to=%d" % (day + 37 * 3600, day + 38 * 3600)
    for srv in (lite, pg):
        rows = adminlib.admin(srv, "/admin/audience.json?" + late).json()["periods"]
        assert [p for p in rows if p["mount"] == "/cap"] == []
    # the records as they were
    con = sqlite3.connect(db_path(lite), timeout=5)
    assert con.execute("SELECT end_ms FROM sessions WHERE user_agent = 'm'").fetchone()[0] \
        == day * 1000 + 42 * hour
    con.close()
    assert cluster.psql("SELECT end_ms FROM sessions WHERE user_agent = 'm'", db) \
        == [[str(day * 1000 + 42 * hour)]]
