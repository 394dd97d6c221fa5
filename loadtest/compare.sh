#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# compare.sh: the same benchmark against each server (rimecast, rimecast-ll, icecast2, and the
# bare writev floor), one after the other on this machine with one generated config, then report.md
# with all sets of figures and their ratios (report.py) and the graphs (plot.py). rimecast-ll is the
# same binary with a second config that differs only in <write-window>0</write-window> (low
# latency); it runs the listener and flash phases (its source costs are rimecast's). floor-ll is
# the floor writing one source block (100 ms of stream, the swarm source's write) per writev, the
# write pattern of rimecast-ll; plain floor writes 4096-byte chunks. Phases:
#   sources   - a paced source ramp (swarm libshout sources, or ezstream with --source-tool)
#   listeners - one 128 kbit/s mount plus the latency probe, listeners ramped in steps; with
#               --timed K the probe source feeds the loaded mount itself (a marker every 100 ms)
#               and K of its listeners (all, or a random sample) time every marker
#   flash     - a flash crowd: N listeners connecting at once
# The listener ramp is closed-loop (each step is held --hold s once all of it is connected), so a
# server that admits slowly takes longer rather than getting smaller plateaus.
# It owns --out DIR and the processes it starts; it does not install or build anything.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
first_x() { for f in "$@"; do [ -x "$f" ] && { echo "$f"; return; }; done; echo "$1"; }
rimecast=${RIMECAST_BIN:-$(first_x "$top/rimecast" "$top/build/rimecast")}; icecast=/usr/bin/icecast2
swarm=${SWARM_BIN:-$(first_x "$here/swarm" "$top/build/loadtest/swarm")}
floor=${FLOOR_BIN:-$(first_x "$here/writev_floor" "$top/build/loadtest/writev_floor")}
out=""; port=""; servers="rimecast rimecast-ll icecast2 floor"; source_tool=swarm; per_proc=18000
sources=1000; source_step=50; source_hold=5
listeners=15000; listener_step=1000; hold=20; rate=500; probe_n=10; flash=10000; bitrate=128
workers=0; python=python3; max_time=3600; timed=0; gen_nice=0; gen_wrap=(); floor_args=()
usage() {
    cat >&2 <<USAGE
usage: compare.sh [--quick] [--out DIR] [--servers "rimecast rimecast-ll icecast2 floor" (+ floor-ll)]
  [--rimecast BIN] [--icecast BIN] [--port P (default: a free one)] [--workers N]
  [--sources 1000] [--source-step 50] [--source-hold 5] [--source-tool swarm|ezstream]
  [--listeners 15000] [--listener-step 1000] [--hold 20] [--connect-rate 500]
  [--probe-listeners 10] [--flash 10000] [--bitrate 128] [--max-time 3600 (listener ramp cap, s)]
  [--per-proc 18000 (listeners per swarm process)]
  [--timed K (the latency of /live itself: K of its listeners time the markers its source writes)]
  [--floor-args "ARGS" (more arguments for writev_floor, e.g. --uring)]
  [--gen-nice N] [--gen-batch] (the listener phase's swarms run at nice N, or as SCHED_BATCH: their
  wake-ups on a server's writes then do not preempt the server's threads on the shared cores)
--quick: 100 sources, 2000 listeners in steps of 500 held 8 s, a flash crowd of 2000.
Phases can be skipped with --sources 0, --listeners 0, --flash 0.
USAGE
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) sources=100; source_step=50; source_hold=5; listeners=2000; listener_step=500
                 hold=8; flash=2000; shift ;;
        --out) out=$2; shift 2 ;;
        --servers) servers=$2; shift 2 ;;
        --rimecast) rimecast=$2; shift 2 ;;
        --icecast) icecast=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --workers) workers=$2; shift 2 ;;
        --sources) sources=$2; shift 2 ;;
        --source-step) source_step=$2; shift 2 ;;
        --source-hold) source_hold=$2; shift 2 ;;
        --source-tool) source_tool=$2; shift 2 ;;
        --listeners) listeners=$2; shift 2 ;;
        --listener-step) listener_step=$2; shift 2 ;;
        --hold) hold=$2; shift 2 ;;
        --connect-rate) rate=$2; shift 2 ;;
        --probe-listeners) probe_n=$2; shift 2 ;;
        --flash) flash=$2; shift 2 ;;
        --bitrate) bitrate=$2; shift 2 ;;
        --max-time) max_time=$2; shift 2 ;;
        --per-proc) per_proc=$2; shift 2 ;;
        --timed) timed=$2; shift 2 ;;
        --floor-args) read -r -a floor_args <<< "$2"; shift 2 ;;
        --gen-nice) gen_nice=$2; shift 2 ;;
        --gen-batch) gen_wrap=(chrt --batch 0); shift ;;
        *) usage ;;
    esac
