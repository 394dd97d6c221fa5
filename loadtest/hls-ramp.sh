#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# hls-ramp.sh: HLS load figures, in one run of one server with one paced MP3 source (/live.mp3,
# 128 kbit/s): the server's memory without and with an HLS window on the mount, then the server's
# CPU per 1 000 clients at each step (default 1 000 / 5 000 / 10 000) for plain listeners
# (swarm), classic HLS clients and low-latency HLS clients (hlsswarm: ll, players that hold the
# part the preload hint names; hlsjs, players that poll as hls.js does, on two connections each),
# each step held once all of it is active, and the HLS clients' latency and starving
# (docs/PERFORMANCE.md, "HLS").
# It owns DIR (default loadtest-out/hls-DATE): the config and logs, the source file, samples.csv
# (sample.py over the whole run), phases.csv (one row per measured window) and report.md.
# It starts the server, the source and the generators, and stops them (by their pids) at the end.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
find_bin() { # NAME: the build's binary (top directory, then build/)
    for d in "$top" "$top/build"; do [ -x "$d/$1" ] && { echo "$d/$1"; return; }; done
}
rimecast=${RIMECAST_BIN:-$(find_bin rimecast)}
swarm=${SWARM_BIN:-$(find_bin loadtest/swarm)}
hlsswarm=${HLSSWARM_BIN:-$(find_bin loadtest/hlsswarm)}
port=18600; steps="1000,5000,10000"; hold=20; settle=3; rate=1000; mem_wait=90; modes="plain classic ll"
dir="loadtest-out/hls-$(date +%Y%m%d-%H%M%S)"; source_file=""; extra=""
usage() {
    echo "usage: hls-ramp.sh [--out DIR] [--port P] [--steps 1000,5000,10000] [--hold SEC]" >&2
    echo "       [--connect-rate R] [--mem-wait SEC (0: no memory phase)] [--modes 'plain classic ll hlsjs']" >&2
    echo "       [--source-file MP3] [--rimecast BIN] [--extra XML (config, e.g. <hls>...</hls>)]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --out) dir=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --hold) hold=$2; shift 2 ;;
        --connect-rate) rate=$2; shift 2 ;;
        --mem-wait) mem_wait=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        --source-file) source_file=$2; shift 2 ;;
        --rimecast) rimecast=$2; shift 2 ;;
        --extra) extra=$2; shift 2 ;;
        *) usage ;;
    esac
done
for m in $modes; do
    case "$m" in plain|classic|ll|hlsjs) ;; *) echo "hls-ramp.sh: unknown mode $m" >&2; usage ;; esac
done
for b in "$rimecast" "$swarm" "$hlsswarm"; do
    [ -x "$b" ] || { echo "hls-ramp.sh: missing binary (run make): ${b:-rimecast/swarm/hlsswarm}" >&2; exit 1; }
done
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
mount=/live.mp3; base="http://127.0.0.1:$port"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
trap 'exit 1' TERM INT

if [ -z "$source_file" ]; then # two minutes of 128 kbit/s CBR MP3 at 44.1 kHz, looped by the source
    source_file=$dir/source.mp3
    ffmpeg -v error -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=120" \
        -f lavfi -i "anoisesrc=d=120:a=0.05" -filter_complex amix=inputs=2 -ac 2 -c:a libmp3lame \
        -b:a 128k -write_xing 0 -id3v2_version 0 -y "$source_file" || exit 1
fi
wait_for() { # SECONDS COMMAND...: until the command succeeds, at most SECONDS
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge "$end" ] && return 1; sleep 0.5; done
}
# the generators' players all come from one address: its share of the mount is lifted
extra="<hls><sessions-per-address>0</sessions-per-address></hls>$extra"
"$here/gen-config.sh" --dir "$dir/run" --port "$port" --extra "$extra" >/dev/null || exit 1
"$rimecast" -c "$dir/run/server.xml" & server=$!; pids+=($server)
wait_for 10 curl -s -o /dev/null "$base/" || { echo "hls-ramp.sh: the server did not start" >&2; exit 1; }
"$swarm" --port "$port" --sources 1 --source-mounts "$mount" --source-file "$source_file" \
    --bitrate 128 --status "$dir/source.status" & pids+=($!)
: > "$dir/gen.pids"
python3 "$here/sample.py" --pid "$server" --out "$dir/samples.csv" --gen-pid-file "$dir/gen.pids" & pids+=($!)

