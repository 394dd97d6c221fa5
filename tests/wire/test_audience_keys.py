# SPDX-License-Identifier: GPL-2.0-or-later
"""The listener id a player sends in <audience><listener-id-param> keys every kind of listener:
an HLS session (ffmpeg) that sent it on its first playlist request, whose media playlist URL
carries it on, and a plain listener (curl) carried through an upgrade keep it as their listener
key in the session records, the key a plain listener with that id gets."""

import hashlib
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

import adminlib
import formatlib as fl
import wirelib
from test_hls import start_source
from test_sessions import records, start_server
from test_upgrade import upgrade
from test_upgrade_hls import get

pytestmark = pytest.mark.rimecast_only

AUDIENCE = "<listener-id-param>lid</listener-id-param>"
MOUNT = "/live.aac"


def id_key(lid):
    """The key docs/AUDIENCE.md defines for a listener id: SHA-256 over a label and the id, its
    first 128 bits in hex."""
    return hashlib.sha256(b"rimecast-listener\0id\0" + lid.encode() + b"\0").hexdigest()[:32]


def kill_all(srv, mount):
    doc = ET.fromstring(adminlib.admin(srv, "/admin/listclients?mount=" + mount).body)
    ids = [e.findtext("ID") for e in doc.findall("source/listener")]
    for i in ids:
        assert adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (mount, i)).status == 200
    return len(ids)


def record_of(srv, agent_part):
    got = [r for r in records(srv) if agent_part in (r.get("user_agent") or "")]
    return got[-1] if got else None


def test_an_hls_session_keeps_the_listener_id_of_its_first_request(server):
    srv = start_server(server, audience_xml=AUDIENCE)
    p = start_source(srv, MOUNT, "aac")
    try:
        status, _, body = get(srv, MOUNT + "/hls.m3u8?lid=ann%20one")
        assert status == 200
        media = [x for x in body.decode().splitlines() if x and not x.startswith("#")]
        assert len(media) == 1 and re.fullmatch(r"hls\.m3u8\?session=\w+&lid=ann%20one",
                                                media[0]), media
        # a real player from that first URL: its session is a listener, keyed by the id
        cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-user_agent",
               "ffmpeg-keyed", "-i", srv.url(MOUNT + "/hls.m3u8?lid=ann%20one"), "-t", "3",
               "-f", "null", "-"]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        wirelib.wait_until(lambda: kill_all(srv, MOUNT), 10, "the HLS listener")
        rec = wirelib.wait_until(lambda: record_of(srv, "ffmpeg-keyed"), 15, "its record")
        assert rec["listener_key"] == id_key("ann one")
    finally:
        fl.stop_process(p)


def test_a_listener_carried_by_an_upgrade_keeps_its_listener_id(server, data):
    srv = start_server(server, audience_xml=AUDIENCE)
    src = srv.source("/live", data, rate=64 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    curl = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-A", "curl-keyed",
                             srv.url("/live?lid=bob")])
    try:
        wirelib.wait_until(lambda: fl.json_source(srv, "/live")["listeners"] == 1, 10,
                           "the listener")
        upgrade(srv)
        assert fl.json_source(srv, "/live")["listeners"] == 1
        assert kill_all(srv, "/live") == 1
        rec = wirelib.wait_until(lambda: record_of(srv, "curl-keyed"), 15, "its record")
        assert rec["listener_key"] == id_key("bob")
    finally:
        curl.kill()
        curl.wait()
        src.stop()
