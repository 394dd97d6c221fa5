# SPDX-License-Identifier: GPL-2.0-or-later
"""Invalid traffic: the audience figures gross and net, on the SQLite store and on PostgreSQL.

Covers: real clients at once on one mount: curl with HEAD (the stream's head, no session), a
0-1 byte range probe as Safari sends it (answered with the stream as Icecast answers it; gone
after two bytes, its session is a probe), a scripted robot (a raw socket sending a
self-declared bot's agent, in the built-in list), a client whose agent the station's
<audience><bots> file names (the IAB/ABC format, start-of-string), one listener (curl, one
agent, one address) opening three connections at once over <max-concurrent-per-listener> 2,
and valid listeners: curl, ffmpeg on the stream and ffmpeg playing the mount's HLS. Every
session is recorded with why it is invalid (bot, concurrent, probe, '' valid) and its kind (HLS or
not), in the session log and the store; /admin/audience.json and .csv give with traffic=net
(the default) and traffic=gross the figures of the valid sessions and of all of them, as the
stored rows define them, and say which; /admin/audience/sessions lists the nine sessions, the
HLS one as one session.
"""

import csv
import io
import os
import subprocess
import tempfile
import threading
import time

import pytest

import adminlib
import formatlib as fl
import wirelib
from test_audience_clients import Client, ffmpeg
from test_audience_pg import cluster  # noqa: F401 (a fixture)
from test_audience_store import wait_rows
from test_sessions import records, start_server

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live.mp3"
SECONDS = 5
HLS_XML = "<hls><target-duration>2</target-duration></hls>"
BOTS = ("# a station's list in the IAB/ABC format\n"
        "inv-custom|1|inv-custom-ok|0|2|1\n"
        "never-active|0||0|2|0\n")
ROBOT = "Mozilla/5.0 (compatible; ExampleBot/2.1; +https://robots.example/bot.html)"


def audience_xml(db=""):
    return ("%s<min-session>1</min-session><resume-seconds>0</resume-seconds>"
            "<max-concurrent-per-listener>2</max-concurrent-per-listener>"
            "<bots>BOTS</bots>" % db)


def curl(srv, agent):
    return Client(agent, ["curl", "-s", "-o", "/dev/null", "-A", agent, srv.url(MOUNT)],
                  SECONDS)


def robot(srv, done):
    """A scripted robot: a raw socket with a self-declared bot's agent, reading the stream
    until done is set."""
    s = wirelib.connect(srv.host, srv.port, 5)
    s.sendall(("GET %s HTTP/1.0\r\nUser-Agent: %s\r\n\r\n" % (MOUNT, ROBOT)).encode())
    head, _ = wirelib.read_head(s, 5)
    assert head.status == 200
    s.settimeout(0.2)
    while not done.is_set():
        try:
            s.recv(65536)
        except OSError:
            pass
    s.close()


def probes(srv):
    """HEAD (the stream's head, no body, no session) and a 0-1 byte range probe as Safari
    sends it: answered with the stream, as Icecast answers it; the prober reads two bytes and
    goes (its session is a probe)."""
    head = subprocess.run(["curl", "-s", "-I", "-A", "inv-head/1", "--max-time", "10",
                           srv.url(MOUNT)], capture_output=True, timeout=20)
    assert head.returncode == 0 and head.stdout.startswith(b"HTTP/1."), head
    s = wirelib.connect(srv.host, srv.port, 5)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\nUser-Agent: inv-probe/1"
               "\r\n\r\n" % MOUNT).encode())
    head, rest = wirelib.read_head(s, 5)
    assert head.status == 200
    while len(rest) < 2:
        more = s.recv(2 - len(rest))
        assert more, "the stream ended"
        rest += more
    s.close()


def figures_of(rows):
    """The server's figures of the period, as docs/AUDIENCE.md defines them (every row inside
    the period; <min-session> 1 s, no pauses)."""
    qualified = [r for r in rows if r["end_ms"] - r["start_ms"] >= 1000]
    edges = sorted([(r["start_ms"], 1) for r in rows] + [(r["end_ms"], -1) for r in rows])
    peak = now = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return {"sessions": len(rows), "qualified_sessions": len(qualified),
            "cume": len({r["listener_key"] for r in qualified}), "peak_listeners": peak,
            "tlh_hours": "%.6f" % (sum(r["end_ms"] - r["start_ms"] for r in qualified)
                                   / 3600000.0)}


def as_figures(entry):
    out = {k: int(entry[k]) for k in ("sessions", "qualified_sessions", "cume",
                                      "peak_listeners")}
    out["tlh_hours"] = "%.6f" % float(entry["tlh_hours"])
    return out


def pg_records(cluster, db):
    cols = ("start_ms", "end_ms", "user_agent", "listener_key", "invalid", "hls", "mount")
    got = cluster.psql("SELECT start_ms, end_ms, coalesce(user_agent, ''), listener_key,"
                       " invalid, hls, mount FROM sessions ORDER BY start_ms", db)
    return [dict(zip(cols, r), start_ms=int(r[0]), end_ms=int(r[1]), hls=int(r[5]))
            for r in got]


