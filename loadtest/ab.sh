#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ab.sh: two server binaries side by side under the same listener load at the same time, so
# whatever else the machine does falls on both alike; prints each one's CPU per 1 000 listeners.
# For before/after measurements of a change (compare.sh compares servers one after the other).
# --tls: the listeners of both connect over TLS (a throw-away self-signed certificate, swarm
# --tls); --tls-b: only B's, so that with A and B the same binary a round gives the TLS / plain
# ratio of that build under one load. --hls MODE: HLS players instead (hlsswarm classic, ll or
# hlsjs, of an MP3 mount fed a file ffmpeg makes), each server's CPU per 1 000 players; with
# ll or hlsjs, after each round, the floor of a low-latency player at 500 ms parts (ll_floor
# over as many connections, the median of three 6 s runs) and each server's ratio to it, with
# the playlist the floor models (1 400 bytes) and again with the mean size of A's media playlist
# over the round's window (read twice a second through a session of its own). Each
# round also gives the machine's idle % over its measured window (the machine is shared: read
# figures with it).
# Usage: ab.sh BIN_A BIN_B [--listeners 2000] [--seconds 30] [--window MS] [--rounds 3]
#              [--tls | --tls-b | --hls classic|ll|hlsjs] [--extra XML (config of both)]
#              [--port 19100 (A's; B's is 10 above)] [--no-floor]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
a=$1 b=$2; shift 2
listeners=2000 seconds=30 window=500 rounds=3 tls="" base=19100 hls="" extra="" floor=1
while [ $# -gt 0 ]; do
    case "$1" in
        --listeners) listeners=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --window) window=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --tls) tls="A B"; shift ;;
        --tls-b) tls="B"; shift ;;
        --port) base=$2; shift 2 ;;
        --hls) hls=$2; shift 2 ;;
        --extra) extra=$2; shift 2 ;;
        --no-floor) floor=0; shift ;;
        *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
