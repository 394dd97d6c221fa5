# SPDX-License-Identifier: GPL-2.0-or-later
"""Audience figures of ads (docs/AUDIENCE.md, "Ads"; docs/ADS.md, "Figures"): each listener's
and HLS session's ad decision is recorded through the audience store's records and counted in
/admin/audience/ads per mount and per creative. The ad server is the fake of adserver.py.

Covers, on SQLite and on PostgreSQL: curl listeners in a break give a request, a fill, an
impression, a start and a complete each, per mount and per creative, in JSON, XML and CSV
(format= and the suffixes), with fill and completion rates; a listener that leaves halfway
through the ad gives an impression, a start, the first quartile and the midpoint but no
complete; a robot's ads (its session recorded invalid) are in the gross figures only; the
ad's title from the ad server comes back as it was sent (quotes, <, &) in each format; an ad
server that times out gives requests without fills (fill rate 0) and records why; an HLS
session through a break is counted as an HLS decision; the records are in the store's ads
table (one row per ad placed) with the session's id, so they join to its session record. A
break carried by an upgrade is recorded once, by the new process, with every event it reached;
decisions made while PostgreSQL is away go through the spool (A1 lines) and are written once.
The admin audience page's Ads table is checked in Chromium (test_ads_figures_web.py).
"""

import csv
import io
import os
import sqlite3
import subprocess
import time

import pytest

import adminlib
import adserver
import formatlib as fl
import wirelib
from test_ads import TEMPLATE, ads, ads_xml, adbreak, audio_of, offer  # noqa: F401 (fixture)
from test_ads_hls import HLS_XML, Session, ad_segments, wait_ads_listed, wait_rejoined
from test_ads_upgrade import hand_back, read_into, slow_listener, upgrade_by_command
from test_audience_pg import cluster  # noqa: F401 (a fixture)
from test_audience_store import metric
from test_fallback import mount_xml

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks

MOUNT = "/live.mp3"
TITLE = '<b>"Spring" & co</b>'
ROBOT = "ExampleBot/2.1 (+https://robots.example/bot.html)"


def station(server, request, ads, store, extra="", hls="", **cfg):
    """A server whose mount has the fake ad server and whose audience store is SQLite (the
    default file) or a PostgreSQL database of its own; a live ffmpeg source on the mount."""
    db, name = "", None
    if store == "postgresql":
        cluster = request.getfixturevalue("cluster")
        name = cluster.new_database()
        db = "<database>%s</database>" % cluster.uri(name)
    xml = mount_xml(MOUNT).replace("</mount>", ads_xml(ads, TEMPLATE, 1, extra) + hls +
                                   "</mount>")
    xml += "<audience>%s<min-session>1</min-session></audience>" % db
    srv = server(extra_xml=xml, **cfg)
    srv.ads_db = name
    src = fl.ffmpeg_source(srv, MOUNT, "mp3", freq=440)
    fl.wait_mount(srv, MOUNT, src)
    # a break needs the stream's format: its first frames
    wirelib.wait_until(lambda: fl.stats_source(srv, MOUNT).findtext("audio_bitrate"), 10,
                       "the stream's first second")
    return srv, src


def titled(ads):
    """The ad server's answer with the ads' titles set to TITLE (CDATA: sent as is)."""
    def answer(path, query):
        xml = "".join(ads.inline(i, m, t, s, seq) for i, m, t, s, seq in ads.ads)
        for i, _, _, _, _ in ads.ads:
            xml = xml.replace("<AdTitle>Ad %s</AdTitle>" % i,
                              "<AdTitle><![CDATA[%s]]></AdTitle>" % TITLE)
        return 200, "application/xml", ads.vast(xml)
    ads.answer = answer


def curl(srv, agent):
    return subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-A", agent, srv.url(MOUNT)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
            p.wait(10)


def listeners_on(srv):
    return fl.json_source(srv, MOUNT).get("listeners", 0)