hls_up() { curl -sf -o /dev/null "$base$mount/hls.m3u8"; }
no_listeners() { # the listeners and HLS sessions of the last phase have ended
    curl -sf -u admin:hackme "$base/metrics" | grep -q '^rimecast_server_listeners 0$'
}
wait_for 20 hls_up || { echo "hls-ramp.sh: $mount has no HLS" >&2; exit 1; }

ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$server/status"; }
idle() { awk '/^cpu / {print $5, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
hz=$(getconf CLK_TCK)
echo "mode,clients,cpu_pct,cpu_pct_per_1000,rss_kb,machine_idle_pct,generator" > "$dir/phases.csv"
measure() { # MODE N GENERATOR-STATUS-LINE: the server's CPU over $hold seconds
    local t0 i0 t1 i1
    t0=$(ticks); i0=$(idle); sleep "$hold"; t1=$(ticks); i1=$(idle)
    local cpu
    cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v h="$hold" 'BEGIN{printf "%.2f", (b-a)/hz/h*100}')
    local idl
    idl=$(echo "$i0 $i1" | awk '{printf "%.0f", ($3-$1)/($4-$2)*100}')
    echo "$1,$2,$cpu,$(awk -v c="$cpu" -v n="$2" 'BEGIN{printf "%.2f", c/n*1000}'),$(rss_kb),$idl,\"$3\"" \
        >> "$dir/phases.csv"
    echo "hls-ramp: $1 $2: server CPU $cpu % (machine idle $idl %)" >&2
}
last_line() { grep "$2" "$1" | tail -1; }

# memory: the mount without HLS, then with one HLS client once its window is full
if [ "$mem_wait" -gt 0 ]; then
    sleep 10; rss0=$(rss_kb)
    "$hlsswarm" --port "$port" --mount "$mount" --clients 1 --status "$dir/mem.status" & g=$!; pids+=($g)
    echo $g >> "$dir/gen.pids"
    sleep "$mem_wait"; rss1=$(rss_kb)
    kill -TERM $g; wait $g
    echo "memory,rss_without_hls_kb=$rss0,rss_with_window_kb=$rss1,delta_kb=$((rss1 - rss0)),window_s=$mem_wait" \
        > "$dir/memory.txt"
    echo "hls-ramp: RSS $rss0 KB without HLS, $rss1 KB with one HLS client for $mem_wait s" >&2
fi

IFS=, read -r -a counts <<< "$steps"
for mode in $modes; do
    wait_for 60 no_listeners || echo "hls-ramp: listeners still counted before $mode" >&2
    st="$dir/$mode.status"
    if [ "$mode" = plain ]; then
        for n in "${counts[@]}"; do # plain listeners: one swarm per step
            "$swarm" --port "$port" --listeners "$n" --mounts "$mount" --connect-rate "$rate" \
                --max-pending 64 --retry --drain 1 --status "$st.$n" & g=$!; pids+=($g)
            echo $g >> "$dir/gen.pids"
            wait_for 120 grep -qs "connected=$n " "$st.$n" || echo "hls-ramp: plain $n not all connected" >&2
            sleep "$settle"; measure plain "$n" "$(tail -1 "$st.$n")"
            kill -TERM $g; wait $g
        done
        continue
    fi
    flag=""; [ "$mode" != classic ] && flag=--$mode
    "$hlsswarm" --port "$port" --mount "$mount" $flag --clients "$steps" --connect-rate "$rate" \
        --status "$st" & g=$!; pids+=($g)
    echo $g >> "$dir/gen.pids"
    for n in "${counts[@]}"; do # HLS clients: one generator, the next step on SIGUSR1
        wait_for 180 grep -qs "^all_active clients=$n " "$st" || echo "hls-ramp: $mode $n not all active" >&2
        sleep "$settle"; measure "$mode" "$n" "$(last_line "$st" '^t=')"
        kill -USR1 $g
        wait_for 10 grep -qs "^step mode=$mode clients=$n " "$st"
        sed -i "\$s/\$/,\"$(last_line "$st" "^step mode=$mode clients=$n ")\"/" "$dir/phases.csv"
    done
    wait $g
done

python3 - "$dir" <<'EOF' | tee "$dir/report.md"
import csv, sys, re
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/phases.csv")))
plain = {r["clients"]: float(r["cpu_pct_per_1000"]) for r in rows if r["mode"] == "plain"}
print("| mode | clients | server CPU % | CPU % per 1 000 | / plain | RSS MB | machine idle % |"
      " bytes/client/s | requests/client/s | latency p50 / p99 ms | starving (max) | errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    step = dict(re.findall(r"(\w+)=(\S+)", r.get(None, [""])[0] if r.get(None) else ""))
    ratio = float(r["cpu_pct_per_1000"]) / plain[r["clients"]] if plain.get(r["clients"]) else None
    lat = "%s / %s" % (step["lat_p50_ms"], step["lat_p99_ms"]) if step else ""
    print("| %s | %s | %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s |" % (
        r["mode"], r["clients"], r["cpu_pct"], r["cpu_pct_per_1000"],
        "%.2f" % ratio if ratio else "", int(r["rss_kb"]) / 1024, r["machine_idle_pct"],
        step.get("bytes_per_client_s", ""), step.get("requests_per_client_s", ""), lat,
        step.get("starving_max", ""), step.get("errors", "")))
try:
    print("\n" + open(d + "/memory.txt").read().strip())
except OSError:
    pass
EOF
