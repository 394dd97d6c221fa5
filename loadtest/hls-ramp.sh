#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# hls-ramp.sh: HLS load figures, in one run of one server with one paced MP3 source (/live.mp3,
# 128 kbit/s): the server's memory without and with an HLS window on the mount, then the server's
# CPU per 1 000 clients at each step (default 1 000 / 5 000 / 10 000) for plain listeners
# (swarm), classic HLS clients and low-latency HLS clients (hlsswarm: ll, players that hold the
# part the preload hint names; hlsjs, players that poll as hls.js does, on two connections each),
# each step held once all of it is active, with the clients' starving and latency (plain
# listeners: a probe source's markers to probe listeners; HLS: from the moment a piece's audio
# was complete at the server to the playlist listing it and to its last byte), then the floor
# of the same patterns (ll_floor, the median of three runs) for the ratio to it
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
llfloor=${LLFLOOR_BIN:-$(find_bin loadtest/ll_floor)}
port=18600; steps="1000,5000,10000"; hold=20; settle=3; rate=1000; mem_wait=90; modes="plain classic ll"
dir="loadtest-out/hls-$(date +%Y%m%d-%H%M%S)"; source_file=""; extra=""; floor_secs=8
usage() {
    echo "usage: hls-ramp.sh [--out DIR] [--port P] [--steps 1000,5000,10000] [--hold SEC]" >&2
    echo "       [--connect-rate R] [--mem-wait SEC (0: no memory phase)] [--modes 'plain classic ll hlsjs']" >&2
    echo "       [--source-file MP3] [--rimecast BIN] [--extra XML (config, e.g. <hls>...</hls>)]" >&2
    echo "       [--floor-seconds SEC (0: no floor)]" >&2
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
        --floor-seconds) floor_secs=$2; shift 2 ;;
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
    curl -sf -u admin:hackme "$base/metrics" |
        awk '/^rimecast_listeners[{ ]|^rimecast_hls_sessions / {n += $NF; seen = 1}
             END {exit !(seen && n == 0)}'
}
wait_for 20 hls_up || { echo "hls-ramp.sh: $mount has no HLS" >&2; exit 1; }

ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$server/status"; }
idle() { awk '/^cpu / {print $5, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
hz=$(getconf CLK_TCK)
echo "mode,clients,cpu_pct,cpu_pct_per_1000,rss_kb,machine_idle_pct,generator" > "$dir/phases.csv"
# measure MODE N GENERATOR-STATUS-LINE: the server's CPU over $hold seconds; the generator's
# figures of the window are appended to the row as a last quoted field (key=value ...)
measure() {
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
                --max-pending 64 --retry --drain 1 --probe-mount /probe.mp3 --probe-listeners 10 \
                --status "$st.$n" & g=$!; pids+=($g)
            echo $g >> "$dir/gen.pids"
            wait_for 120 grep -qs "connected=$((n + 10)) " "$st.$n" || echo "hls-ramp: plain $n not all connected" >&2
            sleep "$settle"; from=$(wc -l < "$st.$n")
            measure plain "$n" "$(tail -1 "$st.$n")"
            kill -TERM $g; wait $g
            # the window's seconds: the most starving, and the probe's latency (the median of
            # its per-second p50s, the worst p99)
            sed -i "\$s/\$/,\"$(tail -n +"$((from + 1))" "$st.$n" | grep '^t=' | head -n "$hold" |
                awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2] + 0}
                      if (v["starving"] > st) st = v["starving"]
                      if (v["lat_p50_ms"] >= 0) p50[n++] = v["lat_p50_ms"]
                      if (v["lat_p99_ms"] > p99) p99 = v["lat_p99_ms"]
                      err = v["conn_err"] + v["rejected"] + v["server_closed"]}
                     END {for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
                              if (p50[j] < p50[i]) {x = p50[i]; p50[i] = p50[j]; p50[j] = x}
                          printf "starving_max=%d lat_p50_ms=%.0f lat_p99_ms=%.0f errors=%d",
                              st, n ? p50[int((n - 1) / 2)] : -1, n ? p99 : -1, err}')\"/" \
                "$dir/phases.csv"
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