done
out=${out:-$top/loadtest-out/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"; chmod 755 "$out"
out=$(cd "$out" && pwd)
[ -x "$swarm" ] || { echo "compare.sh: $swarm missing (make loadtest/swarm)" >&2; exit 1; }
[ -n "$port" ] || port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token="loadtest-$$-$RANDOM"
"$here/gen-config.sh" --dir "$out/run" --port "$port" --workers "$workers" --location "$token" >/dev/null || exit 1
"$here/gen-config.sh" --dir "$out/run" --port "$port" --workers "$workers" --location "$token" \
    --write-window 0 --name server-ll.xml >/dev/null || exit 1
log() { echo "[compare $(date +%T)] $*" >&2; }
git -C "$top" rev-parse --short HEAD > "$out/commit" 2>/dev/null || rm -f "$out/commit"

server_pid=""
bin_of() {
    case "$1" in rimecast|rimecast-ll) echo "$rimecast" ;; icecast2) echo "$icecast" ;; floor|floor-ll) echo "$floor" ;; esac
}
conf_of() { [ "$1" = rimecast-ll ] && echo "$out/run/server-ll.xml" || echo "$out/run/server.xml"; }
start_server() {   # $1 = name; sets server_pid
    local bin; bin=$(bin_of "$1")
    [ -x "$bin" ] || { log "$1: no binary at $bin, skipped"; return 1; }
    rm -f "$out/run/log/"*.log
    if [ "$1" = floor ] || [ "$1" = floor-ll ]; then
        local chunk=4096   # floor-ll: one 100 ms source block per write, as rimecast-ll writes
        [ "$1" = floor-ll ] && chunk=$(( bitrate * 1000 / 8 / 10 ))
        # one thread a worker, as the server's; --timed: each pass's chunk opens with a marker
        local threads=$workers marker=()
        [ "$threads" -gt 0 ] || threads=$(nproc)
        [ "$timed" -gt 0 ] && marker=(--marker)
        "$bin" --port "$port" --bitrate "$bitrate" --chunk "$chunk" --threads "$threads" "${marker[@]}" \
            "${floor_args[@]}" \
            > "$out/$1-floor.status" 2>&1 &
    else
        "$bin" -c "$(conf_of "$1")" > "$out/$1-server.out" 2>&1 &
    fi
    server_pid=$!
    # the answer must come from the process just started (the port may be someone else's)
    for _ in $(seq 100); do
        sleep 0.1
        kill -0 "$server_pid" 2>/dev/null || break
        if [ "${1%-ll}" = floor ]; then
            grep -q '^t=' "$out/$1-floor.status" 2>/dev/null && return 0
        else
            curl -sf -u admin:hackme "http://127.0.0.1:$port/admin/stats" | grep -q "$token" && return 0
        fi
    done
    log "$1 did not come up"; stop_server "$1"; return 1
}
stop_server() {    # $1 = name; keeps the logs of the phase
    [ -n "$server_pid" ] || return 0
    kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null
    server_pid=""
    sleep 1
}
keep_logs() { cp "$out/run/log/access.log" "$out/$1.access.log" 2>/dev/null; cp "$out/run/log/error.log" "$out/$1.error.log" 2>/dev/null; true; }

sample_start() {   # $1 = csv, $2 = swarm status list, $3 = gen pid file; sets sampler
    "$python" "$here/sample.py" --pid "$server_pid" --out "$1" --swarm-status "$2" \
        --gen-pid-file "$3" &
    sampler=$!
}
sample_stop() { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; }

phase_sources() {  # $1 = server name
    [ "$sources" -gt 0 ] && [ "${1%-ll}" != floor ] && [ "$1" != rimecast-ll ] || return 0
    local d=$out/$1-sources; mkdir -p "$d"
    start_server "$1" || return 0
    local top_hold=$((source_hold * 3)); [ $top_hold -lt 15 ] && top_hold=15
    local dur=$(( (sources + source_step - 1) / source_step * source_hold + top_hold ))
    log "$1: source ramp to $sources ($source_step every ${source_hold}s, $source_tool), ${dur}s"
    # libshout waits on its socket with select(): a swarm process keeps its fds under FD_SETSIZE
    # (1024), so sources are spread over processes of at most 1000, each ramping its share
    local procs=$(( (sources + 999) / 1000 )) k list=""
    for ((k = 0; k < procs; k++)); do list="$list${list:+,}$d/swarm.$k.status"; done
    # three samples of the idle server first: the baseline of the per-source figures
    : > "$d/gen.pids"
    "$python" "$here/sample.py" --pid "$server_pid" --out "$out/$1-sources.csv" \
        --sources-file "$d/sources.count" --swarm-status "$list" --gen-pid-file "$d/gen.pids" &
    sampler=$!
    sleep 3.5
    if [ "$source_tool" = ezstream ]; then
        "$here/ramp-sources.sh" --dir "$d" --port "$port" --count "$sources" --step "$source_step" \
            --delay "$source_hold" --hold "$top_hold" 2>"$d/ramp.err" &
        local ramp=$!
        sleep 0.5; cp "$d/sources.pids" "$d/gen.pids"
        wait "$ramp"
    else
        local sws=() first=1 n
        for ((k = 0; k < procs; k++)); do
            n=$(( sources / procs + (k < sources % procs ? 1 : 0) ))
            "$swarm" --port "$port" --sources "$n" --source-mounts "/load%d:$first-$((first + n - 1))" \
                --source-step $(( (source_step + procs - 1) / procs )) --source-hold "$source_hold" \
                --bitrate "$bitrate" --duration "$dur" --drain 2 --status "$d/swarm.$k.status" \
                2>"$d/swarm.$k.err" &
            sws+=($!); echo $! >> "$d/gen.pids"; first=$((first + n))
        done
        wait "${sws[@]}"
    fi
    sample_stop; stop_server "$1"; keep_logs "$1-sources"
}

