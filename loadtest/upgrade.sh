#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# upgrade.sh: upgrades of a running server under load (docs/UPGRADE.md). N listeners (default
# 10 000) and 10 probe listeners on two swarm sources, then K upgrades (default 20) one after
# another with `rimecast --upgrade`, each once the one before serves and QUIET seconds (default
# 8) have passed. Per upgrade: the hand-over time (SIGUSR2 to the old process's log line), the
# time until the new process serves, its RSS and fds, and in the seconds after it the most
# starving listeners, the slowest listener's rate and the worst probe latency. At the end: the
# listeners lost (goal 0) and the longest stall a listener saw. PASS/FAIL lines as faults.sh;
# exits 1 if a check failed, 3 if the server does not hand over (a tree without it).
#   upgrade.sh [--listeners N] [--upgrades K] [--quiet S] [--rimecast BIN] [--swarm BIN] [--keep]
# Runs on 127.0.0.1 in a mktemp directory, as root (the server drops to nobody). Every process
# it started is stopped on exit, by PID: the server's changes with each upgrade, the pidfile
# names the current one.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
listeners=10000; upgrades=20; quiet=8; keep=0; probes=10
rimecast=${RIMECAST_BIN:-}; swarm=${SWARM_BIN:-}
while [ $# -gt 0 ]; do
    case "$1" in
        --listeners) listeners=$2; shift 2 ;;
        --upgrades) upgrades=$2; shift 2 ;;
        --quiet) quiet=$2; shift 2 ;;
        --rimecast) rimecast=$2; shift 2 ;;
        --swarm) swarm=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        *) sed -n 3,14p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
. "$here/checks.sh"
find_binaries upgrade.sh

