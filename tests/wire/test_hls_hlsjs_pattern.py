# SPDX-License-Identifier: GPL-2.0-or-later
"""How a low-latency HLS player of hls.js polls a live audio mount, seen on the wire, and the
load generator's --hlsjs players polling the same way (loadtest/hlsswarm, docs/PERFORMANCE.md
"Polling as hls.js does").

A recording TCP relay stands between the player and the server and notes, per connection, each
request line as it passes and when the first byte of its answer came back. At the live edge
hls.js never asks for the part EXT-X-PRELOAD-HINT names: each part it loads was named by the
_HLS_msn/_HLS_part of a blocking reload sent before it (the part after the last one listed), and
the reload for the next part is sent the moment a playlist arrives, so it is outstanding while
the new part is fetched on another keep-alive connection: two connections a player. hlsswarm's
--ll players (the preload-hint model) ask for the hinted part first and for its reload after:
the opposite order. Rimecast only (Icecast has no HLS)."""
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

import conftest
import formatlib as fl
import webuilib
import wirelib
from test_hls_latency import PLAYER, open_player_page, pages  # noqa: F401 (pages: the fixture)
from test_webui import browsers  # noqa: F401 (the fixture)

pytestmark = pytest.mark.rimecast_only
_missing = webuilib.missing_requirements()
in_chromium = pytest.mark.skipif(_missing is not None, reason=_missing or "")

HLSSWARM = os.environ.get("HLSSWARM_BIN") or os.path.join(os.path.dirname(conftest.BINARY),
                                                           "loadtest", "hlsswarm")
PART_RE = re.compile(r"/hls/(\d+)\.(\d+)\.\w+$")
RELOAD_RE = re.compile(r"hls\.m3u8\?.*_HLS_msn=(\d+)&_HLS_part=(\d+)")


class Relay:
    """A TCP relay to (host, port) on 127.0.0.1:self.port that records each request: a dict with
    conn (the accepted connection's number), sent (time it passed), line (its request line),
    first (time the first byte of its answer passed, None while it has none)."""

    def __init__(self, host, port):
        self.target = (host, port)
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.requests, self.lock, self.conns, self.closing = [], threading.Lock(), 0, False
        self.socks = [self.lsock]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closing:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            s = socket.create_connection(self.target)
            with self.lock:
                self.conns += 1
                n = self.conns
                self.socks += [c, s]
            threading.Thread(target=self._pump, args=(c, s, self._up(n)), daemon=True).start()
            threading.Thread(target=self._pump, args=(s, c, self._down(n)), daemon=True).start()

    @staticmethod
    def _pump(src, dst, note):
        """Copies src to dst, each piece shown to note first, until either side ends."""
        while True:
            try:
                d = src.recv(65536)
            except OSError:
                d = b""
            if not d:
                break
            note(d)
            try:
                dst.sendall(d)
            except OSError:
                break
        for x in (src, dst):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _up(self, n):
        """What connection n's player sends: each request head noted as it passes."""
        buf = [b""]

        def note(d):
            buf[0] += d
            while b"\r\n\r\n" in buf[0]:  # requests without a body (GET)
                head, buf[0] = buf[0].split(b"\r\n\r\n", 1)
                with self.lock:
                    self.requests.append({"conn": n, "sent": time.monotonic(), "first": None,
                                          "line": head.split(b"\r\n", 1)[0].decode("latin-1")})
        return note

    def _down(self, n):
        """What the server sends on connection n: the first byte of each answer noted."""
        def note(d):
            t = time.monotonic()
            with self.lock:
                for r in self.requests:  # one request at a time on a connection: the oldest
                    if r["conn"] == n and r["first"] is None:
                        r["first"] = t
                        break
        return note

    def close(self):
        self.closing = True
        with self.lock:
            for x in self.socks:
                try:
                    x.close()
                except OSError:
                    pass

    def snapshot(self):
        with self.lock:
            return [dict(r) for r in self.requests]


def live_edge_pattern(reqs):
    """From a player's recorded requests: (parts loaded, of them named by an earlier reload,
    of them asked after the reload of a later part was sent on another connection,
    parts asked before any reload named them, connections used)."""
    reloads = [(r, tuple(map(int, m.groups()))) for r in reqs
               for m in [RELOAD_RE.search(r["line"])] if m]
    parts = [(r, tuple(map(int, m.groups()))) for r in reqs
             for m in [PART_RE.search(r["line"].split(" ")[1])] if m]
    named = concurrent = ahead = 0
    for r, sp in parts:
        before = [q for q, d in reloads if d == sp and q["sent"] < r["sent"]]
        if before:
            named += 1
        elif any(d == sp for q, d in reloads):
            ahead += 1  # asked first, its reload only after: the preload-hint way
        # the reload of a later part went out first, on the other connection: sent as the
        # playlist came, with the part (when the machine is slow, its answer may begin first;
        # the two are sent in the same turn of the player, so the recorder, reading two
        # connections, may see the part a few milliseconds before the reload: 50 ms is "with")
        if any(q["sent"] <= r["sent"] + 0.05 and d > sp and q["conn"] != r["conn"]
               for q, d in reloads):
            concurrent += 1
    return len(parts), named, concurrent, ahead, len({r["conn"] for r in reqs})


