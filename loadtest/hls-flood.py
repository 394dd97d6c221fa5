#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""hls-flood.py: the HLS session flood, as a check with figures (docs/SECURITY.md).

Starts one server (gen-config.sh's config with 2 s segments) and one ffmpeg MP3 source, then:
  1. one kept-alive connection asks for --tokens tokens and begins a session with each, as fast
     as the server answers: how many began (the address's share), how long it took, the
     server's RSS; then a real player from another address (127.0.0.2: a session that fetches
     a segment) and a plain listener must still be admitted;
  2. --addresses addresses of 127/8 (127.0.1.1 on) each begin their share of sessions (100
     by default: --sessions in all, 30 000), then all stop polling together: the sessions
     expire at once. The longest worker turn (rimecast_worker_turn_max_seconds) must stay
     under 50 ms, the server's RSS and the time they took to end are reported, and no session
     record may be written for a session that never fetched audio.
Prints PASS/FAIL lines and a summary; exits 1 on a FAIL. It owns DIR (--out, default
loadtest-out/hls-flood-DATE) and stops what it started, by pid.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
TOKEN = re.compile(rb"hls\.m3u8\?session=([0-9a-f]{32})")
FAILS = []


def check(ok, what):
    print("%s %s" % ("PASS" if ok else "FAIL", what), flush=True)
    if not ok:
        FAILS.append(what)


def find_bin(name):
    for d in (TOP, os.path.join(TOP, "build")):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def metric(port, name):
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port)
    req.add_header("Authorization", "Basic YWRtaW46aGFja21l")  # admin:hackme
    text = urllib.request.urlopen(req, timeout=10).read().decode()
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def read_answers(sock, n, buf=b""):
    """Reads n HTTP answers (with Content-Length) from sock: [(status, body)], the rest."""
    out = []
    while len(out) < n:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
            continue
        head = buf[:end].decode("latin-1")
        m = re.search(r"(?im)^content-length:\s*(\d+)", head)
        length = int(m.group(1)) if m else 0
        while len(buf) < end + 4 + length:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
        out.append((int(head.split()[1]), buf[end + 4:end + 4 + length]))
        buf = buf[end + 4 + length:]
    return out, buf


def begin_sessions(port, mount, n, source_ip="127.0.0.1", batch=100, play=False):
    """One kept-alive connection from source_ip: n tokens and a session begun with each,
    pipelined by batch; with play, each session then fetches the newest segment its playlist
    lists (it becomes a listener). The statuses of the session requests."""
    s = socket.create_connection(("127.0.0.1", port), 30, source_address=(source_ip, 0))
    statuses, rest = [], b""
    try:
        for done in range(0, n, batch):
            k = min(batch, n - done)
            s.sendall(b"".join(b"GET %s/hls.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n" % mount.encode()
                               for _ in range(k)))
            answers, rest = read_answers(s, k, rest)
            tokens = [TOKEN.search(b).group(1) for st, b in answers if st == 200]
            s.sendall(b"".join(b"GET %s/hls.m3u8?session=%s HTTP/1.1\r\nHost: x\r\n\r\n"
                               % (mount.encode(), t) for t in tokens))
            answers, rest = read_answers(s, len(tokens), rest)
            statuses += [st for st, _ in answers]
            if play:
                # one connection carries them all: each segment names its session (a token
                # in a piece's query is honoured on any mount), or all would count to one
                segs = [[l for l in b.decode().splitlines() if l.startswith("hls/")][-1]
                        + "?session=" + t.decode()
                        for (st, b), t in zip(answers, tokens) if st == 200]
                s.sendall(b"".join(b"GET %s/%s HTTP/1.1\r\nHost: x\r\n\r\n"
                                   % (mount.encode(), seg.encode()) for seg in segs))
                _, rest = read_answers(s, len(segs), rest)
    finally:
        s.close()
    return statuses


def http_get(port, path, source_ip):
    s = socket.create_connection(("127.0.0.1", port), 30, source_address=(source_ip, 0))
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
        answers, _ = read_answers(s, 1)
        return answers[0] if answers else (0, b"")
    finally:
        s.close()


