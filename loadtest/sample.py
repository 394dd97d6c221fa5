#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sample.py: once a second, one CSV row about a server process under load.

It owns only the CSV it writes. Per row: the server's VSZ, RSS, CPU (utime+stime from
/proc/PID/stat), threads and fds; machine-wide us/sy/wa/id (the vmstat columns, from /proc/stat
deltas); packets and bytes per second on one interface (/proc/net/dev); the load generators' CPU;
and the latest status line of each swarm (counts summed, rates and latency combined).
It does not start or stop anything; it ends when the server exits, at --duration, or on SIGTERM.
"""
import argparse
import os
import re
import signal
import sys
import time
import urllib.request
import base64

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024

SWARM_SUM = ["listeners", "connected", "pending", "bytes", "starving", "eligible", "server_closed",
             "conn_err", "rejected", "sources", "sources_up", "src_err", "src_bytes", "lat_n",
             "starving_read"]  # starving: on bytes delivered; starving_read: on bytes read
SWARM_MIN = ["rate_min_kbps"]
# several probes: report the worst; arr_*: the markers at their arrival in the socket
SWARM_MAX = ["lat_p50_ms", "lat_p99_ms", "lat_max_ms", "arr_p50_ms", "arr_p99_ms"]
SWARM_CPU = ["swarm_cpu_pct"]
SWARM_COLS = SWARM_SUM + SWARM_MIN + SWARM_MAX + SWARM_CPU
# the busiest single swarm process: a generator runs out when one of them nears a whole core
EXTRA_COLS = ["sw_swarm_cpu_max"]

COLUMNS = (["time", "t", "alive", "vsz_kb", "rss_kb", "cpu_s", "cpu_pct", "threads", "fds",
            "us", "sy", "wa", "id", "rx_pps", "tx_pps", "rx_Bps", "tx_Bps", "gen_cpu_pct",
            "ramp_sources", "srv_sources", "srv_listeners"] + ["sw_" + c for c in SWARM_COLS] +
           EXTRA_COLS)


def proc_stat(pid):
    """(cpu seconds, vsz kB, rss kB, threads) of pid, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): utime=14, stime=15, threads=20, vsize=23, rss=24
    utime, stime = int(fields[11]), int(fields[12])
    threads, vsize, rss = int(fields[17]), int(fields[20]), int(fields[21])
    return (utime + stime) / CLK_TCK, vsize // 1024, rss * PAGE_KB, threads


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return ""


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return {"us": user + nice, "sy": system + irq + softirq, "wa": iowait, "id": idle,
            "all": sum(v)}


def net_dev(iface):
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == iface:
                v = rest.split()
                return {"rx_B": int(v[0]), "rx_p": int(v[1]), "tx_B": int(v[8]), "tx_p": int(v[9])}
    return None


