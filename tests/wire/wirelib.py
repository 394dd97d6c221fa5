# SPDX-License-Identifier: GPL-2.0-or-later
"""Client-side helpers for the wire tests.

Owns: deterministic test data, condition polling with deadlines, a paced
source client (PUT / SOURCE), a single-socket listener, a one-thread
multi-listener harness (epoll via selectors), raw request helpers and the
byte-exactness check. Knows nothing about how the server is started
(see conftest.py).
"""

import base64
import ctypes
import errno
import os
import random
import re
import selectors
import socket
import struct
import threading
import time


# ---------------------------------------------------------------- waiting

class WaitTimeout(AssertionError):
    pass


def wait_until(cond, timeout, what="condition", interval=0.02):
    """Poll cond() until it returns a truthy value; return that value.

    Raises WaitTimeout (an AssertionError) when the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            desc = what() if callable(what) else what
            raise WaitTimeout("timed out after %.1fs waiting for %s" % (timeout, desc))
        time.sleep(interval)


# ---------------------------------------------------------------- data

def make_data(size, seed=1):
    """Deterministic pseudo-random bytes; any 64-byte window is unique."""
    return random.Random(seed).randbytes(size)


def locate_slice(data, body, probe=64):
    """Return k such that body == data[k:k+len(body)], else raise AssertionError.

    This pins down 'exactly one contiguous slice, no gap, no duplicate'."""
    assert len(body) >= probe, "body too short to locate (%d bytes)" % len(body)
    k = data.find(body[:probe])
    assert k >= 0, "first %d bytes of the body are not in the source data" % probe
    assert data.find(body[:probe], k + 1) < 0, "ambiguous probe"
    end = k + len(body)
    if data[k:end] != body:
        # find the first differing offset for a useful message
        ref = data[k:end]
        n = min(len(ref), len(body))
        first = next((i for i in range(n) if ref[i] != body[i]), n)
        raise AssertionError(
            "body is not one contiguous slice: starts at data[%d], len %d, "
            "first mismatch at body offset %d (source data has %d bytes)"
            % (k, len(body), first, len(data)))
    return k


def basic_auth(user, password):
    raw = ("%s:%s" % (user, password)).encode()
    return "Basic " + base64.b64encode(raw).decode()


# ---------------------------------------------------------------- HTTP heads

class Response:
    def __init__(self, status_line, headers, raw):
        self.status_line = status_line
        parts = status_line.split(" ", 2)
        self.version = parts[0]
        self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        self.reason = parts[2] if len(parts) > 2 else ""
        self.headers = headers          # list of (name, value)
        self.raw = raw

    def header(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def __repr__(self):
        return "<Response %r %r>" % (self.status_line, self.headers)


def parse_head(raw):
    text = raw.decode("latin-1")
    lines = text.split("\r\n") if "\r\n" in text else text.split("\n")
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        if ":" in line:
            k, v = line.split(":", 1)
            headers.append((k.strip(), v.strip()))
    return Response(lines[0], headers, raw)


def _split_head(buf):
    for sep in (b"\r\n\r\n", b"\n\n"):
        i = buf.find(sep)
        if i >= 0:
            return buf[:i], buf[i + len(sep):]
    return None, buf


def connect(host, port, timeout=5.0, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect((host, port))
    return s


def read_head(sock, timeout=5.0, limit=65536, buf=b""):
    """Read one response head; return (Response, leftover bytes).

    Returns (None, buf) when the server closed the connection first."""
    deadline = time.monotonic() + timeout
    while True:
        head, rest = _split_head(buf)
        if head is not None:
            return parse_head(head), rest
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout("no response head within %.1fs (got %r)" % (timeout, buf[:200]))
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return None, buf
        buf += chunk
        if _split_head(buf)[0] is None:
            assert len(buf) < limit, "response head too large"


def get_kept_alive(sock, path, headers="", timeout=10.0):
    """Sends GET path on a kept-alive HTTP/1.1 connection and reads its answer, whose body has
    a Content-Length: (Response, body)."""
    sock.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path, headers)).encode())
    resp, body = read_head(sock, timeout)
    assert resp is not None, "closed before an answer to " + path
    size = int(resp.header("content-length"))
    while len(body) < size:
        chunk = sock.recv(65536)
        assert chunk, "closed after %d of %d bytes" % (len(body), size)
        body += chunk
    return resp, body


def read_until_closed(sock, timeout=5.0, limit=1 << 20):
    """Read until EOF/reset; return the bytes. Fails if still open at the deadline."""
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout("connection still open after %.1fs" % timeout)
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            return buf
        except socket.timeout:
            continue
        if not chunk:
            return buf
        buf += chunk
        if len(buf) > limit:
            raise AssertionError("server kept sending past %d bytes" % limit)


def request(host, port, raw, timeout=5.0):
    """Send raw bytes, return (Response or None, body-so-far, socket)."""
    s = connect(host, port, timeout)
    s.sendall(raw)
    resp, rest = read_head(s, timeout)
    return resp, rest, s


def simple_request(host, port, raw, timeout=5.0):
    """Send raw bytes and return (Response or None, full body until close)."""
    s = connect(host, port, timeout)
    try:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            return None, b""
        resp, rest = read_head(s, timeout)
        if resp is None:
            return None, rest
        try:
            rest += read_until_closed(s, timeout)
        except WaitTimeout:
            pass
        return resp, rest
    finally:
        s.close()


def set_linger_rst(sock):
    """Make close() send RST instead of FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


