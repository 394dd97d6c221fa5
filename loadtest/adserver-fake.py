#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""adserver-fake.py: a fast fake VAST ad server and tracking endpoint for ads-break.sh
(asyncio, HTTP/1.0, one answer per connection), so that the ad server is not what a break of
thousands of listeners waits for.

GET /vast?...        one inline ad of SECONDS whose creative is /media/ad.mp3 (type audio/mpeg),
                     with impression, error and the five tracking URLs on /t/<event>
GET /media/ad.mp3    the creative file (--media)
GET /t/<event>       counted, answered 200
GET /stats           the counts so far as JSON: each path kind, and the wall-clock times of the
                     first and last /vast request and of the last tracking hit of each event
Usage: adserver-fake.py --port P --media FILE --seconds S
"""

import argparse
import asyncio
import json
import time

EVENTS = ("start", "firstQuartile", "midpoint", "thirdQuartile", "complete")


def vast(port, seconds):
    t = "http://127.0.0.1:%d/t/" % port
    tracking = "".join('<Tracking event="%s">%s%s</Tracking>' % (e, t, e) for e in EVENTS)
    return ('<?xml version="1.0" encoding="UTF-8"?><VAST version="4.1"><Ad id="load">'
            '<InLine><AdSystem>fake</AdSystem><AdTitle>Load test ad</AdTitle>'
            '<Impression>%simpression</Impression><Error>%serror?c=[ERRORCODE]</Error>'
            '<Creatives><Creative><Linear><Duration>00:00:%02d</Duration>'
            '<TrackingEvents>%s</TrackingEvents><MediaFiles><MediaFile delivery="progressive" '
            'type="audio/mpeg">http://127.0.0.1:%d/media/ad.mp3</MediaFile></MediaFiles>'
            '</Linear></Creative></Creatives></InLine></Ad></VAST>'
            % (t, t, seconds, tracking, port)).encode()


class Fake:
    def __init__(self, port, media, seconds):
        self.body = vast(port, seconds)
        self.media = media
        self.counts = {}
        self.times = {}

    def count(self, kind):
        now = time.time()
        self.counts[kind] = self.counts.get(kind, 0) + 1
        first, _ = self.times.get(kind, (now, now))
        self.times[kind] = (first, now)

    async def handle(self, reader, writer):
        try:
            line = await reader.readline()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            path = line.split(b" ")[1].decode() if line.count(b" ") >= 2 else "/"
            path = path.split("?")[0]
            status, ctype, body = 200, "text/plain", b""
            if path == "/vast":
                self.count("vast")
                ctype, body = "application/xml", self.body
            elif path == "/media/ad.mp3":
                self.count("media")
                ctype, body = "audio/mpeg", self.media
            elif path.startswith("/t/"):
                self.count(path[3:])
            elif path == "/stats":
                ctype = "application/json"
                body = json.dumps({"counts": self.counts, "times": self.times}).encode()
            else:
                status = 404
            writer.write(b"HTTP/1.0 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                         % (status, ctype.encode(), len(body)) + body)
            await writer.drain()
        except (ConnectionError, IndexError):
            pass
        finally:
            writer.close()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--media", required=True)
    p.add_argument("--seconds", type=int, required=True)
    a = p.parse_args()
    with open(a.media, "rb") as f:
        fake = Fake(a.port, f.read(), a.seconds)
    server = await asyncio.start_server(fake.handle, "127.0.0.1", a.port, backlog=4096)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
