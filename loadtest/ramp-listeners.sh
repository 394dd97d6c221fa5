#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ramp-listeners.sh: ramps listeners spread over mounts in steps (STEP more, HOLD seconds after the
# previous step is all connected; at most RATE connects a second and MAX_PENDING connects in flight,
# failed connects retried) with one or more swarm processes; after the last step's hold they stop.
# Each holds at most --per-proc listeners (the fd limit) and, when there are several, binds its
# own 127.0.0.x source address so loopback ports do not run out. It owns DIR/swarm.K.status, DIR/swarm.pids and
# DIR/status.list (comma list for sample.py --swarm-status); it waits for the swarms and passes
# SIGTERM/SIGINT on to them (they then drain and print their final line). It judges nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
swarm=${SWARM_BIN:-$here/swarm}
host=127.0.0.1; port=8000; listeners=1000; mounts=/load1; step=0; hold=0; rate=0
per_proc=18000; max_pending=64; bitrate=128; duration=0; dir=""; probe=""; probe_n=10; extra=()
usage() {
    echo "usage: ramp-listeners.sh --dir DIR [--host H] [--port P] [--listeners N] [--mounts SPEC]" >&2
    echo "       [--step S --hold SEC] [--connect-rate R] [--bitrate KBPS] [--duration SEC]" >&2
    echo "       [--probe-mount M [--probe-listeners P]] [--per-proc 18000] [--max-pending 64]" >&2
    echo "       [--swarm BIN] [-- swarm args]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --host) host=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --listeners) listeners=$2; shift 2 ;;
        --mounts) mounts=$2; shift 2 ;;
        --step) step=$2; shift 2 ;;
        --hold) hold=$2; shift 2 ;;
        --connect-rate) rate=$2; shift 2 ;;
        --per-proc) per_proc=$2; shift 2 ;;
        --max-pending) max_pending=$2; shift 2 ;;
        --bitrate) bitrate=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --probe-mount) probe=$2; shift 2 ;;
        --probe-listeners) probe_n=$2; shift 2 ;;
        --swarm) swarm=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) usage ;;
    esac
done
[ -n "$dir" ] || usage
[ -x "$swarm" ] || { echo "ramp-listeners.sh: no swarm binary at $swarm (run make)" >&2; exit 1; }
mkdir -p "$dir"
procs=$(( (listeners + per_proc - 1) / per_proc )); [ $procs -lt 1 ] && procs=1
: > "$dir/swarm.pids"; list=""
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null' TERM INT
for ((k = 0; k < procs; k++)); do
    n=$(( listeners / procs + (k < listeners % procs ? 1 : 0) ))
    args=(--host "$host" --port "$port" --listeners "$n" --mounts "$mounts" --random
          --bitrate "$bitrate" --seed $((k + 1)) --status "$dir/swarm.$k.status"
          --per-mount "$dir/swarm.$k.mounts" --retry
          --max-pending $(( (max_pending + procs - 1) / procs )))
    [ "$step" -gt 0 ] && args+=(--step $(( (step + procs - 1) / procs )) --hold "$hold")
    [ "$rate" != 0 ] && args+=(--connect-rate "$(awk -v r="$rate" -v p="$procs" 'BEGIN{print r/p}')")
    [ "$duration" != 0 ] && args+=(--duration "$duration")
    [ $procs -gt 1 ] && args+=(--src-ip "127.0.0.$((k + 2))")
    [ -n "$probe" ] && [ $k -eq 0 ] && args+=(--probe-mount "$probe" --probe-listeners "$probe_n")
    "$swarm" "${args[@]}" "${extra[@]}" &
    pids+=($!); echo $! >> "$dir/swarm.pids"
    list="$list${list:+,}$dir/swarm.$k.status"
done
echo "$list" > "$dir/status.list"
echo "ramp-listeners: $procs swarm process(es), status files: $list" >&2
rc=0
for p in "${pids[@]}"; do
    while :; do
        wait "$p"; r=$?
        # a trapped signal interrupts wait with a status above 128: wait again for the drain
        kill -0 "$p" 2>/dev/null || break
    done
    [ $r -ne 0 ] && rc=$r
done
exit $rc
