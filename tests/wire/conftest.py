# SPDX-License-Identifier: GPL-2.0-or-later
"""pytest fixtures for the wire tests: start the real daemon.

Owns: choosing the binary (env RIMECAST_BIN; /usr/bin/icecast2 works too),
writing an icecast.xml into a private directory, starting the daemon on a
free 127.0.0.1 port, waiting until it accepts, and a clean SIGTERM shutdown
check at teardown. Does not speak the stream protocols (see wirelib.py).
"""

import os
import pwd
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from xml.sax.saxutils import escape

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wirelib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _default_bin():
    env = os.environ.get("RIMECAST_BIN")
    if env:
        return env
    builddir = os.environ.get("RIMECAST_BUILDDIR")
    if builddir:
        return os.path.join(builddir, "rimecast")
    return os.path.join(REPO, "rimecast")


BINARY = _default_bin()
IS_ICECAST = "icecast" in os.path.basename(BINARY)
SRCDIR = os.environ.get("RIMECAST_SRCDIR", REPO)

# Icecast listens with a backlog of 5: more connects in flight than that cost
# SYN retries (1 s, 3 s, 7 s ...), so the many-listener harness paces itself.
CONNECT_PENDING = 8 if IS_ICECAST else 64

SOURCE_PASSWORD = "hackme"
ADMIN_USER = "admin"
ADMIN_PASSWORD = "adminpw"


def pytest_configure(config):
    config.addinivalue_line("markers", "rimecast_only: behaviour where Rimecast intentionally "
                            "differs from Icecast 2.4; skipped when the binary is icecast2")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
    config.addinivalue_line("markers", "browser: drives a Chromium page (the server side of what "
                            "it asks is also covered without a browser); given to every test "
                            "that takes the browsers fixture")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "browsers" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
    if not IS_ICECAST:
        return
    skip = pytest.mark.skip(reason="rimecast_only: icecast2 behaves differently")
    for item in items:
        if "rimecast_only" in item.keywords:
            item.add_marker(skip)


NOTES = []  # what the terminal summary prints (in the process that reports)
_pending = []  # recorded by the running test, not yet in a report


def note(text):
    """Record a measurement; printed in the terminal summary even when output is captured."""
    print(text)
    _pending.append(text)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Measurements travel in the test's report, so that they reach the terminal summary also
    # from pytest-xdist workers.
    outcome = yield
    report = outcome.get_result()
    while _pending:
        report.user_properties.append(("note", _pending.pop(0)))


def pytest_runtest_logreport(report):
    NOTES.extend(value for key, value in report.user_properties if key == "note")


def pytest_terminal_summary(terminalreporter):
    if NOTES:
        terminalreporter.section("measurements")
        for text in NOTES:
            terminalreporter.write_line(text)


def pytest_report_header(config):
    return "server binary: %s (%s)" % (BINARY, "icecast2 reference" if IS_ICECAST else "rimecast")


# ---------------------------------------------------------------- config

# Ports for servers come from a range of their own below the kernel's ephemeral range (so a
# client's outgoing connection never takes one between choosing and binding it), one range per
# pytest-xdist worker (so parallel workers never choose the same port). Only even ports are
# handed out: the odd one after each is left for a Shoutcast source port (port + 1).
PORT_RANGE = 1000
_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
_port_base = 20000 + PORT_RANGE * (int(_worker[2:]) if _worker[2:].isdigit() else 0)
assert _port_base + PORT_RANGE <= 32768, "more pytest-xdist workers than port ranges (12)"
_port_next = [0]


