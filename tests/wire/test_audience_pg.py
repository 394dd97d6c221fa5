# SPDX-License-Identifier: GPL-2.0-or-later
"""The audience store on PostgreSQL: a network of servers sharing one database.

Covers: <audience><database> as a libpq URI (postgresql:// and postgres://) selects the
PostgreSQL store, which makes its schema (a version table) and the day partitions of the
sessions and ad decisions tables ahead; every record carries its server's name (<server-name>);
three servers sharing a store answer /admin/audience (JSON and CSV) with the figures of the
network by default, a listener who listened on two servers (same address and agent) counted
once in CUME, and with server=NAME those of one server; a session going on on one server counts
in the figures another server gives; the database stopped for 20 s under load loses no record
and counts none twice once back (memory, then the spool, then written in order; each change of
state one line in the error log, the counts in /metrics); records held when the server stops
while the database is away are written after a restart, and those of the process before an
upgrade reach the database through the spool the process after takes over once the one before
let it go; a period asked as one from a whole hour to a whole hour is kept until a record
written over it changes it; the last days' figures of the network and of each server are made
ahead; a wrong password or a database that cannot be reached is said in the error log with the
password replaced, and the server streams anyway (the figures answer 503); <retention-days>
drops whole days' partitions (the sessions' and the ad decisions').
A PostgreSQL cluster of the test process's own runs them (pglib.py).
"""

import csv
import io
import json
import os
import threading
import time

import pytest

import adminlib
import conftest
import pglib
import wirelib
from test_audience import as_expected, by_mount, concurrently, expected, hold
from test_audience_store import metric
from test_sessions import live, records, start_server

pytestmark = pytest.mark.rimecast_only

QUALIFY = 2


@pytest.fixture(scope="module")
def cluster():
    if not pglib.bindir():
        pytest.skip("no PostgreSQL in /usr/lib/postgresql (dev.sh installs it)")
    c = pglib.Cluster().init().start()
    yield c
    c.stop()


def pg_server(server, uri, name, extra=""):
    return start_server(server, audience_xml="<database>%s</database><server-name>%s"
                        "</server-name><min-session>%d</min-session>%s"
                        % (uri, name, QUALIFY, extra))


COLUMNS = ("server", "conn_id", "mount", "start_ms", "end_ms", "ip", "user_agent", "record_id")


def pg_rows(cluster, db):
    rows = cluster.psql("SELECT server, conn_id, mount, start_ms, end_ms, ip,"
                        " coalesce(user_agent, ''), record_id FROM sessions"
                        " ORDER BY start_ms, server, conn_id", db)
    out = []
    for r in rows:
        d = dict(zip(COLUMNS, r))
        for k in ("conn_id", "start_ms", "end_ms"):
            d[k] = int(d[k])
        out.append(d)
    return out


def wait_pg_rows(cluster, db, n, timeout=15):
    return wirelib.wait_until(lambda: len(pg_rows(cluster, db)) >= n and pg_rows(cluster, db),
                              timeout, "%d rows in %s" % (n, db))


def figures(srv, query):
    return by_mount(adminlib.admin(srv, "/admin/audience.json?" + query).json()["periods"])


def csv_figures(srv, query):
    r = adminlib.admin(srv, "/admin/audience.csv?" + query)
    assert r.status == 200 and r.header("content-type").startswith("text/csv")
    return by_mount(list(csv.DictReader(io.StringIO(r.text))))


