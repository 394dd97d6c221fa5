# SPDX-License-Identifier: GPL-2.0-or-later
"""Audience figures from real clients, with the default <min-session> of 60 s.

Covers: sessions of known length (each client run for a measured wall time, then stopped by
its PID) from curl, from ffmpeg listening to the plain mount and from ffmpeg playing the
mount's HLS, all at once: each stored session lasts the time its client ran (an HLS session
to a target duration after its last request, not to the timeout that noticed it stopped
polling), and /admin/audience.json and .csv (period=all) give for the mount and the
server exactly the figures docs/AUDIENCE.md defines: sessions, qualified sessions (60 s),
CUME (distinct address and agent among the qualified), peak listeners, TLH (six decimals)
and ATSL (to the millisecond) computed from the stored rows, and Webcast Metrics' active
sessions and sessions started (the sessions of a minute or more).
"""

import csv
import io
import json
import re
import subprocess
import threading
import time

import pytest

import adminlib
import conftest
import formatlib as fl
import wirelib
from test_audience_store import wait_rows
from test_sessions import start_server

pytestmark = [pytest.mark.rimecast_only, pytest.mark.slow]

MOUNT = "/live.mp3"
MIN_SESSION = 60          # the default <min-session>: not set in this file
LONG = 66                 # seconds: qualified, far from the rule's edge
SHORT = 40                # seconds: not qualified
KNOWN = 1.5               # how far a stored length may be from its client's wall time
# short segments: an HLS session is over four target durations (at least 10 s) after its
# last request
TARGET = 2
HLS_XML = "<hls><target-duration>%d</target-duration></hls>" % TARGET

CURL_AGENT = "audience-curl/1"          # two sessions: one listener for CUME
SHORT_AGENT = "audience-curl-short/1"
FFMPEG_AGENT = "audience-ffmpeg/1"
HLS_AGENT = "audience-hls/1"

# what ffmpeg -v verbose says when it fetches a segment of the HLS (right after the playlist
# request that listed it)
SEGMENT_REQUEST = re.compile(r"Opening '[^']*%s/hls/\d+\.mp3' for reading" % re.escape(MOUNT))


class Client:
    """A real client run for a measured wall time: started here, stopped by its PID."""

    def __init__(self, agent, cmd, seconds):
        self.agent, self.seconds = agent, seconds
        self.lines = []             # (monotonic time, line) of what it says on stderr
        self.started = time.monotonic()
        self.started_at = time.time()   # the same moment on the clock the records use
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.wall = None

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def output(self):
        return "\n".join(line for _, line in self.lines[-30:])

    def due(self):
        return self.started + self.seconds

    def stop(self):
        assert self.proc.poll() is None, "%s ended early (%s):\n%s" % (
            self.agent, self.proc.returncode, self.output())
        self.proc.terminate()
        self.proc.wait(10)
        self.wall = time.monotonic() - self.started
        self.reader.join(5)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def curl(srv, agent, seconds):
    return Client(agent, ["curl", "-s", "-o", "/dev/null", "-A", agent, srv.url(MOUNT)], seconds)


def ffmpeg(srv, agent, path, seconds, level="error"):
    return Client(agent, [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", level, "-user_agent",
                          agent, "-i", srv.url(path), "-f", "null", "-"], seconds)


def stop_hls_after_a_request(client):
    """Stops the HLS player right after the next segment request it makes once its time is up:
    it polls every target duration, so stopped at a random moment its last request could be
    up to a target duration before its end. (ffmpeg 5.1, told to stop, may still wait for
    its next segment: one more playlist reload and segment request, and it ends. Either way
    its last request is at its end.)"""
    seen = len(client.lines)
    wirelib.wait_until(lambda: any(SEGMENT_REQUEST.search(line)
                                   for _, line in client.lines[seen:]), 10,
                       lambda: "a segment request of the HLS player:\n" + client.output())
    client.stop()


