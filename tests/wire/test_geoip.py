# SPDX-License-Identifier: GPL-2.0-or-later
"""Listeners' countries from a MaxMind-format database (<audience><geoip-db>).

Covers: a small .mmdb written by tests/wire/make_mmdb.pl (Debian's
libmaxmind-db-writer-perl) maps 127.0.0.0/8 and addresses named through a trusted proxy's
X-Forwarded-For (IPv4 and IPv6) to countries; each listener gets its country in
status-json.xsl and the admin stats (listeners per country per mount), in its session record
and in the audience figures by country; an address the database does not know is "unknown";
SIGHUP reads the database again; without a database there are no per-country lists and every
session's country is unknown.
"""

import json
import os
import re
import signal
import subprocess

import pytest

import adminlib
import conftest
import wirelib
from test_sessions import live, records, start_server, wait_records

pytestmark = pytest.mark.rimecast_only

HERE = os.path.dirname(os.path.abspath(__file__))


def write_mmdb(path, *networks):
    tmp = path + ".tmp"
    subprocess.run(["perl", os.path.join(HERE, "make_mmdb.pl"), tmp] + list(networks),
                   check=True, timeout=60)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)     # a new file in place of the old one, as an update does


def geo_server(server, tmp_name, **cfg):
    d = os.path.join(conftest.run_dir(), "geo-%d-%s" % (os.getpid(), tmp_name))
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    db = os.path.join(d, "countries.mmdb")
    write_mmdb(db, "127.0.0.0/8=DE", "198.51.100.0/24=FR", "2001:db8::/32=NL")
    proxies = os.path.join(d, "proxies")
    with open(proxies, "w") as f:
        f.write("127.0.0.1\n")
    os.chmod(proxies, 0o644)
    srv = start_server(server, extra_xml="<paths><trusted-proxies>%s</trusted-proxies></paths>"
                       % proxies, audience_xml="<geoip-db>%s</geoip-db>" % db, **cfg)
    return srv, db


def listener(srv, forwarded=None):
    lis = srv.listener("/live", headers={"X-Forwarded-For": forwarded} if forwarded else {})
    assert lis.open().status == 200
    return lis


def status_countries(srv):
    r = adminlib.request(srv, "/status-json.xsl")
    src = json.loads(r.body)["icestats"]["source"]
    src = src[0] if isinstance(src, list) else src
    return src.get("listeners_by_country")


def test_each_listener_gets_its_country_everywhere(server, data):
    srv, db = geo_server(server, "all")
    src = live(srv, data)
    lis = [listener(srv), listener(srv, "198.51.100.7"), listener(srv, "2001:db8::5"),
           listener(srv, "192.0.2.1")]
    want = {"DE": 1, "FR": 1, "NL": 1, "unknown": 1}
    wirelib.wait_until(lambda: status_countries(srv) == want, 5, "countries in status-json")
    doc = adminlib.admin(srv, "/admin/stats").xml()
    by = doc.find("source[@mount='/live']/listeners_by_country")
    assert {c.tag: int(c.text) for c in by} == want
    lis.append(listener(srv, "198.51.100.9"))
    wirelib.wait_until(lambda: status_countries(srv) == dict(want, FR=2), 5, "two in FR")
    for l in lis:
        l.close()
    wirelib.wait_until(lambda: status_countries(srv) in ({}, ""), 5, "nobody left")
    rs = wait_records(srv, 5)
    assert sorted((r["ip"], r["country"]) for r in rs) == [
        ("127.0.0.1", "DE"), ("192.0.2.1", None), ("198.51.100.7", "FR"),
        ("198.51.100.9", "FR"), ("2001:db8::5", "NL")]
    # the figures by country
    want = {"DE": 1, "FR": 2, "NL": 1, "unknown": 1}
    wirelib.wait_until(lambda: audience(srv).get("/live") == want, 10, "the figures by country")
    assert audience(srv)[None] == want
    csv_text = adminlib.admin(srv, "/admin/audience.csv?period=all").text
    assert '"/live",5,' in csv_text and ',"unknown=1;DE=1;FR=2;NL=1"' in csv_text
    page = adminlib.admin(srv, "/admin/audience.xsl?period=all").text
    cells = [re.sub(r"<[^>]*>", "", c) for c in
             re.findall(r'data-label="Countries">(.*?)</td>', " ".join(page.split()))]
    assert "unknown 1, DE 1, FR 2, NL 1" in [" ".join(c.split()) for c in cells], cells
    src.stop()


def audience(srv):
    """The sessions per country of each mount (None: the server) in /admin/audience.json."""
    j = adminlib.admin(srv, "/admin/audience.json?period=all").json()
    return {p["mount"]: p["countries"] for p in j["periods"]}


def test_sighup_reads_the_database_again(server, data):
    srv, db = geo_server(server, "hup")
    src = live(srv, data)
    a = listener(srv)
    wirelib.wait_until(lambda: status_countries(srv) == {"DE": 1}, 5, "DE")
    write_mmdb(db, "127.0.0.0/8=AT")
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    b = listener(srv)
    wirelib.wait_until(lambda: status_countries(srv) == {"DE": 1, "AT": 1}, 5, "DE and AT")
    a.close()
    b.close()
    rs = wait_records(srv, 2)
    assert sorted(r["country"] for r in rs) == ["AT", "DE"]
    src.stop()


def test_without_a_database_countries_are_unknown(server, data):
    srv = start_server(server)
    src = live(srv, data)
    lis = listener(srv)
    wirelib.wait_until(lambda: adminlib.admin(srv, "/admin/stats").xml().findtext(
        "source[@mount='/live']/listeners") == "1", 5, "one listener")
    assert status_countries(srv) is None
    lis.close()
    [r] = wait_records(srv, 1)
    assert r["country"] is None
    wirelib.wait_until(lambda: audience(srv).get("/live"), 10, "figures")
    assert audience(srv) == {None: {"unknown": 1}, "/live": {"unknown": 1}}
    src.stop()


def test_an_unreadable_database_is_said_and_countries_stay_unknown(server, data):
    srv = start_server(server,
                       audience_xml="<geoip-db>/nonexistent/countries.mmdb</geoip-db>")
    srv.wait_log("GeoIP: cannot read /nonexistent/countries.mmdb")
    src = live(srv, data)
    lis = listener(srv)
    lis.close()
    [r] = wait_records(srv, 1)
    assert r["country"] is None
    src.stop()
