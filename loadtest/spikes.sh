#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spikes.sh: where the one-second starving spikes come from (docs/PERFORMANCE.md, "One-second
# starving spikes"). For each server in turn (default: rimecast, rimecast-ll, icecast2), on one
# 128 kbit/s mount fed by a paced swarm source, N listeners (default 8 000) in two swarm
# processes at the same time: half woken for half a second of stream (swarm's default
# SO_RCVLOWAT), half woken for every byte (--rcvlowat 0, their reads follow the server's writes).
# Both judge on bytes delivered (read plus unread in the socket) and on bytes read, and write a
# timeline (--trace) of every tenth listener's reads and of their own loop turns; schedsample.py
# records the scheduler's run and wait times of every server and swarm thread each 100 ms and
# the machine's CPU, load and busiest processes each second. spikes.py reads it all and
# classifies each second that had starving listeners.
#   spikes.sh [--listeners N] [--seconds S] [--servers "rimecast rimecast-ll icecast2"]
#             [--out DIR] [--rimecast BIN] [--swarm BIN] [--icecast BIN]
# Runs on 127.0.0.1 as root (the servers drop to nobody); stops every process it started, by PID.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
listeners=8000; seconds=120; servers="rimecast rimecast-ll icecast2"; out=""
rimecast=${RIMECAST_BIN:-}; swarm=${SWARM_BIN:-}; icecast=/usr/bin/icecast2
while [ $# -gt 0 ]; do
    case "$1" in
        --listeners) listeners=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --servers) servers=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --rimecast) rimecast=$2; shift 2 ;;
        --swarm) swarm=$2; shift 2 ;;
        --icecast) icecast=$2; shift 2 ;;
        *) sed -n 3,15p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
. "$here/checks.sh"
find_binaries spikes.sh
out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/spikes.XXXXXX")}
mkdir -p "$out"; chmod 755 "$out"
log() { echo "[spikes $(date +%T)] $*" >&2; }

pids=()
stop_all() {   # newest first: the swarms leave before their server
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done
    pids=()
}
trap 'stop_all; exit 130' INT TERM

port=$(free_port)
token="spikes-$$-$RANDOM"
"$here/gen-config.sh" --dir "$out/run" --port "$port" --location "$token" >/dev/null || exit 2
"$here/gen-config.sh" --dir "$out/run" --port "$port" --location "$token" --write-window 0 \
    --name server-ll.xml >/dev/null || exit 2
git -C "$top" rev-parse --short HEAD > "$out/commit" 2>/dev/null || rm -f "$out/commit"
half=$((listeners / 2))

connected() { grep '^t=' "$1" 2>/dev/null | tail -1 | tr ' ' '\n' | sed -n 's/^connected=//p'; }

for s in $servers; do
    d=$out/$s; mkdir -p "$d"
    case $s in
        rimecast) cmd=("$rimecast" -c "$out/run/server.xml") ;;
        rimecast-ll) cmd=("$rimecast" -c "$out/run/server-ll.xml") ;;
        icecast2) cmd=("$icecast" -c "$out/run/server.xml") ;;
        *) log "unknown server $s"; continue ;;
    esac
    rm -f "$out/run/log/"*.log
    "${cmd[@]}" >"$d/server.out" 2>&1 &
    server=$!; pids+=($server)
    up=0
    for _ in $(seq 100); do
        sleep 0.1
        curl -sf -u admin:hackme "http://127.0.0.1:$port/admin/stats" | grep -q "$token" && { up=1; break; }
    done
    [ $up = 1 ] || { log "$s did not come up"; stop_all; continue; }
    echo "$server" > "$d/pids"
    python3 "$here/schedsample.py" --pid-file "$d/pids" --out "$d/sched.csv" &
    pids+=($!)
    total=$((seconds + 600))
    "$swarm" --port "$port" --sources 1 --source-mounts /live --duration "$total" --drain 1 \
        --status "$d/source.status" 2>"$d/source.err" &
    pids+=($!); echo $! >> "$d/pids"
    sleep 2
    for k in lowat nolowat; do
        extra=(); [ $k = nolowat ] && extra=(--rcvlowat 0)
        "$swarm" --port "$port" --listeners "$half" --mounts /live --connect-rate 1000 --max-pending 64 \
            --retry --duration "$total" --drain 1 --trace "$d/$k.trace" "${extra[@]}" \
            --status "$d/$k.status" 2>"$d/$k.err" &
        pids+=($!); echo $! >> "$d/pids"
    done
    log "$s: $listeners listeners connecting"
    for _ in $(seq 3000); do
        [ "$(connected "$d/lowat.status")" = "$half" ] && [ "$(connected "$d/nolowat.status")" = "$half" ] && break
        sleep 0.2
    done
    grep '^t=' "$d/lowat.status" | tail -1 | sed 's/ .*//' > "$d/all-connected"
    log "$s: $(connected "$d/lowat.status") + $(connected "$d/nolowat.status") streaming; holding ${seconds}s"
    sleep "$seconds"
    stop_all
    sleep 1
done
python3 "$here/spikes.py" "$out" $servers | tee "$out/report.md"
log "kept $out"