def free_port():
    for _ in range(PORT_RANGE // 2):
        port = _port_base + _port_next[0]
        _port_next[0] = (_port_next[0] + 2) % PORT_RANGE
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port in %d..%d" % (_port_base, _port_base + PORT_RANGE - 1))


def port_pair():
    """A free port whose successor is free too (Shoutcast sources use port + 1)."""
    for _ in range(50):
        p = free_port()
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
    raise AssertionError("no free port pair")


def web_dirs(binary=BINARY):
    if "icecast" in os.path.basename(binary):
        return "/usr/share/icecast2/web", "/usr/share/icecast2/admin"
    return os.path.join(SRCDIR, "web"), os.path.join(SRCDIR, "admin")


LIMIT_KEYS = ("clients", "sources", "queue_size", "burst_size", "header_timeout",
              "source_timeout", "client_timeout", "workers", "write_window")
MOUNT_KEYS = ("mount_name", "username", "password", "max_listeners", "burst_size",
              "queue_size", "source_timeout", "stream_name", "stream_description",
              "genre", "bitrate", "public", "hidden", "fallback_mount", "no_mount")


def render_config(cfg):
    """Build icecast.xml text from a dict of settings (see Server.DEFAULTS)."""
    def el(name, value):
        return "<%s>%s</%s>" % (name, escape(str(value)), name)

    limits = "\n    ".join(el(k.replace("_", "-"), cfg[k]) for k in LIMIT_KEYS if cfg.get(k) is not None)
    mounts = []
    for m in cfg.get("mounts") or []:
        body = "\n    ".join(el(k.replace("_", "-"), m[k]) for k in MOUNT_KEYS if m.get(k) is not None)
        if m.get("auth"):
            # {"type": "htpasswd", "options": {"filename": ..., ...}}
            opts = "".join('<option name="%s" value="%s"/>' % (escape(k), escape(str(v)))
                           for k, v in m["auth"].get("options", {}).items())
            body += '\n    <authentication type="%s">%s</authentication>' % (
                escape(m["auth"]["type"]), opts)
        mounts.append('<mount type="normal">\n    %s\n  </mount>' % body)
    change = ""
    if cfg.get("changeowner", True):
        change = ("<security><chroot>0</chroot><changeowner><user>nobody</user>"
                  "<group>nogroup</group></changeowner>%s</security>" % cfg.get("security_xml", ""))
    d = cfg["dir"]
    # TLS: a second listen socket (tls_port) in mode tls_mode ("1" = <ssl>1</ssl>, else a <tls>
    # word), certificate (and key) in <paths>
    tls_socket = tls_paths = ""
    if cfg.get("tls_mode"):
        mode = str(cfg["tls_mode"])
        tls_socket = ("<listen-socket><port>%d</port><bind-address>127.0.0.1</bind-address>%s%s"
                      "</listen-socket>" % (cfg["tls_port"], el("ssl", 1) if mode == "1"
                                            else el("tls", mode),
                                            el("so-sndbuf", cfg["tls_sndbuf"])
                                            if cfg.get("tls_sndbuf") else ""))
    if cfg.get("ssl_certificate"):
        tls_paths = el("ssl-certificate", cfg["ssl_certificate"])
    if cfg.get("ssl_private_key"):
        tls_paths += el("ssl-private-key", cfg["ssl_private_key"])
    if cfg.get("ssl_allowed_ciphers"):
        tls_paths += el("ssl-allowed-ciphers", cfg["ssl_allowed_ciphers"])
    if cfg.get("ssl_cafile"):
        tls_paths += el("ssl-cafile", cfg["ssl_cafile"])
    return """<?xml version="1.0"?>
<icecast>
  <location>{location}</location>
  <admin>wire@localhost</admin>
  <hostname>127.0.0.1</hostname>
  <limits>
    {limits}
  </limits>
  <authentication>
    <source-password>{spw}</source-password>
    <relay-password>{spw}</relay-password>
    <admin-user>{auser}</admin-user>
    <admin-password>{apw}</admin-password>
  </authentication>
  <listen-socket>
    <port>{port}</port>
    <bind-address>127.0.0.1</bind-address>{sndbuf}
  </listen-socket>
  {tls_socket}
  {mounts}
  <fileserve>1</fileserve>
  <paths>
    <basedir>{d}</basedir>
    <logdir>{d}/log</logdir>
    <pidfile>{d}/server.pid</pidfile>
    <webroot>{web}</webroot>
    <adminroot>{admin}</adminroot>
    {tls_paths}
  </paths>
  <logging>
    <accesslog>access.log</accesslog>
    <errorlog>error.log</errorlog>
    <loglevel>{loglevel}</loglevel>
  </logging>
  {change}
  {extra}
</icecast>
""".format(location=escape(cfg["location"]), limits=limits, spw=escape(cfg["source_password"]),
           auser=ADMIN_USER, apw=ADMIN_PASSWORD, port=cfg["port"], mounts="\n  ".join(mounts),
           d=d, web=cfg["webroot"], admin=cfg["adminroot"], loglevel=cfg["loglevel"],
           change=change, extra=cfg.get("extra_xml", ""), tls_socket=tls_socket,
           tls_paths=tls_paths,
           sndbuf=el("so-sndbuf", cfg["sndbuf"]) if cfg.get("sndbuf") else "")


# ---------------------------------------------------------------- server

_run_dir = []


def run_dir():
    """One directory per test process for the servers' directories: removed at the end when
    every test passed, kept (for the logs) otherwise."""
    if not _run_dir:
        _run_dir.append(tempfile.mkdtemp(prefix="wire-run-"))
        os.chmod(_run_dir[0], 0o755)
    return _run_dir[0]


def pytest_sessionfinish(session, exitstatus):
    if _run_dir:
        if exitstatus == 0:
            shutil.rmtree(_run_dir[0], ignore_errors=True)
        else:
            print("\nserver directories kept in %s" % _run_dir[0])


class Server:
    DEFAULTS = dict(clients=200, sources=8, queue_size=524288, burst_size=65536,
                    header_timeout=5, source_timeout=10, client_timeout=None,
                    location="Wire Test Lab", loglevel=4, source_password=SOURCE_PASSWORD,
                    mounts=None, changeowner=True, extra_xml="")

    def __init__(self, binary=None, **cfg):
        # binary: another server than the one under test (relay tests run both at once)
        self.binary = binary or BINARY
        self.is_icecast = "icecast" in os.path.basename(self.binary)
        self.dir = tempfile.mkdtemp(prefix="wire-", dir=run_dir())
        os.chmod(self.dir, 0o755)
        self.logdir = os.path.join(self.dir, "log")
        os.mkdir(self.logdir)
        os.chmod(self.logdir, 0o777)
        try:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.logdir, nobody.pw_uid, nobody.pw_gid)
        except (KeyError, PermissionError):
            pass
        self.cfg = dict(self.DEFAULTS)
        self.cfg.update(cfg)
        self.cfg["dir"] = self.dir
        self.cfg.setdefault("port", None)
        web, admin = web_dirs(self.binary)
        self.cfg.setdefault("webroot", web)
        self.cfg.setdefault("adminroot", admin)
        self.host = "127.0.0.1"
        self.config_path = os.path.join(self.dir, "icecast.xml")
        self.proc = None
        self.stdout_path = os.path.join(self.dir, "stdout.txt")
        self.stderr_path = os.path.join(self.dir, "stderr.txt")
        self.stopped = False
        self.preexec_fn = None      # run in the child before exec (e.g. to set rlimits)

    # -- config
    @property
    def port(self):
        return self.cfg["port"]

    @property
    def tls_port(self):
        return self.cfg.get("tls_port")

    def write_config(self, text=None, **changes):
        self.cfg.update(changes)
        if text is None:
            text = render_config(self.cfg)
        tmp = self.config_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.rename(tmp, self.config_path)

    # -- process
    def start(self, timeout=10.0):
        for attempt in range(3):
            if self.cfg["port"] is None or attempt > 0:
                self.cfg["port"] = free_port()
            if self.cfg.get("tls_mode") and (self.cfg.get("tls_port") is None or attempt > 0):
                self.cfg["tls_port"] = free_port()
            self.write_config()
            if self._spawn(timeout):
                return self
            if self.proc.poll() is None:  # started but never ready: not left running
                self.proc.kill()
                self.proc.wait()
        raise AssertionError("server did not start\n" + self.diagnostics())

    def _spawn(self, timeout):
        out = open(self.stdout_path, "ab")
        err = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen([self.binary, "-c", self.config_path], stdout=out, stderr=err,
                                     stdin=subprocess.DEVNULL, cwd=self.dir,
                                     preexec_fn=self.preexec_fn)
        out.close()
        err.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False        # maybe the port was taken; caller retries
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5) as probe:
                    probe_port = probe.getsockname()[1]
            except OSError:
                time.sleep(0.02)
                continue
            # the probe counts against <clients> from when the server accepts it until it has
            # seen it close: wait for that, not only until no process holds it (before it is
            # accepted, in the backlog, none does)
            while wirelib.server_side_open(self.port, probe_port):
                if time.monotonic() >= deadline or self.proc.poll() is not None:
                    return False
                time.sleep(0.01)
            return True
        return False

    @property
    def pid(self):
        return self.proc.pid

    def is_alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=10.0):
        """SIGTERM; returns the exit code (None if it had to be killed)."""
        if self.stopped:
            return self.proc.returncode
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                return None
        return self.proc.returncode

    # -- urls and logs
    def url(self, path="/"):
        return "http://%s:%d%s" % (self.host, self.port, path)

    @property
    def error_log_path(self):
        return os.path.join(self.logdir, "error.log")

    @property
    def access_log_path(self):
        return os.path.join(self.logdir, "access.log")

    @staticmethod
    def _read(path):
        try:
            with open(path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def error_log(self):
        return self._read(self.error_log_path)

    def access_log(self):
        return self._read(self.access_log_path)

    def access_log_bytes(self):
        try:
            with open(self.access_log_path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""

    def stderr(self):
        return self._read(self.stderr_path)

    def wait_log(self, needle, timeout=5.0, log="error"):
        reader = self.error_log if log == "error" else self.access_log
        return wirelib.wait_until(lambda: needle in reader(), timeout,
                                  "%r in %s log" % (needle, log))

    def diagnostics(self, tail=60):
        parts = ["--- config %s" % self.config_path]
        try:
            parts.append(open(self.config_path).read())
        except OSError:
            pass
        for name, text in (("stderr", self.stderr()), ("error.log", self.error_log())):
            lines = text.splitlines()[-tail:]
            parts.append("--- %s (last %d lines)" % (name, len(lines)))
            parts.extend(lines)
        return "\n".join(parts)

    # -- convenience
    def source(self, mount, data=b"", **kw):
        kw.setdefault("password", SOURCE_PASSWORD)
        return wirelib.SourceClient(self.host, self.port, mount, data, **kw)

    def listener(self, mount, **kw):
        return wirelib.Listener(self.host, self.port, mount, **kw)


def run_config(extra_xml, timeout=3):
    """Starts the binary on the test config plus extra_xml and waits up to timeout for it to
    exit (a refused config); (exit code, or None when it kept running and was stopped; its
    output; the Server that wrote the config)."""
    srv = Server(extra_xml=extra_xml)
    srv.cfg["port"] = free_port()
    srv.write_config()
    p = subprocess.Popen([BINARY, "-c", srv.config_path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=srv.dir)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out + err, srv
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=10)
        return None, out + err, srv


@pytest.fixture
def server():
    """Factory: server(**config) -> started Server. Stopped and checked at teardown."""
    started = []

    def factory(start=True, **cfg):
        srv = Server(**cfg)
        started.append(srv)
        if start:
            srv.start()
        return srv

    yield factory
    problems = []
    for srv in started:
        if srv.proc is None or srv.stopped:
            continue
        alive = srv.is_alive()
        code = srv.stop()
        if not alive:
            problems.append("server died during the test (exit %s)" % srv.proc.returncode)
        elif code != 0:
            if srv.is_icecast:
                # Icecast 2.4.4 occasionally crashes or hangs when SIGTERM races a
                # source thread that is still exiting; that is not what we test.
                warnings.warn("icecast2 exit code after SIGTERM: %r" % code)
            else:
                problems.append("server exit code after SIGTERM: %r (None = hung, killed)" % code)
        if problems:
            print(srv.diagnostics())
    for srv in started:
        if not problems:
            shutil.rmtree(srv.dir, ignore_errors=True)
    if problems:
        pytest.fail("; ".join(problems))


@pytest.fixture
def data():
    """8 MiB of deterministic random bytes."""
    return wirelib.make_data(8 << 20, seed=1234)


def assert_server_healthy(srv, listener, more=8192, timeout=5.0):
    """The process is alive and a live listener keeps receiving data."""
    assert srv.is_alive(), "server died\n" + srv.diagnostics()
    assert not listener.closed, "live listener was closed: %s" % listener.close_reason
    before = listener.received
    listener.wait_bytes(before + more, timeout)
    assert srv.is_alive()