phase_listeners() {
    [ "$listeners" -gt 0 ] || return 0
    local d=$out/$1-listeners; mkdir -p "$d"
    start_server "$1" || return 0
    local list="" gen="$d/gen.pids" src="" feed=(--sources 1 --source-mounts /live) timing=()
    : > "$gen"
    # --timed: /live's stream is the probe source's (100 ms pieces, each opening with a marker),
    # timed by K of the ramp's listeners; otherwise a libshout source and 10 probe listeners on /probe
    [ "$timed" -gt 0 ] && feed=(--probe-mount /live --probe-listeners 0 --probe-tick 0.1) &&
        timing=(-- --time-listeners $(( (timed + (listeners + per_proc - 1) / per_proc - 1) /
                                        ((listeners + per_proc - 1) / per_proc) )))
    [ "$timed" -eq 0 ] && feed+=(--probe-mount /probe --probe-listeners "$probe_n")
    if [ "${1%-ll}" != floor ]; then
        # the stream and the latency probe come from their own swarm, so the ramp's clock starts at once
        "${gen_wrap[@]}" nice -n "$gen_nice" "$swarm" --port "$port" "${feed[@]}" --bitrate "$bitrate" --drain 5 \
            --status "$d/source.status" 2>"$d/source.err" &
        src=$!; echo $src >> "$gen"; list="$d/source.status,"
        sleep 2
    fi
    log "$1: listener ramp to $listeners on /live ($listener_step more ${hold}s after each step is in)"
    "${gen_wrap[@]}" nice -n "$gen_nice" "$here/ramp-listeners.sh" --dir "$d" --port "$port" --listeners "$listeners" --mounts /live \
        --step "$listener_step" --hold "$hold" --connect-rate "$rate" --bitrate "$bitrate" \
        --duration "$max_time" --per-proc "$per_proc" --swarm "$swarm" "${timing[@]}" 2>"$d/ramp.err" &
    local ramp=$!
    for _ in $(seq 50); do [ -s "$d/status.list" ] && break; sleep 0.1; done
    cat "$d/swarm.pids" >> "$gen"
    sample_start "$out/$1-listeners.csv" "$list$(cat "$d/status.list")" "$gen"
    wait "$ramp"
    [ -n "$src" ] && { kill "$src"; wait "$src" 2>/dev/null; }
    sample_stop; stop_server "$1"; keep_logs "$1-listeners"
}

phase_flash() {
    [ "$flash" -gt 0 ] && [ "${1%-ll}" != floor ] || return 0
    local d=$out/$1-flash; mkdir -p "$d"
    start_server "$1" || return 0
    "$swarm" --port "$port" --sources 1 --source-mounts /live --bitrate "$bitrate" --duration 40 \
        --drain 2 --status "$d/source.status" 2>"$d/source.err" &
    local src=$!
    sleep 2
    log "$1: flash crowd of $flash listeners"
    "$swarm" --port "$port" --listeners "$flash" --mounts /live --bitrate "$bitrate" --duration 30 \
        --drain 5 --connect-timeout 25 --status "$d/swarm.status" 2>"$d/swarm.err"
    kill "$src" 2>/dev/null; wait "$src" 2>/dev/null
    stop_server "$1"; keep_logs "$1-flash"
}

trap 'sample_stop; stop_server x; exit 1' INT TERM
for s in $servers; do
    phase_sources "$s"
    phase_listeners "$s"
    phase_flash "$s"
done

csvs=()
for s in $servers; do
    [ -s "$out/$s-listeners.csv" ] && csvs+=("$out/$s-listeners.csv=$s")
done
[ ${#csvs[@]} -gt 0 ] && "$python" "$here/plot.py" --out "$out" --prefix listeners- "${csvs[@]}" >/dev/null
csvs=()
for s in $servers; do
    [ -s "$out/$s-sources.csv" ] && csvs+=("$out/$s-sources.csv=$s")
done
[ ${#csvs[@]} -gt 0 ] && "$python" "$here/plot.py" --out "$out" --prefix sources- "${csvs[@]}" >/dev/null
"$python" "$here/report.py" --dir "$out" --servers "$servers" --bitrate "$bitrate" \
    --sources "$sources" --flash "$flash" --burst-kb 64 > "$out/report.md"
log "report: $out/report.md"
