# SPDX-License-Identifier: GPL-2.0-or-later
"""Pauses and the listener key in the audience figures, on the SQLite store and on PostgreSQL.

Covers: curl listening twice on /live with a pause shorter than <resume-seconds> counts as one
session in AS and SS (its parts, under a minute each, only together), one coming back after a
longer pause counts twice, each once in CUME; two addresses (127.0.0.1, 127.0.0.2) sending the
same listener id in <listener-id-param> are one listener in CUME; every record is kept as it
was, with its listener key (the session log, both stores); the same figures on both stores for
keyed sessions with pauses, overlaps and records without a key, by hour, by day and whole.
"""

import random
import sqlite3
import subprocess
import threading
import time

import pytest

import adminlib
import wirelib
from test_audience_pg import cluster, pg_rows   # noqa: F401 (a fixture)
from test_audience_store import db_path, rows, wait_rows
from test_sessions import live, records, start_server

pytestmark = pytest.mark.rimecast_only

RESUME = 5
AUDIENCE = ("<resume-seconds>%d</resume-seconds><listener-id-param>lid</listener-id-param>"
            % RESUME)


def curl_for(srv, seconds, agent, query="", interface=None):
    """curl listening to /live for `seconds` (its --max-time ends it)."""
    cmd = ["curl", "-s", "-o", "/dev/null", "-A", agent, "--max-time", str(seconds)]
    if interface:
        cmd += ["--interface", interface]
    subprocess.run(cmd + ["http://%s:%d/live%s" % (srv.host, srv.port, query)], check=False,
                   timeout=seconds + 10)


def listener(srv, plan):
    """Runs plan: (seconds listening, pause after, agent, query, interface) in turn."""
    for seconds, pause, agent, query, interface in plan:
        curl_for(srv, seconds, agent, query, interface)
        time.sleep(pause)   # the pause itself is what is under test


PLANS = [
    # a: 35 s, back after 2 s (within 5), 35 s: one session of 70 s
    [(35, 2, "curl-a", "", None), (35, 0, "curl-a", "", None)],
    # b: 61 s, back after 9 s, 61 s: two sessions
    [(61, 9, "curl-b", "", None), (61, 0, "curl-b", "", None)],
    # c: the same listener id from two addresses, 9 s apart: two sessions, one listener
    [(61, 9, "curl-c", "?lid=c-1", None), (61, 0, "curl-c", "?lid=c-1", "127.0.0.2")],
]


def live_figures(srv, t0, t1):
    j = adminlib.admin(srv, "/admin/audience.json?period=all&from=%d&to=%d" % (t0, t1)).json()
    return [p for p in j["periods"] if p["mount"] == "/live"][0]


@pytest.mark.slow
def test_a_listener_back_within_resume_seconds_is_one_session_on_both_stores(server, data,
                                                                              cluster):
    db = cluster.new_database()
    lite = start_server(server, audience_xml=AUDIENCE)
    pg = start_server(server, audience_xml="<database>%s</database><server-name>edge-p"
                      "</server-name>%s" % (cluster.uri(db), AUDIENCE))
    srcs = [live(s, data, "/live") for s in (lite, pg)]
    t0 = int(time.time()) - 1
    runs = [threading.Thread(target=listener, args=(s, p)) for s in (lite, pg) for p in PLANS]
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    stored = wait_rows(lite, 6)
    wirelib.wait_until(lambda: len(pg_rows(cluster, db)) >= 6, 15, "6 rows in PostgreSQL")
    t1 = int(time.time()) + 1
    for srv in (lite, pg):
        f = live_figures(srv, t0, t1)
        # the records as they were; a: one session (70 s together), b and c: two each
        assert f["sessions"] == 6
        assert (f["active_sessions"], f["sessions_started"], f["qualified_sessions"]) == (5, 5, 5)
        # a, b and c (c from two addresses, by its listener id)
        assert f["cume"] == 3
    # every record kept, each with its key: a's two alike, c's two alike, b's two alike
    keys = {}
    for r in records(lite):
        keys.setdefault(r["user_agent"], set()).add(r["listener_key"])
    assert sorted(keys) == ["curl-a", "curl-b", "curl-c"]
    assert all(len(k) == 1 for k in keys.values()), keys
    assert len({r["ip"] for r in stored if r["user_agent"] == "curl-c"}) == 2
    assert {r["listener_key"] for r in stored} == set.union(*keys.values())
    pg_keys = cluster.psql("SELECT DISTINCT listener_key FROM session_records", db)
    assert len(pg_keys) == 3
    for s in srcs:
        s.stop()