def bots_file():
    """The station's list, where the server's user (nobody) reads it."""
    d = tempfile.mkdtemp(prefix="rimecast-bots-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "bots.txt")
    with open(path, "w") as f:
        f.write(BOTS)
    os.chmod(path, 0o644)
    return path


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_invalid_sessions_are_recorded_and_left_out_of_net_figures(server, request, store):
    db = ""
    if store == "postgresql":
        cluster = request.getfixturevalue("cluster")
        name = cluster.new_database()
        db = "<database>%s</database>" % cluster.uri(name)
    srv = start_server(server, extra_xml=HLS_XML,
                       audience_xml=audience_xml(db).replace("BOTS", bots_file()))
    srv.wait_log("robots from", 10)
    source = fl.ffmpeg_source(srv, MOUNT, "mp3")
    clients = []
    try:
        fl.wait_mount(srv, MOUNT, source)
        t0 = int(time.time()) - 1
        probes(srv)
        clients = [curl(srv, "inv-curl/1"), curl(srv, "inv-many/1"), curl(srv, "inv-many/1"),
                   curl(srv, "inv-many/1"), curl(srv, "inv-custom/1"),
                   ffmpeg(srv, "inv-ffmpeg/1", MOUNT, SECONDS),
                   ffmpeg(srv, "inv-hls/1", MOUNT + "/hls.m3u8", SECONDS)]
        # all seven and the robot listening at once (HLS from its first playlist request),
        # then a while (every session over <min-session>)
        done = threading.Event()
        robot_thread = threading.Thread(target=robot, args=(srv, done))
        robot_thread.start()
        wirelib.wait_until(lambda: fl.json_source(srv, MOUNT)["listeners"] == 8, 20,
                           lambda: "eight listeners, not %s" % fl.json_source(srv, MOUNT))
        time.sleep(2)   # listening: the sessions' length is what is measured
        done.set()
        robot_thread.join()
        for c in clients:
            c.kill()
        # the HLS session's record comes once the server noticed it stopped polling
        log = wirelib.wait_until(lambda: len(records(srv)) >= 9 and records(srv), 40,
                                 "9 session records")
    finally:
        for c in clients:
            c.kill()
        fl.stop_process(source)
    t1 = int(time.time()) + 1
    # every session recorded, none for the probes, each saying why it is invalid
    assert len(log) == 9, log
    why = {r["user_agent"]: set() for r in log}
    for r in log:
        why[r["user_agent"]].add(r["invalid"])
    assert why == {"inv-curl/1": {""}, "inv-many/1": {"concurrent"}, "inv-custom/1": {"bot"},
                   ROBOT: {"bot"}, "inv-ffmpeg/1": {""}, "inv-hls/1": {""},
                   "inv-probe/1": {"probe"}}, why
    assert sorted(r["hls"] for r in log) == [0] * 8 + [1]
    assert [r["user_agent"] for r in log if r["hls"]] == ["inv-hls/1"]
    # the store has them as the log does
    if store == "sqlite":
        stored = wait_rows(srv, 9)
    else:
        stored = wirelib.wait_until(lambda: len(pg_records(cluster, name)) >= 9 and
                                    pg_records(cluster, name), 15, "9 rows")
    assert sorted((r["user_agent"], r["invalid"], r["hls"]) for r in stored) == \
        sorted((r["user_agent"], r["invalid"], r["hls"]) for r in log)
    valid = [r for r in stored if not r["invalid"]]
    assert len(valid) == 3
    q = "period=all&from=%d&to=%d" % (t0, t1)
    for traffic, rows in (("net", valid), ("gross", stored), ("", valid)):
        want = figures_of(rows)
        ask = q + ("&traffic=" + traffic if traffic else "")
        j = adminlib.admin(srv, "/admin/audience.json?" + ask).json()
        assert j["traffic"] == (traffic or "net")
        server_row = [p for p in j["periods"] if p["mount"] is None][0]
        assert as_figures(server_row) == want, (traffic, server_row, want)
        r = adminlib.admin(srv, "/admin/audience.csv?" + ask)
        assert r.status == 200
        line = [x for x in csv.DictReader(io.StringIO(r.text)) if x["mount"] == ""][0]
        assert as_figures(line) == want, (traffic, line, want)
        x = adminlib.admin(srv, "/admin/audience?" + ask).xml()
        assert x.findtext("traffic") == (traffic or "net")
    assert figures_of(stored)["sessions"] == 9 and figures_of(valid)["cume"] == 3
    # the session log out: the nine sessions, the HLS one a session (not its playlists and
    # segments), each with why it is invalid
    r = adminlib.admin(srv, "/admin/audience/sessions?format=tsv&" + q)
    assert r.status == 200, r.text
    lines = r.text.splitlines()
    head = lines[0].split("\t")
    out = sorted((d["user_agent"], d["invalid"], d["kind"])
                 for d in (dict(zip(head, line.split("\t"))) for line in lines[1:]))
    assert out == sorted((r["user_agent"], r["invalid"], "hls" if r["hls"] else "stream")
                         for r in log)
    r = adminlib.admin(srv, "/admin/audience.json?traffic=all")
    assert r.status == 400
