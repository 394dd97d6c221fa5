# SPDX-License-Identifier: GPL-2.0-or-later
"""/health, for load balancers and DNS failover: 200 while the server serves, 503 while it
starts or stops (<shutdown-grace>: after SIGTERM it serves on that long, saying so), with the
state and the server-wide load as JSON and Cache-Control: no-store. Public. Its siblings read
the same state in /room.txt: a stopping server is sent nobody and sends its new listeners to
them. An upgrade is never seen: the new process answers from the same sockets."""

import json
import signal
import threading
import time

import pytest

import wirelib
from conftest import free_port
from test_faults import POINTS
from test_siblings import (arrive, close_all, feed, hold, start_siblings,
                           wait_polled, wait_seen)
from test_upgrade import upgrade

pytestmark = pytest.mark.rimecast_only


def health(srv, method="GET", timeout=5.0):
    """(status, Response, parsed JSON body or None)."""
    resp, body = wirelib.simple_request(srv.host, srv.port,
                                        ("%s /health HTTP/1.0\r\n\r\n" % method).encode(),
                                        timeout=timeout)
    return resp.status, resp, json.loads(body) if body else None


def test_health_answers_200_with_the_state_and_the_load_while_serving(server):
    srv = server(clients=50)
    src = feed(srv)
    lis = srv.listener("/live.mp3")
    assert lis.open().status == 200
    try:
        status, resp, doc = health(srv)
        assert status == 200
        assert resp.header("content-type") == "application/json"
        assert resp.header("cache-control") == "no-store"
        assert sorted(doc) == ["clients", "clients_limit", "listeners", "listeners_limit",
                               "share", "state"]
        assert doc["state"] == "serving"
        assert doc["listeners"] == 1 and doc["listeners_limit"] == -1
        # the source, the listener and this request at least
        assert doc["clients_limit"] == 50 and 3 <= doc["clients"] <= 5
        assert abs(doc["share"] - doc["clients"] / 50) < 0.002
        status, resp, doc = health(srv, "HEAD")
        assert status == 200 and doc is None
        # no mount takes its name
        s = srv.source("/health", b"x" * 4096)
        assert s.connect().status == 403
        s.close()
    finally:
        lis.close()
        src.stop()


def test_health_answers_503_during_the_shutdown_grace_and_siblings_send_nobody_there(server):
    a, b, c = start_siblings(server, 3, share=0,
                             last_xml="<limits><shutdown-grace>30</shutdown-grace></limits>")
    srcs = [feed(s) for s in (a, b, c)]
    wait_polled(a, [b, c])
    lis = c.listener("/live.mp3")
    assert lis.open().status == 200
    held = hold(a, 10)  # a is the most loaded: it sends its new listeners away
    wait_seen(a, 2)
    try:
        assert health(c)[0] == 200
        c.send_signal(signal.SIGTERM)
        wirelib.wait_until(lambda: health(c)[0] == 503, 5, "c's /health to answer 503")
        assert health(c)[2]["state"] == "stopping"
        room, _ = wirelib.simple_request(c.host, c.port, b"GET /room.txt HTTP/1.0\r\n\r\n")
        assert room.status == 503
        # it serves on meanwhile: its listener goes on
        before = lis.received
        lis.wait_bytes(before + 4096, 5)
        # its siblings stop sending it listeners
        a.wait_log("sibling http://127.0.0.1:%d takes no listeners: it answers 503" % c.port, 5)
        went = {s.port: 0 for s in (a, b, c)}
        socks = []
        for i in range(20):
            sock, hops = arrive(a.port, "/live.mp3?n=%d" % i)
            assert sock is not None, hops
            socks.append(sock)
            went[hops[-1][0]] += 1
        assert went[c.port] == 0 and went[b.port] > 0, went
        # and its own new listeners go to them
        sock, hops = arrive(c.port, "/live.mp3")
        assert hops[0][:2] == (c.port, 302) and hops[1][0] in (a.port, b.port), hops
        socks.append(sock)
        # a second SIGTERM stops it at once
        t0 = time.monotonic()
        assert c.stop(timeout=10) == 0
        assert time.monotonic() - t0 < 5
        assert "a second SIGTERM stops at once" in c.error_log()
        close_all(socks)
    finally:
        close_all(held)
        lis.close()
        for s in srcs:
            s.stop()


def test_health_never_fails_across_an_upgrade(server):
    srv = server()
    src = feed(srv)
    answers, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            try:
                answers.append(health(srv, timeout=10)[0])
            except (OSError, AttributeError, ValueError) as e:
                answers.append(repr(e))
            time.sleep(0.005)
    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        wirelib.wait_until(lambda: len(answers) >= 5, 5, "polls before the upgrade")
        old = srv.pid
        new = upgrade(srv)
        assert new != old
        n = len(answers)
        wirelib.wait_until(lambda: len(answers) >= n + 5, 5, "polls after the upgrade")
    finally:
        stop.set()
        t.join(15)
        src.stop()
    assert set(answers) == {200}, [a for a in answers if a != 200][:5]


@pytest.mark.skipif("server_starting" not in POINTS,
                    reason="needs a binary built with --enable-fault-injection")
def test_health_answers_503_while_the_server_starts(server, monkeypatch):
    # the armed point holds start-up's end for 1.5 s, with the workers accepting
    monkeypatch.setenv("RIMECAST_FAULT", "server_starting:1")
    srv = server(start=False)
    answers, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            try:
                status, _, doc = health(srv, timeout=10)
                answers.append((status, doc["state"]))
            except (OSError, AttributeError, TypeError):
                pass  # not listening yet
            time.sleep(0.01)
    srv.cfg["port"] = free_port()
    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        srv.start()
        wirelib.wait_until(lambda: answers and answers[-1][0] == 200, 10, "/health to be 200")
    finally:
        stop.set()
        t.join(15)
    assert answers[0] == (503, "starting"), answers[:3]
    first_200 = answers.index((200, "serving"))
    assert set(answers[:first_200]) == {(503, "starting")}
    assert set(answers[first_200:]) == {(200, "serving")}
