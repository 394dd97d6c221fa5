#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ads-break.sh: N listeners on one 128 kbit/s MP3 mount whose ad breaks ask a local fake ad
# server (adserver-fake.py), then one break that starts for all of them in the same second.
# Prints, for the minute before the break and for the break: the server's CPU, the swarm's
# starving listeners; for the break: ad requests and how long until the last one was asked
# and answered, creatives fetched, impressions and completes counted by the ad server, and the
# longest worker turn (/metrics). docs/ADS.md has the figures.
# Usage: ads-break.sh [--bin build/rimecast] [--listeners 5000] [--ad 15] [--break 30]
#   [--seconds 30] [--window MS]
# Owns a run directory under $TMPDIR, ports 19300..19302; stops only what it started.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../build/rimecast listeners=5000 ad=15 brk=30 seconds=30 window=500
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --listeners) listeners=$2; shift 2 ;;
        --ad) ad=$2; shift 2 ;;
        --break) brk=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --window) window=$2; shift 2 ;;
        *) echo "ads-break.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
swarm=${SWARM_BIN:-$here/swarm}
[ -x "$swarm" ] || swarm=$here/../build/loadtest/swarm
port=19300 adport=19302
out=$(mktemp -d "${TMPDIR:-/tmp}/ads-break.XXXXXX")
chmod 755 "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$out"; }
trap cleanup EXIT

enc() { # enc FILE SECONDS FREQ: 44.1 kHz stereo 128 kbit/s CBR MP3, no tag, no Xing frame
    ffmpeg -hide_banner -loglevel error -y -f lavfi -i "sine=frequency=$3:sample_rate=44100:duration=$2" \
        -ac 2 -c:a libmp3lame -b:a 128k -write_xing 0 -id3v2_version 0 -f mp3 "$1"
}
enc "$out/live.mp3" 120 440
enc "$out/ad.mp3" "$ad" 880

python3 "$here/adserver-fake.py" --port "$adport" --media "$out/ad.mp3" --seconds "$ad" &
pids+=("$!")
mount="<mount type=\"normal\"><mount-name>/live</mount-name><ads>
  <vast-url>http://127.0.0.1:$adport/vast?ip={ip}&amp;s={session}&amp;d={duration}&amp;cb={cachebuster}</vast-url>
  <allow-private>1</allow-private><request-timeout-ms>30000</request-timeout-ms></ads></mount>"
"$here/gen-config.sh" --dir "$out" --port "$port" --write-window "$window" --extra "$mount" >/dev/null
"$bin" -c "$out/server.xml" >"$out/server.out" 2>&1 &
server=$!; pids+=("$server")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/status-json.xsl" >/dev/null && break; sleep 0.1; done
"$swarm" --port "$port" --sources 1 --source-mounts /live --source-file "$out/live.mp3" \
    --bitrate 128 --duration $((seconds * 2 + brk + 120)) >/dev/null 2>&1 &
pids+=("$!")
sleep 3
"$swarm" --port "$port" --listeners "$listeners" --mounts /live --bitrate 128 \
    --connect-rate 1000 --duration $((seconds * 2 + brk + 90)) --status "$out/swarm.status" \
    >/dev/null 2>&1 &
pids+=("$!")
sleep $((listeners / 1000 + 12)) # all connected and past the burst

cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
hz=$(getconf CLK_TCK)
starving() { tail -n 1 "$out/swarm.status" | tr ' ' '\n' | sed -n 's/^starving=//p'; }
connected() { tail -n 1 "$out/swarm.status" | tr ' ' '\n' | sed -n 's/^connected=//p'; }
max_dry() { # the most players dry at one status line from line $1 on
    tail -n +"$1" "$out/swarm.status" | tr ' ' '\n' | sed -n 's/^dry=//p' | sort -n | tail -n 1
}
stalls() { tail -n 1 "$out/swarm.status" | tr ' ' '\n' | sed -n 's/^stalls=//p'; }
max_starving() { # the most starving listeners of any status line from line $1 on
    tail -n +"$1" "$out/swarm.status" | tr ' ' '\n' | sed -n 's/^starving=//p' | sort -n | tail -n 1
}
metric() { curl -sf -u admin:hackme "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
turns() { # worker turns over 10 ms and over 100 ms so far, and the longest
    echo "turns over 10 ms $(metric 'rimecast_worker_slow_turns_total{over_seconds="0.01"}')," \
        "over 100 ms $(metric 'rimecast_worker_slow_turns_total{over_seconds="0.1"}')," \
        "longest $(metric rimecast_worker_turn_max_seconds) s"
}
bytes() { tail -n 1 "$out/swarm.status" | tr ' ' '\n' | sed -n 's/^bytes=//p'; }

echo "listeners connected: $(connected)  (ad $ad s, break $brk s, write window $window ms)"
echo "connecting: $(turns)"
line0=$(wc -l <"$out/swarm.status")
s0=$(stalls)
c0=$(cpu)
sleep "$seconds"
c1=$(cpu)
base_max=$(max_starving "$((line0 + 1))")
echo "before the break: server CPU $(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$seconds" \
    'BEGIN{printf "%.1f", 100 * d / hz / s}') % of a core, starving listeners at most $base_max"
s1=$(stalls)
echo "before the break: players dry at most $(max_dry "$((line0 + 1))") at once, $((s1 - s0)) stalls" \
    "(a player whose buffer ran dry: loadtest/README.md)"

echo "before the break: $(turns)"
line1=$(wc -l <"$out/swarm.status")
b0=$(bytes)
t_break=$(date +%s.%N)
curl -sf -u admin:hackme "http://127.0.0.1:$port/admin/adbreak?mount=/live&duration=$brk" >/dev/null
c2=$(cpu)
sleep "$brk"
c3=$(cpu)
b1=$(bytes)
s2=$(stalls)
sleep 5 # tracking still in flight
stats=$(curl -sf "http://127.0.0.1:$adport/stats")
brk_max=$(max_starving "$((line1 + 1))")
echo "in the break: server CPU $(awk -v d=$((c3 - c2)) -v hz="$hz" -v s="$brk" \
    'BEGIN{printf "%.1f", 100 * d / hz / s}') % of a core, starving listeners at most $brk_max" \
    "(a listener gets its ads faster than they play, then waits for the live stream: the swarm" \
    "counts it starving meanwhile); bytes received $(awk -v d=$((b1 - b0)) -v n="$listeners" \
    -v s="$brk" 'BEGIN{printf "%.0f", 100 * d / (n * 16000 * s)}') % of the break's audio at 128 kbit/s"
echo "in the break: players dry at most $(max_dry "$((line1 + 1))") at once, $((s2 - s1)) stalls"
echo "in the break: $(turns)"
python3 - "$t_break" "$stats" <<'EOF'
import json, sys
t0, s = float(sys.argv[1]), json.loads(sys.argv[2])
c, t = s["counts"], s["times"]
print("ad requests: %d, the first %.2f s and the last %.2f s after the break began"
      % (c.get("vast", 0), t["vast"][0] - t0, t["vast"][1] - t0) if "vast" in t else "no ad request")
print("creative fetched %d time(s); impressions %d (the last %.1f s after the break began); "
      "completes %d (the last %.1f s)" % (
          c.get("media", 0), c.get("impression", 0),
          t.get("impression", (t0, t0))[1] - t0, c.get("complete", 0),
          t.get("complete", (t0, t0))[1] - t0))
EOF
echo "server: rimecast_ads_fills_total $(metric rimecast_ads_fills_total), no fills" \
    "$(metric rimecast_ads_no_fills_total), errors $(metric rimecast_ads_errors_total)," \
    "beacons dropped $(metric rimecast_ads_beacons_dropped_total), failed" \
    "$(metric rimecast_ads_beacons_failed_total)"