swarm=${SWARM_BIN:-$here/swarm}
[ -x "$swarm" ] || swarm=$here/../build/loadtest/swarm
hlsswarm=${HLSSWARM_BIN:-$here/hlsswarm}
[ -x "$hlsswarm" ] || hlsswarm=$here/../build/loadtest/hlsswarm
llfloor=${LL_FLOOR_BIN:-$here/ll_floor}
[ -x "$llfloor" ] || llfloor=$here/../build/loadtest/ll_floor
case "$hls" in ll | hlsjs) [ -x "$llfloor" ] || floor=0 ;; *) floor=0 ;; esac
case "$hls" in "" | classic | ll | hlsjs) ;; *) echo "ab.sh: --hls classic|ll|hlsjs" >&2; exit 2 ;; esac
out=$(mktemp -d "${TMPDIR:-/tmp}/ab.XXXXXX")
chmod 755 "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$out"; }
trap cleanup EXIT
if [ -n "$tls" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=127.0.0.1 -keyout "$out/key.pem" -out "$out/cert.pem" 2>/dev/null
    cat "$out/cert.pem" "$out/key.pem" >"$out/combined.pem"
    chmod 644 "$out/combined.pem"
fi
mount=/live; src_args=()
if [ -n "$hls" ]; then # HLS cuts real frames: a minute of 128 kbit/s MP3, looped by the source
    mount=/live.mp3
    ffmpeg -v error -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=60" \
        -f lavfi -i "anoisesrc=d=60:a=0.05" -filter_complex amix=inputs=2 -ac 2 -c:a libmp3lame \
        -b:a 128k -write_xing 0 -id3v2_version 0 -y "$out/source.mp3"
    src_args=(--source-file "$out/source.mp3")
    # the players all come from one address: its share of the mount is lifted
    extra="<hls><sessions-per-address>0</sessions-per-address></hls>$extra"
fi
# A or B -> whether its listeners speak TLS
over_tls() { case " $tls " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# the machine's idle and total ticks (idle and iowait of all CPUs)
machine_ticks() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }

run_round() {
    local i=0 port pid
    local ports=() spids=()
    for bin in "$a" "$b"; do
        port=$((base + i * 10))
        mkdir -p "$out/$i"
        "$here/gen-config.sh" --dir "$out/$i" --port "$port" --write-window "$window" \
            ${tls:+--tls-port $((port + 1)) --ssl-cert "$out/combined.pem"} \
            ${extra:+--extra "$extra"} >/dev/null
        "$bin" -c "$out/$i/server.xml" >"$out/$i/server.out" 2>&1 &
        pid=$!; pids+=("$pid"); spids+=("$pid"); ports+=("$port")
        i=$((i + 1))
    done
    for port in "${ports[@]}"; do
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/status-json.xsl" >/dev/null && break; sleep 0.1; done
        "$swarm" --port "$port" --sources 1 --source-mounts "$mount" --bitrate 128 \
            "${src_args[@]}" --duration $((seconds + 30)) >/dev/null 2>&1 &
        pids+=("$!")
    done
    sleep 2
    local side=A lport targs
    for port in "${ports[@]}"; do
        lport=$port; targs=()
        if over_tls "$side"; then lport=$((port + 1)); targs=(--tls); fi
        if [ -n "$hls" ]; then
            for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port$mount/hls.m3u8" && break; sleep 0.2; done
            [ "$hls" != classic ] && targs=(--"$hls")
            "$hlsswarm" --port "$port" --mount "$mount" --clients "$listeners" --connect-rate 1000 \
                --duration $((seconds + 20)) "${targs[@]}" >/dev/null 2>&1 &
        else
            "$swarm" --port "$lport" --listeners "$listeners" --mounts /live --bitrate 128 \
                --connect-rate 1000 --duration $((seconds + 20)) "${targs[@]}" >/dev/null 2>&1 &
        fi
        pids+=("$!")
        side=B
    done
    sleep 12 # all connected and past the burst
    local t0=() t1=() m0 m1
    for pid in "${spids[@]}"; do t0+=("$(cpu_ticks "$pid")"); done
    m0=$(machine_ticks)
    if [ "$floor" = 1 ]; then # the media playlist's size on A, twice a second over the window
        playlist_sizes "${ports[0]}" "$seconds" >"$out/playlist.sizes" &
        pids+=("$!")
    fi
    sleep "$seconds"
    for pid in "${spids[@]}"; do t1+=("$(cpu_ticks "$pid")"); done
    m1=$(machine_ticks)
    local hz; hz=$(getconf CLK_TCK)
    local cpu=()
    for k in 0 1; do
        cpu+=("$(awk -v d=$((t1[k] - t0[k])) -v hz="$hz" -v s="$seconds" -v n="$listeners" \
            'BEGIN { printf "%.2f", d / hz / s * 100 * 1000 / n }')")
        echo "$([ $k = 0 ] && echo A || echo B) ${cpu[k]}"
    done
    echo "$m0 $m1" | awk '{ printf "idle %.0f%%\n", ($3 - $1) * 100 / ($4 - $2) }'
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    pids=()
    if [ "$floor" = 1 ]; then # the floor under the same machine, just after, at the
        floor_of 1400 "" "${cpu[@]}" # model's playlist and at A's mean size in the window
        local bytes
        bytes=$(awk '$1 > 0 { s += $1; n++ } END { if (n) printf "%d", s / n }' "$out/playlist.sizes")
        if [ -n "$bytes" ]; then floor_of "$bytes" " at the server's playlist" "${cpu[@]}"; fi
    fi
}

# The floor at a playlist of $1 bytes: the median of three ll_floor runs (one run's seconds
# differ by up to half of it here) and the ratio to it of A's and B's CPU ($3, $4). $2 names
# it in the output.
floor_of() {
    local f fs=()
    for _ in 1 2 3; do
        f=$("$llfloor" --players "$listeners" --seconds 6 --part-ms 500 --part-writes 1 \
            --playlist-bytes "$1" | sed -n 's/^pattern=ll .* cpu_pct_per_1000=\([0-9.]*\).*/\1/p')
        [ -n "$f" ] && fs+=("$f")
    done
    [ ${#fs[@]} -gt 0 ] && printf '%s\n' "${fs[@]}" | sort -n |
        awk -v a="$3" -v b="$4" -v bytes="$1" -v name="$2" \
            '{ v[NR] = $1; all = all (NR > 1 ? "," : "") $1 }
             END { f = (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2
                   printf "floor%s (%d B) %.2f (%s) A/floor %.2f B/floor %.2f\n", name, bytes,
                          f, all, a / f, b / f }'
    return 0
}

# Prints the size of the media playlist of the mount on port $1 (a session of its own, as a
# player's reload without blocking) twice a second for $2 seconds.
playlist_sizes() {
    local url session end
    url="http://127.0.0.1:$1$mount"
    session=$(curl -sf --max-time 2 "$url/hls.m3u8" | grep -v '^#' | grep -m1 . || true)
    [ -n "$session" ] || return 0
    end=$((SECONDS + $2))
    while [ "$SECONDS" -lt "$end" ]; do
        curl -sf --max-time 2 -o /dev/null -w '%{size_download}\n' "$url/$session" || true
        sleep 0.5
    done
}

echo "A = $a"
echo "B = $b"
what=listeners; [ -n "$hls" ] && what="$hls HLS players"
echo "CPU % of one core per 1000 $what (window ${window} ms, $listeners each, ${seconds} s${tls:+; over TLS: $tls}):"
for r in $(seq "$rounds"); do
    run_round | tr '\n' ' '
    echo
done