def figures(srv, query, fmt="json"):
    """The ads figures: {"mounts": {mount or "": row}, "creatives": [rows]} with the numbers
    as numbers, from the JSON, the XML or the CSV."""
    if fmt == "json":
        j = adminlib.admin(srv, "/admin/audience/ads.json?" + query).json()
        mounts = {m["mount"] or "": m for m in j["mounts"]}
        return {"mounts": mounts, "creatives": j["creatives"], "traffic": j["traffic"]}
    if fmt == "xml":
        r = adminlib.admin(srv, "/admin/audience/ads?format=xml&" + query)
        assert r.status == 200 and "xml" in r.header("content-type")
        x = r.xml()
        rows = lambda tag: [{c.tag: c.text or "" for c in e} for e in x.findall(tag)]
        return {"mounts": {m["mount"]: m for m in rows("ads_mount")},
                "creatives": rows("ads_creative"), "traffic": x.findtext("traffic")}
    r = adminlib.admin(srv, "/admin/audience/ads.csv?" + query)
    assert r.status == 200 and r.header("content-type").startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(r.text)))
    return {"mounts": {m["mount"]: m for m in lines if m["kind"] == "mount"},
            "creatives": [c for c in lines if c["kind"] == "creative"], "traffic": None}


MOUNT_KEYS = ("requests", "fills", "impressions", "starts", "completes")
CREATIVE_KEYS = ("impressions", "starts", "first_quartiles", "midpoints", "third_quartiles",
                 "completes")


def counts(row, keys):
    return {k: int(row[k]) for k in keys}


def wait_figures(srv, query, want_requests, want_completes, timeout=30):
    def done():
        f = figures(srv, query)
        m = f["mounts"].get(MOUNT)
        return f if m and m["requests"] == want_requests and \
            m["completes"] == want_completes else None
    return wirelib.wait_until(done, timeout, lambda: "figures %r" % figures(srv, query))


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_listeners_in_a_break_give_requests_fills_impressions_and_completes(
        server, request, ads, tmp_path, store):
    n = 3
    data = offer(ads, tmp_path, seconds=12)
    audio = audio_of(data)
    titled(ads)
    srv, src = station(server, request, ads, store, sndbuf=8192)
    t0 = int(time.time()) - 1
    procs = [curl(srv, "fig-curl/1") for _ in range(n)] + [curl(srv, ROBOT)]
    half, got = slow_listener(srv, MOUNT, 16384)   # it reads by hand and leaves halfway
    try:
        wirelib.wait_until(lambda: listeners_on(srv) == n + 2, 20, "the listeners")
        assert adbreak(srv, 20).status == 200
        read_into(half, got, audio[:1024], int(len(audio) * 0.52))
        half.sock.close()
        wirelib.wait_until(lambda: ads.events("a1").get("complete") == n + 1, 30,
                           lambda: "completes: %r" % ads.events("a1"))
    finally:
        stop(procs)       # their sessions end: the records of their ads and sessions
    fl.stop_process(src)
    t1 = int(time.time()) + 2
    q = "period=all&from=%d&to=%d" % (t0, t1)
    # net: the robot's ads are left out; the listener that left has no complete
    f = wait_figures(srv, q, n + 1, n)
    assert f["traffic"] == "net"
    want = {"requests": n + 1, "fills": n + 1, "impressions": n + 1, "starts": n + 1,
            "completes": n}
    for fmt in ("json", "xml", "csv"):
        f = figures(srv, q, fmt)
        assert set(f["mounts"]) == {"", MOUNT}, (fmt, f)
        for key in ("", MOUNT):                     # the server's row and the mount's
            m = f["mounts"][key]
            assert counts(m, MOUNT_KEYS) == want, (fmt, key, m)
            assert float(m["fill_rate"]) == 1.0
            assert abs(float(m["completion_rate"]) - n / (n + 1)) < 0.001, m
            # ad seconds delivered: n whole ads, and of one at least the half it read but
            # not three quarters (delivered: taken by its socket's buffers too)
            assert 12 * (n + 0.5) <= float(m["ad_seconds"]) < 12 * (n + 0.75), m
        [c] = f["creatives"]
        assert c["title"] == TITLE and c["ad_id"] == "a1", (fmt, c)
        assert c["creative_id"].startswith("url:") and len(c["creative_id"]) == 20, c
        assert counts(c, CREATIVE_KEYS) == {
            "impressions": n + 1, "starts": n + 1, "first_quartiles": n + 1,
            "midpoints": n + 1, "third_quartiles": n, "completes": n}, (fmt, c)
    # gross: the robot's too
    g = figures(srv, q + "&traffic=gross")
    assert g["traffic"] == "gross"
    assert counts(g["mounts"][MOUNT], MOUNT_KEYS) == {
        "requests": n + 2, "fills": n + 2, "impressions": n + 2, "starts": n + 2,
        "completes": n + 1}
    # per day (the default) and per hour, the same totals
    for period in ("day", "hour"):
        rows = adminlib.admin(srv, "/admin/audience/ads.json?period=%s&from=%d&to=%d"
                              % (period, t0, t1)).json()["mounts"]
        assert sum(r["requests"] for r in rows if r["mount"] == MOUNT) == n + 1, rows
    # the stored rows: one per ad placed, each with its session's id and the furthest event
    rows = stored(srv, request, store)
    assert len(rows) == n + 2 and {r["outcome"] for r in rows} == {"filled"}
    assert sorted(r["reached"] for r in rows) == ["complete"] * (n + 1) + ["midpoint"]
    sessions = {int(h.params["s"]) for h in ads.of("/vast")}
    assert {r["session_id"] for r in rows} == sessions
    # bad parameters
    assert adminlib.admin(srv, "/admin/audience/ads.json?period=week").status == 400
    assert adminlib.admin(srv, "/admin/audience/ads?format=yaml").status == 400
    assert adminlib.admin(srv, "/admin/audience/ads.json?traffic=all").status == 400
    assert adminlib.admin(srv, "/admin/audience/ads.json?day=2026-13").status == 400
    day = time.strftime("%Y-%m-%d", time.gmtime(t0))
    assert adminlib.admin(srv, "/admin/audience/ads.json?day=%s&from=%d" % (day, t0)).status == 400
    r = adminlib.admin(srv, "/admin/audience/ads.json?day=%s&period=all" % day)
    assert r.status == 200 and r.json()["from"] == day + "T00:00:00Z"


