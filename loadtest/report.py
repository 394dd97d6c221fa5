#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""report.py: turns one compare.sh output directory into report.md (stdout).

Reads SERVER-sources.csv, SERVER-listeners.csv (sample.py) and SERVER-flash/swarm.status for each
server and computes the headline figures: KB per source (RSS, VSZ; slope of memory over the
source count), server CPU % per 1000 listeners (slope over the ramp's plateaus), the largest
listener count held with no starving listener and what ran out first, latency p50/p99 near 1000
listeners, near 10000 and at the top, bytes sent per CPU-second, and flash-crowd admission. Then
a ratio table for each Rimecast variant (rimecast: the default write window; rimecast-ll: window 0)
against icecast2 and the floor, and the issue's targets with a verdict each. It reads only; it
writes nothing but stdout.
"""
import argparse
import csv
import datetime
import os
import platform
import statistics
import subprocess


def load(path):
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({k: (float(v) if v not in ("", None) else None) for k, v in r.items()})
    return rows


def slope(xs, ys):
    """Least-squares slope of y over x, or None with fewer than 2 distinct x."""
    pts = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = statistics.fmean(x for x, _ in pts)
    my = statistics.fmean(y for _, y in pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def sources_figures(rows):
    def count(r):
        for k in ("srv_sources", "sw_sources_up", "ramp_sources"):
            if r.get(k):
                return r[k]
        return None
    rows = [r for r in rows if r.get("alive") and r.get("rss_kb")]
    xs = [count(r) for r in rows]
    if not rows or not any(xs):
        return {}
    top = max(x for x in xs if x is not None)
    base = [r for r, x in zip(rows, xs) if not x][:5]
    end = [r for r, x in zip(rows, xs) if x == top][-3:]

    def rss_per_source():
        """(end of the hold at the top - idle baseline) / sources: includes the burst buffers,
        which fill while sources stream; the slope over the ramp is the fallback."""
        if base and end:
            return (statistics.fmean(r["rss_kb"] for r in end) -
                    statistics.fmean(r["rss_kb"] for r in base)) / top
        return slope(xs, [r["rss_kb"] for r in rows])
    # VSZ: the marginal cost, the slope over sources > 0 (the first threads reserve malloc arenas)
    loaded = [(x, r["vsz_kb"]) for r, x in zip(rows, xs) if x]
    return {"kb_rss_per_source": rss_per_source(),
            "kb_vsz_per_source": slope([x for x, _ in loaded], [v for _, v in loaded]),
            "sources_max": top,
            "src_err": max((r.get("sw_src_err") or 0) for r in rows),
            "threads_max": max(r["threads"] for r in rows if r.get("threads"))}


def plateaus(rows, settle=3):
    """Groups rows by the number of listeners launched; drops the first `settle` rows of each."""
    groups, cur, key = [], [], None
    for r in rows:
        k = r.get("sw_listeners")
        if k is None:
            continue
        if k != key:
            if cur:
                groups.append(cur)
            cur, key = [], k
        cur.append(r)
    if cur:
        groups.append(cur)
    out = []
    for g in groups:
        steady = [r for r in g[settle:] if not r.get("sw_pending") and r.get("cpu_pct") is not None]
        if len(steady) < 2:
            continue
        med = lambda k: statistics.median([r[k] for r in steady if r.get(k) is not None] or [float("nan")])
        out.append({"connected": statistics.fmean(r["sw_connected"] for r in steady),
                    "cpu": statistics.fmean(r["cpu_pct"] for r in steady),
                    "starving": max((r.get("sw_starving") or 0) for r in steady),
                    "closed": (steady[-1].get("sw_server_closed") or 0) - (g[0].get("sw_server_closed") or 0),
                    "lat_p50": med("sw_lat_p50_ms"), "lat_p99": med("sw_lat_p99_ms"),
                    "arr_p50": med("sw_arr_p50_ms"), "arr_p99": med("sw_arr_p99_ms"),
                    "swarm_cpu": max((r.get("sw_swarm_cpu_pct") or 0) for r in steady),
                    "swarm_cpu_max": max((r.get("sw_swarm_cpu_max") or r.get("sw_swarm_cpu_pct") or 0)
                                         for r in steady),
                    "fds": med("fds"),
                    "idle": statistics.fmean(r["id"] for r in steady if r.get("id") is not None),
                    "tx_pps": statistics.fmean(r["tx_pps"] for r in steady if r.get("tx_pps") is not None)})
    return out


def who_ran_out(p):
    if p["idle"] < 5:
        return f"the machine (idle {p['idle']:.0f} %, server {p['cpu']:.0f} %, swarm {p['swarm_cpu']:.0f} %)"
    if p["swarm_cpu_max"] >= 90:
        return f"the load generator (busiest swarm {p['swarm_cpu_max']:.0f} % of a core)"
    return f"the server (server {p['cpu']:.0f} % of a core, swarm {p['swarm_cpu']:.0f} %)"


def near(ps, n, tol=0.2):
    """The plateau nearest n listeners, or None if none is within tol * n."""
    p = min(ps, key=lambda p: abs(p["connected"] - n))
    return p if abs(p["connected"] - n) <= tol * n else None


def listener_figures(rows):
    ps = [p for p in plateaus(rows) if p["connected"] > 0]
    if not ps:
        return {}
    f = {"plateaus": ps}
    s = slope([p["connected"] for p in ps], [p["cpu"] for p in ps])
    f["cpu_per_1000"] = s * 1000 if s is not None else None
    ok = [p for p in ps if p["starving"] == 0 and p["closed"] == 0]
    f["held_no_starving"] = max((p["connected"] for p in ok), default=0)
    bad = [p for p in ps if p["starving"] > 0 or p["closed"] > 0]
    f["first_starving"] = bad[0]["connected"] if bad else None
    f["ran_out"] = who_ran_out(bad[0]) if bad else "nothing (no starving listener)"
    for n in (1000, 5000, 10000, 15000):
        p = near(ps, n)
        if p:
            f[f"lat_{n}"] = (p["connected"], p["lat_p50"], p["lat_p99"])
            f[f"cpu_{n}"] = (p["connected"], p["cpu"], p["starving"] + p["closed"])
    f["lat_top"] = (ps[-1]["connected"], ps[-1]["lat_p50"], ps[-1]["lat_p99"])
    f["cpu_top"] = (ps[-1]["connected"], ps[-1]["cpu"])
    alive = [r for r in rows if r.get("cpu_s") is not None and r.get("sw_bytes") is not None]
    if len(alive) > 1 and alive[-1]["cpu_s"] > alive[0]["cpu_s"]:
        f["mb_per_cpu_s"] = (alive[-1]["sw_bytes"] - alive[0]["sw_bytes"]) / 1e6 / \
            (alive[-1]["cpu_s"] - alive[0]["cpu_s"])
    return f


def flash_figures(path):
    if not os.path.exists(path):
        return {}
    lines = [dict(kv.split("=", 1) for kv in l.split()[1 if l.startswith("final") else 0:])
             for l in open(path) if l.startswith(("t=", "final"))]
    final = next((l for l in lines if "all_connected_s" in l), None)
    at2 = [l for l in lines if "connected" in l and float(l["t"]) <= 2.05]
    f = {"admitted_2s": int(at2[-1]["connected"]) if at2 else 0}
    if final:
        f["all_s"] = float(final["all_connected_s"])
        f["n"] = int(final["listeners"])
        f["errors"] = int(final["conn_err"]) + int(final["rejected"])
    f["max_connected"] = max((int(l["connected"]) for l in lines if "connected" in l), default=0)
    return f


def fmt(v, spec="{:.1f}"):
    return "n/a" if v is None or v != v else spec.format(v)


def ratio(a, b):
    return "n/a" if a is None or b is None or b == 0 or a != a or b != b else f"{a / b:.2f}"


def machine():
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} x {model}, {mem:.0f} GiB, Linux {platform.release()}"


def commit(d, run_dir):
    """The commit recorded when the run started (compare.sh writes it), else HEAD now."""
    try:
        with open(os.path.join(run_dir, "commit")) as f:
            return f.read().strip()
    except OSError:
        pass
    try:
        return subprocess.run(["git", "-C", d, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=5).stdout.strip() or "uncommitted"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def lat_cell(f, key):
    v = f.get(key)
    if not v:
        return "n/a"
    return f"{fmt(v[1], '{:.2f}')} / {fmt(v[2], '{:.2f}')} ({v[0]:.0f})"


def cpu_cell(f, key):
    v = f.get(key)
    return "n/a" if not v else f"{v[1]:.1f} ({v[0]:.0f})"


def flash_cell(f):
    if not f:
        return "n/a"
    if f.get("all_s", -1) >= 0:
        return fmt(f.get("all_s"), "{:.2f}")
    return f"never ({f.get('max_connected', 0)} max)"


def figures_table(names, S, L, F, flash):
    rows = [
        ("RSS per source (KB, top after hold - idle)", lambda n: fmt(S[n].get("kb_rss_per_source"))),
        ("VSZ per source (KB, slope over the ramp)", lambda n: fmt(S[n].get("kb_vsz_per_source"))),
        ("sources held (max)", lambda n: fmt(S[n].get("sources_max"), "{:.0f}")),
        ("server threads (max, source ramp)", lambda n: fmt(S[n].get("threads_max"), "{:.0f}")),
        ("server CPU % of a core per 1000 listeners", lambda n: fmt(L[n].get("cpu_per_1000"), "{:.2f}")),
        ("server CPU % near 1000 / 10000 / 15000 listeners", lambda n: " / ".join(
            cpu_cell(L[n], f"cpu_{k}") for k in (1000, 10000, 15000))),
        ("server CPU % at the top (listeners)", lambda n: "n/a" if "cpu_top" not in L[n] else
         f"{L[n]['cpu_top'][1]:.1f} ({L[n]['cpu_top'][0]:.0f})"),
        ("largest count with no starving listener", lambda n: fmt(L[n].get("held_no_starving"), "{:.0f}")),
        ("first count with a starving listener", lambda n: fmt(L[n].get("first_starving"), "{:.0f}")),
        ("what ran out first", lambda n: L[n].get("ran_out", "n/a")),
        ("latency p50 / p99 ms near 1000 listeners", lambda n: lat_cell(L[n], "lat_1000")),
        ("latency p50 / p99 ms near 10000 listeners", lambda n: lat_cell(L[n], "lat_10000")),
        ("latency p50 / p99 ms at the top", lambda n: lat_cell(L[n], "lat_top")),
        ("MB sent per server CPU-second", lambda n: fmt(L[n].get("mb_per_cpu_s"))),
        (f"flash crowd: admitted within 2 s (of {flash})", lambda n: fmt(F[n].get("admitted_2s"), "{:.0f}")),
        ("flash crowd: time until all admitted (s)", lambda n: flash_cell(F[n])),
    ]
    print("| figure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, get in rows:
        print(f"| {label} | " + " | ".join(get(n) for n in names) + " |")


def floor_of(r, names):
    """The floor with rimecast's write pattern: floor-ll (one source block a write) for rimecast-ll."""
    return "floor-ll" if r == "rimecast-ll" and "floor-ll" in names else "floor"


def ratio_table(names, S, L, F):
    """One column per Rimecast variant; memory figures are the binary's (from 'rimecast')."""
    variants = [n for n in ("rimecast", "rimecast-ll") if n in names and L.get(n) is not None]
    i = "icecast2" if "icecast2" in names else None
    if not variants or not i:
        return
    mem = S.get("rimecast", {})
    print("\n## Ratios (rimecast variant / icecast2 unless said)\n")
    print("| figure | " + " | ".join(variants) + " | target |")
    print("|---|" + "---|" * len(variants) + "---|")
    rows = [
        ("VSZ per source", lambda r: ratio(mem.get("kb_vsz_per_source"), S[i].get("kb_vsz_per_source")), "<= 0.20"),
        ("RSS per source", lambda r: ratio(mem.get("kb_rss_per_source"), S[i].get("kb_rss_per_source")), ""),
        ("CPU per listener", lambda r: ratio(L[r].get("cpu_per_1000"), L[i].get("cpu_per_1000")), "<= 0.25"),
    ]
    if "floor" in names:
        rows.append(("CPU per listener / floor (4096-byte writes)", lambda r: ratio(
            L[r].get("cpu_per_1000"), L["floor"].get("cpu_per_1000")), "<= 1.5"))
    if "floor-ll" in names:
        rows.append(("CPU per listener / floor-ll (one source block a write)", lambda r: ratio(
            L[r].get("cpu_per_1000"), L["floor-ll"].get("cpu_per_1000")), ""))
    rows += [
        ("listeners held with no starving", lambda r: ratio(
            L[r].get("held_no_starving"), L[i].get("held_no_starving")), ">= 1"),
        ("latency p99 near 1000 listeners", lambda r: ratio(
            (L[r].get("lat_1000") or [0, 0, None])[2], (L[i].get("lat_1000") or [0, 0, None])[2]), "<= 1"),
        ("bytes per CPU-second", lambda r: ratio(L[r].get("mb_per_cpu_s"), L[i].get("mb_per_cpu_s")), ">= 4"),
        ("flash crowd: time until all admitted", lambda r: ratio(
            F[r].get("all_s") if F[r].get("all_s", -1) >= 0 else None,
            F[i].get("all_s") if F[i].get("all_s", -1) >= 0 else None), ""),
    ]
    for label, get, target in rows:
        print(f"| {label} | " + " | ".join(get(r) for r in variants) + f" | {target} |")


def verdict(ok, judged=True):
    v = "n/a" if ok is None else ("met" if ok else "**not met**")
    return v if judged or ok is None else f"({'met' if ok else 'not met'}; for information)"


def target_rows(names, S, L, F, burst_kb, flash, sources):
    """(target, variant, figure, verdict): throughput targets are judged at the default window
    (rimecast), latency targets in the low-latency mode (rimecast-ll); the other is shown too."""
    i, fl = L.get("icecast2", {}), L.get("floor", {})
    sr, si = S.get("rimecast", {}), S.get("icecast2", {})

    def rel(a, b, op):
        return None if a is None or b is None or b == 0 else op(a / b)
    out = []
    for name in ("rimecast", "rimecast-ll"):
        f = L.get(name)
        if not f:
            continue
        judged = name == "rimecast"
        c = f.get("cpu_per_1000")
        out.append(("CPU per listener <= 1/4 of icecast2", name, ratio(c, i.get("cpu_per_1000")),
                    verdict(rel(c, i.get("cpu_per_1000"), lambda x: x <= 0.25), judged)))
        out.append(("CPU per listener <= 1.5 x floor", name, ratio(c, fl.get("cpu_per_1000")),
                    verdict(rel(c, fl.get("cpu_per_1000"), lambda x: x <= 1.5), judged)))
        v = f.get("cpu_15000")
        out.append(("15000 listeners: none starving, server < 25 % of a core", name,
                    "n/a" if not v else f"{v[0]:.0f} listeners, {v[2]:.0f} starving/closed, {v[1]:.1f} %",
                    verdict(None if not v else (v[2] == 0 and v[1] < 25), judged)))
    rss, vsz = sr.get("kb_rss_per_source"), sr.get("kb_vsz_per_source")
    out.append((f"RSS per source <= burst-size + 8 KB ({burst_kb + 8:.0f} KB)", "rimecast", fmt(rss) + " KB",
                verdict(None if rss is None else rss <= burst_kb + 8)))
    out.append(("VSZ per source <= 1/5 of icecast2", "rimecast", ratio(vsz, si.get("kb_vsz_per_source")),
                verdict(rel(vsz, si.get("kb_vsz_per_source"), lambda x: x <= 0.2))))
    n = sr.get("sources_max")
    out.append(("10000 paced sources", "rimecast", f"{fmt(n, '{:.0f}')} held of {sources}",
                verdict(None if n is None or sources < 10000 else n >= 10000)))
    for name in ("rimecast", "rimecast-ll"):
        f = F.get(name)
        if f:
            ok = f.get("all_s", -1) >= 0 and f["all_s"] < 2 and not f.get("errors")
            out.append(("flash crowd of 10000 admitted in < 2 s", name, f"{flash_cell(f)} s for {flash}",
                        verdict(ok if flash >= 10000 else None, name == "rimecast")))
    for name in ("rimecast-ll", "rimecast"):
        f = L.get(name)
        if not f:
            continue
        judged = name == "rimecast-ll"
        a, b = f.get("lat_1000"), i.get("lat_1000")
        out.append(("latency p99 at 1000 <= icecast2's", name,
                    f"{lat_cell(f, 'lat_1000')} vs {lat_cell(i, 'lat_1000')}",
                    verdict(None if not a or not b else a[2] <= b[2], judged)))
        a = f.get("lat_10000")
        out.append(("latency p99 at 10000 < 20 ms", name, lat_cell(f, "lat_10000"),
                    verdict(None if not a else a[2] < 20, judged)))
    return out


def targets_table(names, S, L, F, burst_kb, flash, sources):
    print("\n## Targets\n\nThroughput targets are judged at the default write window (rimecast), "
          "latency targets\nin the low-latency mode (rimecast-ll); the other mode is shown for information.\n")
    print("| target | server | this run | verdict |\n|---|---|---|---|")
    for t, name, v, ok in target_rows(names, S, L, F, burst_kb, flash, sources):
        print(f"| {t} | {name} | {v} | {ok} |")


def plateau_tables(names, L):
    print("\n## Listener ramp plateaus\n")
    for n in names:
        if not L[n].get("plateaus"):
            continue
        print(f"**{n}**\n\n| listeners | server CPU % | starving | closed by server | p50 ms | p99 ms "
              "| arrival p50 ms | arrival p99 ms | swarm CPU % | idle % | tx pkt/s | server fds |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for p in L[n]["plateaus"]:
            print(f"| {p['connected']:.0f} | {p['cpu']:.1f} | {p['starving']:.0f} | {p['closed']:.0f} | "
                  f"{fmt(p['lat_p50'], '{:.2f}')} | {fmt(p['lat_p99'], '{:.2f}')} | "
                  f"{fmt(p['arr_p50'], '{:.2f}')} | {fmt(p['arr_p99'], '{:.2f}')} | {p['swarm_cpu']:.1f} | "
                  f"{p['idle']:.0f} | {p['tx_pps']:.0f} | {p['fds']:.0f} |")
        print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--servers", default="rimecast rimecast-ll icecast2 floor floor-ll")
    ap.add_argument("--bitrate", type=float, default=128)
    ap.add_argument("--sources", type=int, default=0)
    ap.add_argument("--flash", type=int, default=0)
    ap.add_argument("--burst-kb", type=float, default=64, help="the config's burst-size, KB")
    a = ap.parse_args()
    names = a.servers.split()
    S = {n: sources_figures(load(f"{a.dir}/{n}-sources.csv")) for n in names}
    L = {n: listener_figures(load(f"{a.dir}/{n}-listeners.csv")) for n in names}
    F = {n: flash_figures(f"{a.dir}/{n}-flash/swarm.status") for n in names}
    here = os.path.dirname(os.path.abspath(__file__))
    print(f"# Load-test report\n\n- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}")
    print(f"- commit: {commit(here, a.dir)}\n- machine: {machine()} (server and load generator share it)")
    print(f"- stream: {a.bitrate:g} kbit/s; servers: {', '.join(names)}; output: `{a.dir}`\n")
    print("## Figures\n")
    figures_table(names, S, L, F, a.flash)
    ratio_table(names, S, L, F)
    targets_table(names, S, L, F, a.burst_kb, a.flash, a.sources)
    plateau_tables(names, L)
    pngs = sorted(f for f in os.listdir(a.dir) if f.endswith(".png"))
    if pngs:
        print("## Graphs\n")
        for p in pngs:
            print(f"![{p}]({p})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
