# SPDX-License-Identifier: GPL-2.0-or-later
"""A relay tree on loopback: an origin and two edges (one relaying all the time, one on
demand), each edge naming the other in <redirect-siblings>.

Listeners on either edge get a byte-exact slice of what the origin's source sent; they stay
while the origin's source goes away and comes back; an edge that is full (max-listeners 2, or
<clients>) answers the next listener with a 302 to its sibling, which serves it; /room.txt
says how much room a server has.
"""

import shutil
import subprocess
import time

import pytest

import wirelib
from conftest import free_port
import formatlib

pytestmark = pytest.mark.rimecast_only

RATE = 32 * 1024


def relay_xml(origin, on_demand):
    return ("<relay><server>127.0.0.1</server><port>%d</port><mount>/live.mp3</mount>"
            "<local-mount>/live.mp3</local-mount><on-demand>%d</on-demand></relay>"
            % (origin.port, on_demand))


def siblings_xml(*ports):
    return ("<redirect-siblings><poll-interval>1</poll-interval>%s</redirect-siblings>"
            % "".join("<sibling>http://127.0.0.1:%d</sibling>" % p for p in ports))


def start_tree(server, data, edge_a_cfg=None):
    origin = server()
    src = origin.source("/live.mp3", data, rate=RATE)
    assert src.connect().status == 200
    src.start()
    formatlib.wait_mount(origin, "/live.mp3")
    port_a, port_b = free_port(), free_port()
    cfg = dict(mounts=[{"mount_name": "/live.mp3", "max_listeners": 2}])
    cfg.update(edge_a_cfg or {})
    edge_a = server(port=port_a, extra_xml=relay_xml(origin, 0) + siblings_xml(port_b), **cfg)
    edge_b = server(port=port_b, extra_xml=relay_xml(origin, 1) + siblings_xml(port_a))
    formatlib.wait_mount(edge_a, "/live.mp3")
    return origin, src, edge_a, edge_b


def get_location(srv, path="/live.mp3?x=1", method="GET"):
    resp, _ = wirelib.simple_request(srv.host, srv.port,
                                     ("%s %s HTTP/1.0\r\n\r\n" % (method, path)).encode(),
                                     timeout=3)
    return resp


def test_tree_listeners_get_the_origins_bytes_and_a_full_edge_sends_to_its_sibling(server, data):
    origin, src, edge_a, edge_b = start_tree(server, data)
    la = edge_a.listener("/live.mp3")
    assert la.open().status == 200
    lb = edge_b.listener("/live.mp3")  # on demand: the relay connects for it
    assert lb.open(timeout=12).status == 200
    for lis in (la, lb):
        lis.wait_bytes(20000, 10)
        wirelib.locate_slice(data, lis.snapshot())

    # the origin's source goes away and comes back: edge listeners keep going
    src.close()
    time.sleep(2.5)
    assert not la.closed and not lb.closed, (la.close_reason, lb.close_reason)
    data2 = wirelib.make_data(4 << 20, seed=77)
    src2 = origin.source("/live.mp3", data2, rate=RATE)
    assert src2.connect().status == 200
    src2.start()
    for lis in (la, lb):
        before = lis.received
        lis.wait_bytes(before + 30000, 15)
        wirelib.locate_slice(data2, lis.snapshot()[-16000:])

    # edge A full (max-listeners 2): the third listener is sent to edge B
    la2 = edge_a.listener("/live.mp3")
    assert la2.open().status == 200
    wirelib.wait_until(lambda: get_location(edge_a).status == 302, 10,
                       "edge A to redirect once it has polled edge B")
    resp = get_location(edge_a)
    assert resp.header("location") == "http://127.0.0.1:%d/live.mp3?x=1&sibling-redirect=1" % edge_b.port
    redirected = wirelib.Listener(edge_b.host, edge_b.port, "/live.mp3?x=1")
    assert redirected.open().status == 200
    redirected.wait_bytes(100000, 10)  # past the burst, which may hold the first source's end
    wirelib.locate_slice(data2, redirected.snapshot()[-16000:])

    if shutil.which("curl"):
        out = subprocess.run(["curl", "-sL", "--max-time", "5", "-o", "-",
                              "http://127.0.0.1:%d/live.mp3" % edge_a.port],
                             capture_output=True, timeout=10)
        assert len(out.stdout) > 100000
        wirelib.locate_slice(data2, out.stdout[-16000:])

    room = wirelib.simple_request(edge_b.host, edge_b.port,
                                  b"GET /room.txt HTTP/1.0\r\n\r\n")[1].decode()
    lines = room.splitlines()
    assert lines[0] == "rimecast-room 1"
    assert lines[1].startswith("clients ")
    assert "mount /live.mp3 2 -1" in lines or "mount /live.mp3 3 -1" in lines, room
    for lis in (la, lb, la2, redirected):
        assert not lis.closed
        lis.close()
    src2.close()


