# SPDX-License-Identifier: GPL-2.0-or-later
"""Public pages: webroot stylesheets run against the public stats (hidden mounts
left out), the built-in /status-json.xsl, "/" and <alias>, generated playlists."""

import os
import xml.etree.ElementTree as ET

import pytest

from adminlib import (EVIL, IDENTITY_XSL, Station, admin, request, source_elements, write)

pytestmark = pytest.mark.rimecast_only

MOUNTS = [{"mount_name": "/hidden.mp3", "hidden": 1}]
ICECAST_JSON_GLOBALS = {"admin", "host", "location", "server_id", "server_start",
                        "server_start_iso8601", "source"}
HIDDEN_IN_JSON = {"max_listeners", "public", "source_ip", "slow_listeners", "total_bytes_read",
                  "total_bytes_sent", "user_agent"}


@pytest.fixture
def station(server):
    st = Station(server, ["/a.mp3", "/hidden.mp3"], mounts=MOUNTS)
    yield st
    st.close()


@pytest.mark.parametrize("count", [0, 1, 2])
def test_builtin_status_json_source_is_always_an_array(server, count):
    st = Station(server, ["/m%d.mp3" % i for i in range(count)])
    try:
        admin(st.srv, "/admin/metadata?mount=/m0.mp3&mode=updinfo&song=" + "%3C%2Fscript%3E%22")
        r = request(st.srv, "/status-json.xsl")
        assert r.status == 200 and r.header("content-type").startswith("application/json")
        assert r.header("access-control-allow-origin") == "*"
        j = r.json()["icestats"]
        assert set(j) == ICECAST_JSON_GLOBALS
        assert isinstance(j["source"], list) and len(j["source"]) == count
        for s in j["source"]:
            assert not HIDDEN_IN_JSON & set(s), s
            assert s["server_name"] == "Station " + EVIL
            assert isinstance(s["listeners"], int) and isinstance(s["listener_peak"], int)
            assert s["listenurl"].endswith(".mp3")
            assert s["genre"] == "Rock & Roll"
        if count:
            assert j["source"][0]["title"] == '</script>"'
        assert b"</script>" not in r.body
    finally:
        st.close()


def test_public_stylesheet_leaves_hidden_mounts_out(station):
    r = request(station.srv, "/copy.xsl")
    assert r.status == 200
    doc = ET.fromstring(r.body)
    assert [s.get("mount") for s in doc.findall("source")] == ["/a.mp3"]
    assert source_elements(doc, "/a.mp3").findtext("server_name") == "Station " + EVIL
    r = request(station.srv, "/copy.xsl?mount=/hidden.mp3")
    assert ET.fromstring(r.body).findall("source") == []
    r = request(station.srv, "/status-json.xsl")
    assert [s["listenurl"].rsplit("/", 1)[1] for s in r.json()["icestats"]["source"]] == ["a.mp3"]


def test_stylesheet_output_sets_the_content_type(station):
    r = request(station.srv, "/text.xsl")
    assert r.status == 200 and r.header("content-type") == "application/x-test; charset=UTF-8"
    assert r.text == "server=%s;sources=1" % r.text.split(";")[0].split("=")[1]
    r = request(station.srv, "/page.xsl")
    assert r.header("content-type").startswith("text/html")
    assert b"/a.mp3|" in r.body and b"<script>" not in r.body
    r = request(station.srv, "/page.xsl", method="HEAD")
    assert r.status == 200 and r.body == b"" and int(r.header("content-length")) > 0


def test_missing_broken_and_raw_stylesheets(station):
    assert request(station.srv, "/nope.xsl").status == 404
    write(os.path.join(station.webroot, "broken.xsl"), "<xsl:stylesheet")
    r = request(station.srv, "/broken.xsl")
    assert r.status == 500 and b"xsl:stylesheet" not in r.body
    for path in ("/copy.xsl.", "/copy.xsl/", "/COPY.XSL", "/copy.xsl%00"):
        r = request(station.srv, path)
        assert b"xsl:template" not in r.body, path  # the template source never leaks
    assert station.srv.is_alive()


def test_stylesheet_changes_are_picked_up(station):
    path = os.path.join(station.webroot, "live.xsl")
    write(path, IDENTITY_XSL)
    assert request(station.srv, "/live.xsl").body.startswith(b"<?xml")
    write(path, IDENTITY_XSL.replace('method="xml"', 'method="text"').replace(
        "<xsl:copy>", "").replace("</xsl:copy>", "") + " ")
    os.utime(path, (1, 1))
    r = request(station.srv, "/live.xsl")
    assert not r.body.startswith(b"<?xml")


def test_root_serves_index_html_else_status_xsl(server):
    st = Station(server, [])
    try:
        write(os.path.join(st.webroot, "status.xsl"), IDENTITY_XSL)
        r = request(st.srv, "/")
        assert r.status == 200 and b"<icestats>" in r.body
        write(os.path.join(st.webroot, "index.html"), "<p>home</p>")
        r = request(st.srv, "/")
        assert r.status == 200 and r.body == b"<p>home</p>"
    finally:
        st.close()


def test_alias_rewrites_exact_paths(server):
    st = Station(server, [], extra_xml='<paths><alias source="/" destination="/copy.xsl"/>'
                 '<alias source="/hi" destination="/hello.txt"/></paths>')
    try:
        if "alias" not in open(st.srv.config_path).read():
            pytest.skip("config has no alias")
        r = request(st.srv, "/")
        assert r.status == 200 and b"<icestats>" in r.body
        assert request(st.srv, "/hi").body == b"hello world\n"
        assert request(st.srv, "/hi/").status == 404
    finally:
        st.close()


# ---------------------------------------------------------------- playlists

def test_m3u_pls_xspf_for_a_live_mount(station):
    r = request(station.srv, "/a.mp3.m3u", headers={"Host": "radio.example:8443"})
    assert r.status == 200 and r.header("content-type") == "audio/x-mpegurl"
    assert r.text == "http://radio.example:8443/a.mp3\n"
    r = request(station.srv, "/a.mp3.pls")
    assert r.header("content-type") == "audio/x-scpls"
    lines = r.text.split("\n")
    assert lines[0] == "[playlist]" and "NumberOfEntries=1" in lines
    assert "File1=http://127.0.0.1:%d/a.mp3" % station.srv.port in lines
    assert "Title1=Station " + EVIL in lines
    admin(station.srv, "/admin/metadata?mount=/a.mp3&mode=updinfo&song=%3Cb%3Enow%3C/b%3E")
    r = request(station.srv, "/a.mp3.xspf")
    assert r.header("content-type").startswith("application/xspf+xml")
    ns = {"x": "http://xspf.org/ns/0/"}
    doc = ET.fromstring(r.body)
    assert doc.findtext("x:trackList/x:track/x:location", namespaces=ns).endswith("/a.mp3")
    assert doc.findtext("x:trackList/x:track/x:title", namespaces=ns) == "<b>now</b>"
    assert doc.findtext("x:title", namespaces=ns) == "Station " + EVIL


def test_playlist_host_header_is_validated_and_files_win(station):
    r = request(station.srv, "/a.mp3.m3u", headers={"Host": "evil.example/x\"<>"})
    assert r.text == "http://127.0.0.1:%d/a.mp3\n" % station.srv.port
    assert request(station.srv, "/nope.mp3.m3u").status == 404
    write(os.path.join(station.webroot, "a.mp3.m3u"), "static\n")
    assert request(station.srv, "/a.mp3.m3u").body == b"static\n"
    r = request(station.srv, "/a.mp3.m3u", method="HEAD")
    assert r.status == 200 and r.body == b""
