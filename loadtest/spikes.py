#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""spikes.py: reads a spikes.sh directory and says, for each second in which listeners were
judged starving, whether the bytes left the server late, were read late, or both processes
stood still together. Markdown on stdout.

  spikes.py DIR [SERVER ...]          (SERVER: a sub-directory, default every one with a trace)
  spikes.py --timeline DIR/SERVER/lowat.trace IDX T0 T1   (one listener's reads, in s)

Per server and swarm (lowat: woken for half a second of stream; nolowat: for every byte):
the seconds with starving listeners over the hold (all listeners judged), per minute, the most
at once, and the same count judged on bytes delivered (read plus unread in the socket, --inq).
Per spike second: of the traced sample starving then, how many were short of bytes delivered
(the server's writes or the kernel's delivery late) and how many only of bytes read (the bytes
waited in the socket); the longest gap between two reads of those listeners; the swarm's
longest loop turn and longest time between two returns of epoll_wait over the window; the most
any server or swarm thread waited runnable for a CPU in one 100 ms sample; the machine's
lowest idle % in the window and its busiest other processes.
"""
import collections
import os
import sys

CLK_TCK = os.sysconf("SC_CLK_TCK")

WINDOW = 4.0
EXPECT = (0.9 * 128000 / 8 * WINDOW - 8192) / WINDOW  # swarm's rule at 128 kbit/s, 4 s, 8 KB slack


def status_lines(path):
    """Status lines as dicts, with 'read' and 'deliv': starving judged on bytes read, delivered."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("t="):
                    s = {k: float(v) for k, _, v in (kv.partition("=") for kv in line.split())}
                    if "starving_read" in s:
                        s["read"], s["deliv"] = s["starving_read"], s["starving"]
                    else:  # swarm before the delivered rule: --inq added starving_inq
                        s["read"], s["deliv"] = s["starving"], s.get("starving_inq", 0)
                    out.append(s)
    except OSError:
        pass
    return out


class Trace:
    """A swarm --trace file: reads per listener, loop turns, tick samples (times in s, absolute)."""

    def __init__(self, path):
        self.t0 = 0.0
        self.reads = collections.defaultdict(list)  # idx -> [(t, n)]
        self.turns = []                             # (t_return, wait_s, pass_s, nev)
        self.ticks = collections.defaultdict(list)  # idx -> [(t, bytes, inq)]
        with open(path) as f:
            for line in f:
                p = line.rstrip("\n").split(",")
                if len(p) != {"h": 2, "r": 4, "e": 5, "k": 5}.get(p[0]) or not line.endswith("\n"):
                    continue  # a line cut short by the end of the run
                if p[0] == "h":
                    self.t0 = int(p[1]) / 1e6
                    continue
                t = self.t0 + int(p[1]) / 1e6
                if p[0] == "r":
                    self.reads[int(p[2])].append((t, int(p[3])))
                elif p[0] == "e":
                    self.turns.append((t, int(p[2]) / 1e6, int(p[3]) / 1e6, int(p[4])))
                elif p[0] == "k":
                    self.ticks[int(p[2])].append((t, int(p[3]), int(p[4])))

    def starving_at(self, t):
        """Traced listeners judged at the tick nearest t: (short of read bytes, short of delivered)."""
        read_short, deliv_short = [], []
        for idx, ks in self.ticks.items():
            j = min(range(len(ks)), key=lambda i: abs(ks[i][0] - t))
            if abs(ks[j][0] - t) > 0.5 or j < WINDOW:
                continue
            a, b = ks[j - int(WINDOW)], ks[j]
            dt = b[0] - a[0]
            if (b[1] - a[1]) / dt < EXPECT:
                read_short.append(idx)
            if (b[1] + b[2] - a[1] - a[2]) / dt < EXPECT:
                deliv_short.append(idx)
        return read_short, deliv_short

    def longest_read_gap(self, idxs, t_from, t_to):
        best = 0.0
        for idx in idxs:
            ts = [t for t, _ in self.reads[idx] if t_from <= t <= t_to]
            ts = [t_from] + ts + [t_to]
            best = max(best, max(b - a for a, b in zip(ts, ts[1:])))
        return best

    def loop(self, t_from, t_to):
        """Longest pass over ready sockets, longest time awake (out of epoll_wait) between two
        returns of it: a stalled loop (or one kept from a CPU) shows here."""
        ts = [x for x in self.turns if t_from <= x[0] <= t_to]
        if not ts:
            return 0.0, t_to - t_from
        longest_pass = max(x[2] for x in ts)
        awake = max((b[0] - b[1] - a[0] for a, b in zip(ts, ts[1:])), default=0.0)
        return longest_pass, max(awake, longest_pass)


def sched(path):
    """Per-thread wait increase per sample, machine idle % per second, top processes per second."""
    waits = collections.defaultdict(list)  # (pid, comm) -> [(t, wait_delta_s, run_delta_s)]
    last = {}
    cpu, idle, top = None, [], collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split(",")
            t = int(p[1]) / 1e6
            if p[0] == "s":
                key = (p[2], p[3])
                run, wait = int(p[5]), int(p[6])
                if key in last:
                    waits[(p[2], p[4])].append((t, (wait - last[key][1]) / 1e9, (run - last[key][0]) / 1e9))
                last[key] = (run, wait)
            elif p[0] == "c":
                v = [int(x) for x in p[2:]]
                if cpu and t - cpu[0] >= 0.95:
                    tot = sum(v) - sum(cpu[1])
                    if tot > 0:
                        idle.append((t, 100.0 * (v[3] + v[4] - cpu[1][3] - cpu[1][4]) / tot))
                    cpu = (t, v)
                elif not cpu:
                    cpu = (t, v)
            elif p[0] == "p":
                top[round(t)].append((int(p[4]), p[3], p[2]))
    return waits, idle, top


def fmt_top(top, t_from, t_to, mine):
    """The busiest other processes over [t_from, t_to], % of one core."""
    used = collections.Counter()
    secs = [sec for sec in top if t_from <= sec <= t_to + 1]
    for sec in secs:
        for ticks, comm, pid in top[sec]:
            if pid not in mine:
                used[comm] += ticks
    n = max(len(secs), 1) * CLK_TCK / 100
    return ", ".join(f"{c} {v / n:.0f}" for c, v in used.most_common(3)) or "-"


def waited(waits, pids, t_from, t_to, server, col=1):
    """Longest time one thread of the server (or of the swarms) was runnable without a CPU
    (col 2: the most one ran)."""
    best = 0.0
    for (pid, _comm), rows in waits.items():
        if (pid in pids) == server:
            best = max(best, sum(r[col] for r in rows if t_from < r[0] <= t_to))
    return best


def ran(waits, pid, t_from, t_to):
    """CPU time all threads of pid used."""
    return sum(r[2] for (p, _c), rows in waits.items() if p == pid for r in rows if t_from < r[0] <= t_to)


def server_report(d, name):
    print(f"\n### {name}\n")
    mine = open(os.path.join(d, "pids")).read().split()
    server_pid = mine[0]
    waits, idle, top = sched(os.path.join(d, "sched.csv"))
    idle_all = [v for _, v in idle]
    print(f"machine idle over the run: median {sorted(idle_all)[len(idle_all) // 2]:.0f} %, "
          f"lowest {min(idle_all):.0f} %\n" if idle_all else "")
    print("| swarm | judged seconds | seconds with starving (per minute) | most at once | "
          "seconds with starving on bytes delivered (per minute) | most at once (delivered) |")
    print("|---|---|---|---|---|---|")
    spikes = []
    traces = {}
    for sw in ("lowat", "nolowat"):
        st = status_lines(os.path.join(d, sw + ".status"))
        if not st:
            continue
        half = max(s["listeners"] for s in st)
        held = [s for s in st if s["eligible"] == half and s["connected"] == half]
        if not held:
            continue
        sp = [s for s in held if s["read"] > 0]
        spi = [s for s in held if s["deliv"] > 0]
        mins = len(held) / 60
        print(f"| {sw} | {len(held)} | {len(sp)} ({len(sp) / mins:.1f}) | "
              f"{max((s['read'] for s in held), default=0):.0f} | {len(spi)} ({len(spi) / mins:.1f}) | "
              f"{max((s['deliv'] for s in held), default=0):.0f} |")
        tr = Trace(os.path.join(d, sw + ".trace"))
        traces[sw] = tr
        for s in held:
            if s["read"] > 0 or s["deliv"] > 0:
                spikes.append((tr.t0 + s["t"], sw, s))
    # what the scheduler did in the windows with and without starving listeners
    rows = {True: [], False: []}
    for sw, tr in traces.items():
        st = status_lines(os.path.join(d, sw + ".status"))
        half = max(x["listeners"] for x in st)
        for s in st:
            t = tr.t0 + s["t"]
            if s["eligible"] == half:
                hit = s["read"] > 0 or s["deliv"] > 0
                rows[hit].append((waited(waits, (server_pid,), t - 1, t, True),
                                  waited(waits, (server_pid,), t - 1, t, False),
                                  min((v for tt, v in idle if t - 1 <= tt <= t + 1), default=-1),
                                  ran(waits, server_pid, t - 1, t)))
    print("\n| seconds | count | one server thread's wait for a CPU in the last second: median / max "
          "| the swarms': median / max | idle %: median | server CPU s in the last second: median |")
    print("|---|---|---|---|---|---|")
    for hit in (True, False):
        r = rows[hit]
        if r:
            med = lambda i: sorted(x[i] for x in r)[len(r) // 2]
            print(f"| {'with starving' if hit else 'without'} | {len(r)} | {med(0):.2f} / "
                  f"{max(x[0] for x in r):.2f} s | {med(1):.2f} / {max(x[1] for x in r):.2f} s | {med(2):.0f} | {med(3):.2f} |")
    if not spikes:
        print("\nno starving second.")
        return
    print("\n| when (s into run) | swarm | starving on read (delivered) | traced: short of read / of "
          "delivered | longest read gap | swarm's longest pass / time awake | one thread's wait for a CPU "
          "over the window: server / swarms | lowest idle % | busiest others (% of a core) | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    t_start = min(tr.t0 for tr in traces.values())
    for t, sw, s in sorted(spikes, key=lambda x: x[0]):
        tr = traces[sw]
        rs, ds = tr.starving_at(t)
        gap = tr.longest_read_gap(ds or rs, t - WINDOW, t)
        pass_s, epoll_gap = tr.loop(t - WINDOW, t)
        srv_w = waited(waits, (server_pid,), t - WINDOW, t, True)
        sw_w = waited(waits, (server_pid,), t - WINDOW, t, False)
        idl = min((v for tt, v in idle if t - WINDOW <= tt <= t + 1), default=-1)
        if rs and not ds:
            verdict = "read late: the bytes were in the socket"
        elif ds and max(srv_w, sw_w) < 0.2 and epoll_gap < 0.2:
            verdict = "delivered late, neither process kept from a CPU"
        elif ds:
            verdict = "delivered late, both kept from a CPU" if min(srv_w, sw_w) >= 0.2 else \
                "delivered late, the " + ("server" if srv_w >= 0.2 else "swarm") + " kept from a CPU"
        else:
            verdict = "not in the traced sample"
        print(f"| {t - t_start:.1f} | {sw} | {s['read']:.0f} ({s['deliv']:.0f}) | "
              f"{len(rs)} / {len(ds)} | {gap:.2f} s | {pass_s * 1000:.1f} / {epoll_gap * 1000:.0f} ms | "
              f"{srv_w:.2f} / {sw_w:.2f} s | {idl:.0f} | {fmt_top(top, t - WINDOW, t, mine)} | "
              f"{verdict} |")


def timeline(path, idx, a, b):
    tr = Trace(path)
    t_from, t_to = tr.t0 + a, tr.t0 + b
    print("t (s) | bytes | kind")
    rows = [(t, n, "read") for t, n in tr.reads[idx] if t_from <= t <= t_to]
    rows += [(t, by, f"tick: read total, {q} unread") for t, by, q in tr.ticks[idx] if t_from <= t <= t_to]
    for t, n, kind in sorted(rows):
        print(f"{t - tr.t0:.3f} | {n} | {kind}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--timeline":
        timeline(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
        return
    d = sys.argv[1]
    names = sys.argv[2:] or sorted(n for n in os.listdir(d) if os.path.exists(os.path.join(d, n, "sched.csv")))
    print(f"## Starving spikes ({d})")
    for n in names:
        if os.path.exists(os.path.join(d, n, "sched.csv")):
            server_report(os.path.join(d, n), n)


if __name__ == "__main__":
    main()