# the floor of the same patterns (ll_floor: their system calls only) at the first step's count,
# at the window's part length
if [ "$floor_secs" -gt 0 ] && [ -x "$llfloor" ]; then
    media=$(curl -sf "$base$mount/hls.m3u8" | grep -v '^#' | head -1)
    part_s=$(curl -sf "$base$mount/$media" | sed -n 's/^#EXT-X-PART-INF:PART-TARGET=//p' | head -1)
    part_ms=$(awk -v p="${part_s:-0.5}" 'BEGIN {printf "%d", p * 1000 + 0.5}')
    : > "$dir/floor.txt"
    for _ in 1 2 3; do # three runs, the median taken: one run's seconds differ by up to half
        "$llfloor" --players "${counts[0]}" --seconds "$floor_secs" --part-ms "$part_ms" \
            --part-writes 1 >> "$dir/floor.txt" 2>&1 || echo "hls-ramp: ll_floor failed" >&2
    done
fi

python3 - "$dir" <<'EOF' | tee "$dir/report.md"
import csv, sys, re
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/phases.csv")))
plain = {r["clients"]: float(r["cpu_pct_per_1000"]) for r in rows if r["mode"] == "plain"}
floor, floor_runs = {}, {}
try:
    for line in open(d + "/floor.txt"):
        f = dict(re.findall(r"(\w+)=(\S+)", line))
        if "pattern" in f:
            floor_runs.setdefault(f["pattern"], []).append(float(f["cpu_pct_per_1000"]))
except OSError:
    pass
for k, v in floor_runs.items():  # the median of the runs
    v.sort()
    floor[k] = (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
print("| mode | clients | server CPU % | CPU % per 1 000 | / plain | / floor | RSS MB | machine idle % |"
      " requests/client/s | starving (max) | to playlist p50 / p99 ms | to piece p50 / p99 ms | errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    extra = r.get(None) or []
    step = dict(re.findall(r"(\w+)=(\S+)", " ".join(extra)))
    per = float(r["cpu_pct_per_1000"])
    ratio = per / plain[r["clients"]] if plain.get(r["clients"]) else None
    fl = floor.get("plain" if r["mode"] == "plain" else "ll") if r["mode"] != "classic" else None
    pl = ("%s / %s" % (step["pl_lat_p50_ms"], step["pl_lat_p99_ms"])) if "pl_lat_p50_ms" in step else ""
    lat = ("%s / %s" % (step["lat_p50_ms"], step["lat_p99_ms"])) if "lat_p50_ms" in step else ""
    print("| %s | %s | %s | %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s |" % (
        r["mode"], r["clients"], r["cpu_pct"], r["cpu_pct_per_1000"],
        "%.2f" % ratio if ratio else "", "%.2f" % (per / fl) if fl else "",
        int(r["rss_kb"]) / 1024, r["machine_idle_pct"], step.get("requests_per_client_s", ""),
        step.get("starving_max", ""), pl, lat, step.get("errors", "")))
if floor:
    print("\nfloor (ll_floor, %s): %s" % (open(d + "/floor.txt").read().split("players=")[1].split()[0]
          + " players, the median of %d runs" % len(floor_runs.get("ll", [])),
          ", ".join("%s %.2f %% per 1 000 (%s)" % (k, v, ", ".join("%.2f" % x for x in floor_runs[k]))
                    for k, v in sorted(floor.items()))))
print("\nplain: latency from the probe source's markers to 10 probe listeners on /probe.mp3 "
      "(median of per-second p50, worst p99), starving: the most in one second of the window; "
      "HLS: the step's figures (hlsswarm), to playlist and to piece from the piece's audio "
      "complete at the server")
try:
    print("\n" + open(d + "/memory.txt").read().strip())
except OSError:
    pass
EOF
