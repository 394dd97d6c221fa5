# SPDX-License-Identifier: GPL-2.0-or-later
"""Slots under <clients>, <sources> and per-mount <max-listeners>: every way a client ends
gives its slot back, so a server at its limit admits new clients again, and the stats agree."""

import socket
import time
import xml.etree.ElementTree as ET

import pytest

import adminlib
import wirelib
from conftest import ADMIN_PASSWORD, ADMIN_USER, IS_ICECAST, SOURCE_PASSWORD

MOUNT = "/slots.mp3"
FULL = 3          # listeners that fill the server (or the mount)


def start_source(srv, data):
    src = srv.source(MOUNT, data, rate=64 * 1024, loop=True)
    resp = wirelib.wait_until(lambda: _try_source(src), 3, "source to be admitted")
    assert resp.status == 200
    src.start()
    return src


def _try_source(src):
    resp = src.connect()
    if resp is not None and resp.status == 200:
        return resp
    src.stop()
    src.sock = None
    return None


def open_listener(srv, rcvbuf=None, timeout=2.0):
    """A listener admitted within timeout (slots of clients that just left may take a loop
    iteration to come back); fails if the server keeps refusing."""
    def attempt():
        lis = srv.listener(MOUNT, rcvbuf=rcvbuf)
        resp = lis.open(start=False)
        if resp is not None and resp.status == 200:
            return lis
        lis.close()
        return None
    return wirelib.wait_until(attempt, timeout, "a listener slot to come back", interval=0.01)


def refused(srv):
    resp, _ = wirelib.simple_request(srv.host, srv.port,
                                     b"GET %s HTTP/1.0\r\n\r\n" % MOUNT.encode(), timeout=5)
    return resp is None or resp.status == 403


def fill(srv, **kw):
    lis = [open_listener(srv, **kw) for _ in range(FULL)]
    assert refused(srv), "a listener over the limit was admitted"
    return lis


def global_stats(srv):
    doc = adminlib.admin(srv, "/admin/stats").xml()
    src = adminlib.source_elements(doc, MOUNT)
    return {"clients": int(doc.findtext("clients")),
            "listeners": int(doc.findtext("listeners")),
            "sources": int(doc.findtext("sources")),
            "mount_listeners": int(src.findtext("listeners")) if src is not None else None}


def assert_stats_settle(srv, sources=1):
    """Only the source and the stats request itself remain."""
    want = {"listeners": 0, "sources": sources, "mount_listeners": 0 if sources else None}

    def ok():
        try:
            st = global_stats(srv)
        except (TypeError, AttributeError, OSError, ET.ParseError):
            return False  # the stats request itself was refused while slots were still held
        got = {k: st[k] for k in want}
        return got == want and st["clients"] <= sources + 1
    wirelib.wait_until(ok, 5, lambda: "stats to settle: %r" % (global_stats(srv),))


def close_all(lis, rst=False):
    for lis_ in lis:
        if rst and lis_.sock is not None:
            wirelib.set_linger_rst(lis_.sock)
        lis_.close()


# The global limit counts every connection: the source plus FULL listeners fill it.
GLOBAL = dict(clients=1 + FULL, sources=1, burst_size=0)
# The mount limit leaves room for admin requests.
PER_MOUNT = dict(clients=50, sources=1, burst_size=0,
                 mounts=[dict(mount_name=MOUNT, max_listeners=FULL)])


@pytest.mark.parametrize("limits", [GLOBAL, PER_MOUNT], ids=["clients", "max-listeners"])
@pytest.mark.parametrize("rst", [False, True], ids=["fin", "rst"])
def test_listeners_that_close_give_their_slots_back(server, data, limits, rst):
    srv = server(**limits)
    src = start_source(srv, data)
    for _ in range(100):
        close_all(fill(srv), rst=rst)
    close_all([open_listener(srv)])
    src.stop()
    src = start_source(srv, data)
    assert_stats_settle(srv)
    src.stop()


@pytest.mark.parametrize("limits", [GLOBAL, PER_MOUNT], ids=["clients", "max-listeners"])
def test_listeners_of_a_source_that_left_give_their_slots_back(server, data, limits):
    """The listeners get the end of the stream and keep their sockets open: their slots, and
    the source's, are free at once all the same."""
    srv = server(**limits)
    for _ in range(100):
        src = start_source(srv, data)
        lis = fill(srv)
        src.stop()
        for lis_ in lis:
            lis_.start()
        for lis_ in lis:
            lis_.wait_closed(5)
        src = start_source(srv, data)
        fill(srv)                   # the old ones are still open on the client side
        src.stop()
        close_all(lis)
    src = start_source(srv, data)
    assert_stats_settle(srv)
    src.stop()


