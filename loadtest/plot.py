#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""plot.py: the classic load-test graphs, as PNG, from one or more sample.py CSV files.

Usage: plot.py --out DIR [--prefix NAME] RUN.csv[=LABEL] [RUN2.csv[=LABEL] ...]
Several runs (e.g. rimecast and icecast2) are drawn on the same axes. Graphs: VSZ and RSS vs
sources, CPU vs sources, server CPU vs listeners (alone, and with the machine's us/sy and the
swarm), packets vs listeners, starving listeners, latency vs listeners (log scale), and a
timeline. A graph whose x axis never moves in any run is skipped unless --all is given.
It owns only the PNG files it writes; it computes no report figures.
"""
import argparse
import csv
import os
import sys

try:
    import matplotlib
except ImportError:  # a private Python without matplotlib: retry with the system one
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3" \
            and not os.environ.get("PLOT_REEXEC"):
        os.environ["PLOT_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    cols = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            for k, v in row.items():
                try:
                    cols.setdefault(k, []).append(float(v) if v not in ("", None) else None)
                except ValueError:
                    cols.setdefault(k, []).append(None)
    return cols


def sources_axis(c):
    """Best available source count: server stats, then swarm sources up, then the ramp's count."""
    for k in ("srv_sources", "sw_sources_up", "ramp_sources"):
        vals = c.get(k, [])
        if any(v for v in vals if v):
            return vals
    return []


def pairs(xs, ys, scale=1.0):
    out = [(x, y * scale) for x, y in zip(xs, ys) if x is not None and y is not None]
    return [p[0] for p in out], [p[1] for p in out]


def moves(runs, axis):
    return any(len({v for v in axis(c) if v is not None}) > 1 for _, c in runs)


def listeners_axis(c):
    return c.get("sw_connected", [])


def figure(title, xlabel, ylabel):
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def save(fig, ax, path, written):
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    written.append(path)


def plot_xy(runs, spec, path, written):
    """spec: (title, xlabel, ylabel, axis function, [(column, label suffix, scale), ...][, "log"])."""
    title, xlabel, ylabel, axis, series = spec[:5]
    fig, ax = figure(title, xlabel, ylabel)
    if len(spec) > 5 and spec[5] == "log":
        ax.set_yscale("log")
    for label, c in runs:
        for col, suffix, scale in series:
            xs, ys = pairs(axis(c), c.get(col, []), scale)
            if xs:
                ax.plot(xs, ys, ".", markersize=3, label=f"{label} {suffix}".strip())
    save(fig, ax, path, written)


def plot_memory(runs, path, written):
    """VSZ and RSS in two panels: on one axis the RSS of a thread-per-source server looks flat."""
    fig, axes = plt.subplots(2, 1, figsize=(8, 6.5), dpi=100, sharex=True)
    for label, c in runs:
        for ax, col in ((axes[0], "vsz_kb"), (axes[1], "rss_kb")):
            xs, ys = pairs(sources_axis(c), c.get(col, []), 1 / 1024)
            if xs:
                ax.plot(xs, ys, ".", markersize=3, label=label)
    for ax, name in ((axes[0], "VSZ MB"), (axes[1], "RSS MB")):
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="best", fontsize=8)
    axes[1].set_xlabel("sources")
    fig.suptitle("memory vs sources")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    written.append(path)


def plot_timeline(runs, path, written):
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), dpi=100, sharex=True)
    for label, c in runs:
        t = c.get("t", [])
        for ax, col, name in ((axes[0], "cpu_pct", "server CPU %"),
                              (axes[1], "sw_connected", "listeners connected"),
                              (axes[2], "rss_kb", "server RSS kB")):
            xs, ys = pairs(t, c.get(col, []))
            if xs:
                ax.plot(xs, ys, label=label)
            ax.set_ylabel(name)
            ax.grid(True, alpha=0.3)
    axes[0].legend(loc="best", fontsize=8)
    axes[2].set_xlabel("seconds")
    fig.suptitle("timeline")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    written.append(path)


GRAPHS = [
    ("sources_cpu", sources_axis, ("server CPU vs sources", "sources", "% of one core",
                                   sources_axis, [("cpu_pct", "", 1)])),
    ("listeners_server_cpu", listeners_axis, ("server CPU vs listeners", "listeners", "% of one core",
                                              listeners_axis, [("cpu_pct", "", 1)])),
    ("listeners_cpu", listeners_axis, ("CPU vs listeners", "listeners", "%", listeners_axis,
                                       [("cpu_pct", "server (% of a core)", 1),
                                        ("us", "machine us", 1), ("sy", "machine sy", 1),
                                        ("sw_swarm_cpu_pct", "swarm (% of a core)", 1)])),
    ("listeners_packets", listeners_axis, ("packets vs listeners", "listeners", "packets/s",
                                           listeners_axis, [("tx_pps", "tx", 1)])),
    ("listeners_starving", listeners_axis, ("starving listeners (<90% of the stream rate)",
                                            "listeners", "listeners", listeners_axis,
                                            [("sw_starving", "", 1)])),
    ("listeners_latency", listeners_axis, ("source-to-listener latency", "listeners", "ms",
                                           listeners_axis, [("sw_lat_p50_ms", "p50", 1),
                                                            ("sw_lat_p99_ms", "p99", 1)], "log")),
]


def main():
    ap = argparse.ArgumentParser(description="classic load-test graphs")
    ap.add_argument("--out", required=True, help="directory for the PNG files")
    ap.add_argument("--prefix", default="", help="file name prefix")
    ap.add_argument("--all", action="store_true", help="draw every graph even if its x never moves")
    ap.add_argument("runs", nargs="+", help="CSV[=LABEL]")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    runs = []
    for spec in args.runs:
        path, _, label = spec.partition("=")
        runs.append((label or os.path.splitext(os.path.basename(path))[0], load(path)))
    written = []
    if args.all or moves(runs, sources_axis):
        plot_memory(runs, os.path.join(args.out, f"{args.prefix}sources_mem.png"), written)
    for name, axis, spec in GRAPHS:
        if args.all or moves(runs, axis):
            plot_xy(runs, spec, os.path.join(args.out, f"{args.prefix}{name}.png"), written)
    plot_timeline(runs, os.path.join(args.out, f"{args.prefix}timeline.png"), written)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