def test_three_servers_sharing_a_store_count_the_network_once_and_each_server(
        server, data, cluster):
    db = cluster.new_database()
    uri = cluster.uri(db)
    a = pg_server(server, uri, "edge-a")
    b = pg_server(server, cluster.uri(db, scheme="postgres"), "edge-b")
    c = pg_server(server, uri, "edge-c")
    for s, scheme in ((a, "postgresql"), (b, "postgres"), (c, "postgresql")):
        s.wait_log("audience store: sessions are kept in %s://rimecast:***@" % scheme, 10)
    srcs = [live(s, data, "/live") for s in (a, b)]
    t0 = int(time.time()) - 1
    # x listens on edge-a, y on edge-b, z (the same address and agent) on both
    concurrently((hold, a, "/live", "x", QUALIFY + 0.5), (hold, a, "/live", "z", QUALIFY + 0.5),
                 (hold, b, "/live", "y", QUALIFY + 0.5), (hold, b, "/live", "z", QUALIFY + 0.5))
    hold(b, "/live", "short", 0.2)
    rows = wait_pg_rows(cluster, db, 5)
    t1 = int(time.time()) + 1
    assert sorted((r["server"], r["user_agent"]) for r in rows) == [
        ("edge-a", "x"), ("edge-a", "z"), ("edge-b", "short"), ("edge-b", "y"), ("edge-b", "z")]
    assert len({r["record_id"] for r in rows}) == 5
    q = "period=all&from=%d&to=%d" % (t0, t1)
    net = figures(c, q)           # asked of the server nobody listened on
    assert sorted(net) == ["", "/live"]
    assert as_expected(net[""]) == expected(rows)
    assert as_expected(net["/live"]) == expected(rows, "/live")
    assert (net[""]["sessions"], net[""]["qualified_sessions"], net[""]["cume"],
            net[""]["peak_listeners"]) == (5, 4, 3, 4)
    per = {}
    for name in ("edge-a", "edge-b", "edge-c"):
        per[name] = figures(a, "server=%s&%s" % (name, q))
        mine = [r for r in rows if r["server"] == name]
        assert as_expected(per[name][""]) == expected(mine), name
    assert (per["edge-a"][""]["cume"], per["edge-b"][""]["cume"]) == (2, 2)   # z in each
    assert per["edge-c"][""]["sessions"] == 0 and sorted(per["edge-c"]) == [""]
    # the same figures from every server, and in CSV
    assert figures(b, q) == net
    lines = csv_figures(a, q)
    assert as_expected(lines[""]) == as_expected(net[""])
    assert as_expected(lines["/live"]) == as_expected(net["/live"])
    one = csv_figures(c, "server=edge-b&" + q)
    assert as_expected(one[""]) == as_expected(per["edge-b"][""])
    # by hour and by day: the same sessions, cut at whole hours and days (the past ones kept
    # and read back the second time: the same answer)
    for period in ("hour", "day"):
        span = "period=%s&from=%d&to=%d" % (period, t0 - 2 * 86400, t1)
        first = adminlib.admin(c, "/admin/audience.json?" + span).json()
        assert sum(p["sessions"] for p in first["periods"] if p["mount"] is None) >= 5
        assert adminlib.admin(c, "/admin/audience.json?" + span).json() == first
    assert int(cluster.psql("SELECT count(*) FROM figures_cache", db)[0][0]) > 0
    top = adminlib.admin(c, "/admin/audience/top.json?from=%d&to=%d" % (t0, t1)).json()
    assert top["audience_top"]["sessions"] == 5
    assert {e["name"]: e["sessions"] for e in top["audience_top"]["entry"]}["z"] == 2
    # the schema's version, and the partitions made ahead
    assert cluster.psql("SELECT version FROM rimecast_schema ORDER BY 1", db) == [
        ["1"], ["2"], ["3"], ["4"], ["5"], ["6"], ["7"]]
    for table in ("sessions", "ads"):   # the ad decisions' days beside the sessions'
        parts = cluster.psql("SELECT count(*) FROM pg_inherits WHERE inhparent = '%s'::regclass"
                             % table, db)
        assert int(parts[0][0]) >= 9    # yesterday, today, a week ahead, and the default
    for s in srcs:
        s.stop()


@pytest.mark.slow
def test_a_session_going_on_on_one_server_counts_in_the_figures_of_another(server, data,
                                                                           cluster):
    db = cluster.new_database()
    a = pg_server(server, cluster.uri(db), "edge-a")
    b = pg_server(server, cluster.uri(db), "edge-b")
    src = live(a, data, "/live")
    t0 = int(time.time()) - 1
    held = a.listener("/live")
    assert held.open().status == 200
    # edge-a publishes its sessions going on every 30 s (and before it makes figures)
    def counted():
        f = figures(b, "period=all&from=%d&to=%d" % (t0, int(time.time()) + 1))
        return f[""]["in_progress"] == 1 and f
    f = wirelib.wait_until(counted, 45, "edge-a's listener counted by edge-b", interval=0.5)
    assert f[""]["sessions"] == 1 and f["/live"]["in_progress"] == 1
    held.close()
    wait_pg_rows(cluster, db, 1)
    f = figures(b, "period=all&from=%d&to=%d" % (t0, int(time.time()) + 1))
    assert (f[""]["sessions"], f[""]["in_progress"]) == (1, 0)   # the record, not both
    src.stop()