# ---------------------------------------------------------------- source

class SourceClient:
    """A source connection (PUT or SOURCE) that streams bytes at a byte rate.

    connect() sends the request and reads the answer (status in .response;
    .continue_response for the 100 Continue when expect=True). start() streams
    data in a thread; .sent counts bytes written; stop() ends the thread and,
    unless keep_open, closes the socket."""

    def __init__(self, host, port, mount, data=b"", rate=64 * 1024, chunk=4096,
                 user="source", password="hackme", method="PUT",
                 content_type="audio/mpeg", expect=False, headers=None,
                 auth=True, loop=False):
        self.host, self.port, self.mount = host, port, mount
        self.data, self.rate, self.chunk = data, rate, chunk
        self.user, self.password, self.method = user, password, method
        self.content_type, self.expect = content_type, expect
        self.extra_headers = headers or {}
        self.auth, self.loop = auth, loop
        self.sock = None
        self.response = None
        self.continue_response = None
        self.sent = 0
        self.error = None
        self._stop = threading.Event()
        self._thread = None

    def request_bytes(self):
        proto = "HTTP/1.0" if self.method == "SOURCE" else "HTTP/1.1"
        lines = ["%s %s %s" % (self.method, self.mount, proto),
                 "Host: %s:%d" % (self.host, self.port),
                 "User-Agent: wiretest-source/1.0"]
        if self.auth:
            lines.append("Authorization: " + basic_auth(self.user, self.password))
        if self.content_type:
            lines.append("Content-Type: " + self.content_type)
        if self.expect:
            lines.append("Expect: 100-continue")
        for k, v in self.extra_headers.items():
            lines.append("%s: %s" % (k, v))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def connect(self, timeout=5.0):
        self.sock = connect(self.host, self.port, timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(self.request_bytes())
        resp, rest = read_head(self.sock, timeout)
        if resp is not None and resp.status == 100:
            self.continue_response = resp
            resp, rest = read_head(self.sock, timeout, buf=rest)
        self.response = resp
        return resp

    @property
    def status(self):
        return self.response.status if self.response else None

    def start(self):
        assert self.status == 200, "source not accepted: %r" % (self.response,)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        t0 = time.monotonic()
        base = 0
        pos = 0
        try:
            self.sock.settimeout(5.0)
            while not self._stop.is_set():
                if pos >= len(self.data):
                    if not self.loop:
                        break
                    pos = 0
                elapsed = time.monotonic() - t0
                allowed = base + int(elapsed * self.rate)
                if self.sent >= allowed:
                    wait = (self.sent + self.chunk - base) / self.rate - elapsed
                    self._stop.wait(max(0.001, min(wait, 0.05)))
                    continue
                n = min(self.chunk, len(self.data) - pos)
                self.sock.sendall(self.data[pos:pos + n])
                pos += n
                self.sent += n
        except OSError as e:
            self.error = e
        self.finished = True

    def send_now(self, data):
        """Write bytes right away (no pacing), from the caller's thread."""
        self.sock.sendall(data)
        self.sent += len(data)

    def wait_sent(self, n, timeout):
        wait_until(lambda: self.sent >= n or self.error, timeout, "source to send %d bytes" % n)
        assert self.error is None, "source write failed: %r" % (self.error,)

    def wait_done(self, timeout):
        """Wait for the streaming thread to finish the data (non-loop mode)."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "source still streaming"

    def stop(self, keep_open=False):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if not keep_open and self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def close(self):
        self.stop()


# ---------------------------------------------------------------- listener

class Listener:
    """A listener on its own socket and reader thread.

    .response is the parsed head; .body collects bytes (up to keep bytes; the
    rest is counted in .received); .closed becomes True on EOF/reset."""

    def __init__(self, host, port, mount, version="1.0", method="GET",
                 headers=None, keep=64 << 20, rcvbuf=None):
        self.host, self.port, self.mount = host, port, mount
        self.version, self.method = version, method
        self.extra_headers = headers or {}
        self.keep = keep
        self.rcvbuf = rcvbuf
        self.sock = None
        self.response = None
        self.body = bytearray()
        self.received = 0
        self.closed = False
        self.close_reason = None
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def request_bytes(self):
        lines = ["%s %s HTTP/%s" % (self.method, self.mount, self.version),
                 "Host: %s:%d" % (self.host, self.port),
                 "User-Agent: wiretest-listener/1.0"]
        for k, v in self.extra_headers.items():
            lines.append("%s: %s" % (k, v))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def open(self, timeout=5.0, start=True):
        self.sock = connect(self.host, self.port, timeout, rcvbuf=self.rcvbuf)
        self.sock.sendall(self.request_bytes())
        self.response, rest = read_head(self.sock, timeout)
        if self.response is None:
            self.closed = True
            self.close_reason = "closed before response"
            return None
        self._add(rest)
        if start:
            self.start()
        return self.response

    @property
    def status(self):
        return self.response.status if self.response else None

    def _add(self, chunk):
        with self.lock:
            self.received += len(chunk)
            room = self.keep - len(self.body)
            if room > 0:
                self.body += chunk[:room]

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError as e:
                self.close_reason = repr(e)
                break
            if not chunk:
                self.close_reason = "eof"
                break
            self._add(chunk)
        else:
            return
        self.closed = True

    def wait_bytes(self, n, timeout):
        wait_until(lambda: self.received >= n, timeout,
                   "listener to receive %d bytes (has %d, closed=%s)"
                   % (n, self.received, self.closed))

    def wait_closed(self, timeout):
        wait_until(lambda: self.closed, timeout, "listener connection to close")

    def snapshot(self):
        with self.lock:
            return bytes(self.body)

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass


# ---------------------------------------------------------------- many listeners

class _Peer:
    __slots__ = ("idx", "sock", "state", "out", "head", "response", "body",
                 "received", "closed", "error", "t_connect", "t_first")

    def __init__(self, idx):
        self.idx = idx
        self.sock = None
        self.state = "new"
        self.out = b""
        self.head = b""
        self.response = None
        self.body = bytearray()
        self.received = 0
        self.closed = False
        self.error = None
        self.t_connect = None
        self.t_first = None


class MultiListener:
    """N listeners driven by ONE thread with an epoll selector.

    Connections are opened non-blocking, at most `pending` at a time waiting
    for their response head (the server's accept backlog may be small). Each
    peer keeps the first `keep` body bytes and counts the rest."""

    def __init__(self, host, port, mount, count, keep=256 * 1024, pending=32,
                 request=None):
        self.host, self.port, self.mount = host, port, mount
        self.count, self.keep, self.pending = count, keep, pending
        self.request = request or ("GET %s HTTP/1.0\r\nHost: %s:%d\r\n"
                                   "User-Agent: wiretest-multi/1.0\r\n\r\n"
                                   % (mount, host, port)).encode()
        self.peers = [_Peer(i) for i in range(count)]
        self.sel = selectors.DefaultSelector()
        self._next = 0
        self._in_flight = 0
        self._stop = threading.Event()
        self._thread = None
        self.lock = threading.Lock()
        self.loop_error = None

    # -- public
    def start(self):
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        for p in self.peers:
            if p.sock is not None:
                try:
                    self.sel.unregister(p.sock)
                except (KeyError, ValueError):
                    pass
                p.sock.close()
                p.sock = None
        self.sel.close()

    def connected(self):
        return sum(1 for p in self.peers if p.response is not None)

    def statuses(self):
        out = {}
        for p in self.peers:
            key = p.response.status if p.response else p.state
            out[key] = out.get(key, 0) + 1
        return out

    def min_received(self):
        return min(p.received for p in self.peers)

    def closed_peers(self):
        return [p for p in self.peers if p.closed]

    def received_totals(self):
        return [p.received for p in self.peers]

    def wait_all_received(self, n, timeout):
        def ok():
            self._check()
            return all(p.received >= n for p in self.peers)
        wait_until(ok, timeout, lambda: lambda_desc(self, n))

    def wait_all_more(self, baseline, extra, timeout):
        """Every peer gets `extra` bytes beyond its count in `baseline`."""
        def ok():
            self._check()
            return all(p.received >= b + extra for p, b in zip(self.peers, baseline))
        wait_until(ok, timeout, "every listener to receive %d more bytes" % extra)

    def _check(self):
        if self.loop_error is not None:
            raise AssertionError("listener loop failed: %r" % (self.loop_error,))
        bad = [p for p in self.peers if p.closed or (p.response is not None and p.response.status != 200)]
        if bad:
            p = bad[0]
            raise AssertionError("%d listener(s) failed; first #%d state=%s status=%s error=%s received=%d"
                                 % (len(bad), p.idx, p.state,
                                    p.response.status_line if p.response else None,
                                    p.error, p.received))

    # -- loop
    def _open_more(self):
        while self._next < self.count and self._in_flight < self.pending:
            p = self.peers[self._next]
            self._next += 1
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            err = s.connect_ex((self.host, self.port))
            if err not in (0, errno.EINPROGRESS):
                p.closed, p.error, p.state = True, os.strerror(err), "failed"
                s.close()
                continue
            p.sock, p.state, p.out = s, "connecting", self.request
            p.t_connect = time.monotonic()
            self._in_flight += 1
            self.sel.register(s, selectors.EVENT_WRITE, p)

    def _finish(self, p, error=None):
        if p.state in ("connecting", "head"):
            self._in_flight -= 1
        p.closed = True
        p.error = error
        p.state = "closed"
        try:
            self.sel.unregister(p.sock)
        except (KeyError, ValueError):
            pass
        p.sock.close()
        p.sock = None

    def _on_write(self, p):
        try:
            n = p.sock.send(p.out)
        except BlockingIOError:
            return
        except OSError as e:
            self._finish(p, repr(e))
            return
        p.out = p.out[n:]
        if not p.out:
            p.state = "head"
            self.sel.modify(p.sock, selectors.EVENT_READ, p)

    def _on_read(self, p):
        try:
            chunk = p.sock.recv(262144)
        except BlockingIOError:
            return
        except OSError as e:
            self._finish(p, repr(e))
            return
        if not chunk:
            self._finish(p, "eof")
            return
        if p.state == "head":
            p.head += chunk
            head, rest = _split_head(p.head)
            if head is None:
                return
            p.response = parse_head(head)
            p.head = b""
            p.state = "body"
            p.t_first = time.monotonic()
            self._in_flight -= 1
            chunk = rest
        p.received += len(chunk)
        room = self.keep - len(p.body)
        if room > 0:
            p.body += chunk[:room]

    def _loop(self):
        try:
            while not self._stop.is_set():
                self._open_more()
                for key, mask in self.sel.select(timeout=0.05):
                    p = key.data
                    if p.sock is None:
                        continue
                    if p.state == "connecting" or (mask & selectors.EVENT_WRITE):
                        self._on_write(p)
                    else:
                        self._on_read(p)
        except Exception as e:  # surfaced by _check()
            self.loop_error = e


def lambda_desc(ml, n):
    return "all %d listeners to receive %d bytes (statuses %s, min received %d)" % (
        ml.count, n, ml.statuses(), ml.min_received())


# ---------------------------------------------------------------- process stats

def proc_cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    # fields[0] is state (field 3); utime/stime are fields 14/15
    return (int(fields[11]) + int(fields[12])) / ticks


def proc_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def proc_smaps_kb(pid, field):
    """A field of the process's /proc/PID/smaps_rollup (KB), counted from its page tables:
    "Rss" (VmRSS in /proc/PID/status may lag by a few hundred KB per thread), "AnonHugePages"
    (its anonymous memory on transparent huge pages)."""
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in smaps_rollup" % field)


PR_SET_THP_DISABLE = 41


def no_huge_pages():
    """A preexec_fn: the process (and what it runs) gets no transparent huge pages, so that its
    resident memory grows by the page, not by 2 MB: for tests that count a few KB."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_THP_DISABLE)")


def thp_mode():
    """The kernel's transparent huge page mode: always, madvise, never, or None without THP."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            line = f.read()
    except OSError:
        return None
    m = re.search(r"\[(\w+)\]", line)
    return m.group(1) if m else None


TCP_STATES = {1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2",
              6: "TIME_WAIT", 7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN",
              11: "CLOSING"}


def tcp_state(local_port, remote_port):
    """Kernel TCP state of the IPv4 socket local_port -> remote_port on 127.0.0.1,
    or None when no such socket exists (e.g. closed with RST)."""
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            lport = int(fields[1].split(":")[1], 16)
            rport = int(fields[2].split(":")[1], 16)
            if lport == local_port and rport == remote_port:
                return TCP_STATES.get(int(fields[3], 16), fields[3])
    return None


def server_side_open(local_port, peer_port):
    """Whether the server's end of a connection from peer_port to local_port is still open
    (established, or the peer closed and the server has not yet): also while it waits in the
    backlog, not yet accepted, when no process holds it."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if (int(fields[1].rsplit(":", 1)[1], 16) == local_port and
                    int(fields[2].rsplit(":", 1)[1], 16) == peer_port and
                    fields[3] in ("01", "08")):     # ESTABLISHED, CLOSE_WAIT
                return True
    return False


def server_unread(local_port, peer_ports):
    """The bytes the server's ends of the connections from peer_ports to local_port have not
    read yet, or None while one of them is not there yet."""
    seen, unread = set(), 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote = (int(fields[i].split(":")[1], 16) for i in (1, 2))
            if local == local_port and remote in peer_ports:
                seen.add(remote)
                unread += int(fields[4].split(":")[1], 16)
    return unread if seen == set(peer_ports) else None


def peers_held(pid, local_port):
    """Remote ports of the IPv4 TCP sockets open in process pid whose local port is
    local_port: the clients a server holds a descriptor for (whatever else it has open)."""
    inodes = set()
    fddir = "/proc/%d/fd" % pid
    for name in os.listdir(fddir):
        try:
            target = os.readlink(os.path.join(fddir, name))
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    peers = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if (int(fields[1].split(":")[1], 16) == local_port and fields[9] in inodes
                    and fields[3] != "0A"):  # not the listening socket
                peers.add(int(fields[2].split(":")[1], 16))
    return peers