def test_killed_listeners_give_their_slots_back(server, data):
    srv = server(**PER_MOUNT)
    src = start_source(srv, data)
    for _ in range(100):
        lis = fill(srv)
        doc = adminlib.admin(srv, "/admin/listclients?mount=%s" % MOUNT).xml()
        ids = [e.findtext("ID") for e in doc.iter("listener")]
        assert len(ids) == FULL
        for i in ids:
            r = adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (MOUNT, i))
            assert r.status == 200
        close_all(lis)
    assert_stats_settle(srv)
    src.stop()


@pytest.mark.parametrize("limits", [GLOBAL, PER_MOUNT], ids=["clients", "max-listeners"])
def test_listeners_cut_off_by_queue_size_give_their_slots_back(server, data, limits):
    """100 rounds. Lag is judged on the write passes, a couple of windows after a listener
    stops taking data, and the kernel's send buffers would hide a second of it: a 20 ms window
    and small buffers make each round a cut-off within tens of milliseconds (so soon that the
    slow listeners may be gone before a check that the server is full could run: a leaked slot
    shows as a listener that can no longer get in, within 100 rounds). Each round admits one
    listener more than the limit: at least one slow one was cut."""
    cfg = dict(limits, queue_size=64 * 1024, sndbuf=8192, write_window=20)
    srv = server(**cfg)
    src = srv.source(MOUNT, data, rate=4 << 20, loop=True)
    assert src.connect().status == 200
    src.start()
    for _ in range(100):
        # never read: they fall behind and are cut
        lis = [open_listener(srv, rcvbuf=4096, timeout=10) for _ in range(FULL)]
        lis.append(open_listener(srv, timeout=10))
        close_all(lis)
    if not IS_ICECAST:
        assert srv.error_log().count("behind (queue-size 65536), disconnecting") >= 100
    src.stop()
    src = start_source(srv, data)
    assert_stats_settle(srv)
    src.stop()


OTHER = "/other.mp3"


def move(srv, src, dest):
    r = adminlib.admin(srv, "/admin/moveclients?mount=%s&destination=%s" % (src, dest))
    assert r.status == 200, (r.status, r.body)


def test_listeners_moved_out_give_their_slots_back(server, data):
    """A full mount emptied by /admin/moveclients fills up again at once, 100 times over,
    while the listeners moved out are still streaming on the other mount."""
    srv = server(clients=50, sources=2, burst_size=0,
                 mounts=[dict(mount_name=MOUNT, max_listeners=FULL)])
    src = start_source(srv, data)
    other = srv.source(OTHER, data, rate=64 * 1024, loop=True)
    assert other.connect().status == 200
    other.start()
    moved = []
    for _ in range(100):
        lis = fill(srv)
        move(srv, MOUNT, OTHER)
        close_all(moved)                        # the batch before, moved out one turn earlier
        moved = lis
    adminlib.wait_stat(srv, OTHER, "listeners", str(FULL))
    adminlib.wait_stat(srv, MOUNT, "listeners", "0")
    close_all(moved)
    other.stop()
    assert_stats_settle(srv)
    src.stop()


# <sources> 1: one source slot, which every way a source ends or is refused gives back.
ONE_SOURCE = dict(clients=50, sources=1, burst_size=0)


def test_killed_sources_give_their_slot_back(server, data):
    srv = server(**ONE_SOURCE)
    for _ in range(100):
        src = start_source(srv, data)
        r = adminlib.admin(srv, "/admin/killsource?mount=%s" % MOUNT)
        assert r.status == 200, (r.status, r.body)
        src.stop()
    src = start_source(srv, data)
    assert_stats_settle(srv)
    src.stop()


def test_timed_out_sources_give_their_slot_back(server, data):
    """Three times, not 100: each turn waits out the source-timeout. The dropped sources keep
    their sockets open on the client side until the end: the slot comes back all the same."""
    srv = server(source_timeout=1, **ONE_SOURCE)
    quiet = []
    for _ in range(3):
        src = srv.source(MOUNT, data)
        wirelib.wait_until(lambda: _try_source(src), 3, "the source slot to come back")
        src.send_now(data[:8192])
        quiet.append(src)
        wirelib.wait_until(lambda: global_stats(srv)["mount_listeners"] is not None, 5,
                           "the mount to come up")
        wirelib.wait_until(lambda: global_stats(srv)["sources"] == 0 and
                           global_stats(srv)["mount_listeners"] is None, 5,
                           "the quiet source to be dropped")
    src = start_source(srv, data)
    assert_stats_settle(srv)
    src.stop()
    for q in quiet:
        q.close()


