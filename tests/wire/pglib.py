# SPDX-License-Identifier: GPL-2.0-or-later
"""A PostgreSQL cluster of its own for the wire tests of the shared audience store.

Owns: a cluster made by initdb in a temporary directory, run by pg_ctl from the Debian
binaries (/usr/lib/postgresql/*/bin, never /usr/local/bin) as an unprivileged user of its
own (postgres, else nobody: the tests run as root and PostgreSQL refuses to), listening on
127.0.0.1 at a port of the test process's range (conftest.free_port) and on a socket in the
directory; passwords asked over TCP (scram-sha-256), trust on the socket for the fixture's own
psql. Stopped (and started again) by its postmaster's PID, never by name. Does not start
Rimecast (conftest.py does).
"""

import glob
import os
import pwd
import signal
import subprocess
import tempfile
import time

import conftest
import wirelib

ROLE = "rimecast"
PASSWORD = "s3cret-pw"


def bindir():
    """The newest PostgreSQL's binaries, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


def _user():
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise AssertionError("no unprivileged user to run PostgreSQL")


class Cluster:
    def __init__(self):
        self.bin = bindir()
        self.user = _user()
        self.dir = tempfile.mkdtemp(prefix="wire-pg-", dir=conftest.run_dir())
        os.chmod(self.dir, 0o755)
        os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "postgres.log")
        self.port = conftest.free_port()
        self.pid = None
        self.databases = 0

    def _as_user(self):
        uid, gid = self.user.pw_uid, self.user.pw_gid

        def demote():
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        return demote

    def _run(self, args, **kw):
        env = dict(os.environ, HOME=self.dir, LC_ALL="C.UTF-8")
        return subprocess.run(args, preexec_fn=self._as_user(), cwd=self.dir, env=env,
                              capture_output=True, text=True, timeout=120, **kw)

    def init(self):
        pwfile = os.path.join(self.dir, "pw")
        with open(pwfile, "w") as f:
            f.write("postgres-pw\n")
        os.chown(pwfile, self.user.pw_uid, self.user.pw_gid)
        r = self._run([os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "postgres",
                       "--pwfile", pwfile, "--auth-local=trust", "--auth-host=scram-sha-256",
                       "-E", "UTF8", "--no-sync"])
        assert r.returncode == 0, r.stdout + r.stderr
        return self

    def start(self):
        opts = ("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off" % (self.port, self.dir))
        r = self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-l", self.log,
                       "-o", opts, "-w", "-t", "60", "start"])
        assert r.returncode == 0, r.stdout + r.stderr + self.log_text()
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        return self

    def stop(self, timeout=60):
        """A fast shutdown (SIGINT to the postmaster, by its PID), waited for."""
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGINT)
        except ProcessLookupError:
            self.pid = None
            return
        wirelib.wait_until(lambda: not _alive(self.pid), timeout, "PostgreSQL %d stopped"
                           % self.pid, interval=0.05)
        self.pid = None

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""

    def psql(self, sql, db="postgres"):
        """Rows of sql (tab-separated fields), run as the superuser over the socket."""
        r = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t", "-F", "\t",
                            "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-p", str(self.port),
                            "-U", "postgres", "-d", db, "-c", sql],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return [line.split("\t") for line in r.stdout.splitlines() if line]

    def new_database(self):
        """An empty database owned by the role the servers log in as; its name."""
        if not self.databases:
            self.psql("CREATE ROLE %s LOGIN PASSWORD '%s'" % (ROLE, PASSWORD))
        self.databases += 1
        name = "audience%d" % self.databases
        self.psql("CREATE DATABASE %s OWNER %s" % (name, ROLE))
        return name

    def uri(self, db, password=PASSWORD, scheme="postgresql"):
        return "%s://%s:%s@127.0.0.1:%d/%s" % (scheme, ROLE, password, self.port, db)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose: pg_ctl's child is not ours to reap
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
