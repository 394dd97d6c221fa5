#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test_toy.sh: the load-test suite at toy scale, run by `make check` against the built server.
# Usage: test_toy.sh [SERVER_BINARY]   (default $RIMECAST_BIN; icecast2 works the same way)
# A few sources (ezstream via ramp-sources.sh, libshout via swarm, the latency probe) and a few
# hundred listeners (ramp-listeners.sh) for about 10 s, sampled by sample.py and drawn by plot.py.
# Checks that CSV and PNG are produced, that the columns hold sane values, and that the bytes the
# swarm received per mount equal the bytes the server logged as sent in access.log. It asserts
# nothing about speed. Ends with "N passed, N failed"; exits non-zero if anything failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
server=${1:-${RIMECAST_BIN:-}}
swarm=${SWARM_BIN:-}
listeners=${TOY_LISTENERS:-300}
run_for=${TOY_SECONDS:-10}
passed=0; failed=0
ok() { passed=$((passed + 1)); echo "ok   - $*"; }
bad() { failed=$((failed + 1)); echo "FAIL - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }
# counts "ok   - ..." / "FAIL - ..." lines printed by the Python checks
tally() {
    local line
    while read -r line; do
        case "$line" in
            "ok "*) passed=$((passed + 1)); echo "$line" ;;
            FAIL*) failed=$((failed + 1)); echo "$line" ;;
            *) failed=$((failed + 1)); echo "FAIL - $line" ;;
        esac
    done
}

[ -n "$server" ] && [ -x "$server" ] || { echo "usage: test_toy.sh SERVER_BINARY" >&2; bad "server binary"; finish; }
work=$(mktemp -d "${TMPDIR:-/tmp}/loadtest-toy.XXXXXX")
chmod 755 "$work"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ "${KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

# The load generator: the built one, else build it here from source.
for cand in "$swarm" "${RIMECAST_BUILDDIR:-}/loadtest/swarm" "$here/swarm"; do
    [ -n "$cand" ] && [ -x "$cand" ] && { swarm=$cand; break; }
done
if [ -z "$swarm" ] || [ ! -x "$swarm" ]; then
    swarm=$work/swarm
    gcc -std=gnu11 -O2 -Wall -Wextra -pthread "$here/swarm.c" -o "$swarm" \
        $(pkg-config --cflags --libs shout) -lm || { bad "build swarm"; finish; }
