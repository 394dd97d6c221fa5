# SPDX-License-Identifier: GPL-2.0-or-later
"""Listener sessions: one JSON line in the session log when a listener's session ends.

Covers: the fields of a record (mount, start, end, seconds, bytes, ip, user agent,
referer, user, country, how it ended) written by real clients (curl, ffmpeg, a raw socket
with hostile text; on a relayed mount, and on a Shoutcast source's mount from both ports),
each way a session ends (client left, kicked, source gone, too slow for queue-size,
max-listener-duration, server stopped), <audience><anonymize-ip> (only an IPv4 /24 or IPv6 /48 is
written to the session and access logs), the log's reopening on SIGHUP and rotation by
<logsize>, and <audience><session-log>none</session-log>.
"""

import datetime
import json
import os
import signal
import subprocess
import time

import pytest

import adminlib
import conftest
import matrixlib as mx
import wirelib

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live"


def start_server(server, logging_xml="", extra_xml="", audience_xml="", **cfg):
    """A server with logging_xml in its <logging> and audience_xml as its <audience>."""
    if audience_xml:
        extra_xml += "<audience>%s</audience>" % audience_xml
    srv = server(start=False, extra_xml=extra_xml, **cfg)
    srv.cfg["port"] = conftest.free_port()
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "</logging>", logging_xml + "\n  </logging>"))
    assert srv._spawn(10), srv.diagnostics()
    return srv


def session_log(srv, name="sessions.log"):
    return os.path.join(srv.logdir, name)


def records(srv, name="sessions.log"):
    try:
        with open(session_log(srv, name), "rb") as f:
            text = f.read().decode("utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines()]


def wait_records(srv, n, timeout=10, name="sessions.log"):
    return wirelib.wait_until(lambda: len(records(srv, name)) >= n and records(srv, name),
                              timeout, "%d session records" % n)


def live(srv, data, mount=MOUNT, rate=64 * 1024):
    src = srv.source(mount, data, rate=rate, loop=True)
    assert src.connect().status == 200
    src.start()
    src.wait_sent(8192, 5)
    wirelib.wait_until(lambda: mount in mounts(srv), 5, "mount live")
    return src


def mounts(srv):
    doc = adminlib.admin(srv, "/admin/listmounts").xml()
    return [s.get("mount") for s in doc.findall("source")]


def listener_id(srv, mount=MOUNT):
    doc = adminlib.admin(srv, "/admin/listclients?mount=" + mount).xml()
    return doc.findtext("source/listener/ID")


def test_a_curl_listener_that_leaves_gets_one_record_with_its_fields(server, data):
    srv = start_server(server)
    src = live(srv, data)
    agent = 'curl-listener "quoted" \\ back'
    referer = "http://ref.example/?a=1&b=</script>"
    t0 = time.time()
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-A", agent, "-e", referer,
                          "--max-time", "1.5", "-w", "%{size_download} %{size_header}",
                          srv.url(MOUNT)], capture_output=True, text=True, timeout=20)
    t1 = time.time()
    assert out.returncode == 28, out        # stopped by --max-time: the client left
    body, head = (int(x) for x in out.stdout.split())
    [r] = wait_records(srv, 1)
    src.stop()
    assert r["mount"] == MOUNT and r["served"] == MOUNT
    assert r["ip"] == "127.0.0.1"
    assert r["user_agent"] == agent and r["referer"] == referer
    assert r["user"] is None and r["country"] is None
    assert r["ended"] == "client_left"
    assert isinstance(r["id"], int)
    # what curl read is all the server sent, but for what was still in the socket buffers
    assert body > 0 and r["bytes"] >= body + head
    # times in Unix seconds, to the millisecond
    start, end = r["start"], r["end"]
    assert all(isinstance(r[k], float) for k in ("start", "end", "seconds"))
    assert t0 - 0.01 <= start <= end <= t1 + 0.5
    assert abs(r["seconds"] - (end - start)) < 0.002
    assert 1.0 <= r["seconds"] <= 3.0
    assert b"</script>" not in open(session_log(srv), "rb").read()   # "</" escaped as "<\/"


def test_hostile_text_is_escaped_and_every_line_is_json(server, data):
    srv = start_server(server)
    src = live(srv, data)
    s = wirelib.connect(srv.host, srv.port, 5)
    s.sendall(b"GET /live HTTP/1.0\r\nUser-Agent: evil \"q\" \\ \xff \xe2\x80\xa8 end\r\n"
              b"Referer: r<x>&\r\n\r\n")
    head, _ = wirelib.read_head(s, 5)
    assert head.status == 200
    s.close()
    [r] = wait_records(srv, 1)
    src.stop()
    assert r["user_agent"].startswith('evil "q" \\ \ufffd') and r["user_agent"].endswith("\u2028 end")
    assert r["referer"] == "r<x>&"
    raw = open(session_log(srv), "rb").read()
    assert raw.count(b"\n") == 1 and b"\xff" not in raw and b"\xe2\x80\xa8" not in raw