def stored(srv, request, store):
    cols = ("session_id", "outcome", "reached", "vast_code", "hls", "seq", "title")
    sql = ("SELECT session_id, outcome, coalesce(reached, ''), vast_code, hls, seq,"
           " coalesce(title, '') FROM ads ORDER BY asked_ms, seq")
    if store == "sqlite":
        con = sqlite3.connect("file:%s/audience.db?mode=ro" % srv.logdir, uri=True)
        try:
            got = con.execute(sql).fetchall()
        finally:
            con.close()
    else:
        cluster = request.getfixturevalue("cluster")
        got = cluster.psql(sql, srv.ads_db)
    return [dict(zip(cols, r), session_id=int(r[0]), vast_code=int(r[3]), hls=int(r[4]),
                 seq=int(r[5])) for r in got]


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_an_ad_server_that_times_out_gives_requests_without_fills(server, request, ads,
                                                                 tmp_path, store):
    offer(ads, tmp_path, seconds=2)
    ads.delay = 3
    srv, src = station(server, request, ads, store,
                       extra="<request-timeout-ms>500</request-timeout-ms>")
    t0 = int(time.time()) - 1
    procs = [curl(srv, "fig-timeout/1") for _ in range(2)]
    try:
        wirelib.wait_until(lambda: listeners_on(srv) == 2, 20, "the listeners")
        r = adbreak(srv, 10)
        assert r.status == 200, r.text
        q = "period=all&from=%d&to=%d" % (t0, int(time.time()) + 30)
        f = wait_figures(srv, q, 2, 0)
    finally:
        stop(procs)
        fl.stop_process(src)
    m = f["mounts"][MOUNT]
    assert counts(m, MOUNT_KEYS) == {"requests": 2, "fills": 0, "impressions": 0,
                                     "starts": 0, "completes": 0}, m
    assert float(m["fill_rate"]) == 0 and float(m["ad_seconds"]) == 0
    assert f["creatives"] == []
    rows = stored(srv, request, store)
    assert [(r["outcome"], r["seq"], r["title"]) for r in rows] == [("timeout", 0, "")] * 2


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_an_hls_session_through_a_break_is_counted(server, request, ads, tmp_path, store):
    offer(ads, tmp_path, seconds=4)
    srv, src = station(server, request, ads, store, hls=HLS_XML)
    t0 = int(time.time()) - 1
    sess = Session(srv, MOUNT, agent="fig-hls/1.0")
    sess.piece(sess.reload()["segments"][-1]["uri"])
    assert adbreak(srv, 10).status == 200
    wait_ads_listed(sess)
    pl = wait_rejoined(sess)
    for s in ad_segments(pl):                            # every segment of the ad, whole
        sess.piece(s["uri"])
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "complete")
    sess.close()                    # it stops polling: its session and its ads end
    q = "period=all&from=%d&to=%d" % (t0, int(time.time()) + 60)
    f = wait_figures(srv, q, 1, 1, timeout=40)
    fl.stop_process(src)
    assert counts(f["mounts"][MOUNT], MOUNT_KEYS) == {
        "requests": 1, "fills": 1, "impressions": 1, "starts": 1, "completes": 1}
    [row] = stored(srv, request, store)
    assert row["hls"] == 1 and row["reached"] == "complete" and row["outcome"] == "filled"


