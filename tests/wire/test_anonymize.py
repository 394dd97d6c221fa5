# SPDX-License-Identifier: GPL-2.0-or-later
"""<audience><anonymize-ip>1</anonymize-ip>: no whole client address leaves the server.

Covers: listeners and HLS sessions from 127.0.0.1 and (where the machine has IPv6 loopback)
::1, a source, a failed admin login, a kicked listener: then every log file (error, access,
session), the audience store (read with sqlite3), /admin/listclients (XML and JSON),
/admin/stats, /status-json.xsl and the admin listener page hold no whole address of theirs,
only the networks (127.0.0.0, and :: for ::1); the URL-auth server is sent only the network.
"""

import os
import re
import socket
import sqlite3

import pytest

import adminlib
import conftest
import formatlib as fl
import hlscheck
import httprec
import wirelib
from test_hls import get

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live.aac"
WHOLE_V4 = re.compile(r"(?<![0-9.])127\.0\.0\.1(?![0-9])")
WHOLE_V6 = re.compile(r"(?<![0-9a-fA-F:])::1(?![0-9a-fA-F:])")


def has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def whole_addresses(text):
    return WHOLE_V4.findall(text) + WHOLE_V6.findall(text)


def listener_from(host, port):
    """A listener on its own connection (IPv4 or IPv6) that has its head and some audio."""
    s = socket.create_connection((host, port), 10)
    s.sendall(("GET %s HTTP/1.0\r\nUser-Agent: plain\r\n\r\n" % MOUNT).encode())
    head, rest = wirelib.read_head(s, 10)
    assert head.status == 200
    while len(rest) < 1024:
        rest += s.recv(4096)
    return s


def hls_from(host, port):
    """An HLS session from host that plays (its playlist, then a segment): a listener."""
    token = hlscheck.issue_token(host, port, MOUNT)
    s = socket.create_connection((host, port), 10)
    try:
        s.sendall(("GET %s/hls.m3u8?session=%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                   % (MOUNT, token)).encode())
        head, rest = wirelib.read_head(s, 10)
        assert head.status == 200
        text = (rest + wirelib.read_until_closed(s, 10)).decode()
    finally:
        s.close()
    assert hlscheck.fetch_first_piece(host, port, MOUNT, text)[0] == 200


def store_text(srv):
    con = sqlite3.connect("file:%s?mode=ro" % os.path.join(srv.logdir, "audience.db"),
                          uri=True, timeout=5)
    try:
        return "\n".join(repr(r) for r in con.execute("SELECT * FROM sessions"))
    finally:
        con.close()


def test_no_whole_address_leaves_the_server(server):
    v6 = has_ipv6_loopback()
    port6 = conftest.free_port() if v6 else None
    extra = "<audience><anonymize-ip>1</anonymize-ip></audience>"
    extra += "<hls><target-duration>2</target-duration></hls>"
    if v6:
        extra += ("<listen-socket><port>%d</port><bind-address>::1</bind-address>"
                  "</listen-socket>" % port6)
    srv = server(start=False, extra_xml=extra, loglevel=4)
    srv.cfg["port"] = conftest.free_port()
    # the server's own name is not a client's address: another one, to tell them apart
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "<hostname>127.0.0.1</hostname>", "<hostname>radio.example</hostname>"))
    assert srv._spawn(10), srv.diagnostics()
    src = fl.ffmpeg_source(srv, MOUNT, "aac")
    fl.wait_mount(srv, MOUNT, src)
    froms = [("127.0.0.1", srv.port)] + ([("::1", port6)] if v6 else [])
    lis = [listener_from(h, p) for h, p in froms]
    kicked = srv.listener(MOUNT)
    assert kicked.open(timeout=10).status == 200
    for h, p in froms:
        hls_from(h, p)
    # a failed admin login (the back-off logs it), then a listener kicked
    assert adminlib.request(srv, "/admin/stats", auth=("admin", "wrong")).status == 401
    srv.wait_log("failed login from")
    doc = adminlib.admin(srv, "/admin/listclients?mount=" + MOUNT).xml()
    ids = [l.findtext("ID") for l in doc.findall("source/listener")]
    assert len(ids) == 2 * len(froms) + 1
    kid = [l.findtext("ID") for l in doc.findall("source/listener")
           if l.findtext("UserAgent") == "wiretest-listener/1.0"][-1]
    assert adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (MOUNT, kid)).status == 200
    kicked.wait_closed(10)
    # what the server shows now
    shown = {}
    for path in ("/admin/listclients?mount=" + MOUNT, "/admin/listclients.json?mount=" + MOUNT,
                 "/admin/stats", "/admin/stats.json", "/admin/listclients.xsl?mount=" + MOUNT):
        r = adminlib.admin(srv, path)
        assert r.status == 200, path
        shown[path] = r.body.decode("utf-8", "replace")
    shown["/status-json.xsl"] = adminlib.request(srv, "/status-json.xsl").body.decode()
    ips = [l.findtext("IP") for l in
           adminlib.admin(srv, "/admin/listclients?mount=" + MOUNT).xml().findall(
               "source/listener")]
    assert "127.0.0.0" in ips and (not v6 or "::" in ips), ips
    for path, text in shown.items():
        assert whole_addresses(text) == [], (path, [l for l in text.replace(">", ">\n").splitlines() if whole_addresses(l)])
    # every record and log line, once the sessions ended and the server stopped
    for l in lis:
        l.close()
    fl.stop_process(src)
    assert srv.stop() == 0
    texts = {"audience.db": store_text(srv)}
    for name in os.listdir(srv.logdir):
        if not name.startswith("audience.db"):
            with open(os.path.join(srv.logdir, name), "rb") as f:
                texts[name] = f.read().decode("utf-8", "replace")
    assert {"error.log", "access.log", "sessions.log"} <= set(texts)
    for name, text in texts.items():
        found = [line for line in text.splitlines() if whole_addresses(line)]
        assert found == [], (name, found[:10])
    assert "127.0.0.0" in texts["sessions.log"] and "127.0.0.0" in texts["audience.db"]
    assert "127.0.0.0" in texts["access.log"] and "failed login from 127.0.0.0" in \
        texts["error.log"]
    assert texts["sessions.log"].count('"ended":"kicked"') == 1
    assert len(texts["sessions.log"].splitlines()) == 2 * len(froms) + 1
    if v6:
        assert '"ip":"::"' in texts["sessions.log"]


auth = httprec.recorder_fixture("auth", lambda req: (200, {"icecast-auth-user": "1"}))


def test_the_auth_server_is_sent_only_the_network(server, auth):
    rec = auth()
    srv = server(extra_xml="<audience><anonymize-ip>1</anonymize-ip></audience>",
                 mounts=[{"mount_name": "/paid", "auth": {"type": "url", "options": {
                     "listener_add": rec.url("/listener_add"),
                     "listener_remove": rec.url("/remove")}}}])
    src = srv.source("/paid", wirelib.make_data(64 * 1024), loop=True)
    assert src.connect().status == 200
    src.start()
    lis = srv.listener("/paid")
    assert lis.open(timeout=10).status == 200
    lis.close()
    assert rec.wait("listener_add")[0].form["ip"] == "127.0.0.0"
    assert rec.wait("listener_remove")[0].form["ip"] == "127.0.0.0"
    src.stop()