def has_segment(port, mount):
    """The mount's HLS lists a segment (asked from an address of its own)."""
    st, body = http_get(port, mount + "/hls.m3u8", "127.0.0.9")
    m = TOKEN.search(body) if st == 200 else None
    return bool(m) and b"#EXTINF" in http_get(port, "%s/hls.m3u8?session=%s"
                                              % (mount, m.group(1).decode()), "127.0.0.9")[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rimecast", default=os.environ.get("RIMECAST_BIN") or find_bin("rimecast"))
    ap.add_argument("--out", default="loadtest-out/hls-flood-" + time.strftime("%Y%m%d-%H%M%S"))
    ap.add_argument("--port", type=int, default=18700)
    ap.add_argument("--tokens", type=int, default=10000)
    ap.add_argument("--sessions", type=int, default=30000)
    ap.add_argument("--per-address", type=int, default=100)
    ap.add_argument("--play", action="store_true",
                    help="the sessions of step 2 fetch a segment each: listeners, with records")
    a = ap.parse_args()
    if not a.rimecast:
        sys.exit("hls-flood.py: no rimecast binary (run make)")
    os.makedirs(a.out, exist_ok=True)
    out = os.path.abspath(a.out)
    extra = ("<hls><target-duration>2</target-duration><part-target-ms>500</part-target-ms>"
             "</hls>")
    subprocess.run([os.path.join(HERE, "gen-config.sh"), "--dir", out + "/run", "--port",
                    str(a.port), "--extra", extra], check=True, stdout=subprocess.DEVNULL)
    procs = []
    try:
        srv = subprocess.Popen([a.rimecast, "-c", out + "/run/server.xml"])
        procs.append(srv)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", a.port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("hls-flood.py: the server did not start")
                time.sleep(0.2)
        src = subprocess.Popen(["ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i",
                                "sine=frequency=440:sample_rate=44100", "-c:a", "libmp3lame",
                                "-b:a", "128k", "-content_type", "audio/mpeg", "-f", "mp3",
                                "icecast://source:hackme@127.0.0.1:%d/live.mp3" % a.port],
                               stdin=subprocess.DEVNULL)
        procs.append(src)
        mount = "/live.mp3"
        deadline = time.monotonic() + 30
        while not has_segment(a.port, mount):
            if time.monotonic() > deadline:
                sys.exit("hls-flood.py: the mount has no HLS segment")
            time.sleep(0.5)
        rss0 = rss_kb(srv.pid)

        # 1. one connection, many tokens
        t0 = time.monotonic()
        statuses = begin_sessions(a.port, mount, a.tokens)
        took = time.monotonic() - t0
        began = statuses.count(200)
        rss1 = rss_kb(srv.pid)
        print("one connection: %d tokens asked, %d sessions began, %d refused, %.1f s; RSS %d KB "
              "before, %d KB after" % (a.tokens, began, len(statuses) - began, took, rss0, rss1))
        check(began <= a.per_address, "one address began at most its share (%d <= %d)"
              % (began, a.per_address))
        t = TOKEN.search(http_get(a.port, mount + "/hls.m3u8", "127.0.0.2")[1]).group(1).decode()
        st, text = http_get(a.port, "%s/hls.m3u8?session=%s" % (mount, t), "127.0.0.2")
        segs = [l for l in text.decode().splitlines() if l.startswith("hls/")]
        seg_st = http_get(a.port, mount + "/" + segs[-1], "127.0.0.2")[0] if segs else 0
        check(st == 200 and seg_st == 200, "a player from another address still plays "
              "(playlist %d, segment %d)" % (st, seg_st))
        check(http_get(a.port, mount, "127.0.0.3")[0] == 200,
              "a plain listener from another address is admitted")

        # 2. many addresses, then all expire together
        n_addr = (a.sessions + a.per_address - 1) // a.per_address
        turn_before = metric(a.port, "rimecast_worker_turn_max_seconds")
        t0 = time.monotonic()
        total = 0
        for i in range(n_addr):
            ip = "127.0.%d.%d" % (1 + i // 250, 1 + i % 250)
            total += begin_sessions(a.port, mount, a.per_address, ip, play=a.play).count(200)
        took = time.monotonic() - t0
        rss2 = rss_kb(srv.pid)
        sessions = metric(a.port, "rimecast_hls_sessions")
        print("%d addresses: %d sessions began in %.1f s; RSS %d KB" % (n_addr, total, took, rss2))
        turn_mid = metric(a.port, "rimecast_worker_turn_max_seconds")
        # they stop polling now: all expire within four target durations (10 s) and a tick
        t0 = time.monotonic()
        while True:
            left = metric(a.port, "rimecast_hls_sessions")
            if left is not None and left <= 2:
                break
            if time.monotonic() - t0 > 120:
                break
            time.sleep(0.2)
        ended = time.monotonic() - t0
        turn_after = metric(a.port, "rimecast_worker_turn_max_seconds")
        rss3 = rss_kb(srv.pid)
        print("expiry: %s sessions left after %.1f s; longest worker turn %.1f ms before the "
              "flood, %.1f ms after it began, %.1f ms after the expiry; RSS %d KB"
              % (left, ended, 1000 * (turn_before or 0), 1000 * (turn_mid or 0),
                 1000 * (turn_after or 0), rss3))
        check(sessions is not None and sessions >= 0.9 * a.sessions,
              "the sessions began (%s)" % sessions)
        check(left is not None and left <= 2, "they all ended (%s left)" % left)
        check(turn_after is not None and turn_after < 0.050,
              "no worker turn over 50 ms (%.1f ms)" % (1000 * (turn_after or 0)))
        log = os.path.join(out, "run", "log", "sessions.log")
        records = sum(1 for _ in open(log)) if os.path.exists(log) else 0
        if a.play:
            check(records >= 0.9 * a.sessions, "the sessions that played left their records "
                  "(%d)" % records)
        else:
            # the player from 127.0.0.2 and the plain listener from 127.0.0.3 are the only
            # listeners
            check(records <= 2, "no session record for sessions that fetched no audio (%d "
                  "records: the two real listeners')" % records)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    print("hls-flood: %s" % ("all checks passed" if not FAILS else "%d failed" % len(FAILS)))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
