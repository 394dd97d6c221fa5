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

TLS: a cluster with ssl=on and a certificate of the test's own CA (openssl): the store reaches
it with sslmode=require and with verify-full (the CA in sslrootcert, the certificate checked
against the URI's host name though libpq is handed the address); a wrong CA, or an address
the certificate does not name, is one clear line in the error log (the password never in it)
and the server streams while the figures answer 503.
"""

import ctypes
import os
import shutil
import socket
import struct
import subprocess
import threading
import time

import pytest

import adminlib
import conftest
import pglib
import testca
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
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespace may be made here (unshare -m)")
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


# ---------------------------------------------------------------- TLS to the database

@pytest.fixture(scope="module")
def tls_cluster():
    """A cluster with ssl=on, its certificate (localhost, no IP entry) signed by a CA of the
    test's; (cluster, the CA's certificate, another CA's)."""
    if not pglib.bindir():
        pytest.skip("no PostgreSQL in /usr/lib/postgresql (dev.sh installs it)")
    if not shutil.which("openssl"):
        pytest.skip("no openssl tool")
    c = pglib.Cluster().init()
    ca = testca.make_ca(c.dir, "db-ca", "rimecast test database CA")
    other = testca.make_ca(c.dir, "other-ca", "rimecast test other CA")
    cert, key, _ = testca.make_leaf(ca, c.data, "server", san="DNS:localhost")
    for path in (cert, key):
        os.chown(path, c.user.pw_uid, c.user.pw_gid)
    with open(os.path.join(c.data, "postgresql.auto.conf"), "a") as f:
        f.write("ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\n" % (cert, key))
    c.start()
    yield c, ca[0], other[0]
    c.stop()


def tls_uri(c, db, host, query):
    return "postgresql://%s:%s@%s:%d/%s?%s" % (pglib.ROLE, pglib.PASSWORD, host, c.port, db, query)


def tls_server(server, uri, name):
    return server(extra_xml="<audience><database>%s</database><server-name>%s</server-name>"
                  "</audience>" % (uri.replace("&", "&amp;"), name))


def ssl_in_use(c, db):
    """Whether the server's connections to db (application_name rimecast) are over TLS."""
    return c.psql("SELECT bool_and(s.ssl)::text FROM pg_stat_activity a JOIN pg_stat_ssl s"
                  " USING (pid) WHERE a.application_name = 'rimecast' AND a.datname = '%s'"
                  % db)[0][0]


@pytest.mark.parametrize("mode", ["require", "verify-full"])
def test_the_store_reaches_its_database_over_tls(server, data, tls_cluster, mode):
    c, ca, _ = tls_cluster
    db = c.new_database()
    query = "sslmode=require" if mode == "require" else "sslmode=verify-full&sslrootcert=" + ca
    # verify-full by name: libpq gets the address looked up and checks the certificate
    # against the name (localhost), not the address (which the certificate does not name)
    srv = tls_server(server, tls_uri(c, db, "localhost", query), "edge-tls")
    srv.wait_log("audience store: sessions are kept in postgresql://rimecast:***@localhost:%d/%s"
                 % (c.port, db), 10)
    src = live(srv, data, "/live")
    hold(srv, "/live", "over-tls", 0.1)
    assert [r["user_agent"] for r in wait_pg_rows(c, db, 1)] == ["over-tls"]
    assert ssl_in_use(c, db) == "true"
    src.stop()


@pytest.mark.parametrize("case", ["wrong-ca", "wrong-name"])
def test_a_database_certificate_that_does_not_verify_is_said_and_the_server_streams(
        server, data, tls_cluster, case):
    c, ca, other = tls_cluster
    db = c.new_database()
    if case == "wrong-ca":
        uri = tls_uri(c, db, "localhost", "sslmode=verify-full&sslrootcert=" + other)
        why = "certificate verify failed"
    else:    # the right CA, but asked by an address the certificate does not name
        uri = tls_uri(c, db, "127.0.0.1", "sslmode=verify-full&sslrootcert=" + ca)
        why = 'does not match host name "127.0.0.1"'
    srv = tls_server(server, uri, "edge-bad")
    srv.wait_log("audience store: cannot connect to postgresql://rimecast:***@", 10)
    line = [x for x in srv.error_log().splitlines() if "cannot connect to" in x]
    assert len(line) == 1 and why in line[0], line
    assert pglib.PASSWORD not in srv.error_log()
    src = live(srv, data, "/live")
    listener = srv.listener("/live")
    assert listener.open().status == 200
    conftest.assert_server_healthy(srv, listener)
    listener.close()
    r = adminlib.admin(srv, "/admin/audience.json?period=all")
    assert r.status == 503
    src.stop()
