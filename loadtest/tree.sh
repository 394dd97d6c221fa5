#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tree.sh: a relay tree on this machine: one origin and N edges (separate processes, each edge
# relaying /live and /probe from the origin), listeners spread over the edges by swarm. Prints
# the origin's CPU (total and per edge), each edge's CPU per 1 000 listeners, the listeners
# held, and the latency the probe's markers show on the origin and on an edge in the same run
# (the difference is what one hop adds). Loopback only; bounded by --seconds.
# Usage: tree.sh [--rimecast BIN] [--edges 2] [--listeners 2000] [--seconds 30] [--window MS]
#                [--probe-listeners 10] [--port 19300]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${RIMECAST_BIN:-$here/../rimecast}
edges=2 listeners=2000 seconds=30 window="" probes=10 port=19300
while [ $# -gt 0 ]; do
    case "$1" in
        --rimecast) bin=$2; shift 2 ;;
        --edges) edges=$2; shift 2 ;;
        --listeners) listeners=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --window) window=$2; shift 2 ;;
        --probe-listeners) probes=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        *) echo "tree.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$edges" -ge 1 ] && [ "$edges" -le 16 ] || { echo "tree.sh: --edges 1..16" >&2; exit 2; }
[ "$listeners" -le 50000 ] || { echo "tree.sh: at most 50 000 listeners here" >&2; exit 2; }
swarm=${SWARM_BIN:-$here/swarm}
[ -x "$swarm" ] || swarm=$here/../build/loadtest/swarm
out=$(mktemp -d "${TMPDIR:-/tmp}/tree.XXXXXX")
chmod 755 "$out"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${KEEP:-}" ] && echo "run directory kept: $out" >&2 || rm -rf "$out"
}
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
wwin=()
[ -n "$window" ] && wwin=(--write-window "$window")
relay() { # mount, origin port
    echo "<relay><server>127.0.0.1</server><port>$2</port><mount>$1</mount><local-mount>$1</local-mount><on-demand>0</on-demand></relay>"
}
start_server() { # name, port, extra xml
    mkdir -p "$out/$1"
    "$here/gen-config.sh" --dir "$out/$1" --port "$2" "${wwin[@]}" --extra "$3" >/dev/null
    "$bin" -c "$out/$1/server.xml" >"$out/$1/server.out" 2>&1 &
    pids+=("$!")
    echo "$!" >"$out/$1/pid"
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$2/room.txt" >/dev/null && return 0; sleep 0.1; done
    echo "tree.sh: $1 did not start" >&2; exit 1
}

run_for=$((seconds + 40))
start_server origin "$port" ""
"$swarm" --port "$port" --sources 1 --source-mounts /live --bitrate 128 --duration "$run_for" \
    >/dev/null 2>&1 &
pids+=("$!")
# the probe source and its listeners on the origin
"$swarm" --port "$port" --probe-mount /probe --probe-listeners "$probes" --duration "$run_for" \
    --status "$out/probe-origin.txt" >/dev/null 2>&1 &
pids+=("$!")
sleep 2
for e in $(seq "$edges"); do
    start_server "edge$e" $((port + e)) "$(relay /live "$port")$(relay /probe "$port")"
done
sleep 3
# probe listeners on edge 1: the same markers, one hop further
"$swarm" --port $((port + 1)) --probe-mount /probe --probe-listen-only --probe-listeners "$probes" \
    --duration "$run_for" --status "$out/probe-edge.txt" >/dev/null 2>&1 &
pids+=("$!")
per=$((listeners / edges))
for e in $(seq "$edges"); do
    "$swarm" --port $((port + e)) --listeners "$per" --mounts /live --bitrate 128 \
        --connect-rate 1000 --duration $((run_for - 5)) --status "$out/swarm$e.txt" \
        >/dev/null 2>&1 &
    pids+=("$!")
done
sleep 12 # connected and past the burst
declare -A t0 t1
names=(origin $(for e in $(seq "$edges"); do echo "edge$e"; done))
for n in "${names[@]}"; do t0[$n]=$(cpu_ticks "$(cat "$out/$n/pid")"); done
lat_mark=$(wc -l <"$out/probe-edge.txt")
lat_mark_o=$(wc -l <"$out/probe-origin.txt")
sleep "$seconds"
for n in "${names[@]}"; do t1[$n]=$(cpu_ticks "$(cat "$out/$n/pid")"); done
hz=$(getconf CLK_TCK)
held=0
for e in $(seq "$edges"); do
    c=$(tail -n 1 "$out/swarm$e.txt" | tr ' ' '\n' | awk -F= '$1 == "connected" { print $2 }')
    held=$((held + ${c:-0}))
done
# latency: median of the per-second p50/p99 over the measured seconds
lat() { # file, first line
    tail -n +"$2" "$1" | grep '^t=' | tr ' ' '\n' | awk -F= '
        $1 == "lat_p50_ms" && $2 > 0 { p50[n50++] = $2 } $1 == "lat_p99_ms" && $2 > 0 { p99[n99++] = $2 }
        function med(a, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                       return n ? a[int(n / 2)] : -1 }
        END { printf "%.1f %.1f", med(p50, n50), med(p99, n99) }'
}
read -r o50 o99 <<<"$(lat "$out/probe-origin.txt" "$lat_mark_o")"
read -r e50 e99 <<<"$(lat "$out/probe-edge.txt" "$lat_mark")"
echo "tree: 1 origin + $edges edges, $listeners listeners asked (${per} per edge), window ${window:-default} ms, ${seconds} s measured"
echo "listeners held: $held"
ocpu=$(awk -v d=$((t1[origin] - t0[origin])) -v hz="$hz" -v s="$seconds" 'BEGIN { printf "%.2f", d / hz / s * 100 }')
echo "origin CPU: $ocpu % of a core ($(awk -v c="$ocpu" -v e="$edges" 'BEGIN { printf "%.2f", c / e }') % per edge; it also serves $probes probe listeners)"
for e in $(seq "$edges"); do
    awk -v d=$((t1[edge$e] - t0[edge$e])) -v hz="$hz" -v s="$seconds" -v n="$per" -v e="$e" \
        'BEGIN { c = d / hz / s * 100; printf "edge%d CPU: %.2f %% of a core, %.2f %% per 1000 listeners\n", e, c, c * 1000 / n }'
done
echo "probe latency on the origin: p50 $o50 ms, p99 $o99 ms"
echo "probe latency on edge1:      p50 $e50 ms, p99 $e99 ms"
awk -v a="$o50" -v b="$e50" -v c="$o99" -v d="$e99" 'BEGIN { printf "added by one hop: p50 %+.1f ms, p99 %+.1f ms\n", b - a, d - c }'
