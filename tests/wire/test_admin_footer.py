# SPDX-License-Identifier: GPL-2.0-or-later
"""The XML and JSON links in the admin pages' footer point to the page's own command.

Each data page (/admin/<command>.xsl?mount=...) links /admin/<command>?mount=... and
/admin/<command>.json?mount=..., the mount percent-encoded (a mount name with a space, an
ampersand and angle brackets stays one parameter); both answer 200 with their content type.
An action's answer (killclient) links the server's stats instead, never the action again.
"""

import html.parser
import json
import urllib.parse
import xml.etree.ElementTree as ET

import pytest

import wirelib
from adminlib import admin

pytestmark = pytest.mark.rimecast_only

ODD = "/odd &<x>=1.mp3"
ODD_Q = urllib.parse.quote(ODD, safe="/")          # /odd%20%26%3Cx%3E%3D1.mp3


class FooterLinks(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = {}
        self.in_footer = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "footer":
            self.in_footer = True
        elif tag == "a" and self.in_footer and a.get("class") in ("view-xml", "view-json"):
            self.links[a["class"]] = a["href"]

    def handle_endtag(self, tag):
        if tag == "footer":
            self.in_footer = False


def footer(srv, page):
    r = admin(srv, page)
    assert r.status == 200, (page, r.status)
    assert r.header("content-type").startswith("text/html")
    p = FooterLinks()
    p.feed(r.text)
    assert set(p.links) == {"view-xml", "view-json"}, (page, p.links)
    return p.links["view-xml"], p.links["view-json"]


def check_views(srv, xml_href, json_href):
    r = admin(srv, xml_href)
    assert r.status == 200, xml_href
    assert r.header("content-type").startswith("text/xml"), r.header("content-type")
    ET.fromstring(r.body)
    r = admin(srv, json_href)
    assert r.status == 200, json_href
    assert r.header("content-type").startswith("application/json"), r.header("content-type")
    return json.loads(r.text)


def test_footer_links_the_pages_own_command(server):
    srv = server()
    sources = []
    try:
        for mount in ("/live.mp3", ODD_Q):
            src = srv.source(mount, wirelib.make_data(1 << 20), rate=16 * 1024, loop=True)
            assert src.connect().status == 200
            src.start()
            src.wait_sent(4096, 5)
            sources.append(src)
        wirelib.wait_until(lambda: ODD in admin(srv, "/admin/listmounts").text.replace(
            "&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"), 5, "the odd mount")

        cases = [
            ("/admin/stats.xsl", "/admin/stats", ""),
            ("/admin/listmounts.xsl", "/admin/listmounts", ""),
            ("/admin/log.xsl", "/admin/log", ""),
            ("/admin/stats.xsl?mount=/live.mp3", "/admin/stats", "?mount=/live.mp3"),
            ("/admin/listclients.xsl?mount=" + ODD_Q, "/admin/listclients", "?mount=" + ODD_Q),
            ("/admin/moveclients.xsl?mount=" + ODD_Q, "/admin/moveclients", "?mount=" + ODD_Q),
        ]
        for page, path, query in cases:
            xml_href, json_href = footer(srv, page)
            assert (xml_href, json_href) == (path + query, path + ".json" + query), page
            doc = check_views(srv, xml_href, json_href)
            if "listclients" in path:
                # the one parameter arrived whole: the odd mount's listeners, not a 400
                assert ODD in json.dumps(doc, ensure_ascii=False), doc

        # an action's answer does not link the action (it would run again)
        xml_href, json_href = footer(srv, "/admin/killclient.xsl?mount=/live.mp3&id=999999")
        assert (xml_href, json_href) == ("/admin/stats", "/admin/stats.json")
        check_views(srv, xml_href, json_href)
    finally:
        for src in sources:
            src.stop()
