# SPDX-License-Identifier: GPL-2.0-or-later
"""The servers of a shared audience store, and the charts page's server picker and split.

Covers: /admin/audience (XML and JSON, not the CSV) names the servers with sessions in the
period, stored or going on, in byte order and whatever mount and server were asked, none for a
period without sessions, on PostgreSQL (three servers sharing one store) and on SQLite (records
of another server's name beside this one's); in a real Chromium at 1280 and 360 px the charts
page offers a Server picker listing them (names as text), the split shows each server's figures
of the period and the network's as audience.json gives them, and picking a server sets server=
on every query (figures, top lists, CSV and table links, the page's URL) and shows that server's
figures; with one server in the store the picker and the split stay hidden. Screenshots under
$TMPDIR (webui-shots).
"""

import os
import sqlite3
import time
import urllib.parse

import pytest

import adminlib
import pglib
import webuilib
import wirelib
from test_audience import concurrently, hold
from test_audience_charts import figures as chart_figures
from test_audience_charts import hours, normal, open_page, pick, short, updated, wait_update
from test_audience_store import db_path, store_to_nobody
from test_sessions import live, start_server
from test_webui import ADMIN, AUTH, WEB, not_pwned

pytestmark = pytest.mark.rimecast_only

QUALIFY = 2
# the server that sends the page has a name that is markup, to be shown as text
NAMES = ("edge-a", "edge-b", "edge-<i>c</i>")


@pytest.fixture(scope="module")
def cluster():
    if not pglib.bindir():
        pytest.skip("no PostgreSQL in /usr/lib/postgresql (dev.sh installs it)")
    c = pglib.Cluster().init().start()
    yield c
    c.stop()