def test_refused_sources_give_their_slot_back(server, data):
    """Each turn: sources refused before they get the slot (401, 400), then one that takes it
    (its login also clears the failed one from the brute-force guard), then sources refused
    because it is taken (403), then the one that had it leaves."""
    srv = server(**ONE_SOURCE)
    bad_length = ("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\n"
                  "Authorization: %s\r\nContent-Length: -1\r\n\r\n"
                  % (MOUNT, wirelib.basic_auth("source", SOURCE_PASSWORD))).encode()
    for _ in range(100):
        for kw in (dict(password="wrong"), dict(auth=False)):
            s = srv.source(MOUNT, **kw)
            assert s.connect().status == 401, s.response
            s.close()
        if not IS_ICECAST:                      # icecast2 ignores Content-Length on PUT
            resp, _ = wirelib.simple_request(srv.host, srv.port, bad_length)
            assert resp is not None and resp.status == 400, resp
        src = start_source(srv, data)
        for mount in (MOUNT, OTHER):            # the mount in use; no slot left
            s = srv.source(mount)
            assert s.connect().status == 403, s.response
            s.close()
        src.stop()
    src = start_source(srv, data)
    assert_stats_settle(srv)
    src.stop()


ONE_SHOT = {
    "head": b"HEAD %s HTTP/1.0\r\n\r\n" % MOUNT.encode(),
    "not-found": b"GET /no-such-thing HTTP/1.0\r\n\r\n",
    "bad-request": b"BLAH\r\n\r\n",
    "file": b"GET /style.css HTTP/1.0\r\n\r\n",
    "keep-alive": b"GET /style.css HTTP/1.1\r\nHost: x\r\n\r\nGET /style.css HTTP/1.1\r\nHost: x\r\n\r\n",
    "admin": (b"GET /admin/stats HTTP/1.1\r\nHost: x\r\nAuthorization: "
              + wirelib.basic_auth(ADMIN_USER, ADMIN_PASSWORD).encode() + b"\r\n\r\n"),
    "refused": b"GET %s HTTP/1.0\r\n\r\n" % MOUNT.encode(),
}


@pytest.mark.parametrize("kind", sorted(ONE_SHOT))
def test_other_requests_give_their_slots_back(server, data, kind):
    """FULL - 1 listeners stay; 100 requests of one kind take the last slot in turn (or are
    refused, when the mount is full); the last listener is admitted afterwards."""
    srv = server(clients=1 + FULL, sources=1, burst_size=0,
                 mounts=[dict(mount_name=MOUNT, max_listeners=FULL - 1 if kind == "refused"
                              else FULL)])
    src = start_source(srv, data)
    lis = [open_listener(srv) for _ in range(FULL - 1)]
    raw = ONE_SHOT[kind]
    for _ in range(100):
        s = wirelib.connect(srv.host, srv.port)
        s.sendall(raw)
        resp, _ = wirelib.read_head(s)
        assert resp is not None or kind == "bad-request"   # icecast2 just closes
        if kind == "refused":
            assert resp.status == 403
        s.close()
    if kind == "refused":
        lis[0].close()
        lis[0] = open_listener(srv)
    else:
        lis.append(open_listener(srv))
        assert refused(srv)
    close_all(lis)
    assert_stats_settle(srv)
    src.stop()


def test_max_listener_duration_closes_each_listener_when_its_time_is_up(server, data):
    duration = 2
    early = 1.0 if IS_ICECAST else 0.2     # icecast2 counts whole seconds from the accept
    srv = server(burst_size=0, extra_xml="<mount><mount-name>%s</mount-name>"
                 "<max-listener-duration>%d</max-listener-duration></mount>"
                 % (MOUNT, duration))
    src = start_source(srv, data)
    other = srv.source("/free.mp3", data, rate=64 * 1024, loop=True)
    assert other.connect().status == 200
    other.start()
    free = srv.listener("/free.mp3", keep=0)
    assert free.open().status == 200
    first = srv.listener(MOUNT, keep=0)
    assert first.open().status == 200
    t_first = time.monotonic()
    time.sleep(1.0)
    second = srv.listener(MOUNT, keep=0)
    assert second.open().status == 200
    t_second = time.monotonic()
    first.wait_closed(duration + 3)
    took = time.monotonic() - t_first
    assert duration - early <= took <= duration + 1.5, took
    assert not second.closed, "the deadline is per listener, not per mount"
    second.wait_closed(duration + 3)
    took = time.monotonic() - t_second
    assert duration - early <= took <= duration + 1.5, took
    assert first.received > 0 and second.received > 0
    time.sleep(0.5)
    assert not free.closed, "a mount without the setting keeps its listeners"
    free.close()
    wirelib.wait_until(lambda: global_stats(srv)["listeners"] == 0, 5, "listeners to be gone")
    other.stop()
    assert_stats_settle(srv)
    src.stop()