pids=()
work=$(mktemp -d "${TMPDIR:-/tmp}/upgrade.XXXXXX")
chmod 755 "$work"
conf=$work/server.xml pidfile=$work/log/server.pid status=$work/lis.status
server_pid() { cat "$pidfile" 2>/dev/null; }
cleanup() {
    local p
    for p in "${pids[@]}" $(server_pid); do kill -TERM "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ "$keep" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port=$(free_port)
token="upgrade-$$-$RANDOM"
"$here/gen-config.sh" --dir "$work" --port "$port" --location "$token" --loglevel 3 >/dev/null || exit 2
"$rimecast" -c "$conf" >"$work/server.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    curl -s -m 2 -u admin:hackme "http://127.0.0.1:$port/admin/stats" | grep -q "$token" && break
    sleep 0.1
done
[ -n "$(server_pid)" ] || { echo "upgrade.sh: the server did not come up" >&2; cat "$work/server.out" >&2; exit 2; }

# status FILE's lines FROM..TO (1-based, TO may be $), KEY of each, one a line
column() { grep '^t=' "$status" 2>/dev/null | sed -n "$1,$2p" | tr ' ' '\n' | sed -n "s/^$3=//p"; }
field() { column '$' '$' "$1"; }
lines() { grep -c '^t=' "$status" 2>/dev/null; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }
fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

"$swarm" --port "$port" --status "$status" --sources 1 --source-mounts /live --listeners "$listeners" \
    --mounts /live --connect-rate 2000 --probe-mount /probe --probe-listeners "$probes" \
    --duration $((upgrades * (quiet + 70) + 300)) --drain 5 >"$work/swarm.out" 2>&1 &
swarm_pid=$!; pids+=($swarm_pid)
want=$((listeners + probes))
for _ in $(seq 900); do [ "$(field connected)" = "$want" ] 2>/dev/null && break; sleep 0.1; done
check "$want listeners streaming (probes included)" [ "$(field connected)" = "$want" ]
sleep "$quiet" # a baseline of starving counts and probe latency on this (shared) machine
l0=$(lines)
info "baseline ($quiet s): starving at most $(column $((l0 - quiet + 1)) "$l0" starving | sort -g | tail -1)," \
    "probe p99 at most $(column $((l0 - quiet + 1)) "$l0" lat_p99_ms | sort -g | tail -1) ms," \
    "slowest listener $(column $((l0 - quiet + 1)) "$l0" rate_min_kbps | awk '$1 >= 0' | sort -g | head -1) kbit/s," \
    "server RSS $(rss_kb "$(server_pid)") KB"

printf '     %-3s %-15s %9s %9s %9s %5s %9s %11s %11s\n' n "PIDs" "handover" "serving" "RSS KB" fds \
    starving "min kbit/s" "p99 ms"
done_n=0 unsupported=0 first_rss="" last_rss="" first_fds="" last_fds="" olds_left=""
for i in $(seq "$upgrades"); do
    old=$(server_pid)
    l0=$(lines)
    out=$("$rimecast" --upgrade -c "$conf" --timeout 60 2>&1); rc=$?
    if [ "$rc" = 3 ]; then
        unsupported=1; info "$out"; break
    elif [ "$rc" != 0 ]; then
        fail "upgrade $i: rimecast --upgrade exited $rc: $out"; break
    fi
    new=$(server_pid)
    handover=$(echo "$out" | sed -n 's/.* in \([0-9.]*\) s, serving after.*/\1/p')
    serving=$(echo "$out" | sed -n 's/.*serving after \([0-9.]*\) s.*/\1/p')
    sleep "$quiet"
    l1=$(lines)
    kill -0 "$old" 2>/dev/null && olds_left="$olds_left $old"
    rss=$(rss_kb "$new"); [ -z "$first_rss" ] && first_rss=$rss; last_rss=$rss
    fds=$(fd_count "$new"); [ -z "$first_fds" ] && first_fds=$fds; last_fds=$fds
    printf '     %-3s %-15s %8ss %8ss %9s %5s %9s %11s %11s\n' "$i" "$old>$new" "$handover" "$serving" "$rss" \
        "$fds" "$(column $((l0 + 1)) "$l1" starving | sort -g | tail -1)" \
        "$(column $((l0 + 1)) "$l1" rate_min_kbps | awk '$1 >= 0' | sort -g | head -1)" \
        "$(column $((l0 + 1)) "$l1" lat_p99_ms | sort -g | tail -1)"
    echo "$handover" >>"$work/handover.times"
    done_n=$i
done

if [ "$unsupported" = 1 ]; then
    echo "SKIP the server does not hand over (rimecast --upgrade exit 3): nothing to measure with $rimecast"
    exit 3
fi
sc=$(field server_closed); conn=$(field connected); ce=$(field conn_err)
check "$done_n of $upgrades upgrades done" [ "$done_n" = "$upgrades" ]
check "no listener lost: server_closed=$sc, connected=$conn of $want, conn_err=$ce" \
    [ "$sc" = 0 -a "$conn" = "$want" ]
check "every old process exited after its hand-over (left:${olds_left:- none})" [ -z "$olds_left" ]
if [ -s "$work/handover.times" ]; then
    info "hand-over (SIGUSR2 to the log line): $(sort -g "$work/handover.times" | awk '{a[NR]=$1} END {printf "min %.2f s, median %.2f s, max %.2f s", a[1], a[int((NR+1)/2)], a[NR]}')"
fi
# the longest stall: the worst probe latency says it for the probe listeners (a marker written
# during a stall arrives that much later); for all listeners the slowest one's rate over the
# swarm's window bounds it: a listener that got r of b kbit/s over W s missed W*(1-r/b) s
# (compare with the baseline's slowest: the write window and the swarm's slack alone cost some)
window=4 bitrate=128
slow=$(column 1 '$' rate_min_kbps | awk '$1 >= 0' | sort -g | head -1)
info "longest stall: probe latency at most $(column 1 '$' lat_p99_ms | sort -g | tail -1) ms (p99 of a second);" \
    "slowest listener $slow kbit/s over ${window} s, i.e. at least $(python3 -c "print('%.1f' % max(0, $window * (1 - ${slow:-$bitrate} / $bitrate)))") s without data"
[ -n "$first_rss" ] && check "RSS after the last upgrade within 10 % of after the first: $first_rss -> $last_rss KB" \
    python3 -c "import sys; sys.exit(0 if $last_rss <= $first_rss * 1.1 else 1)"
[ -n "$first_fds" ] && check "fds after the last upgrade within 2 of after the first (the same clients): $first_fds -> $last_fds" \
    [ $((last_fds - first_fds)) -le 2 ]
kill -TERM "$swarm_pid"; wait "$swarm_pid" 2>/dev/null
check "server alive" kill -0 "$(server_pid)"
echo "summary upgrade: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