fi
python=python3
free_port() { $python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
token="loadtest-toy-$$-$RANDOM"
"$here/gen-config.sh" --dir "$work" --port "$port" --location "$token" >/dev/null || { bad "gen-config"; finish; }

"$server" -c "$work/server.xml" >"$work/server.out" 2>&1 &
server_pid=$!; pids+=($server_pid)
up=0
for _ in $(seq 50); do
    curl -sf -u admin:hackme "http://127.0.0.1:$port/admin/stats" | grep -q "$token" && { up=1; break; }
    sleep 0.2
done
check "the server started here answers /admin/stats" [ $up -eq 1 ]
[ $up -eq 1 ] || finish

ezmounts=""
if command -v ezstream >/dev/null; then
    "$here/ramp-sources.sh" --dir "$work/src" --port "$port" --count 2 --step 2 --delay 1 \
        --prefix /toy 2>"$work/ramp-sources.err" &
    ramp_src=$!; pids+=($ramp_src)
    for _ in $(seq 50); do
        n=$(curl -s -u admin:hackme "http://127.0.0.1:$port/admin/stats" | grep -o '<sources>[0-9]*' | tr -dc 0-9)
        [ "${n:-0}" -ge 2 ] && break
        sleep 0.2
    done
    check "ramp-sources.sh brought up 2 ezstream sources" [ "${n:-0}" -ge 2 ]
    ezmounts=",/toy%d:1-2"
fi

"$here/ramp-listeners.sh" --dir "$work/lis" --port "$port" --listeners "$listeners" \
    --mounts "/sw%d:1-2$ezmounts" --connect-rate 200 --probe-mount /probe --probe-listeners 5 \
    --swarm "$swarm" -- --sources 2 --source-mounts "/sw%d:1-2" --drain 15 2>"$work/ramp-listeners.err" &
ramp_lis=$!; pids+=($ramp_lis)
for _ in $(seq 50); do [ -s "$work/lis/status.list" ] && break; sleep 0.1; done
"$python" "$here/sample.py" --pid "$server_pid" --out "$work/samples.csv" \
    --swarm-status "$(cat "$work/lis/status.list")" --gen-pid-file "$work/lis/swarm.pids" \
    --sources-file "$work/src/sources.count" --stats-url "http://127.0.0.1:$port/admin/stats" \
    --stats-every 2 &
sampler=$!; pids+=($sampler)

# Listeners woken for 2.5 s of stream at a time (--rcvlowat 40000) hold most of what the server
# wrote unread in their sockets: judged on bytes read they would starve every few seconds, judged
# on bytes delivered (the rule) they must not; the trace must hold their reads and loop turns.
"$swarm" --port "$port" --sources 1 --source-mounts /lowat --listeners 10 --mounts /lowat \
    --rcvlowat 40000 --trace "$work/lowat.trace" --trace-every 5 --duration 14 --drain 2 \
    --status "$work/lowat.status" 2>"$work/lowat.err" &
lowat=$!; pids+=($lowat)

sleep "$run_for"
wait "$lowat"
judged=$(grep -s '^t=' "$work/lowat.status" | grep -v ' eligible=0 ')
count_over_0() { echo "$judged" | tr ' ' '\n' | grep -c "^$1=[1-9]"; }
by_read=$(count_over_0 starving_read); by_delivered=$(count_over_0 starving)
check "woken every 2.5 s: starving on bytes read in $by_read seconds, on bytes delivered in $by_delivered" \
    [ "$by_read" -ge 2 -a "$by_delivered" -lt "$by_read" ]
traced=$(grep -s '^r,' "$work/lowat.trace" | cut -d, -f3 | sort -u | tr '\n' ' ')
turns=$(grep -sc '^e,' "$work/lowat.trace"); ticks5=$(grep -sc '^k,[0-9]*,5,' "$work/lowat.trace")
check "trace: reads of listeners 0 and 5 only ($traced), loop turns ($turns), tick samples ($ticks5)" \
    [ "$traced" = "0 5 " -a "${turns:-0}" -gt 0 -a "${ticks5:-0}" -gt 4 ]
# Sources stop first, so every listener reads to the server's end of stream before it closes.
[ -n "$ezmounts" ] && { kill "$ramp_src"; wait "$ramp_src" 2>/dev/null; }
kill -TERM $(cat "$work/lis/swarm.pids")
wait "$ramp_lis"; rc=$?
check "ramp-listeners.sh exit status 0" [ $rc -eq 0 ]
sleep 1.5
kill "$sampler"; wait "$sampler" 2>/dev/null
kill "$server_pid"; wait "$server_pid" 2>/dev/null

status=$work/lis/swarm.0.status
final=$(grep '^final ' "$status")
check "swarm printed its final line" [ -n "$final" ]
field() { echo "${2:-$final}" | tr ' ' '\n' | sed -n "s/^$1=//p"; } # $1 of a status line ($2, else final)
streamed=$(awk '{n+=$2} END{print n+0}' "$work"/lis/swarm.*.mounts 2>/dev/null)
check "all $((listeners + 5)) listeners streamed" [ "${streamed:-0}" -eq $((listeners + 5)) ]
check "no connect errors, rejections or listeners cut by the swarm" \
    [ "$(field conn_err)/$(field rejected)/$(field closed_by_us)" = 0/0/0 ]
check "swarm sources sent bytes without errors" [ "$(field src_err)" = 0 -a "$(field src_bytes)" -gt 0 ]
check "latency probe measured markers" [ "$(field lat_n)" -gt 0 ]

"$python" - "$work/samples.csv" "$listeners" > "$work/csv.checks" 2>&1 <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
want = int(sys.argv[2])
def col(name):
    return [float(r[name]) for r in rows if r.get(name) not in ("", None)]
def check(what, cond):
    print(("ok   - " if cond else "FAIL - ") + what)
check("CSV has at least 5 rows", len(rows) >= 5)
check("RSS > 0 and VSZ >= RSS", all(v > 0 for v in col("rss_kb")) and
      all(float(r["vsz_kb"]) >= float(r["rss_kb"]) for r in rows if r["rss_kb"]))
check("CPU seconds never decrease", all(b >= a for a, b in zip(col("cpu_s"), col("cpu_s")[1:])))
check("server CPU % within [0, 100 x cores]", all(0 <= v <= 100 * 64 for v in col("cpu_pct")))
check("threads >= 1", all(v >= 1 for v in col("threads")))
check(f"server held >= {want} fds at some point", max(col("fds") or [0]) >= want)
check("us+sy+wa+id <= 100", all(float(r["us"]) + float(r["sy"]) + float(r["wa"]) + float(r["id"]) <= 100.5
                                for r in rows if r["us"]))
check("packets flowed on lo", max(col("tx_pps") or [0]) > 0)
check(f"swarm reported {want + 5} listeners connected", max(col("sw_connected") or [0]) == want + 5)
check("server stats saw the sources", max(col("srv_sources") or [0]) >= 3)
check("swarm bytes grow", col("sw_bytes") == sorted(col("sw_bytes")) and max(col("sw_bytes") or [0]) > 0)
EOF
tally < "$work/csv.checks"

# Byte accounting: access.log (bytes incl. response header) vs swarm per mount (body + header).
"$python" - "$work/log/access.log" "$work"/lis/swarm.*.mounts > "$work/bytes.checks" 2>&1 <<'EOF'
import re, sys
logged = {}
pat = re.compile(r'"GET (\S+) [^"]*" (\d{3}) (\d+) "[^"]*" "([^"]*)"')
for line in open(sys.argv[1], errors="replace"):
    m = pat.search(line)
    if m and m.group(2) == "200" and m.group(4) == "swarm/1":
        n, b = logged.get(m.group(1), (0, 0))
        logged[m.group(1)] = (n + 1, b + int(m.group(3)))
got = {}
for path in sys.argv[2:]:
    for line in open(path):
        mount, n, body, hdr = line.split()
        pn, pb = got.get(mount, (0, 0))
        got[mount] = (pn + int(n), pb + int(body) + int(hdr))
for mount in sorted(got):
    ok = got[mount] == logged.get(mount)
    print(("ok   - " if ok else "FAIL - ") +
          f"bytes on {mount}: swarm {got[mount]} vs access.log {logged.get(mount)} (listeners, bytes)")
EOF
tally < "$work/bytes.checks"

# The floor as compare.sh's floor-ll runs it with --timed: two threads on one port, each pass's
# chunk opening with a marker the swarm's listeners time on arrival.
floor=""
for cand in "${FLOOR_BIN:-}" "${RIMECAST_BUILDDIR:-}/loadtest/writev_floor" "$here/writev_floor"; do
    [ -n "$cand" ] && [ -x "$cand" ] && { floor=$cand; break; }
done
if [ -n "$floor" ]; then
    fport=$(free_port)
    "$floor" --port "$fport" --chunk 1600 --threads 2 --marker --duration 9 >"$work/floor.status" 2>&1 &
    fpid=$!; pids+=($fpid)
    for _ in $(seq 50); do grep -q '^t=' "$work/floor.status" && break; sleep 0.1; done
    "$swarm" --port "$fport" --listeners 40 --mounts /f --connect-rate 400 --time-listeners 40 \
        --duration 5 --drain 1 --status "$work/floor-swarm.status" 2>"$work/floor-swarm.err"
    wait "$fpid"
    spread=$(field by_thread "$(grep '^t=' "$work/floor.status" | grep ' listeners=40 ' | tail -1)")
    arr_n=$(field arr_n "$(grep '^final ' "$work/floor-swarm.status")")
    check "writev_floor --threads 2: 40 clients spread over both threads (${spread:-none})" \
        [ -n "$spread" -a "${spread#0/}" = "$spread" -a "${spread%/0}" = "$spread" ]
    check "writev_floor --marker: the swarm timed its markers on arrival (arr_n=${arr_n:-none})" \
        [ "${arr_n:-0}" -gt 0 ]
else
    bad "writev_floor binary"
fi

"$python" "$here/plot.py" --all --out "$work/plots" "$work/samples.csv=toy" > "$work/plots.list" 2>&1
check "plot.py exit status 0" [ $? -eq 0 ]
npng=0
for f in $(grep '\.png$' "$work/plots.list"); do
    [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] && npng=$((npng + 1))
done
check "plot.py wrote 8 PNG files" [ $npng -eq 8 ]
finish
