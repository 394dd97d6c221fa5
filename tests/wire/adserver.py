# SPDX-License-Identifier: GPL-2.0-or-later
"""A fake VAST ad server and tracking endpoint for the ad-break tests (python http.server in a
thread on 127.0.0.1).

GET /vast?...      the VAST answer: every ad of .ads (inline), or .answer(req) when set
GET /wrap/N?...    a wrapper whose VASTAdTagURI is /wrap/N-1 (N > 0) or /vast, with its own
                   impression, error and complete URLs (/t/wrapN/<event>)
GET /media/NAME    the creative NAME's bytes
GET /t/AD/EVENT    a tracking hit, recorded (answered 200 with no body, or 500 while .fail
                   says so for that path)
Every request is recorded with its path, query and arrival time; .delay (seconds) holds the
VAST answers back (an ad server that times out).
"""

import http.server
import os
import subprocess
import threading
import time
import urllib.parse

import formatlib as fl

EVENTS = ("start", "firstQuartile", "midpoint", "thirdQuartile", "complete")


def encode(path, seconds, freq=880, rate=44100, codec="mp3", channels=1):
    """An ad's audio file: a sine wave as the test sources send it (mono, 44.1 kHz, 64 kbit/s
    MP3 or AAC) unless told otherwise."""
    args, _, muxer = fl.ENCODERS[codec]
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
           "sine=frequency=%d:sample_rate=%d:duration=%g" % (freq, rate, seconds)]
    cmd += ["-ac", str(channels), "-ar", str(rate)] + args + ["-f", muxer, path]
    subprocess.run(cmd, check=True, timeout=60, capture_output=True)
    with open(path, "rb") as f:
        return f.read()


class Hit:
    def __init__(self, path, query):
        self.path, self.query, self.time = path, query, time.monotonic()
        self.params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))

    def __repr__(self):
        return "<%s?%s>" % (self.path, self.query)


class AdServer:
    def __init__(self):
        self.media = {}           # name: bytes
        self.ads = []             # [(ad id, media name, mime type, seconds)]
        self.answer = None        # req -> (status, body) instead of the ads
        self.delay = 0.0
        self.fail = {}            # tracking path: times it answers 500 before 200
        self.hits = []
        self.lock = threading.Lock()
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self):
                path, _, query = self.path.partition("?")
                with srv.lock:
                    srv.hits.append(Hit(path, query))
                status, ctype, body = srv.route(path, query)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
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
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def add_media(self, name, data):
        self.media[name] = data

    def inline(self, ad_id, media, mime, seconds, sequence=None):
        """One <Ad><InLine> with its impression, error and tracking URLs on this server."""
        t = self.url("/t/%s/" % ad_id)
        seq = ' sequence="%d"' % sequence if sequence else ""
        tracking = "".join('<Tracking event="%s"><![CDATA[%s%s?cb=[CACHEBUSTING]]]></Tracking>'
                           % (e, t, e) for e in EVENTS)
        return ('<Ad id="%s"%s adType="audio"><InLine><AdSystem>fake</AdSystem>'
                '<AdTitle>Ad %s</AdTitle>'
                '<Impression><![CDATA[%simpression]]></Impression>'
                '<Error><![CDATA[%serror?code=[ERRORCODE]]]></Error>'
                '<Creatives><Creative><Linear><Duration>00:00:%06.3f</Duration>'
                '<TrackingEvents>%s</TrackingEvents><MediaFiles>'
                '<MediaFile delivery="progressive" type="%s"><![CDATA[%s]]></MediaFile>'
                '</MediaFiles></Linear></Creative></Creatives></InLine></Ad>'
                % (ad_id, seq, ad_id, t, t, seconds, tracking, mime,
                   self.url("/media/" + media)))

    def vast(self, ads_xml):
        return ('<?xml version="1.0" encoding="UTF-8"?><VAST version="4.1">%s</VAST>'
                % ads_xml).encode()

    def route(self, path, query):
        if path == "/vast":
            if self.delay:
                time.sleep(self.delay)
            if self.answer:
                return self.answer(path, query)
            xml = "".join(self.inline(i, m, t, s, seq) for i, m, t, s, seq in self.ads)
            return 200, "application/xml", self.vast(xml)
        if path.startswith("/wrap/"):
            n = int(path[6:])
            nxt = self.url("/wrap/%d" % (n - 1) if n > 0 else "/vast")
            t = self.url("/t/wrap%d/" % n)
            xml = ('<Ad id="w%d"><Wrapper><AdSystem>fake</AdSystem>'
                   '<VASTAdTagURI><![CDATA[%s]]></VASTAdTagURI>'
                   '<Impression><![CDATA[%simpression]]></Impression>'
                   '<Error><![CDATA[%serror?code=[ERRORCODE]]]></Error>'
                   '<Creatives><Creative><Linear><TrackingEvents>'
                   '<Tracking event="complete"><![CDATA[%scomplete]]></Tracking>'
                   '</TrackingEvents></Linear></Creative></Creatives></Wrapper></Ad>'
                   % (n, nxt, t, t, t))
            return 200, "application/xml", self.vast(xml)
        if path.startswith("/media/") and path[7:] in self.media:
            return 200, "audio/mpeg", self.media[path[7:]]
        if path.startswith("/t/"):
            with self.lock:
                if self.fail.get(path, 0) > 0:
                    self.fail[path] -= 1
                    return 500, "text/plain", b"try again"
            return 200, "image/gif", b""
        return 404, "text/plain", b"not here"

    def of(self, prefix):
        with self.lock:
            return [h for h in self.hits if h.path.startswith(prefix)]

    def events(self, ad_id):
        """Tracking hits of one ad: {event: count}."""
        out = {}
        for h in self.of("/t/%s/" % ad_id):
            ev = h.path.rsplit("/", 1)[1]
            out[ev] = out.get(ev, 0) + 1
        return out

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def creative(tmp_path, name, seconds, **kw):
    return encode(os.path.join(str(tmp_path), name), seconds, **kw)