def print_sequence(reqs, n=60):
    t0 = reqs[0]["sent"] if reqs else 0
    for r in reqs[-n:]:
        print("  conn %d  +%.3f s  %s  (answer began +%s)" % (
            r["conn"], r["sent"] - t0, r["line"],
            "%.3f s" % (r["first"] - t0) if r["first"] else "-"))


def window_started(srv, mount):
    """Asks for the mount's HLS until a media playlist with a complete segment comes (the first
    HLS request starts the window), so that a player's first playlist needs no wait."""
    def media_playlist():
        multi = urllib.request.urlopen(srv.url(mount + "/hls.m3u8"), timeout=20).read().decode()
        uri = [ln for ln in multi.splitlines() if ln and not ln.startswith("#")][-1]
        with urllib.request.urlopen(srv.url(mount + "/" + uri), timeout=20) as r:
            return r.status == 200 and "#EXTINF:" in r.read().decode()
    wirelib.wait_until(media_playlist, 30, "the HLS window's first segment", interval=0.5)


@pytest.fixture
def relayed_mount(server):
    """(server, mount, relay): an AAC mount fed in real time by ffmpeg and a relay to the server."""
    srv, mount = server(), "/live.aac"
    p = fl.ffmpeg_source(srv, mount, "aac")
    relay = None
    try:
        fl.wait_mount(srv, mount, p)
        window_started(srv, mount)
        relay = Relay(srv.host, srv.port)
        yield srv, mount, relay
    finally:
        if relay:
            relay.close()
        fl.stop_process(p)


def run_hlsswarm(relay, mount, flag, tmp_path, seconds=8):
    status = tmp_path / "hlsswarm.status"
    p = subprocess.Popen([HLSSWARM, "--port", str(relay.port), "--mount", mount, flag,
                          "--clients", "1", "--duration", str(seconds), "--status", str(status)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        p.wait(seconds + 10)
    finally:
        fl.stop_process(p)
    assert p.returncode == 0, p.stderr.read()
    return relay.snapshot(), status.read_text()


needs_hlsswarm = pytest.mark.skipif(not os.access(HLSSWARM, os.X_OK),
                                    reason="loadtest/hlsswarm is not built")


@needs_hlsswarm
def test_hlsswarm_hlsjs_players_ask_for_listed_parts_with_the_next_reload_outstanding(
        relayed_mount, tmp_path):
    """An --hlsjs player loads each part once a blocking reload named it and the playlist lists
    it, with the reload for the next part already sent on its other connection."""
    srv, mount, relay = relayed_mount
    reqs, status = run_hlsswarm(relay, mount, "--hlsjs", tmp_path)
    print_sequence(reqs)
    parts, named, concurrent, ahead, conns = live_edge_pattern(reqs)
    assert parts >= 8, (parts, status)
    # all but the start (the parts already listed, up to PART-HOLD-BACK behind the edge)
    assert named >= parts - 4 and ahead == 0, (parts, named, ahead)
    assert concurrent >= parts - 4, (parts, concurrent)
    assert conns == 2, conns
    assert re.search(r"^final mode=hlsjs .* errors=0 ", status, re.M), status


@needs_hlsswarm
def test_hlsswarm_ll_players_ask_for_the_hinted_part_before_its_reload(relayed_mount, tmp_path):
    """The preload-hint model, for contrast: each part is asked for before any reload names it,
    on one connection."""
    srv, mount, relay = relayed_mount
    reqs, status = run_hlsswarm(relay, mount, "--ll", tmp_path)
    parts, named, concurrent, ahead, conns = live_edge_pattern(reqs)
    assert parts >= 8 and named == 0 and ahead >= parts - 2 and concurrent == 0, (
        parts, named, ahead, concurrent)
    assert conns == 1, conns


@in_chromium
@pytest.mark.browser
def test_hls_js_asks_for_listed_parts_with_the_next_reload_outstanding(relayed_mount, browsers,
                                                                       pages):
    """The pattern --hlsjs copies, from hls.js itself (lowLatencyMode) in a headless Chromium:
    after its start, every part it loads was named by an earlier blocking reload, none is asked
    for ahead of it (the preload hint is not used), the next reload is outstanding on another
    connection while the part is fetched, and a player uses two connections."""
    srv, mount, relay = relayed_mount
    b = browsers(js=True)
    open_player_page(b, srv, pages)
    b.js_run(PLAYER, "http://127.0.0.1:%d%s/hls.m3u8" % (relay.port, mount))
    wirelib.wait_until(lambda: live_edge_pattern(relay.snapshot())[1] >= 12, 40,
                       "hls.js to load 12 parts named by a reload")
    reqs = relay.snapshot()
    print_sequence(reqs)
    parts, named, concurrent, ahead, conns = live_edge_pattern(reqs)
    assert ahead == 0, (parts, named, ahead)
    assert named >= parts - 4, (parts, named)
    assert concurrent >= named - 2, (named, concurrent)
    assert conns == 2, conns