def test_an_edge_past_its_clients_limit_redirects_listeners_and_refuses_the_rest(server, data):
    # edge A: its relay connection and one listener fill <clients>
    origin, src, edge_a, edge_b = start_tree(server, data, {"clients": 2, "mounts": None})

    def one_listener():
        # edge B's room poll holds one of edge A's two slots for a moment now and then
        lis = edge_a.listener("/live.mp3")
        resp = lis.open()
        if resp is not None and resp.status == 200:
            return lis
        lis.close()
        return None
    la = wirelib.wait_until(one_listener, 10, "a listener admitted on edge A", interval=0.2)
    wirelib.wait_until(lambda: get_location(edge_a).status == 302, 10,
                       "edge A past <clients> to redirect a listener")
    assert get_location(edge_a).header("location").startswith(
        "http://127.0.0.1:%d/" % edge_b.port)
    head = get_location(edge_a, method="HEAD")
    assert head.status == 302 and head.header("location") == get_location(edge_a).header(
        "location")
    # not a listener, or a mount the sibling does not have: refused as before
    assert get_location(edge_a, "/status-json.xsl").status == 403
    assert get_location(edge_a, "/nothing.mp3").status == 403
    la.close()
    src.close()


def test_a_head_request_to_a_full_edge_gets_the_302_a_get_gets(server, data):
    origin, src, edge_a, edge_b = start_tree(server, data)
    full = [edge_a.listener("/live.mp3") for _ in range(2)]   # max-listeners 2
    for lis in full:
        assert lis.open().status == 200
    wirelib.wait_until(lambda: get_location(edge_a).status == 302, 10,
                       "edge A to redirect once it has polled edge B")
    head = get_location(edge_a, method="HEAD")
    assert head.status == 302, head
    assert head.header("location") == "http://127.0.0.1:%d/live.mp3?x=1&sibling-redirect=1" % edge_b.port
    assert head.header("location") == get_location(edge_a).header("location")
    assert get_location(edge_b, method="HEAD").status == 200    # edge B has room
    for lis in full:
        assert not lis.closed
        lis.close()
    # room again on edge A: HEAD gets its 200
    wirelib.wait_until(lambda: get_location(edge_a, method="HEAD").status == 200, 5,
                       "HEAD on edge A to get 200 once it has room")
    src.close()


def test_a_sibling_that_is_not_a_rimecast_server_is_never_chosen(server, data):
    other = server()  # answers /room.txt with 404 like an Icecast server would
    srv = server(extra_xml=siblings_xml(other.port),
                 mounts=[{"mount_name": "/live.mp3", "max_listeners": 0}])
    s = srv.source("/live.mp3", data, rate=RATE)
    assert s.connect().status == 200
    s.start()
    formatlib.wait_mount(srv, "/live.mp3")
    time.sleep(2.2)
    assert get_location(srv).status == 403
    s.close()
