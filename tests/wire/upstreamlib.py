# SPDX-License-Identifier: GPL-2.0-or-later
"""A scripted upstream for the relay and master/slave tests: an HTTP server on 127.0.0.1 that
stands in for a master (its /admin/streamlist.txt), an origin (a stream) or a server that
redirects, and records every request it gets (path, headers), so a test can tell what the
edge sent where: a request that must never come, credentials that must never be presented.
Also the Acceptor: a bare TCP peer that answers a request head with a test's function, or
accepts and never answers (a stalled upstream).
"""

import socket
import ssl
import threading
import time


class Request:
    def __init__(self, line, headers):
        self.line = line
        parts = line.split(" ")
        self.path = parts[1] if len(parts) > 1 else ""
        self.headers = headers            # lower-case name -> value
        self.time = time.monotonic()

    def __repr__(self):
        return "<%s %r>" % (self.line, sorted(self.headers))


class LoopbackServer:
    """A listening socket on a loopback address and the thread that accepts on it; each
    connection goes to self.handle(conn) on that thread."""

    def __init__(self, host="127.0.0.1", port=0):
        self.host = host
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = []          # monotonic time of each accept
        self.running = True
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        self.sock.settimeout(0.2)
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted.append(time.monotonic())
            self.handle(conn)

    def handle(self, conn):
        raise NotImplementedError

    def stop_accepting(self):
        self.running = False
        try:
            self.sock.close()
        except OSError:
            pass
        self.thread.join(5)


def read_head(conn, limit=65536):
    """The request head read from conn (up to its blank line; less when the peer closed)."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < limit:
        chunk = conn.recv(4096)
        if not chunk:
            break
        head += chunk
    return head


class Acceptor(LoopbackServer):
    """A TCP listener on 127.0.0.1 whose connections get `answer(conn, head)` run on the
    request head (None: accepted and never read from or written to: a stalled peer)."""

    def __init__(self, answer=None):
        self.answer = answer
        self.held = []
        super().__init__()

    def handle(self, conn):
        if self.answer is None:
            self.held.append(conn)
            return
        try:
            conn.settimeout(5)
            self.answer(conn, read_head(conn))
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop_accepting()
        for c in self.held:
            c.close()


class FakeUpstream(LoopbackServer):
    """listing: the body of /admin/streamlist.txt (bytes, or a function returning them);
    streams: {path: bytes} served as audio/mpeg, looped at `rate` bytes/s until the client
    leaves or the upstream is closed; redirects: {path: location} answered with a 302;
    anything else: 404. tls: an ssl.SSLContext for a TLS-only upstream; host: the loopback
    address to listen on (127.0.0.2 stands for another host); cut_after: each stream
    connection is closed after that many bytes (every connection starts the stream again)."""

    def __init__(self, listing=b"", streams=None, redirects=None, rate=32 * 1024, tls=None,
                 port=0, host="127.0.0.1", cut_after=None):
        self.listing = listing
        self.streams = dict(streams or {})
        self.redirects = dict(redirects or {})
        self.rate = rate
        self.cut_after = cut_after    # a stream's connection is closed after so many bytes
        self.tls = tls
        self.requests = []
        self.lock = threading.Lock()
        self.conns = []
        super().__init__(host, port)

    def url(self, path="/"):
        return "%s://%s:%d%s" % ("https" if self.tls else "http", self.host, self.port, path)

    def paths(self):
        with self.lock:
            return [r.path for r in self.requests]

    def requests_for(self, path):
        with self.lock:
            return [r for r in self.requests if r.path == path]

    def handle(self, conn):
        with self.lock:
            self.conns.append(conn)
        threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _request(conn):
        head = read_head(conn)
        if b"\r\n\r\n" not in head:
            return None
        lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return Request(lines[0], headers)

    def _serve(self, conn):
        try:
            conn.settimeout(5)
            if self.tls:
                conn = self.tls.wrap_socket(conn, server_side=True)
            req = self._request(conn)
            if req is None:
                return
            with self.lock:
                self.requests.append(req)
            if req.path == "/admin/streamlist.txt":
                body = self.listing() if callable(self.listing) else self.listing
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body) + body)
            elif req.path in self.redirects:
                conn.sendall(b"HTTP/1.0 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n"
                             % self.redirects[req.path].encode())
            elif req.path in self.streams:
                self._stream(conn, self.streams[req.path])
            else:
                conn.sendall(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        except (OSError, ssl.SSLError):
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _stream(self, conn, audio):
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nicy-name: fake\r\n\r\n")
        chunk = max(1, self.rate // 10)
        pos = sent = 0
        while self.running and (self.cut_after is None or sent < self.cut_after):
            if self.cut_after is not None:
                chunk = min(chunk, self.cut_after - sent)
            sent += chunk
            piece = audio[pos:pos + chunk]
            if len(piece) < chunk:
                piece += audio[:chunk - len(piece)]
            pos = (pos + chunk) % len(audio)
            conn.sendall(piece)
            time.sleep(0.1)

    def close(self):
        self.running = False
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.stop_accepting()
