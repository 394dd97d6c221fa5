#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tls-compare.sh: what TLS listeners cost, in one run: for each server (Rimecast at the default
# write window, Rimecast in low-latency mode, Debian's icecast2; rimecast-before: a second build
# given with --before, at the default window, to compare two builds in one sitting), one source,
# then N plain listeners, then N TLS listeners (same certificate: a throw-away self-signed
# combined PEM), each held --seconds while the server's CPU and the machine's idle % are
# measured; then a flash crowd of --flash TLS listeners connecting at once (handshakes per
# second: all of them connected / time taken). A server may be named more than once (runs
# alternated: "rimecast-before rimecast rimecast rimecast-before icecast2").
# Loopback only; every phase is bounded. Prints one Markdown table, then each Rimecast row's TLS
# cost per listener against icecast2's when icecast2 ran.
# Usage: tls-compare.sh [--rimecast BIN] [--before BIN] [--icecast BIN]
#                       [--servers "rimecast rimecast-ll icecast2"] [--listeners 2000]
#                       [--seconds 30] [--flash 2000] [--port 19400] [--no-resume]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rimecast=${RIMECAST_BIN:-$here/../rimecast}
before=""
icecast=/usr/bin/icecast2
servers="rimecast rimecast-ll icecast2"
listeners=2000 seconds=30 flash=2000 port=19400 resume=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rimecast) rimecast=$2; shift 2 ;;
        --before) before=$2; shift 2 ;;
        --icecast) icecast=$2; shift 2 ;;
        --servers) servers=$2; shift 2 ;;
        --listeners) listeners=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --flash) flash=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --no-resume) resume=(--tls-no-resume); shift ;;
        *) echo "tls-compare.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$listeners" -le 20000 ] && [ "$flash" -le 20000 ] || { echo "tls-compare.sh: at most 20 000" >&2; exit 2; }
swarm=${SWARM_BIN:-$here/swarm}
[ -x "$swarm" ] || swarm=$here/../build/loadtest/swarm
out=$(mktemp -d "${TMPDIR:-/tmp}/tls-compare.XXXXXX")
chmod 755 "$out"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${KEEP:-}" ] && echo "run directory kept: $out" >&2 || rm -rf "$out"
}
trap cleanup EXIT

# one combined PEM (certificate + key), as Icecast 2.4 wants it
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
    -keyout "$out/key.pem" -out "$out/cert.pem" 2>/dev/null
cat "$out/cert.pem" "$out/key.pem" >"$out/combined.pem"
chmod 644 "$out/combined.pem"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
idle_ticks() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print $5 + $6, t }' /proc/stat; }
hz=$(getconf CLK_TCK)
field() { tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k { v = $2 } END { print v }'; }

# swarm listeners for `seconds` (after 12 s to connect); prints the server's CPU % per 1000, the
# listeners held and the machine's idle % (idle and iowait of all CPUs) over the same seconds
hold_phase() { # pid, port, extra swarm args...
    local pid=$1 p=$2; shift 2
    "$swarm" --port "$p" --listeners "$listeners" --mounts /live --bitrate 128 --connect-rate 1000 \
        --duration $((seconds + 14)) --drain 1 --status "$out/phase.txt" "$@" >/dev/null 2>&1 &
    local sp=$!
    pids+=("$sp")
    sleep 12
    local a b i0 t0 i1 t1; a=$(cpu_ticks "$pid"); read -r i0 t0 <<<"$(idle_ticks)"
    sleep "$seconds"
    b=$(cpu_ticks "$pid"); read -r i1 t1 <<<"$(idle_ticks)"
    local held; held=$(tail -n 1 "$out/phase.txt" | tr ' ' '\n' | awk -F= '$1 == "connected" { print $2 }')
    wait "$sp" 2>/dev/null || true
    awk -v d=$((b - a)) -v hz="$hz" -v s="$seconds" -v n="${held:-0}" \
        -v idle=$((i1 - i0)) -v all=$((t1 - t0)) \
        'BEGIN { if (n > 0) printf "%.2f %d", d / hz / s * 100 * 1000 / n, n; else printf "- 0"
                 printf " %.0f", (all > 0) ? 100 * idle / all : 0 }'
}

echo "| server | plain: CPU %/1000 (held) | TLS: CPU %/1000 (held) | TLS/plain | machine idle % (plain, TLS) | flash of $flash TLS: handshakes/s (full+resumed, errors) |"
echo "|---|---|---|---|---|---|"
rows=()
i=0
for s in $servers; do
    p=$((port + i * 10)); tp=$((p + 1)); i=$((i + 1))
    bin=$rimecast; win=()
    case "$s" in
        rimecast) ;;
        rimecast-before)
            [ -n "$before" ] || { echo "tls-compare.sh: rimecast-before needs --before BIN" >&2; continue; }
            bin=$before ;;
        rimecast-ll) win=(--write-window 0) ;;
        icecast2) bin=$icecast ;;
        *) echo "tls-compare.sh: unknown server $s" >&2; continue ;;
    esac
    mkdir -p "$out/$s"
    "$here/gen-config.sh" --dir "$out/$s" --port "$p" "${win[@]}" --tls-port "$tp" \
        --ssl-cert "$out/combined.pem" >/dev/null
    "$bin" -c "$out/$s/server.xml" >"$out/$s/server.out" 2>&1 &
    spid=$!; pids+=("$spid")
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$p/status-json.xsl" >/dev/null && break; sleep 0.1; done
    "$swarm" --port "$p" --sources 1 --source-mounts /live --bitrate 128 \
        --duration $((3 * seconds + 120)) >/dev/null 2>&1 &
    pids+=("$!")
    sleep 2
    read -r plain plain_n plain_idle <<<"$(hold_phase "$spid" "$p")"
    read -r tls tls_n tls_idle <<<"$(hold_phase "$spid" "$tp" --tls "${resume[@]}")"
    : >"$out/final.txt"
    if [ "$flash" -gt 0 ]; then # --flash 0: no flash crowd
        "$swarm" --port "$tp" --listeners "$flash" --mounts /live --bitrate 128 --tls "${resume[@]}" \
            --max-pending 1000 --duration 30 --drain 2 --status "$out/flash.txt" >/dev/null 2>&1 || true
        grep '^final' "$out/flash.txt" >"$out/final.txt" || true
    fi
    secs=$(field "$out/final.txt" all_connected_s); full=$(field "$out/final.txt" tls_full)
    res=$(field "$out/final.txt" tls_resumed); terr=$(field "$out/final.txt" tls_err)
    hs=$(awk -v s="${secs:--1}" -v n="$flash" 'BEGIN { if (n == 0) print "not run"; else if (s > 0) printf "%.0f", n / s; else print "not all connected" }')
    ratio=$(awk -v a="$plain" -v b="$tls" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }')
    echo "| $s | $plain ($plain_n) | $tls ($tls_n) | $ratio | $plain_idle, $tls_idle | $hs (${full:-0}+${res:-0}, ${terr:-0}) |"
    rows+=("$s $tls")
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    sleep 1
done

# each Rimecast row's TLS listener against icecast2's (the mean of its rows)
ice=$(printf '%s\n' "${rows[@]}" | awk '$1 == "icecast2" && $2 != "-" { s += $2; n++ }
                                         END { if (n) printf "%.2f", s / n }')
if [ -n "$ice" ]; then
    printf '%s\n' "${rows[@]}" | awk -v ice="$ice" '$1 != "icecast2" && $2 != "-" {
        printf "%s: a TLS listener costs %.2f of an icecast2 TLS listener\n", $1, $2 / ice }'
fi
