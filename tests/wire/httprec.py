# SPDX-License-Identifier: GPL-2.0-or-later
"""A small recording HTTP server for the URL authentication and YP tests.

Runs python's http.server in a thread on 127.0.0.1: every POST is recorded
(path, headers, body parsed as a form), answered by a function the test sets,
and the number of requests in progress at once is tracked (.max_active). A GET
is recorded too and answered with one of the HTML pages given (a page of
another origin for the browser tests), 404 otherwise.
"""

import http.server
import threading
import time
import urllib.parse


class Request:
    def __init__(self, path, headers, body):
        self.path, self.headers, self.body = path, headers, body
        self.time = time.monotonic()
        self.form = dict(urllib.parse.parse_qsl(body.decode("latin-1").strip(),
                                                keep_blank_values=True))

    @property
    def action(self):
        return self.form.get("action")

    def __repr__(self):
        return "<%s %r>" % (self.path, self.body)


class Recorder:
    """answer(req) returns (status, {header: value}) and may sleep; pages maps a path to
    the HTML a GET of it gets."""

    def __init__(self, answer=None, pages=None):
        self.answer = answer or (lambda req: (200, {}))
        self.pages = dict(pages or {})
        self.requests = []
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                req = Request(self.path, dict(self.headers), self.rfile.read(n))
                with rec.lock:
                    rec.requests.append(req)
                    rec.active += 1
                    rec.max_active = max(rec.max_active, rec.active)
                try:
                    status, headers = rec.answer(req)
                finally:
                    # before answering: the client may start its next request at once
                    with rec.lock:
                        rec.active -= 1
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass

            def do_GET(self):
                with rec.lock:
                    rec.requests.append(Request(self.path, dict(self.headers), b""))
                page = rec.pages.get(self.path)
                body = page.encode() if page is not None else b""
                try:
                    self.send_response(200 if page is not None else 404)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 1024

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/"):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def paths(self):
        with self.lock:
            return [r.path for r in self.requests]

    def of(self, action):
        with self.lock:
            return [r for r in self.requests if r.action == action]

    def wait(self, action, count=1, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.of(action)
            if len(got) >= count:
                return got
            time.sleep(0.02)
        raise AssertionError("%d %s request(s) expected, got %r" % (count, action, self.requests))

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def recorder_fixture(name, default_answer):
    """A pytest fixture `name`: a factory of Recorders (answer defaults to default_answer),
    all closed at teardown."""
    import pytest

    @pytest.fixture(name=name)
    def fixture():
        recs = []

        def make(answer=default_answer, **kw):
            r = Recorder(answer, **kw)
            recs.append(r)
            return r

        yield make
        for r in recs:
            r.close()
    return fixture
