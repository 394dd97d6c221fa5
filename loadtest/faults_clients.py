#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""faults_clients.py: the misbehaving clients of faults.sh, one subcommand each.

rawsource   a raw-socket PUT source that can be killed in the middle of a block
startstop   start/stop cycles of a server with a source and listeners in its first milliseconds
slowloris   connections that trickle a request head and never finish it
flap        sources that connect, send a little and disconnect
metaflood   /admin/metadata as fast as it is answered; counts the statuses
oggbad      Ogg sources with bad CRCs, 255x255 pages, BOS floods, endless header packets

Every loop is bounded by a count and a time (--seconds); each prints one `key=value` summary
line on exit. It owns only the sockets and child processes it opens.
"""
import argparse
import base64
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import time


def source_head(mount, password, ctype="audio/mpeg"):
    auth = base64.b64encode(("source:%s" % password).encode()).decode()
    return ("PUT %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic %s\r\n"
            "Content-Type: %s\r\nIce-Public: 0\r\n\r\n" % (mount, auth, ctype)).encode()


def read_status(sock, timeout=5.0):
    """Status code of the answer to a request head, or 0."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data and len(data) < 4096:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        return int(data.split(b" ", 2)[1])
    except (OSError, ValueError, IndexError):
        return 0


def open_source(port, mount, password, ctype="audio/mpeg", timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(source_head(mount, password, ctype))
    return s, read_status(s, timeout)


# ---- rawsource -------------------------------------------------------------------------

def cmd_rawsource(a):
    """Streams --rate bytes/s in --block byte blocks. When --kill-file appears it writes half a
    block, creates --mid-file and waits to be killed (SIGKILL from faults.sh)."""
    s, status = open_source(a.port, a.mount, a.password)
    if status != 200:
        print("rawsource status=%d" % status, flush=True)
        return 1
    block = bytes(random.Random(a.mount).getrandbits(8) for _ in range(a.block))
    interval = a.block / a.rate
    end = time.monotonic() + a.seconds
    nxt = time.monotonic()
    while time.monotonic() < end:
        if a.kill_file and os.path.exists(a.kill_file):
            s.sendall(block[: a.block // 2])
            open(a.mid_file, "w").close()
            time.sleep(a.seconds)  # SIGKILL arrives here, half a block sent
            return 0
        s.sendall(block)
        nxt += interval
        time.sleep(max(0.0, nxt - time.monotonic()))
    return 0


# ---- startstop -------------------------------------------------------------------------

def cmd_startstop(a):
    """--cycles start/stop cycles of `BIN -c CONF`: a source and listeners connect as soon as
    the port answers, the server gets SIGTERM after a random 0-300 ms. Counts exit statuses,
    hangs and sanitizer reports; stderr of a failing cycle is kept in --out-dir."""
    rnd = random.Random(a.seed)
    counts = dict(cycles=0, ok=0, crash=0, hang=0, nonzero=0, asan=0, src_ok=0, lis_ok=0)
    end = time.monotonic() + a.seconds
    for i in range(a.cycles):
        if time.monotonic() > end:
            break
        counts["cycles"] += 1
        errpath = os.path.join(a.out_dir, "cycle.err")
        with open(errpath, "wb") as err:
            p = subprocess.Popen([a.bin, "-c", a.conf], stdout=subprocess.DEVNULL, stderr=err,
                                 cwd=a.out_dir)
        socks = []
        t0 = time.monotonic()
        stop_at = t0 + rnd.uniform(0.05, 0.35)
        src = None
        while time.monotonic() < stop_at and p.poll() is None:
            try:
                if src is None:
                    src, st = open_source(a.port, "/ss%d" % (i % 4), a.password, timeout=0.5)
                    if st == 200:
                        counts["src_ok"] += 1
                        src.sendall(os.urandom(4096))
                    socks.append(src)
                    for _ in range(a.listeners):
                        ls = socket.create_connection(("127.0.0.1", a.port), timeout=0.5)
                        ls.sendall(b"GET /ss%d HTTP/1.0\r\n\r\n" % (i % 4))
                        socks.append(ls)
                        if read_status(ls, 0.5) == 200:
                            counts["lis_ok"] += 1
                else:
                    src.sendall(os.urandom(1024))
                    time.sleep(0.01)
            except OSError:
                src = src or None
                time.sleep(0.001)
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
            counts["hang"] += 1
        for s in socks:
            s.close()
        text = open(errpath, "rb").read()
        bad = False
        if b"AddressSanitizer" in text or b"LeakSanitizer" in text or b"runtime error:" in text:
            counts["asan"] += 1
            bad = True
        if rc < 0 and rc != -signal.SIGTERM:
            counts["crash"] += 1
            bad = True
        elif rc not in (0, -signal.SIGTERM):
            counts["nonzero"] += 1
            bad = True
        else:
            counts["ok"] += 1
        if bad:
            os.replace(errpath, os.path.join(a.out_dir, "cycle-%d-rc%d.err" % (i, rc)))
            print("cycle %d: exit %d" % (i, rc), file=sys.stderr, flush=True)
    print(" ".join("%s=%d" % kv for kv in counts.items()), flush=True)
    return 0


# ---- slowloris -------------------------------------------------------------------------

def cmd_slowloris(a):
    """--count connections, each sending a request head one byte every --every s and never
    ending it; a connection the server closes is opened again (at most --count more)."""
    head = b"GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
    conns, reopened, closed, failed = {}, 0, 0, 0
    end = time.monotonic() + a.seconds

    def opened():
        try:
            s = socket.create_connection(("127.0.0.1", a.port), timeout=2)
            s.setblocking(False)
            return s
        except OSError:
            return None

    for i in range(a.count):
        s = opened()
        if s is None:
            failed += 1
        else:
            conns[s] = 0
    while time.monotonic() < end:
        for s in list(conns):
            pos = conns[s]
            try:
                s.send(head[pos % len(head): pos % len(head) + 1])
                conns[s] = pos + 1
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                closed += 1
                s.close()
                del conns[s]
                if reopened < a.count:
                    n = opened()
                    reopened += 1
                    if n is not None:
                        conns[n] = 0
        time.sleep(min(a.every, max(0.0, end - time.monotonic())))
    for s in conns:
        s.close()
    print("slowloris open_at_end=%d closed_by_server=%d reopened=%d connect_failed=%d"
          % (len(conns), closed, reopened, failed), flush=True)
    return 0


# ---- flap ------------------------------------------------------------------------------

def cmd_flap(a):
    """--count source connections over --seconds: connect, send --bytes, disconnect."""
    ok = bad = 0
    end = time.monotonic() + a.seconds
    gap = a.seconds / max(1, a.count)
    for i in range(a.count):
        if time.monotonic() > end:
            break
        try:
            s, st = open_source(a.port, "/flap%d" % (i % a.mounts), a.password, timeout=2)
            if st == 200:
                s.sendall(os.urandom(a.bytes))
                ok += 1
            else:
                bad += 1
            s.close()
        except OSError:
            bad += 1
        time.sleep(gap)
    print("flap ok=%d refused_or_failed=%d" % (ok, bad), flush=True)
    return 0


# ---- metaflood -------------------------------------------------------------------------

def cmd_metaflood(a):
    """/admin/metadata on --mount as fast as answered (at most --count), keep-alive."""
    import http.client
    auth = "Basic " + base64.b64encode(b"admin:" + a.password.encode()).decode()
    counts = {}
    end = time.monotonic() + a.seconds
    conn = None
    n = 0
    while n < a.count and time.monotonic() < end:
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=5)
            conn.request("GET", "/admin/metadata?mount=%s&mode=updinfo&song=flood%d" % (a.mount, n),
                         headers={"Authorization": auth})
            r = conn.getresponse()
            r.read()
            counts[r.status] = counts.get(r.status, 0) + 1
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            counts[0] = counts.get(0, 0) + 1
            conn = None
        n += 1
        if a.interval:
            time.sleep(a.interval)
    print("metaflood requests=%d %s" % (n, " ".join("status_%d=%d" % kv for kv in sorted(counts.items()))),
          flush=True)
    return 0


# ---- oggbad ----------------------------------------------------------------------------

def crc_table():
    t = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        t.append(r & 0xFFFFFFFF)
    return t


CRC = crc_table()


def ogg_page(payload_segments, serial, seq, granule=0, flags=0, bad_crc=False):
    """An Ogg page from a list of lacing values' data (each segment <= 255 bytes)."""
    lacing = bytes(len(s) for s in payload_segments)
    body = b"".join(payload_segments)
    hdr = struct.pack("<4sBBqIIIB", b"OggS", 0, flags, granule, serial, seq, 0, len(lacing))
    page = bytearray(hdr + lacing + body)
    crc = 0
    for b in page:
        crc = ((crc << 8) ^ CRC[((crc >> 24) ^ b) & 0xFF]) & 0xFFFFFFFF
    if bad_crc:
        crc ^= 0xDEADBEEF
    struct.pack_into("<I", page, 22, crc)
    return bytes(page)


def packet_segments(packet):
    segs = [packet[i:i + 255] for i in range(0, len(packet), 255)]
    if len(packet) % 255 == 0:
        segs.append(b"")
    return segs


def vorbis_id():
    return (b"\x01vorbis" + struct.pack("<IBIiii", 0, 2, 44100, 0, 128000, 0) + bytes([0xB8, 1]))


def vorbis_comment(n):
    vendor = b"faults"
    c = b"TITLE=endless header %d" % n
    return b"\x03vorbis" + struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", 1) + \
        struct.pack("<I", len(c)) + c + b"\x01"


def ogg_pages(kind, rnd):
    """Endless generator of pages of one pathology."""
    seq = 0
    serial = rnd.getrandbits(32)
    if kind == "badcrc":
        yield ogg_page(packet_segments(vorbis_id()), serial, 0, flags=2)
        seq = 1
        while True:
            yield ogg_page([rnd.randbytes(255)] * 4, serial, seq, granule=seq * 1024, bad_crc=True)
            seq += 1
    elif kind == "max":  # 255 segments of 255 bytes: the largest page, one continued packet
        yield ogg_page(packet_segments(vorbis_id()), serial, 0, flags=2)
        seq = 1
        while True:
            yield ogg_page([rnd.randbytes(255)] * 255, serial, seq, granule=-1, flags=1 if seq > 1 else 0)
            seq += 1
    elif kind == "bos":  # a new logical stream begins on every page
        while True:
            yield ogg_page(packet_segments(vorbis_id()), rnd.getrandbits(32), 0, flags=2)
    elif kind == "headers":  # identification, then comment headers for ever
        yield ogg_page(packet_segments(vorbis_id()), serial, 0, flags=2)
        seq = 1
        while True:
            yield ogg_page(packet_segments(vorbis_comment(seq)), serial, seq)
            seq += 1


def cmd_oggbad(a):
    """One source per pathology in --kinds on /ogg-KIND.ogg, --rate bytes/s, reconnecting when
    the server ends it (at most --reconnects times), for --seconds."""
    import threading
    rnd = random.Random(7)
    stats = {}

    def run(kind):
        st = stats.setdefault(kind, dict(connects=0, refused=0, ended_by_server=0, bytes=0))
        end = time.monotonic() + a.seconds
        while time.monotonic() < end and st["connects"] < a.reconnects:
            st["connects"] += 1
            try:
                s, status = open_source(a.port, "/ogg-%s.ogg" % kind, a.password, "application/ogg")
            except OSError:
                st["refused"] += 1
                time.sleep(0.5)
                continue
            if status != 200:
                st["refused"] += 1
                s.close()
                time.sleep(0.5)
                continue
            try:
                for page in ogg_pages(kind, random.Random(rnd.random())):
                    if time.monotonic() > end:
                        break
                    s.sendall(page)
                    st["bytes"] += len(page)
                    time.sleep(len(page) / a.rate)
            except OSError:
                st["ended_by_server"] += 1
            s.close()

    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in a.kinds.split(",")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(a.seconds + 10)
    print(" ".join("%s:%s" % (k, ",".join("%s=%d" % kv for kv in v.items())) for k, v in stats.items()),
          flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--password", default="hackme")
    ap.add_argument("--seconds", type=float, default=60)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("rawsource")
    p.add_argument("--mount", required=True)
    p.add_argument("--rate", type=float, default=16000)
    p.add_argument("--block", type=int, default=1600)
    p.add_argument("--kill-file", default="")
    p.add_argument("--mid-file", default="")
    p = sub.add_parser("startstop")
    p.add_argument("--bin", required=True)
    p.add_argument("--conf", required=True)
    p.add_argument("--cycles", type=int, default=1000)
    p.add_argument("--listeners", type=int, default=3)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("slowloris")
    p.add_argument("--count", type=int, default=5000)
    p.add_argument("--every", type=float, default=2.0)
    p = sub.add_parser("flap")
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--mounts", type=int, default=20)
    p.add_argument("--bytes", type=int, default=2048)
    p = sub.add_parser("metaflood")
    p.add_argument("--mount", required=True)
    p.add_argument("--count", type=int, default=100000)
    p.add_argument("--interval", type=float, default=0)
    p = sub.add_parser("oggbad")
    p.add_argument("--kinds", default="badcrc,max,bos,headers")
    p.add_argument("--rate", type=float, default=64000)
    p.add_argument("--reconnects", type=int, default=50)
    a = ap.parse_args()
    return globals()["cmd_" + a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