def test_killclient_ends_the_session_as_kicked(server, data):
    srv = start_server(server)
    src = live(srv, data)
    lis = srv.listener(MOUNT)
    assert lis.open().status == 200
    lid = listener_id(srv)
    assert adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (MOUNT, lid)).status == 200
    lis.wait_closed(5)
    [r] = wait_records(srv, 1)
    assert r["ended"] == "kicked" and str(r["id"]) == lid
    assert r["user_agent"] == "wiretest-listener/1.0"
    lis.close()
    src.stop()


def test_a_source_that_ends_without_fallback_ends_its_listeners_as_source_gone(server, data):
    srv = start_server(server)
    src = live(srv, data)
    lis = srv.listener(MOUNT)
    assert lis.open().status == 200
    lis.wait_bytes(8192, 5)
    src.stop()
    lis.wait_closed(10)
    [r] = wait_records(srv, 1)
    assert r["ended"] == "source_gone"
    assert r["bytes"] >= lis.received
    lis.close()


def test_a_listener_cut_off_by_queue_size_ends_as_too_slow(server, data):
    srv = start_server(server, queue_size=64 * 1024, sndbuf=8192, write_window=20)
    src = live(srv, data, rate=4 << 20)
    s = wirelib.connect(srv.host, srv.port, 5, rcvbuf=4096)
    s.sendall(b"GET /live HTTP/1.0\r\nUser-Agent: slow\r\n\r\n")     # and never read
    [r] = wait_records(srv, 1)
    assert r["ended"] == "too_slow" and r["user_agent"] == "slow"
    assert "behind (queue-size 65536), disconnecting" in srv.error_log()
    s.close()
    src.stop()


def test_max_listener_duration_ends_the_session_as_time_limit(server, data):
    srv = start_server(server, extra_xml="<mount><mount-name>%s</mount-name>"
                "<max-listener-duration>1</max-listener-duration></mount>" % MOUNT)
    src = live(srv, data)
    lis = srv.listener(MOUNT)
    assert lis.open().status == 200
    lis.wait_closed(5)
    [r] = wait_records(srv, 1)
    assert r["ended"] == "time_limit" and 0.9 <= r["seconds"] <= 2.5
    lis.close()
    src.stop()


def test_listeners_still_there_when_the_server_stops_end_as_shutdown(server, data):
    srv = start_server(server)
    src = live(srv, data)
    lis = [srv.listener(MOUNT) for _ in range(2)]
    for l in lis:
        assert l.open().status == 200
    assert srv.stop() == 0
    rs = records(srv)
    assert len(rs) == 2 and {r["ended"] for r in rs} == {"shutdown"}
    for l in lis:
        l.close()
    src.close()


def forwarded_listener(srv, address):
    s = wirelib.connect(srv.host, srv.port, 5)
    s.sendall(("GET /live HTTP/1.0\r\nUser-Agent: proxied\r\nX-Forwarded-For: %s\r\n\r\n"
               % address).encode())
    head, _ = wirelib.read_head(s, 5)
    assert head.status == 200
    s.close()


@pytest.mark.parametrize("truncate", [0, 1], ids=["full", "truncated"])
def test_address_truncation_keeps_only_the_network_in_the_logs(server, data, truncate):
    proxies = os.path.join(conftest.run_dir(), "proxies-%d-%d" % (os.getpid(), truncate))
    with open(proxies, "w") as f:
        f.write("127.0.0.1\n")
    os.chmod(proxies, 0o644)
    srv = start_server(server, audience_xml="<anonymize-ip>%d</anonymize-ip>" % truncate,
                extra_xml="<paths><trusted-proxies>%s</trusted-proxies></paths>" % proxies)
    src = live(srv, data)
    forwarded_listener(srv, "198.51.100.77")
    forwarded_listener(srv, "2001:db8:abcd:12::5")
    rs = wait_records(srv, 2)
    src.stop()
    addresses = sorted(r["ip"] for r in rs)
    srv.wait_log('"GET /live HTTP/1.0" 200', log="access")
    wirelib.wait_until(lambda: srv.access_log().count("GET /live") >= 2, 5, "access lines")
    logs = open(session_log(srv)).read() + srv.access_log()
    if truncate:
        assert addresses == ["198.51.100.0", "2001:db8:abcd::"]
        assert "198.51.100.77" not in logs and "2001:db8:abcd:12" not in logs
        assert "198.51.100.0 - - [" in srv.access_log()
    else:
        assert addresses == ["198.51.100.77", "2001:db8:abcd:12::5"]
        assert "198.51.100.77 - - [" in srv.access_log()


