#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""massif-breakdown.py: the peak of a valgrind massif profile as bytes per unit (a source, a
listener) by allocation site: the functions that call the allocator, and for the shared helpers
(block_new, str_dup, ...) the functions that call them. Reads only the file it is given.
Usage: massif-breakdown.py [--per N] [--min BYTES] SNAPSHOT"""
import argparse
import re

HELPERS = {"block_new", "block_new_copy", "str_dup", "strdup", "strndup", "buf_reserve",
           "buf_append", "buf_grow", "xmalloc", "calloc", "realloc", "malloc"}
NODE = re.compile(r"^( *)n(\d+): (\d+) (.*)$")


def parse(path):
    """The heap tree of the peak snapshot (else the last detailed one): (total, extra,
    [(depth, bytes, where)])."""
    total = extra = 0
    nodes = []
    found = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("mem_heap_B="):
                total, nodes = int(line.split("=")[1]), []
            elif line.startswith("mem_heap_extra_B="):
                extra = int(line.split("=")[1])
            elif line.startswith("heap_tree="):
                if found and found[3] == "peak":
                    break
                found = None
                if line.strip() != "heap_tree=empty":
                    found = (total, extra, nodes, line.strip().split("=")[1])
            else:
                m = NODE.match(line)
                if m:
                    nodes.append((len(m.group(1)), int(m.group(3)), m.group(4)))
    return found[:3] if found else (total, extra, nodes)


def name(where):
    m = re.search(r"0x[0-9A-F]+: (\S+) \((?:in |)([^)]*)\)", where)
    return "%s (%s)" % (m.group(1), m.group(2)) if m else where[:70]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--per", type=float, default=1.0)
    ap.add_argument("--min", type=int, default=0, help="skip sites under this many bytes per unit")
    ap.add_argument("snapshot")
    a = ap.parse_args()
    total, extra, nodes = parse(a.snapshot)
    per = a.per
    print("heap %.1f KB per unit, allocator headers and padding %.2f KB per unit (%d units)"
          % (total / per / 1024, extra / per / 1024, per))
    print("| bytes per unit | allocated in |")
    print("|---|---|")
    for i, (depth, size, where) in enumerate(nodes):
        if depth != 1 or size / per < a.min:
            continue
        print("| %.0f | %s |" % (size / per, name(where)))
        if name(where).split(" ")[0] in HELPERS:
            for d2, s2, w2 in nodes[i + 1:]:
                if d2 <= 1:
                    break
                if d2 == 2 and s2 / per >= a.min:
                    print("| %.0f | &nbsp;&nbsp;from %s |" % (s2 / per, name(w2)))


if __name__ == "__main__":
    main()