def test_a_break_carried_by_an_upgrade_is_recorded_once_by_the_process_it_ends_in(
        server, request, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=20)
    audio = audio_of(data)
    srv, src = station(server, request, ads, "sqlite", sndbuf=8192)
    t0 = int(time.time()) - 1
    lis, got = slow_listener(srv, MOUNT, 16384)
    assert adbreak(srv, 30).status == 200
    read_into(lis, got, audio[:1024], len(audio) // 3)
    wirelib.wait_until(lambda: ads.events("a1").get("firstQuartile") == 1, 10,
                       lambda: "the first quartile: %r" % ads.events("a1"))
    upgrade_by_command(srv)
    hand_back(lis, got)
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 30,
                       lambda: "complete: %r" % ads.events("a1"))
    lis.close()
    q = "period=all&from=%d&to=%d" % (t0, int(time.time()) + 60)
    f = wait_figures(srv, q, 1, 1)
    fl.stop_process(src)
    assert counts(f["mounts"][MOUNT], MOUNT_KEYS) == {
        "requests": 1, "fills": 1, "impressions": 1, "starts": 1, "completes": 1}
    [row] = stored(srv, request, "sqlite")      # once: the old process wrote none
    assert row["reached"] == "complete" and row["outcome"] == "filled"


def test_decisions_held_while_postgresql_is_away_go_through_the_spool_once(
        server, request, ads, tmp_path):
    """Decisions made while the database is away wait in memory, go to the spool (A1 lines)
    when the server stops, and are written once after a restart, beside their sessions."""
    cluster = request.getfixturevalue("cluster")
    offer(ads, tmp_path, seconds=2)
    ads.delay = 3
    srv, src = station(server, request, ads, "postgresql",
                       extra="<request-timeout-ms>500</request-timeout-ms>")
    srv.wait_log("audience store: sessions are kept in", 10)
    t0 = int(time.time()) - 1
    cluster.stop()
    procs = []
    try:
        procs = [curl(srv, "fig-away/1") for _ in range(2)]
        wirelib.wait_until(lambda: listeners_on(srv) == 2, 20, "the listeners")
        assert adbreak(srv, 10).status == 200
        stop(procs)                                  # two decisions and two sessions held
        wirelib.wait_until(lambda: metric(srv, "rimecast_audience_records_queued") >= 4, 15,
                           lambda: "four records held: %s"
                           % metric(srv, "rimecast_audience_records_queued"))
        fl.stop_process(src)
        assert srv.stop() == 0                       # what is in memory goes to the spool
        with open(os.path.join(srv.logdir, "audience.spool"), "rb") as f:
            kinds = sorted(line[:2] for line in f.read().splitlines())
        assert kinds == [b"A1", b"A1", b"R3", b"R3"], kinds
    finally:
        stop(procs)
        cluster.start()
    srv.stopped = False
    assert srv._spawn(10), srv.diagnostics()
    q = "period=all&from=%d&to=%d" % (t0, int(time.time()) + 60)
    f = wait_figures(srv, q, 2, 0)
    assert counts(f["mounts"][MOUNT], MOUNT_KEYS) == {"requests": 2, "fills": 0,
                                                      "impressions": 0, "starts": 0,
                                                      "completes": 0}
    rows = stored(srv, request, "postgresql")
    assert [(r["outcome"], r["seq"]) for r in rows] == [("timeout", 0)] * 2
    sessions = cluster.psql("SELECT conn_id FROM sessions ORDER BY conn_id", srv.ads_db)
    assert sorted(r["session_id"] for r in rows) == [int(s[0]) for s in sessions]
