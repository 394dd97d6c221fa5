#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""schedsample.py: what the scheduler did for some processes, and what else ran on the machine.

Every --every s (default 0.1) one line per thread of each watched process (the pids in
--pid-file, re-read each second, so processes started later are picked up), from
/proc/PID/task/TID/schedstat: time on a CPU and time runnable but waiting for one (ns, totals
since the thread began), and one line of the machine's /proc/stat cpu columns. Every second the
load average and the processes that used the most CPU over that second (any user's). CSV lines,
times in CLOCK_MONOTONIC us (the clock of swarm --trace):
  s,T,PID,TID,COMM,RUN_NS,WAIT_NS       a watched thread
  c,T,USER,NICE,SYSTEM,IDLE,IOWAIT,IRQ,SOFTIRQ,STEAL   machine (clock ticks, totals)
  l,T,LOAD1,RUNNABLE                    /proc/loadavg
  p,T,PID,COMM,TICKS                    a top process over the last second (clock ticks used)
Runs until SIGTERM/SIGINT. Reads /proc only.
"""
import argparse
import os
import signal
import time


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def proc_ticks():
    """{pid: (comm, utime+stime)} of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        s = read(f"/proc/{d}/stat")
        if not s:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")].replace(",", "_")
        f = s[s.rindex(")") + 2:].split()
        out[int(d)] = (comm, int(f[11]) + int(f[12]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid-file", required=True, help="pids to watch, one a line")
    ap.add_argument("--out", required=True)
    ap.add_argument("--every", type=float, default=0.1)
    ap.add_argument("--top", type=int, default=6, help="processes listed each second")
    a = ap.parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    out = open(a.out, "w", buffering=1 << 16)
    pids, last_sec, prev = [], 0.0, proc_ticks()
    nxt = time.monotonic()
    while not stop:
        now = time.monotonic()
        t = int(now * 1e6)
        if now - last_sec >= 1:
            txt = read(a.pid_file) or ""
            pids = [int(x) for x in txt.split() if x.isdigit()]
            cur = proc_ticks()
            used = sorted(((v[1] - prev[p][1], p, v[0]) for p, v in cur.items() if p in prev),
                          reverse=True)
            for ticks, p, comm in used[:a.top]:
                if ticks > 0:
                    out.write(f"p,{t},{p},{comm},{ticks}\n")
            prev = cur
            la = (read("/proc/loadavg") or "0 0 0 0/0").split()
            out.write(f"l,{t},{la[0]},{la[3].split('/')[0]}\n")
            last_sec = now
        cpu = (read("/proc/stat") or "cpu").splitlines()[0].split()[1:9]
        out.write(f"c,{t}," + ",".join(cpu) + "\n")
        for pid in pids:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                ss = read(f"/proc/{pid}/task/{tid}/schedstat")
                comm = (read(f"/proc/{pid}/task/{tid}/comm") or "?").strip().replace(",", "_")
                if ss:
                    run_ns, wait_ns = ss.split()[:2]
                    out.write(f"s,{t},{pid},{tid},{comm},{run_ns},{wait_ns}\n")
        nxt += a.every
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            nxt = time.monotonic()
    out.close()


if __name__ == "__main__":
    main()