def insert_sessions(cluster, db, sessions, server="edge-x"):
    """Stores (mount, start_ms, end_ms, ip) sessions as a server's batch does: the rows, and
    the version of each hour they cover bumped (the figures kept follow it)."""
    values = ",".join("(gen_random_uuid(), '%s', %d, '%s', '%s', %d, %d, 1000, '%s', 'agent',"
                      " 'client_left')" % (server, i + 1, m, m, a, b, ip)
                      for i, (m, a, b, ip) in enumerate(sessions))
    cluster.psql("WITH ins AS (INSERT INTO sessions (record_id, server, conn_id, mount, served,"
                 " start_ms, end_ms, bytes, ip, user_agent, ended) VALUES %s"
                 " RETURNING start_ms, end_ms)"
                 " INSERT INTO session_hours (hour, version) SELECT DISTINCT h,"
                 " nextval('session_version') FROM ins, generate_series(start_ms / 3600000,"
                 " (end_ms - 1) / 3600000) AS h"
                 " ON CONFLICT (hour) DO UPDATE SET version = excluded.version" % values, db)


def test_a_period_asked_as_one_from_whole_hour_to_whole_hour_is_kept_until_it_changes(
        server, cluster):
    db = cluster.new_database()
    srv = pg_server(server, cluster.uri(db), "edge-a")
    srv.wait_log("audience store: sessions are kept in", 10)
    hour = int(time.time()) // 3600 * 3600
    t0, t1 = (hour - 4 * 3600) * 1000, (hour - 3600) * 1000
    insert_sessions(cluster, db, [("/a", t0 + 60000, t0 + 3 * 60000, "192.0.2.1"),
                                  ("/b", t0 + 90 * 60000, t1 + 600000, "192.0.2.2")])
    whole = "period=all&from=%d&to=%d" % (t0 // 1000, t1 // 1000)
    first = adminlib.admin(srv, "/admin/audience.json?" + whole).json()
    assert [(p["mount"], p["sessions"]) for p in first["periods"]] == [
        (None, 2), ("/a", 1), ("/b", 1)]
    kept = cluster.psql("SELECT mount, sessions FROM figures_cache WHERE step_ms = %d"
                        " ORDER BY mount" % (t1 - t0), db)
    assert kept == [["", "2"], ["/a", "1"], ["/b", "1"]]
    # asked again, it is read from what was kept (made different here to tell them apart)
    cluster.psql("UPDATE figures_cache SET sessions = 7 WHERE step_ms = %d AND mount = ''"
                 % (t1 - t0), db)
    again = adminlib.admin(srv, "/admin/audience.json?" + whole).json()
    assert again["periods"][0]["sessions"] == 7
    assert again["periods"][1:] == first["periods"][1:]
    # a record written over the period changes it: made again, and kept anew
    insert_sessions(cluster, db, [("/a", t0 + 30 * 60000, t0 + 40 * 60000, "192.0.2.3")])
    after = adminlib.admin(srv, "/admin/audience.json?" + whole).json()
    assert [(p["mount"], p["sessions"]) for p in after["periods"]] == [
        (None, 3), ("/a", 2), ("/b", 1)]
    # a period that does not begin on a whole hour is made each time, never kept
    cut = "period=all&from=%d&to=%d" % (t0 // 1000 + 30, t1 // 1000)
    assert adminlib.admin(srv, "/admin/audience.json?" + cut).json()["periods"][0]["sessions"] == 3
    assert cluster.psql("SELECT count(*) FROM figures_cache WHERE bucket_ms = %d"
                        % (t0 + 30000), db) == [["0"]]


def test_the_servers_named_follow_records_written_over_a_kept_day(server, cluster):
    """Each answer names the servers with sessions in the period; a past day's are found once
    and remembered while its hours are unchanged: a record written over it is seen."""
    db = cluster.new_database()
    srv = pg_server(server, cluster.uri(db), "edge-a")
    srv.wait_log("audience store: sessions are kept in", 10)
    day = (int(time.time()) // 86400 - 2) * 86400000
    insert_sessions(cluster, db, [("/a", day + 3600000, day + 7200000, "192.0.2.1")],
                    server="edge-x")
    q = "period=day&from=%d&to=%d" % (day // 1000 - 86400, int(time.time()))
    for _ in range(2):     # made, then read back
        assert adminlib.admin(srv, "/admin/audience.json?" + q).json()["servers"] == ["edge-x"]
    insert_sessions(cluster, db, [("/b", day + 9000000, day + 9600000, "192.0.2.9")],
                    server="edge-0")
    got = adminlib.admin(srv, "/admin/audience.json?" + q).json()
    assert got["servers"] == ["edge-0", "edge-x"]
    # and by server, or for a mount, the same list
    assert adminlib.admin(srv, "/admin/audience.json?server=edge-x&" + q).json()["servers"] == [
        "edge-0", "edge-x"]
    assert adminlib.admin(srv, "/admin/audience.json?mount=/a&" + q).json()["servers"] == [
        "edge-0", "edge-x"]


@pytest.mark.slow
def test_the_days_figures_of_the_network_and_of_each_server_are_made_ahead(server, cluster):
    db = cluster.new_database()
    srv = pg_server(server, cluster.uri(db), "edge-a")
    srv.wait_log("audience store: sessions are kept in", 10)
    assert srv.stop() == 0
    day = (int(time.time()) // 86400 - 2) * 86400000
    for name, ip in (("edge-x", "192.0.2.1"), ("edge-y", "192.0.2.2")):
        insert_sessions(cluster, db, [("/a", day + 3600000, day + 7200000, ip)], server=name)
    srv.stopped = False
    assert srv._spawn(10), srv.diagnostics()
    # 10 s after it connects, the server makes the last days' figures: the network's, and
    # each server's as server= asks for them
    srv.wait_log("and 62 of single servers made ahead", 30)
    kept = cluster.psql("SELECT scope, sessions FROM figures_cache WHERE bucket_ms = %d"
                        " AND mount = '' ORDER BY scope" % day, db)
    assert kept == [["r180|", "2"], ["r180|edge-x", "1"], ["r180|edge-y", "1"]], kept
    q = "period=day&from=%d&to=%d" % (day // 1000, day // 1000 + 86400)
    # a server's first ask reads them: its answer is what was kept
    cluster.psql("UPDATE figures_cache SET sessions = 5 WHERE scope = 'r180|edge-y'"
                 " AND bucket_ms = %d AND mount = ''" % day, db)
    assert figures(srv, "server=edge-y&" + q)[""]["sessions"] == 5


class Load:
    """Short listener sessions one after another, as fast as they go."""

    def __init__(self, srv, mount="/live"):
        self.srv, self.mount = srv, mount
        self.stopping = threading.Event()
        self.done = 0
        self.slowest = 0.0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stopping.is_set():
            t = time.monotonic()
            s = wirelib.connect(self.srv.host, self.srv.port, 5)
            s.sendall(("GET %s HTTP/1.0\r\nUser-Agent: load-%d\r\n\r\n"
                       % (self.mount, self.done % 7)).encode())
            head, _ = wirelib.read_head(s, 5)
            assert head.status == 200
            s.close()
            self.done += 1
            self.slowest = max(self.slowest, time.monotonic() - t)
            time.sleep(0.02)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join(10)


def same_records(srv, cluster, db):
    """The session log's sessions and the database's rows: each once, the same ones."""
    logged = sorted((r["id"], round(r["start"] * 1000)) for r in records(srv))
    stored = sorted((r["conn_id"], r["start_ms"]) for r in pg_rows(cluster, db))
    return logged == stored and stored


@pytest.mark.slow
def test_the_database_away_for_20_s_under_load_loses_no_record_and_counts_none_twice(
        server, data, cluster):
    db = cluster.new_database()
    srv = pg_server(server, cluster.uri(db), "edge-load")
    src = live(srv, data)
    held = srv.listener("/live")    # a listener streaming all along
    assert held.open().status == 200
    load = Load(srv).start()
    wait_pg_rows(cluster, db, 20)
    cluster.stop()
    stopped = time.monotonic()
    srv.wait_log("audience store: lost the connection to postgresql://rimecast:***@", 10)
    # after a few seconds away the records go to the spool
    wirelib.wait_until(lambda: metric(srv, "rimecast_audience_records_spooled") > 0, 15,
                       "records in the spool")
    assert metric(srv, "rimecast_audience_database_up") == 0
    while time.monotonic() - stopped < 20:     # the 20 s away, the listeners served all along
        before = held.received
        wirelib.wait_until(lambda: held.received > before + 4096, 5,
                           "the held listener fed while the database is away")
        time.sleep(0.5)
    assert load.slowest < 1.0, "a listener waited %.2f s" % load.slowest
    spooled = metric(srv, "rimecast_audience_records_spooled_total")
    assert spooled > 0
    cluster.start()
    srv.wait_log("audience store: postgresql://rimecast:***@127.0.0.1:%d/%s answers again"
                 % (cluster.port, db), 15)
    load.stop()
    held.close()
    # every session ended (the load's and the held one) is in the log, and once in the database,
    # nothing waiting any more
    wirelib.wait_until(lambda: len(records(srv)) >= load.done + 1 and
                       metric(srv, "rimecast_audience_records_queued") == 0 and
                       metric(srv, "rimecast_audience_records_spooled") == 0 and
                       same_records(srv, cluster, db), 30, "every session once in the database")
    assert metric(srv, "rimecast_audience_records_lost_total") == 0
    assert metric(srv, "rimecast_audience_database_up") == 1
    rows = pg_rows(cluster, db)
    assert len(rows) == len({r["record_id"] for r in rows}) >= load.done
    # each change of state said once
    log = srv.error_log()
    for said in ("lost the connection to", "the records go to the spool",
                 "answers again", "writing the", "is written out"):
        assert log.count(said) == 1, (said, log)
    src.stop()


def test_records_held_when_the_server_stops_with_the_database_away_are_written_after_a_restart(
        server, data, cluster):
    db = cluster.new_database()
    srv = pg_server(server, cluster.uri(db), "edge-r")
    src = live(srv, data)
    hold(srv, "/live", "before", 0.1)
    wait_pg_rows(cluster, db, 1)
    cluster.stop()
    try:
        for agent in ("while-away-1", "while-away-2", "while-away-3"):
            hold(srv, "/live", agent, 0.1)
        wirelib.wait_until(lambda: metric(srv, "rimecast_audience_records_queued") >= 3, 10,
                           "three records held")
        src.stop()
        assert srv.stop() == 0     # the records in memory go to the spool
        spool = os.path.join(srv.logdir, "audience.spool")
        assert os.path.getsize(spool) > 0
        assert oct(os.stat(spool).st_mode & 0o777) == "0o600"
    finally:
        cluster.start()
    srv.stopped = False
    assert srv._spawn(10), srv.diagnostics()
    srv.wait_log("from before: they are written once the database answers", 10)
    rows = wirelib.wait_until(lambda: len(pg_rows(cluster, db)) >= 4 and pg_rows(cluster, db),
                              20, "the spooled records written")
    assert sorted(r["user_agent"] for r in rows) == [
        "before", "while-away-1", "while-away-2", "while-away-3"]
    wirelib.wait_until(lambda: os.path.getsize(spool) == 0, 10, "the spool emptied")


def test_an_upgrade_while_the_database_is_away_hands_its_records_on_through_the_spool(
        server, data, cluster):
    from test_upgrade import upgrade
    db = cluster.new_database()
    srv = pg_server(server, cluster.uri(db), "edge-u")
    src = live(srv, data)
    hold(srv, "/live", "before", 0.1)
    wait_pg_rows(cluster, db, 1)
    cluster.stop()
    try:
        for agent in ("away-1", "away-2", "away-3"):
            hold(srv, "/live", agent, 0.1)
        wirelib.wait_until(lambda: metric(srv, "rimecast_audience_records_queued") >= 3, 10,
                           "three records held")
        upgrade(srv)    # the process before puts them in the spool as it exits
        hold(srv, "/live", "after-upgrade", 0.1)
    finally:
        cluster.start()
    rows = wirelib.wait_until(lambda: len(pg_rows(cluster, db)) >= 5 and pg_rows(cluster, db),
                              20, "every record written")
    assert sorted(r["user_agent"] for r in rows) == [
        "after-upgrade", "away-1", "away-2", "away-3", "before"]
    assert metric(srv, "rimecast_audience_records_lost_total") == 0
    src.stop()


def test_a_wrong_password_is_said_without_it_and_the_server_streams(server, data, cluster):
    db = cluster.new_database()
    srv = pg_server(server, cluster.uri(db, password="wrong-pw-1234"), "edge-w")
    srv.wait_log("audience store: cannot connect to postgresql://rimecast:***@127.0.0.1:%d/%s"
                 % (cluster.port, db), 10)
    src = live(srv, data)
    listener = srv.listener("/live")
    assert listener.open().status == 200
    conftest.assert_server_healthy(srv, listener)
    hold(srv, "/live", "unstored", 0.1)
    r = adminlib.admin(srv, "/admin/audience.json")
    assert r.status == 503 and "cannot be reached" in r.text
    assert metric(srv, "rimecast_audience_database_up") == 0
    log = srv.error_log()
    assert "password authentication failed" in log
    for where in (log, srv.stderr(), srv.access_log(), adminlib.admin(srv, "/metrics").text,
                  adminlib.admin(srv, "/admin/stats").text):
        assert "wrong-pw-1234" not in where
    assert log.count("cannot connect to") == 1      # said once, not at every try
    listener.close()
    src.stop()


def test_a_database_that_cannot_be_reached_is_said_and_the_server_streams(server, data):
    port = conftest.free_port()     # nothing listens there
    uri = "postgresql://rimecast:pw-never-shown@127.0.0.1:%d/audience?password=pw-too" % port
    srv = pg_server(server, uri.replace("&", "&amp;"), "edge-u")
    srv.wait_log("audience store: cannot connect to postgresql://rimecast:***@127.0.0.1:%d/"
                 "audience?password=***" % port, 10)
    src = live(srv, data)
    listener = srv.listener("/live")
    assert listener.open().status == 200
    conftest.assert_server_healthy(srv, listener)
    log = srv.error_log()
    assert "pw-never-shown" not in log and "pw-too" not in log
    listener.close()
    src.stop()


def test_retention_drops_the_partitions_of_old_days(server, cluster):
    db = cluster.new_database()
    srv = pg_server(server, cluster.uri(db), "edge-old")
    srv.wait_log("audience store: sessions are kept in", 10)
    assert srv.stop() == 0
    day = int(time.time()) // 86400
    cols = ("record_id, server, conn_id, mount, served, start_ms, end_ms, bytes, ip, ended")
    for ago, n in ((10, 2), (9, 3), (1, 1)):
        # as the role the servers log in as: the partitions are its own
        cluster.psql("SET ROLE %s; SELECT rimecast_day_partition(%d)" % (pglib.ROLE, day - ago),
                     db)
        for i in range(n):
            start = (day - ago) * 86400000 + 3600000 * (i + 1)
            cluster.psql("INSERT INTO sessions (%s) VALUES (gen_random_uuid(), 'edge-old', %d,"
                         " '/live', '/live', %d, %d, 1, '192.0.2.1', 'client_left')"
                         % (cols, i, start, start + 60000), db)
            cluster.psql("INSERT INTO ads (record_id, seq, server, session_id, mount, asked_ms,"
                         " ended_ms, outcome, break_ms) VALUES (gen_random_uuid(), 0, 'edge-old',"
                         " %d, '/live', %d, %d, 'empty', 30000)" % (i, start, start), db)
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "</min-session>", "</min-session><retention-days>3</retention-days>"))
    srv.stopped = False
    assert srv._spawn(10), srv.diagnostics()
    try:
        srv.wait_log("audience store: 5 session records removed (began on days that ended "
                     "over 3 days ago)", 15)
    except AssertionError:
        print(srv.diagnostics())
        raise
    assert [int(r[0]) for r in cluster.psql("SELECT count(*) FROM sessions", db)] == [1]
    assert [int(r[0]) for r in cluster.psql("SELECT count(*) FROM ads", db)] == [1]
    for ago in (10, 9):
        for table in ("sessions", "ads"):
            name = time.strftime(table + "_%Y%m%d", time.gmtime((day - ago) * 86400))
            assert cluster.psql("SELECT to_regclass('%s') IS NULL" % name, db) == [["t"]]