def random_sessions(n, day):
    """n sessions over two days from day: a few listeners (keys, some records without one)
    coming back after pauses of up to 6 minutes, some at once."""
    rnd = random.Random(37)
    out = []
    for i in range(n):
        if out and rnd.random() < 0.4:
            b = rnd.choice(out)
            start = b[4] + rnd.randrange(-60000, 360000)
            mount, key, ip, ua = b[0], b[1], b[2], b[3]
        else:
            start = day + rnd.randrange(2 * 86400000)
            mount = rnd.choice(["/a", "/b"])
            who = rnd.randrange(12)
            key = None if who < 3 else "%032x" % who
            ip, ua = "192.0.2.%d" % who, "ua%d" % (who % 3)
        end = start + rnd.choice([rnd.randrange(1000, 90000), rnd.randrange(60000, 3 * 3600000)])
        out.append((mount, key, ip, ua, end, start))
    return [(m, k, ip, ua, s, e) for (m, k, ip, ua, e, s) in out]


def test_pauses_make_the_same_figures_on_both_stores(server, cluster):
    db = cluster.new_database()
    lite = start_server(server, audience_xml="<resume-seconds>180</resume-seconds>")
    pg = start_server(server, audience_xml="<database>%s</database><server-name>edge-p"
                      "</server-name><resume-seconds>180</resume-seconds>" % cluster.uri(db))
    for s in (lite, pg):
        s.wait_log("audience store: sessions are kept in", 10)
    day = (int(time.time()) // 86400 - 4) * 86400
    sessions = random_sessions(400, day * 1000)
    con = sqlite3.connect(db_path(lite), timeout=5)
    with con:
        con.executemany("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes,"
                        " ip, user_agent, ended, listener_key) VALUES (?, ?, ?, ?, ?, 1, ?, ?,"
                        " 'client_left', ?)",
                        [(i + 1, m, m, s, e, ip, ua, k)
                         for i, (m, k, ip, ua, s, e) in enumerate(sessions)])
    con.close()
    values = ",".join("(gen_random_uuid(), 'edge-p', %d, '%s', '%s', %d, %d, 1, '%s', '%s',"
                      " 'client_left', %s)" % (i + 1, m, m, s, e, ip, ua,
                                               "'%s'" % k if k else "NULL")
                      for i, (m, k, ip, ua, s, e) in enumerate(sessions))
    cluster.psql("INSERT INTO sessions (record_id, server, conn_id, mount, served, start_ms,"
                 " end_ms, bytes, ip, user_agent, ended, listener_key) VALUES " + values, db)
    # the hours written: what the figures' cache follows (records are written so by servers)
    cluster.psql("INSERT INTO session_hours (hour, version, longest_ms) SELECT h,"
                 " nextval('session_version'), 0 FROM generate_series(%d, %d) h"
                 " ON CONFLICT (hour) DO UPDATE SET version = excluded.version"
                 % (day // 3600 - 1, day // 3600 + 3 * 24), db)
    assert len(rows(lite)) == len(sessions)
    for period in ("hour", "day", "all"):
        q = "/admin/audience.json?period=%s&from=%d&to=%d" % (period, day, day + 3 * 86400)
        got = [adminlib.admin(s, q).json()["periods"] for s in (lite, pg)]
        assert got[0] == got[1], period
        # asked again on PostgreSQL: the kept figures read back, the same answer
        assert adminlib.admin(pg, q).json()["periods"] == got[1]
    whole = [p for p in got[0] if p["mount"] is None][0]
    # pauses joined some sessions: fewer counted than there are records of a minute or more
    assert whole["active_sessions"] < sum(1 for (_, _, _, _, s, e) in sessions
                                          if e - s >= 60000)