def xml_text(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def network(server, data, cluster, **cfg):
    """Three servers sharing a store: on edge-a one qualified session of /live, on edge-b two
    (/live and /other) and a short one, on edge-c two of /live. (servers, t0, t1)."""
    db = cluster.new_database()
    uri = cluster.uri(db)
    srvs = [start_server(server, audience_xml="<database>%s</database><server-name>%s"
                         "</server-name><min-session>%d</min-session>"
                         % (uri, xml_text(name), QUALIFY), **cfg) for name in NAMES]
    a, b, c = srvs
    for s in srvs:
        s.wait_log("audience store: sessions are kept in", 10)
    srcs = [live(a, data, "/live"), live(b, data, "/live"), live(b, data, "/other"),
            live(c, data, "/live")]
    t0 = int(time.time()) - 1
    long = QUALIFY + 0.5
    concurrently((hold, a, "/live", "x", long), (hold, b, "/live", "y", long),
                 (hold, b, "/other", "w", long), (hold, c, "/live", "z", long),
                 (hold, c, "/live", "v", long))
    hold(b, "/live", "short", 0.2)
    wirelib.wait_until(lambda: int(cluster.psql("SELECT count(*) FROM sessions", db)[0][0]) >= 6,
                       15, "6 rows in the store")
    t1 = int(cluster.psql("SELECT max(end_ms) FROM sessions", db)[0][0]) // 1000 + 1
    return srvs, srcs, t0, t1


def servers_json(srv, query):
    r = adminlib.admin(srv, "/admin/audience.json?" + query)
    assert r.status == 200, r.text
    return r.json()["servers"]


def servers_xml(srv, query):
    doc = adminlib.admin(srv, "/admin/audience?" + query).xml()
    return [s.text for s in doc.findall("servers/server")]


def test_the_figures_name_the_servers_of_a_shared_store(server, data, cluster):
    (a, b, c), srcs, t0, t1 = network(server, data, cluster)
    q = "period=all&from=%d&to=%d" % (t0, t1)
    every = sorted(NAMES, key=lambda n: n.encode())
    assert servers_json(a, q) == every
    assert servers_xml(c, q) == every
    # whatever mount or server is asked: the picker's choices stay
    assert servers_json(b, "server=edge-a&" + q) == every
    assert servers_json(c, "mount=/other&" + q) == every
    assert servers_xml(a, "server=edge-b&mount=/other&period=hour&from=%d&to=%d" % (t0, t1)) \
        == every
    # a period without sessions names none; the CSV carries no list
    long_ago = "period=all&from=%d&to=%d" % (t0 - 400 * 86400, t0 - 399 * 86400)
    assert servers_json(a, long_ago) == [] and servers_xml(a, long_ago) == []
    text = adminlib.admin(a, "/admin/audience.csv?" + q).text
    assert "edge-" not in text
    # a server whose only session is going on (and qualified) is named, by itself and, once
    # published, by the others
    later = t1                              # after every stored session
    held = b.listener("/other")
    assert held.open().status == 200
    span = lambda: "period=all&from=%d&to=%d" % (later, max(later, time.time()) + 1)  # noqa: E731
    wirelib.wait_until(lambda: servers_json(b, span()) == ["edge-b"], QUALIFY + 10,
                       "edge-b's session going on named", interval=0.3)
    assert servers_json(a, span()) == ["edge-b"]
    held.close()
    for s in srcs:
        s.stop()


def test_the_sqlite_store_names_the_servers_of_its_records(server, data):
    srv = start_server(server, audience_xml="<min-session>%d</min-session>" % QUALIFY)
    wirelib.wait_until(lambda: os.path.exists(db_path(srv)), 10, "the store created")
    assert srv.stop() == 0
    srv.stopped = False
    now = int(time.time())
    con = sqlite3.connect(db_path(srv))
    rows = [(1, "/a", (now - 7000) * 1000, (now - 6000) * 1000, None),
            (2, "/a", (now - 500) * 1000, (now - 400) * 1000, "zz-other"),
            (3, "/b", (now - 90000) * 1000, (now - 89000) * 1000, "old-one")]
    con.executemany("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip,"
                    " ended, server) VALUES (?, ?, ?, ?, ?, 1, '192.0.2.1', 'client_left', ?)",
                    [(i, m, m, s, e, srvname) for i, m, s, e, srvname in rows])
    con.commit()
    con.close()
    store_to_nobody(srv)
    srv.cfg["port"] = None
    srv.start()
    # a record without a name is this server's (the name it writes: its <hostname> here)
    mine = "127.0.0.1"
    assert servers_json(srv, "period=all&from=%d&to=%d" % (now - 7200, now - 5000)) == [mine]
    assert servers_json(srv, "period=all&from=%d&to=%d" % (now - 3600, now + 1)) == ["zz-other"]
    q = "period=all&from=%d&to=%d" % (now - 7200, now + 1)
    assert servers_json(srv, q) == sorted([mine, "zz-other"])
    assert servers_xml(srv, "mount=/b&server=zz-other&" + q) == sorted([mine, "zz-other"])
    assert servers_json(srv, "period=all&from=%d&to=%d" % (now - 90000, now + 1)) == \
        sorted([mine, "old-one", "zz-other"])


# ---------------------------------------------------------------- in Chromium

@pytest.fixture
def browser():
    missing = webuilib.missing_requirements()
    if missing:
        pytest.skip(missing)
    b = webuilib.Browser(auth=AUTH)
    yield b
    b.close()


SPLIT_JS = """
return Array.prototype.map.call(document.querySelectorAll('[data-ac="server-rows"] tr'),
  function (tr) {
    var o = {server: tr.getAttribute('data-server'), name: tr.querySelector('td.name').textContent};
    tr.querySelectorAll('td[data-figure]').forEach(function (td) {
      o[td.getAttribute('data-figure')] = td.textContent; });
    return o;
  });
"""


def shown(row):
    """A row of the figures as the page writes it."""
    return {"sessions": str(row["sessions"]), "qualified_sessions": str(row["qualified_sessions"]),
            "tlh": hours(row["tlh"]), "cume": str(row["cume"]), "peak": str(row["peak"])}


def whole(srv, q, server=""):
    """The server row of the figures of the page's whole period (one server's, or all)."""
    query = "period=all&from=%d&to=%d" % (q["from"], q["to"])
    if server:
        query += "&server=" + urllib.parse.quote(server)
    [row] = [f for f in chart_figures(srv, query) if f["mount"] == ""]
    raw = adminlib.admin(srv, "/admin/audience.json?" + query).json()["periods"][0]
    return dict(shown(row), atsl_seconds=short(raw["atsl_seconds"]))


def summary(b):
    return {k: b.text('[data-figure="%s"]' % k) for k in
            ("sessions", "qualified_sessions", "tlh", "cume", "peak", "atsl_seconds")}


@pytest.mark.parametrize("size", [(1280, 800), (360, 740)], ids=["1280px", "360px"])
def test_the_charts_pick_a_server_and_split_the_network(server, data, cluster, browser, size):
    from test_webui_mobile import check_fits, emulate, shoot, shots_dir
    (a, b_srv, c), srcs, t0, t1 = network(server, data, cluster, webroot=WEB, adminroot=ADMIN)
    br = browser
    emulate(br, *size)
    # the page's period ends at the second it opens: one after every stored session
    wirelib.wait_until(lambda: time.time() >= t1, 3, "the second after the sessions")
    q = open_page(br, c)
    assert q["server"] == ""
    # the picker: All servers and each server of the period, the markup name as text
    assert br.one('[data-ac="server"]').is_displayed()
    options = br.js_run("return Array.prototype.map.call(document.querySelector("
                        "'[data-ac=\"server\"]').options, function (o) {"
                        " return [o.value, o.textContent]; })")
    every = sorted(NAMES, key=lambda n: n.encode())
    assert options == [["", "All servers"]] + [[n, n] for n in every]
    # the split: each server's figures of the period and the network's, as audience.json says
    rows = br.js_run(SPLIT_JS)
    assert [r["name"] for r in rows] == every + ["Network (all servers)"]
    for r in rows[:-1]:
        assert r["server"] == r["name"]
        want = whole(c, q, r["server"])
        assert {k: r[k] for k in want} == want, r["server"]
    net = whole(c, q)
    assert {k: rows[-1][k] for k in net} == net
    assert summary(br) == net
    assert {r["server"]: int(r["sessions"]) for r in rows[:-1]} == dict(zip(NAMES, (1, 3, 2)))
    assert net["sessions"] == "6"
    assert br.js_run("return document.querySelectorAll('.audience-charts i').length") == 0
    assert check_fits(br, "audience-servers-all", size[0]) == ""
    # one server picked: every query asks for it, and the figures are its own
    before = updated(br)
    pick(br, "server", "edge-b")
    q = wait_update(br, before, "the figures of edge-b")
    assert q["server"] == "edge-b"
    assert summary(br) == whole(c, q, "edge-b")
    assert not br.one('[data-ac="servers"]').is_displayed()
    assert "server=edge-b" in br.js_run("return location.search")
    for link in ("csv", "table"):
        assert br.one('[data-ac="%s"]' % link).get_attribute("href").endswith("&server=edge-b")
    log = c.access_log()
    for path in ("/admin/audience/top.json?by=agent", "/admin/audience/top.json?by=referer",
                 "/admin/audience.json?countries=1"):
        asked = [l for l in log.splitlines() if path in l]
        assert asked and "server=edge-b" in asked[-1], (path, asked[-1:])
    plotted = br.js_run("return window.rimecastCharts.plotted()")
    assert sum(plotted["sessions"]["Sessions"]) == 3
    shoot(br, os.path.join(shots_dir(), "audience-servers-edge-b-%d.png" % size[0]))
    # the picked server is kept across a reload, from the page's URL
    br.get(br.js_run("return location.href"))
    q = wait_update(br, None)
    assert q["server"] == "edge-b"
    assert br.js_run("return document.querySelector('[data-ac=\"server\"]').value") == "edge-b"
    not_pwned(br)
    assert not br.console_errors(), br.console_errors()
    for s in srcs:
        s.stop()


def test_one_server_shows_no_picker_and_no_split(server, data, browser):
    srv = start_server(server, audience_xml="<min-session>%d</min-session>" % QUALIFY,
                       webroot=WEB, adminroot=ADMIN)
    src = live(srv, data, "/live")
    hold(srv, "/live", "x", 0.3)
    wirelib.wait_until(lambda: servers_json(srv, "") != [], 10, "the session stored")
    open_page(browser, srv)
    assert not browser.one('[data-ac="server-field"]').is_displayed()
    assert not browser.one('[data-ac="servers"]').is_displayed()
    assert not browser.console_errors(), browser.console_errors()
    src.stop()
