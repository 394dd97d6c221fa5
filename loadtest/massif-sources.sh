#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# massif-sources.sh: where a source's heap goes. Runs rimecast under valgrind massif with N
# paced sources (swarm, 128 kbit/s, the loadtest config; the profile goes to OUT/run/log, which
# the server, dropped to nobody, can write) streaming for a while, and prints the
# heap per source by allocation site at the peak (massif-breakdown.py), while they all stream. Owns only its --out directory; starts and stops only its own processes.
# Usage: massif-sources.sh [--bin BUILD/rimecast] [--sources 200] [--hold 60] [--port 18900]
#   [--out DIR] [--bitrate 128]
set -eu

here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/.." && pwd)
bin=$top/build/rimecast; sources=200; hold=60; port=18900; bitrate=128
out=${TMPDIR:-/tmp}/massif-sources.$$
swarm=${SWARM_BIN:-$top/build/loadtest/swarm}
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --sources) sources=$2; shift 2 ;;
        --hold) hold=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --bitrate) bitrate=$2; shift 2 ;;
        *) echo "massif-sources.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
token="massif-$$"
"$here/gen-config.sh" --dir "$out/run" --port "$port" --location "$token"
valgrind --tool=massif --massif-out-file="$out/run/log/massif.out" --threshold=0.1 \
    "$bin" -c "$out/run/server.xml" > "$out/server.out" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
up=0
for _ in $(seq 300); do
    sleep 0.2
    curl -sf -u admin:hackme "http://127.0.0.1:$port/admin/stats" 2>/dev/null | grep -q "$token" \
        && { up=1; break; }
done
[ $up = 1 ] || { echo "massif-sources.sh: server did not come up" >&2; exit 1; }
"$swarm" --port "$port" --sources "$sources" --source-mounts "/load%d:1-$sources" \
    --bitrate "$bitrate" --duration $((hold + 30)) --status "$out/swarm.status" 2>"$out/swarm.err" &
gen=$!
# every source streaming, then the hold
for _ in $(seq 600); do
    n=$(curl -sf -u admin:hackme "http://127.0.0.1:$port/admin/stats" | grep -o "<source mount" | wc -l)
    [ "$n" -ge "$sources" ] && break
    sleep 0.5
done
sleep "$hold"
kill "$gen" 2>/dev/null || true; wait "$gen" 2>/dev/null || true
kill "$server"; wait "$server" 2>/dev/null || true
trap - EXIT
python3 "$here/massif-breakdown.py" --per "$sources" "$out/run/log/massif.out"