def last_status(path):
    """Latest 't=...' line of a swarm status file as a dict of floats ({} if none yet)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 8192))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return {}
    for line in reversed(lines):
        if line.startswith("t=") and line.endswith(tuple("0123456789")):
            out = {}
            for kv in line.split():
                k, _, v = kv.partition("=")
                try:
                    out[k] = float(v)
                except ValueError:
                    pass
            return out
    return {}


def swarm_columns(paths):
    lines = [s for s in (last_status(p) for p in paths) if s]
    row = {}
    if not lines:
        return row
    for k in SWARM_SUM + SWARM_CPU:
        row["sw_" + k] = sum(s.get(k, 0) for s in lines)
    for k in SWARM_MIN:
        vals = [s[k] for s in lines if s.get(k, -1) >= 0]
        row["sw_" + k] = min(vals) if vals else ""
    for k in SWARM_MAX:
        vals = [s[k] for s in lines if s.get(k, -1) >= 0]
        row["sw_" + k] = max(vals) if vals else ""
    row["sw_swarm_cpu_max"] = max(s.get("swarm_cpu_pct", 0) for s in lines)
    return row


class StatsPoller:
    """Global 'sources' and 'listeners' gauges from /admin/stats, every `every` seconds."""

    def __init__(self, url, user, password, every):
        self.url, self.every, self.next, self.last = url, every, 0.0, {}
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self.headers = {"Authorization": "Basic " + token}

    def poll(self, now):
        if not self.url or now < self.next:
            return self.last
        self.next = now + self.every
        try:
            req = urllib.request.Request(self.url, headers=self.headers)
            with urllib.request.urlopen(req, timeout=2) as r:
                head = r.read(1 << 20).decode(errors="replace")
            # global gauges precede the first <source>
            head = head.split("<source ", 1)[0]
            for tag in ("sources", "listeners"):
                m = re.search(rf"<{tag}>(\d+)</{tag}>", head)
                if m:
                    self.last["srv_" + tag] = int(m.group(1))
        except (OSError, ValueError):
            pass
        return self.last


def read_int_file(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return ""


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pid", type=int, required=True, help="server process id")
    ap.add_argument("--out", required=True, help="CSV file to write")
    ap.add_argument("--swarm-status", default="", help="comma list of swarm status files")
    ap.add_argument("--gen-pids", default="", help="comma list of load generator pids")
    ap.add_argument("--gen-pid-file", default="", help="file with load generator pids, one a line")
    ap.add_argument("--iface", default="lo")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--duration", type=float, default=0, help="seconds, 0 = until the server exits")
    ap.add_argument("--sources-file", default="", help="file holding the ramp's source count")
    ap.add_argument("--stats-url", default="", help="e.g. http://127.0.0.1:8000/admin/stats")
    ap.add_argument("--stats-user", default="admin")
    ap.add_argument("--stats-password", default="hackme")
    ap.add_argument("--stats-every", type=float, default=5.0)
    return ap.parse_args()


def gen_pids(args):
    pids = [int(p) for p in args.gen_pids.split(",") if p.strip()]
    if args.gen_pid_file:
        try:
            with open(args.gen_pid_file) as f:
                pids += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            pass
    return pids


def sample_row(args, prev, poller, t0):
    now = time.time()
    row = {"time": f"{now:.3f}", "t": f"{now - t0:.3f}"}
    st = proc_stat(args.pid)
    row["alive"] = 1 if st else 0
    if st:
        cpu, vsz, rss, threads = st
        row.update(vsz_kb=vsz, rss_kb=rss, cpu_s=f"{cpu:.2f}", threads=threads, fds=fd_count(args.pid))
        if "cpu" in prev:
            row["cpu_pct"] = f"{100 * (cpu - prev['cpu']) / (now - prev['now']):.2f}"
        prev["cpu"] = cpu
    ct = cpu_times()
    if "ct" in prev:
        total = max(1, ct["all"] - prev["ct"]["all"])
        for k in ("us", "sy", "wa", "id"):
            row[k] = f"{100 * (ct[k] - prev['ct'][k]) / total:.1f}"
    prev["ct"] = ct
    nd = net_dev(args.iface)
    if nd and "nd" in prev:
        dt = now - prev["now"]
        row["rx_pps"] = f"{(nd['rx_p'] - prev['nd']['rx_p']) / dt:.0f}"
        row["tx_pps"] = f"{(nd['tx_p'] - prev['nd']['tx_p']) / dt:.0f}"
        row["rx_Bps"] = f"{(nd['rx_B'] - prev['nd']['rx_B']) / dt:.0f}"
        row["tx_Bps"] = f"{(nd['tx_B'] - prev['nd']['tx_B']) / dt:.0f}"
    prev["nd"] = nd
    gen = 0.0
    for pid in gen_pids(args):
        s = proc_stat(pid)
        if s:
            if pid in prev.get("gen", {}):
                gen += 100 * (s[0] - prev["gen"][pid]) / (now - prev["now"])
            prev.setdefault("gen", {})[pid] = s[0]
    row["gen_cpu_pct"] = f"{gen:.2f}"
    if args.sources_file:
        row["ramp_sources"] = read_int_file(args.sources_file)
    row.update(poller.poll(now))
    row.update(swarm_columns([p for p in args.swarm_status.split(",") if p]))
    prev["now"] = now
    return row


def main():
    args = parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    poller = StatsPoller(args.stats_url, args.stats_user, args.stats_password, args.stats_every)
    prev, t0 = {}, time.time()
    with open(args.out, "w") as out:
        out.write(",".join(COLUMNS) + "\n")
        next_at = time.time()
        while not stop:
            row = sample_row(args, prev, poller, t0)
            out.write(",".join(str(row.get(c, "")) for c in COLUMNS) + "\n")
            out.flush()
            if not row["alive"] or (args.duration and time.time() - t0 >= args.duration):
                break
            next_at += args.interval
            time.sleep(max(0.0, next_at - time.time()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
