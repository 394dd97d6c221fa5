# SPDX-License-Identifier: GPL-2.0-or-later
"""YP directory listings across an upgrade: the new process goes on touching the listings the
old one made, under their SIDs and at their pace; nothing is added again or removed, and an
old process that stays for its TLS listeners lists nothing any more. Also what the new process
shows of that old process's local feed: no access-log line, and a Host header an IPv6 plain
socket can be named by."""

import json
import os
import re
import signal
import socket
import threading
import time

import pytest

import wirelib
from test_upgrade import (RATE, failure_line, installed_copy, mp3_file, replace_binary,  # noqa: F401
                          running, upgrade)  # (installed_copy, mp3_file: fixtures)
from test_yp import directory, yp_xml  # noqa: F401 (directory: the recording directory)

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live.mp3"
PUBLIC = {"ice-public": "1", "ice-name": "Wire FM"}


def numbered_sids():
    """A directory's answer that gives each add a SID of its own (sid-1, sid-2...) and asks for
    a touch every second: a second listing of the stream shows as a second SID."""
    lock, n = threading.Lock(), [0]

    def answer(req):
        if req.action != "add":
            return 200, {"YPResponse": "1"}
        with lock:
            n[0] += 1
            return 200, {"YPResponse": "1", "SID": "sid-%d" % n[0], "TouchFreq": "1"}
    return answer


def listed_station(srv, d, mp3_file):
    """A paced public MP3 source on MOUNT, listed (sid-1) and touched twice."""
    src = srv.source(MOUNT, mp3_file, rate=RATE, chunk=1000, headers=PUBLIC, loop=True)
    assert src.connect().status == 200, src.response
    src.start()
    d.wait("add", 1, 10)
    d.wait("touch", 2, 10)
    return src


def touches_since(d, t0):
    return [t for t in d.of("touch") if t.time > t0]


def assert_one_listing_touched_on(d, t0, count, timeout):
    """count touches since t0, every one under sid-1 at its second's pace; no second add and no
    remove ever."""
    wirelib.wait_until(lambda: len(touches_since(d, t0)) >= count, timeout,
                       lambda: "%d touches since the hand-over: %r" % (count, d.requests))
    got = touches_since(d, t0)
    assert [t.form["sid"] for t in got] == ["sid-1"] * len(got), d.requests
    gaps = [b.time - a.time for a, b in zip(got, got[1:])]
    assert all(g >= 0.6 for g in gaps), gaps  # one stream of touches, not two interleaved
    assert len(d.of("add")) == 1 and not d.of("remove"), d.requests


def test_a_listing_is_touched_on_by_the_new_process_under_its_sid(server, directory, mp3_file):
    d = directory(numbered_sids())
    srv = server(extra_xml=yp_xml(d.url("/cgi")))
    src = listed_station(srv, d, mp3_file)
    upgrade(srv)  # returns once the old process exited
    t0 = time.monotonic()
    assert_one_listing_touched_on(d, t0, 4, 10)
    # the listing is the new process's: it removes it when the source ends
    src.stop()
    rm = d.wait("remove", 1, 10)
    assert [r.form["sid"] for r in rm] == ["sid-1"], d.requests
    assert len(d.of("add")) == 1, d.requests


def test_an_old_process_draining_tls_listeners_lists_nothing(server, directory, mp3_file):
    from test_tls import TlsListener, tls_server
    d = directory(numbered_sids())
    srv, _, _ = tls_server(server, extra_xml=yp_xml(d.url("/cgi")))
    src = listed_station(srv, d, mp3_file)
    secure = TlsListener(srv, MOUNT)
    assert secure.open().status == 200, secure.response
    secure.wait_bytes(10000, 10)
    old = srv.proc.pid
    upgrade(srv, drains=True)
    srv.wait_log("upgrade: serving 1 TLS listener until it leaves")
    t0 = time.monotonic()
    # while both processes run: one listing, touched once a second
    assert_one_listing_touched_on(d, t0, 5, 15)
    n = secure.received
    secure.wait_bytes(n + 8000, 10)
    assert running(old) and not secure.closed, secure.close_reason
    secure.close()
    wirelib.wait_until(lambda: not running(old), 10, "the old process to exit")
    # its exit removes nothing: the new process touches on
    t1 = time.monotonic()
    assert_one_listing_touched_on(d, t1, 2, 10)
    src.stop()
    assert [r.form["sid"] for r in d.wait("remove", 1, 10)] == ["sid-1"], d.requests
    assert srv.stop() == 0
    # the old process's local feed was nobody's listener at the new one: no access-log line
    # (nor session record) for it when it ended with the old process
    lines = srv.access_log().splitlines()
    assert [l for l in lines if "Rimecast" in l] == [], lines
    with open(os.path.join(srv.logdir, "sessions.log")) as f:
        ended = [json.loads(line) for line in f if line.strip()]
    assert not [r for r in ended if "Rimecast" in (r.get("agent") or "")], ended



def test_a_listing_whose_directory_the_new_config_drops_is_removed(server, directory,
                                                                  mp3_file):
    d = directory(numbered_sids())
    srv = server(extra_xml=yp_xml(d.url("/cgi")))
    src = listed_station(srv, d, mp3_file)
    srv.write_config(extra_xml="")  # the new process lists nowhere
    upgrade(srv)
    rm = d.wait("remove", 1, 10)
    assert [r.form["sid"] for r in rm] == ["sid-1"] and len(d.of("add")) == 1, d.requests
    src.stop()

# A new binary that reads the whole state, then refuses it: the hand-over fails after the
# old process saved its listings.
REFUSING = """#!/usr/bin/python3
import os, socket, time
s = socket.socket(fileno=int(os.environ["RIMECAST_HANDOVER_FD"]))
s.send(b"H")
while True:
    data, fds, _, _ = socket.recv_fds(s, 65536, 300)
    for fd in fds:
        os.close(fd)
    if not data or data[:1] == b"E":
        break
time.sleep(3)
s.send(b"Rrefused by the test")
"""


def test_a_failed_hand_over_leaves_the_old_process_touching_its_listing(server, directory,
                                                                      mp3_file, installed_copy):
    d = directory(numbered_sids())
    path = installed_copy()
    srv = server(binary=path, extra_xml=yp_xml(d.url("/cgi")))
    src = listed_station(srv, d, mp3_file)
    replace_binary(path, REFUSING)
    srv.send_signal(signal.SIGUSR2)
    assert "refused by the test" in failure_line(srv)
    t0 = time.monotonic()
    assert_one_listing_touched_on(d, t0, 3, 10)
    src.stop()
    assert [r.form["sid"] for r in d.wait("remove", 1, 10)] == ["sid-1"], d.requests


def test_a_relay_to_an_ipv6_address_names_it_in_brackets_in_its_host_header(server):
    """The relay's request is the one the local feed of an upgrade sends to the new process's
    plain socket, bound to ::1 when the config says so: the Host header must read [::1]:port."""
    from upstreamlib import read_head
    sock = socket.socket(socket.AF_INET6)
    sock.bind(("::1", 0))
    sock.listen(4)
    sock.settimeout(15)
    port = sock.getsockname()[1]
    server(extra_xml="<relay><server>::1</server><port>%d</port><mount>/up.mp3</mount>"
                     "<local-mount>/edge.mp3</local-mount><on-demand>0</on-demand></relay>"
           % port)
    try:
        conn, _ = sock.accept()
        with conn:
            conn.settimeout(5)
            head = read_head(conn).decode("latin-1")
    finally:
        sock.close()
    assert re.search(r"(?im)^Host: \[::1\]:%d\r$" % port, head), head
