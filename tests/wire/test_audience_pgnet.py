# SPDX-License-Identifier: GPL-2.0-or-later
"""The PostgreSQL store's connection on the network: the database's host name looked up within
the connect deadline, and TLS to the database.

Name lookups: the server runs in a mount namespace of its own whose /etc/resolv.conf names a
DNS server of the test's (a UDP socket on 127.0.0.x:53) that answers the database's name only
after a delay longer than the connect deadline: the store says within that deadline that the
name was not looked up in time (the server streams meanwhile), starts no second lookup while
the first is under way, and connects with the address once it comes; a name the DNS server
says does not exist is said as such at once; a name of two addresses is reached at the
one the database listens on.
"""

import ctypes
import os
import socket
import struct
import threading
import time

import pytest

import conftest
import wirelib
from test_audience_pg import cluster, pg_rows, wait_pg_rows   # noqa: F401 (a fixture)
from test_audience import hold
from test_sessions import live

pytestmark = pytest.mark.rimecast_only

CONNECT_S = 5          # audience_pg.c's CONNECT_MS


class SlowDns:
    """A DNS server on address:53 that answers `name` (A: addresses, AAAA: none) after `delay`
    seconds and any other name with NXDOMAIN at once; counts the questions it got by name."""

    def __init__(self, address, name, delay, addresses=("127.0.0.1",)):
        self.name, self.delay, self.addresses = name.lower(), delay, addresses
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((address, 53))
        self.questions = []
        self.closing = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.closing:
            try:
                query, peer = self.sock.recvfrom(512)
            except OSError:
                return
            if len(query) < 17:
                continue
            qname, end = [], 12
            while query[end]:
                qname.append(query[end + 1:end + 1 + query[end]].decode("ascii", "replace"))
                end += 1 + query[end]
            qtype = struct.unpack(">H", query[end + 1:end + 3])[0]
            name = ".".join(qname).lower()
            self.questions.append((name, qtype))
            late = name == self.name
            threading.Timer(self.delay if late else 0, self._answer,
                            (query, end + 5, qtype, late, peer)).start()

    def _answer(self, query, qend, qtype, known, peer):
        flags = 0x8180 if known else 0x8183            # a response; NXDOMAIN when unknown
        answers = self.addresses if known and qtype == 1 else ()
        head = query[:2] + struct.pack(">HHHHH", flags, 1, len(answers), 0, 0)
        body = query[12:qend]
        for a in answers:
            body += struct.pack(">HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(a)
        try:
            self.sock.sendto(head + body, peer)
        except OSError:
            pass

    def close(self):
        self.closing = True
        self.sock.close()


def in_namespace(resolv_conf):
    """A preexec_fn: the child gets a mount namespace of its own (nothing it mounts is seen
    outside) in which /etc/resolv.conf is resolv_conf."""
    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWNS, MS_REC, MS_PRIVATE, MS_BIND = 0x20000, 0x4000, 0x40000, 0x1000

    def enter():
        if libc.unshare(CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare")
        if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
        if libc.mount(resolv_conf.encode(), b"/etc/resolv.conf", None, MS_BIND, None) != 0:
            raise OSError(ctypes.get_errno(), "mount --bind resolv.conf")
    return enter


def dns_address():
    """A loopback address of this test process's own for the DNS server (port 53 is fixed)."""
    return "127.53.%d.%d" % (conftest.free_port() % 250 + 1, os.getpid() % 250 + 1)


def server_resolving_with(server, dns, db_uri, tmpdir):
    resolv = os.path.join(tmpdir, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("nameserver %s\noptions timeout:30 attempts:1\n" % dns)
    os.chmod(resolv, 0o644)
    srv = server(start=False, extra_xml="<audience><database>%s</database><server-name>edge-n"
                 "</server-name><min-session>2</min-session></audience>" % db_uri)
    srv.preexec_fn = in_namespace(resolv)
    return srv.start()


def test_a_database_name_that_resolves_late_costs_the_store_its_deadline_and_one_lookup(
        server, data, cluster):
    db = cluster.new_database()
    address = dns_address()
    name = "pg.rimecast.test"
    dns = SlowDns(address, name, delay=CONNECT_S + 3)
    try:
        uri = cluster.uri(db).replace("@127.0.0.1:", "@%s:" % name)
        t0 = time.monotonic()
        srv = server_resolving_with(server, address, uri, cluster.dir)
        line = "audience store: cannot connect to postgresql://rimecast:***@%s:%d/%s: no answer" \
               " in time looking up %s" % (name, cluster.port, db, name)
        srv.wait_log(line, CONNECT_S + 3)
        # said at the deadline, not after the resolver's own 30 s
        assert time.monotonic() - t0 < CONNECT_S + 3
        src = live(srv, data, "/live")
        hold(srv, "/live", "while-looking-up", 0.1)
        # the answer comes: the next try takes it (no second lookup) and connects by address
        srv.wait_log("audience store: sessions are kept in postgresql://rimecast:***@%s:%d/%s"
                     % (name, cluster.port, db), CONNECT_S + 10)
        rows = wait_pg_rows(cluster, db, 1)
        assert [r["user_agent"] for r in rows] == ["while-looking-up"]
        assert sorted(set(dns.questions)) == [(name, 1), (name, 28)], dns.questions
        assert len(dns.questions) == 2, dns.questions
        src.stop()
    finally:
        dns.close()


def test_a_database_name_that_does_not_exist_is_said_at_once(server, data, cluster):
    address = dns_address()
    dns = SlowDns(address, "some.other.name", delay=0)
    try:
        uri = "postgresql://rimecast:pw@nowhere.rimecast.test:%d/audience" % cluster.port
        srv = server_resolving_with(server, address, uri, cluster.dir)
        srv.wait_log("audience store: cannot connect to postgresql://rimecast:***@"
                     "nowhere.rimecast.test:%d/audience: cannot look up nowhere.rimecast.test:"
                     % cluster.port, CONNECT_S)
        src = live(srv, data, "/live")
        listener = srv.listener("/live")
        assert listener.open().status == 200
        conftest.assert_server_healthy(srv, listener)
        listener.close()
        src.stop()
    finally:
        dns.close()


def test_a_database_name_of_several_addresses_is_reached_at_the_one_that_answers(
        server, data, cluster):
    """The name has two addresses, the cluster listens on one (127.0.0.1): libpq is handed
    both and takes the one that answers."""
    db = cluster.new_database()
    address = dns_address()
    name = "two.rimecast.test"
    dns = SlowDns(address, name, delay=0, addresses=("127.0.0.2", "127.0.0.1"))
    try:
        srv = server_resolving_with(server, address,
                                    cluster.uri(db).replace("@127.0.0.1:", "@%s:" % name),
                                    cluster.dir)
        srv.wait_log("audience store: sessions are kept in postgresql://rimecast:***@%s:%d/%s"
                     % (name, cluster.port, db), CONNECT_S + 3)
        src = live(srv, data, "/live")
        hold(srv, "/live", "by-name", 0.1)
        assert [r["user_agent"] for r in wait_pg_rows(cluster, db, 1)] == ["by-name"]
        src.stop()
    finally:
        dns.close()