def figures_by_definition(rows):
    """The figures docs/AUDIENCE.md defines, from the stored rows (all inside the period)."""
    ms = [r["end_ms"] - r["start_ms"] for r in rows]
    qualified = [r for r, n in zip(rows, ms) if n >= MIN_SESSION * 1000]
    listened = sum(n for n in ms if n >= MIN_SESSION * 1000)
    edges = sorted([(r["start_ms"], 1) for r in rows] + [(r["end_ms"], -1) for r in rows])
    peak = now = 0
    for _, step in edges:   # an end at t before a start at t: they do not overlap
        now += step
        peak = max(peak, now)
    return {"sessions": len(rows), "qualified_sessions": len(qualified),
            "tlh_hours": "%.6f" % (listened / 3600000.0),
            "atsl_seconds": "%d.%03d" % divmod(listened // len(qualified), 1000),
            "cume": len({(r["ip"], r["user_agent"]) for r in qualified}),
            "peak_listeners": peak, "prerolls": 0, "in_progress": 0}


def as_figures(entry):
    """An entry of the JSON (numbers kept as their text) or of the CSV, as figures_by_definition
    gives them."""
    keys = ("sessions", "qualified_sessions", "cume", "peak_listeners", "prerolls",
            "in_progress")
    out = {k: int(entry[k]) for k in keys}
    out.update(tlh_hours=str(entry["tlh_hours"]), atsl_seconds=str(entry["atsl_seconds"]))
    return out


def test_real_clients_sessions_give_the_defined_figures(server):
    srv = start_server(server, extra_xml=HLS_XML)
    source = fl.ffmpeg_source(srv, MOUNT, "mp3")
    clients = []
    try:
        fl.wait_mount(srv, MOUNT, source)
        t0 = int(time.time()) - 1
        clients = [curl(srv, CURL_AGENT, LONG), curl(srv, CURL_AGENT, LONG),
                   curl(srv, SHORT_AGENT, SHORT), ffmpeg(srv, FFMPEG_AGENT, MOUNT, LONG),
                   ffmpeg(srv, HLS_AGENT, MOUNT + "/hls.m3u8", LONG, level="verbose")]
        hls = clients[-1]
        # all five listening at once (an HLS session counts from its first playlist request)
        wirelib.wait_until(lambda: fl.json_source(srv, MOUNT)["listeners"] == 5, 20,
                           lambda: "five listeners, not %s" % fl.json_source(srv, MOUNT))
        # the measured lengths: the only deliberate waits
        for c in sorted(clients, key=Client.due):
            time.sleep(max(0.0, c.due() - time.monotonic()))
            if c is hls:
                stop_hls_after_a_request(c)
            else:
                c.stop()
        # the HLS session's record is written once the server noticed it stopped polling
        rows = wait_rows(srv, 5, timeout=30)
        t1 = int(time.time()) + 1
    finally:
        for c in clients:
            c.kill()
        fl.stop_process(source)
    assert len(rows) == 5, rows
    assert all(r["mount"] == MOUNT and r["ip"] == "127.0.0.1" and r["ended"] == "client_left"
               for r in rows), rows

    # each stored session lasted the time its client ran
    assert sorted(r["user_agent"] for r in rows) == sorted(c.agent for c in clients), rows
    for agent in {c.agent for c in clients}:
        mine = sorted((r for r in rows if r["user_agent"] == agent), key=lambda r: r["start_ms"])
        runs = sorted((c for c in clients if c.agent == agent), key=lambda c: c.started)
        for r, c in zip(mine, runs):
            stored = (r["end_ms"] - r["start_ms"]) / 1000.0
            # when it began and ended, from the client's start and end
            began, ended = (r["start_ms"] / 1000.0 - c.started_at,
                            r["end_ms"] / 1000.0 - c.started_at - c.wall)
            conftest.note("%s: stored %.3f s, ran %.3f s (began %+.3f s, ended %+.3f s)"
                          % (agent, stored, c.wall, began, ended))
            # an HLS session that stopped polling ends a target duration after its last
            # request (a player asks at least that often while it plays; this one was stopped
            # right after a request), never when the timeout noticed, four target durations
            # (10 s) later
            late = TARGET if agent == HLS_AGENT else 0
            assert -KNOWN <= stored - c.wall - late <= KNOWN, (
                agent, stored, c.wall, began, ended, r, c.output())
    # ffmpeg held its HLS session: its playlists and segments were counted to it
    # (a 2 s segment of the 64 kbit/s stream is 16 kB; it fetched one every 2 s)
    [hls_row] = [r for r in rows if r["user_agent"] == HLS_AGENT]
    assert hls_row["bytes"] > 16000 * LONG / 2 / 2, hls_row

    # the figures, for the mount and for the server (its only mount)
    want = figures_by_definition(rows)
    assert (want["sessions"], want["qualified_sessions"], want["cume"],
            want["peak_listeners"]) == (5, 4, 3, 5)
    q = "period=all&from=%d&to=%d" % (t0, t1)
    r = adminlib.admin(srv, "/admin/audience.json?" + q)
    assert r.status == 200, r.body
    periods = json.loads(r.text, parse_float=str)["periods"]   # the numbers' exact text
    assert [p["mount"] for p in periods] == [None, MOUNT]
    for p in periods:
        assert as_figures(p) == want, (p, want)
        assert p["countries"] == {"unknown": 5}
    r = adminlib.admin(srv, "/admin/audience.csv?" + q)
    assert r.status == 200 and r.header("content-type").startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(r.text)))
    assert [l["mount"] for l in lines] == ["", MOUNT]
    for l in lines:
        assert as_figures(l) == want, (l, want)
        assert l["countries"] == "unknown=5"
    # by Webcast Metrics' rules (a session counts from one minute, whatever <min-session>):
    # the four long sessions, all begun in the period
    wm = sum(1 for r in rows if r["end_ms"] - r["start_ms"] >= 60000)
    assert wm == 4
    for p in periods:
        assert (p["active_sessions"], p["sessions_started"]) == (wm, wm), p
    for l in lines:
        assert (int(l["active_sessions"]), int(l["sessions_started"])) == (wm, wm), l