def test_sighup_reopens_the_session_log_and_logsize_rotates_it(server, data):
    srv = start_server(server, "<logsize>1</logsize>")
    src = live(srv, data)

    def one_session(agent):
        s = wirelib.connect(srv.host, srv.port, 5)
        s.sendall(("GET /live HTTP/1.0\r\nUser-Agent: %s\r\n\r\n" % agent).encode())
        head, _ = wirelib.read_head(s, 5)
        assert head.status == 200
        s.close()

    one_session("first")
    wait_records(srv, 1)
    os.rename(session_log(srv), session_log(srv, "moved.log"))   # an outside rotation
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    one_session("after-hup")
    [r] = wait_records(srv, 1)
    assert r["user_agent"] == "after-hup"
    assert [x["user_agent"] for x in records(srv, "moved.log")] == ["first"]
    # <logsize>1</logsize>: past a KB of records the file is renamed to .old (replacing it)
    for i in range(8):
        one_session("rotate-%d-%s" % (i, "x" * 100))
    def text(name="sessions.log"):  # between the rename and the new file, none is there
        try:
            with open(session_log(srv, name)) as f:
                return f.read()
        except FileNotFoundError:
            return ""
    # the eight sessions end in any order (and a record may cross the size last): every one
    # gone, their records written, the new file opened
    wirelib.wait_until(lambda: not mx.listeners(srv, MOUNT), 10, "every session ended")
    wirelib.wait_until(lambda: "rotate-" in text() + text("sessions.log.old") and
                       os.path.exists(session_log(srv)), 10, "their records and the new file")
    old = records(srv, "sessions.log.old")       # whole JSON lines on both sides
    assert old and all(x["user_agent"].startswith(("after-hup", "rotate-")) for x in old)
    # the file in use stays under <logsize> and one record (the one that crossed it)
    assert os.path.getsize(session_log(srv)) < 1024 + 600
    src.stop()


def test_sessionlog_none_turns_the_session_log_off_on_sighup(server, data):
    srv = start_server(server)
    src = live(srv, data)

    def one_session(agent):
        lis = srv.listener(MOUNT, headers={"X-Agent-Tag": agent})
        assert lis.open().status == 200
        lis.close()

    one_session("on")
    wait_records(srv, 1)
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "</icecast>", "<audience><session-log>none</session-log></audience>\n</icecast>"))
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    one_session("off")
    wirelib.wait_until(lambda: srv.access_log().count("GET /live") >= 2, 5, "two access lines")
    src.stop()
    assert len(records(srv)) == 1
    assert not os.path.exists(session_log(srv, "none"))


def test_an_ffmpeg_listener_gets_a_record_with_its_agent(server):
    import webuilib
    srv = start_server(server)
    src = live(srv, webuilib.make_mp3(seconds=8), rate=16 * 1024)
    out = subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", srv.url(MOUNT),
                          "-t", "1", "-f", "null", "-"], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    [r] = wait_records(srv, 1)
    assert r["user_agent"].startswith("Lavf/") and r["ended"] == "client_left"
    assert r["bytes"] > 0 and r["mount"] == MOUNT
    src.stop()


def test_a_listener_of_a_relayed_mount_gets_a_record_on_the_edge(server, data):
    origin = start_server(server)
    src = live(origin, data)
    edge = start_server(server, extra_xml=(
        "<relay><server>127.0.0.1</server><port>%d</port><mount>%s</mount>"
        "<local-mount>/edge</local-mount></relay>" % (origin.port, MOUNT)))
    wirelib.wait_until(lambda: "/edge" in mounts(edge), 10, "the relay on the edge")
    lis = edge.listener("/edge")
    assert lis.open().status == 200
    lis.wait_bytes(8192, 10)
    lis.close()
    [r] = wait_records(edge, 1)
    assert r["mount"] == "/edge" and r["ended"] == "client_left" and r["bytes"] >= 8192
    assert r["user_agent"] == "wiretest-listener/1.0"
    # the relay's own connection to the origin is a listener there: its session ends with
    # the edge
    assert edge.stop() == 0
    [o] = wait_records(origin, 1)
    assert o["mount"] == MOUNT and o["ended"] == "client_left"
    src.stop()


def test_listeners_of_a_shoutcast_source_get_records_on_both_ports(server, data):
    from test_shoutcast import OK2, ShoutcastSource
    from test_shoutcast import MOUNT as SC_MOUNT
    port = conftest.port_pair()
    srv = start_server(server, extra_xml=(
        "<listen-socket><port>%d</port><bind-address>127.0.0.1</bind-address>"
        "<shoutcast-mount>%s</shoutcast-mount></listen-socket>"
        "<shoutcast-mount>%s</shoutcast-mount>" % (port, SC_MOUNT, SC_MOUNT)))
    src = ShoutcastSource(srv.host, port + 1, data, rate=64 * 1024, chunk=2048)
    assert src.connect() == OK2, src.greeting
    src.start()
    wirelib.wait_until(lambda: SC_MOUNT in mounts(srv), 5, "the Shoutcast mount")
    main = srv.listener(SC_MOUNT, headers={"Icy-MetaData": "1"})
    other = wirelib.Listener(srv.host, port, SC_MOUNT)     # the Shoutcast socket's own port
    for lis in (main, other):
        assert lis.open().status == 200
        lis.wait_bytes(8192, 5)
        lis.close()
    rs = wait_records(srv, 2)
    assert [(r["mount"], r["ended"]) for r in rs] == [(SC_MOUNT, "client_left")] * 2
    assert all(r["bytes"] >= 8192 for r in rs)
    src.stop()
