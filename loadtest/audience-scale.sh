#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# audience-scale.sh: what the session records cost at scale (docs/PERFORMANCE.md, "Audience
# records at scale"). One server and one swarm per run (a paced source on /live, N listeners
# of which R a second leave and connect again with varied user agents and referers), the runs
# one after the other, each with a fresh run directory:
#   off     the audience store and session log off (<database>none, <session-log>none)
#   on      both on (GeoIP too with --geoip: a test database mapping 127.0.0.0/8 to DE)
#   ...     off and on alternate --rounds times, so the noise between like runs shows
#   locked  on, the database held by another process (BEGIN EXCLUSIVE) for the middle third
#   full    on, the database on a tmpfs of --full-kb KB that fills (skipped with --full-kb 0)
#   pg      on, the records into PostgreSQL (a cluster of its own: initdb and pg_ctl from
#           /usr/lib/postgresql/*/bin as the postgres user, a free 127.0.0.1 port)
#   pgaway  as pg, PostgreSQL stopped (fast shutdown, by its PID) for the middle third and
#           started again: the records wait in memory and the spool, then are written
# (pg and pgaway run only when --only names them.) The records per second the store wrote
# (written_total over the window) are a column of their own.
# Per run, over a window of --seconds once all listeners stream: the server's CPU per 1 000
# listeners (sample.py), starving listeners (mean and most, the swarm's counter), the machine's
# idle share, RSS at the end; after the swarm left: sessions ended (session-log lines), records
# in the database, records lost (/metrics) and the lost-records lines of the error log.
#   audience-scale.sh [--listeners 10000] [--churn 100] [--seconds 60] [--rounds 2] [--geoip]
#                     [--full-kb 2048] [--only "off on locked full pg pgaway"] [--rimecast BIN]
#                     [--swarm BIN]
#                     [--keep]
# Runs on 127.0.0.1 in a mktemp directory, as root (the server and the lock holder run as
# nobody). Every process it started is stopped on exit, by PID; the tmpfs it mounted is unmounted.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
listeners=10000; churn=100; seconds=60; rounds=2; geoip=0; full_kb=2048; keep=0; only=""
rimecast=${RIMECAST_BIN:-}; swarm=${SWARM_BIN:-}
while [ $# -gt 0 ]; do
    case "$1" in
        --listeners) listeners=$2; shift 2 ;;
        --churn) churn=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --geoip) geoip=1; shift ;;
        --full-kb) full_kb=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --rimecast) rimecast=$2; shift 2 ;;
        --swarm) swarm=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        *) sed -n 3,20p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
. "$here/checks.sh"
find_binaries audience-scale.sh

pids=(); mounted=""
work=$(mktemp -d "${TMPDIR:-/tmp}/audience-scale.XXXXXX")
chmod 755 "$work"
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "$mounted" ] && umount "$mounted" 2>/dev/null
    pg_stop
    [ "$keep" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

geoip_xml=""
if [ "$geoip" = 1 ]; then
    perl "$top/tests/wire/make_mmdb.pl" "$work/countries.mmdb" 127.0.0.0/8=DE ||
        { echo "audience-scale.sh: cannot write the GeoIP test database" >&2; exit 2; }
    chmod a+r "$work/countries.mmdb"
    geoip_xml="<geoip-db>$work/countries.mmdb</geoip-db>"
fi

# ---- PostgreSQL (the pg and pgaway runs): a cluster of this script's own
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
pgpid=""; pguri=""; pgport=""
as_pg() { su postgres -s /bin/sh -c "$*"; }
psql_su() { "$pgbin/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work/pg" -p "$pgport" -U postgres "$@"; }
pg_start() {
    as_pg "'$pgbin/pg_ctl' -D '$work/pg/data' -l '$work/pg/postgres.log' -w -t 60 -o \
        '-c listen_addresses=127.0.0.1 -p $pgport -k $work/pg' start" >/dev/null ||
        { echo "audience-scale.sh: PostgreSQL did not start" >&2; exit 2; }
    pgpid=$(head -1 "$work/pg/data/postmaster.pid")
}
pg_stop() { # a fast shutdown by the postmaster's PID, waited for
    [ -n "$pgpid" ] || return 0
    kill -INT "$pgpid" 2>/dev/null
    for _ in $(seq 600); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
    pgpid=""
}
pg_init() {
    [ -x "$pgbin/initdb" ] || { echo "audience-scale.sh: no PostgreSQL in /usr/lib/postgresql" >&2; exit 2; }
    mkdir -p "$work/pg"; chown postgres "$work/pg"
    pgport=$(free_port)
    echo pg-pw >"$work/pg/pw"; chown postgres "$work/pg/pw"
    as_pg "'$pgbin/initdb' -D '$work/pg/data' -U postgres --pwfile '$work/pg/pw' --auth-local=trust \
        --auth-host=scram-sha-256 -E UTF8 --no-sync" >"$work/pg/initdb.log" 2>&1 ||
        { echo "audience-scale.sh: initdb failed" >&2; keep=1; exit 2; }
    pg_start
    psql_su -d postgres -c "CREATE ROLE rimecast LOGIN PASSWORD 'rimecast-pw'" >/dev/null
    pguri="postgresql://rimecast:rimecast-pw@127.0.0.1:$pgport/audience"
}
# pg_away DELAY HOLD: PostgreSQL stopped after DELAY s for HOLD s, then started again
pg_away() { sleep "$1"; pg_stop; echo "stopped $(date +%s)"; sleep "$2"; pg_start; echo "started $(date +%s)"; }

# stop_pid PID: SIGTERM, then wait for it (bounded: SIGKILL after 30 s)
stop_pid() {
    kill -TERM "$1" 2>/dev/null
    for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}
field() { grep '^t=' "$1" 2>/dev/null | tail -1 | tr ' ' '\n' | sed -n "s/^$2=//p"; }
metric() { curl -s -m 5 -u admin:hackme "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
records_settled() { # stored+lost unchanged for 2 s (the store's queue is empty), at most 60 s
    local prev=-1 cur
    for _ in $(seq 60); do
        cur=$(metric rimecast_audience_records_written_total)/$(metric rimecast_audience_records_lost_total)
        [ "$cur" = "$prev" ] && return 0
        prev=$cur; sleep 2
    done
}

# thread_ticks PID NAME: CPU ticks (user + system) of PID's threads called NAME
thread_ticks() {
    local t sum=0
    for t in /proc/"$1"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && sum=$((sum + $(awk '{print $14 + $15}' "$t/stat")))
    done
    echo "$sum"
}

# lock_db DB DELAY HOLD: as nobody, after DELAY s hold an exclusive transaction on DB for HOLD s
lock_db() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import sqlite3, sys, time
time.sleep(float(sys.argv[2]))
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
c.execute("BEGIN EXCLUSIVE")
print("locked", time.time(), flush=True)
time.sleep(float(sys.argv[3]))
c.execute("COMMIT")
print("released", time.time(), flush=True)' "$1" "$2" "$3"
}

printf '| run | listeners | churn/s | CPU %%/1000 | store thread %% | records written/s | starving mean/max | swarm turn max ms | machine idle %% | RSS MB | sessions ended | rows | lost | lost-records lines |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'

run() { # NAME MODE
    local name=$1 mode=$2 dir=$work/$1 db=audience.db audience
    mkdir -p "$dir"
    if [ "$mode" = full ]; then
        mkdir -p "$work/small"
        mount -t tmpfs -o "size=${full_kb}k,mode=0777" tmpfs "$work/small" ||
            { echo "| $name | (no tmpfs could be mounted: skipped) |"; return; }
        mounted=$work/small; db=$work/small/audience.db
    fi
    if [ "$mode" = pg ] || [ "$mode" = pgaway ]; then
        [ -n "$pguri" ] || pg_init
        # each run on a store of its own
        psql_su -d postgres -c "DROP DATABASE IF EXISTS audience" -c "CREATE DATABASE audience OWNER rimecast" >/dev/null 2>&1
        db=$pguri
    fi
    if [ "$mode" = off ]; then
        audience="<audience><database>none</database><session-log>none</session-log></audience>"
    else
        audience="<audience><database>$db</database><session-log>sessions.log</session-log>$geoip_xml</audience>"
    fi
    port=$(free_port)
    "$here/gen-config.sh" --dir "$dir" --port "$port" --location "aud-$$-$name" --extra "$audience" >/dev/null || exit 2
    "$rimecast" -c "$dir/server.xml" >"$dir/server.out" 2>&1 &
    local spid=$!; pids+=("$spid")
    for _ in $(seq 100); do curl -s -m 2 "http://127.0.0.1:$port/status-json.xsl" | grep -q "aud-$$-$name" && break; sleep 0.1; done
    "$swarm" --port "$port" --status "$dir/swarm.status" --sources 1 --source-mounts /live \
        --listeners "$listeners" --mounts /live --connect-rate 1000 --retry --churn "$churn" \
        --duration 100000 --drain 10 >"$dir/swarm.out" 2>&1 &
    local wpid=$!; pids+=("$wpid")
    # all launched and streaming but for the few a churn has reconnecting at any moment
    for _ in $(seq 1200); do
        [ "$(field "$dir/swarm.status" listeners)" = "$listeners" ] 2>/dev/null &&
            [ "$(field "$dir/swarm.status" connected)" -ge $((listeners * 99 / 100)) ] 2>/dev/null && break
        sleep 0.1
    done
    sleep 5 # past the burst of the last to connect and into the swarm's first whole window
    local c0 a0 l0 w0; c0=$(field "$dir/swarm.status" churned); a0=$(thread_ticks "$spid" audience)
    w0=$(metric rimecast_audience_records_written_total)
    l0=$(grep -c '^t=' "$dir/swarm.status")
    local lpid=""
    if [ "$mode" = locked ]; then
        lock_db "$dir/log/audience.db" $((seconds / 3)) $((seconds / 3)) >"$dir/lock.out" 2>&1 &
        lpid=$!; pids+=("$lpid")
    elif [ "$mode" = pgaway ]; then
        pg_away $((seconds / 3)) $((seconds / 3)) >"$dir/away.out" 2>&1 &
        lpid=$!; pids+=("$lpid")
    fi
    python3 "$here/sample.py" --pid "$spid" --out "$dir/sample.csv" --swarm-status "$dir/swarm.status" \
        --gen-pids "$wpid" --duration "$seconds"
    [ "$mode" = pgaway ] && wait "$lpid" # PostgreSQL back before the window's records are read
    local c1 a1 l1 w1; c1=$(field "$dir/swarm.status" churned); a1=$(thread_ticks "$spid" audience)
    w1=$(metric rimecast_audience_records_written_total)
    l1=$(grep -c '^t=' "$dir/swarm.status")
    local store_pct; store_pct=$(awk -v d=$((a1 - a0)) -v hz="$(getconf CLK_TCK)" -v s="$seconds" 'BEGIN { printf "%.2f", d / hz / s * 100 }')
    local rss; rss=$(awk '/^VmRSS/ {print $2}' "/proc/$spid/status")
    stop_pid "$wpid"
    records_settled
    local lost; lost=$(metric rimecast_audience_records_lost_total)
    stop_pid "$spid"
    [ -n "$lpid" ] && stop_pid "$lpid"
    pids=() # all stopped: none is signalled again at exit
    local rows=0 lines=0 warns
    [ -f "$dir/log/sessions.log" ] && lines=$(wc -l <"$dir/log/sessions.log")
    [ "$mode" = full ] || db=$dir/log/audience.db
    if [ "$mode" = pg ] || [ "$mode" = pgaway ]; then
        rows=$(psql_su -d audience -c "SELECT count(*) FROM sessions")
    elif [ -f "$db" ]; then
        rows=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM sessions").fetchone()[0])' "$db")
    fi
    warns=$(grep -c 'session records dropped' "$dir/log/error.log")
    if [ "$mode" = full ]; then umount "$mounted"; mounted=""; fi
    python3 - "$dir/sample.csv" "$name" "$((c1 - c0))" "$rss" "$lines" "$rows" "${lost:-?}" "$warns" "$seconds" "$store_pct" "$dir/swarm.status" "$l0" "$l1" "$(( ${w1:-0} - ${w0:-0} ))" <<'PY'
import csv, sys
path, name, churned, rss, lines, rows, lost, warns, secs, store, status, l0, l1, written = sys.argv[1:]
r = [x for x in csv.DictReader(open(path)) if x.get("cpu_pct") and x.get("sw_connected")]
cpu = sum(float(x["cpu_pct"]) for x in r) / len(r)
conn = sum(float(x["sw_connected"]) for x in r) / len(r)
starv = [int(float(x["sw_starving"])) for x in r]
idle = sum(float(x["id"]) for x in r if x.get("id")) / len(r)
# the swarm's longest turn away from epoll_wait over the window: near a second, "starving"
# listeners may only have been read late
ticks = [line for line in open(status) if line.startswith("t=")][int(l0):int(l1)]
loops = [float(kv.split("=")[1]) for line in ticks for kv in line.split()
         if kv.startswith("swarm_loop_max_ms=")]
print(f"| {name} | {conn:.0f} | {int(churned) / float(secs):.0f} | {cpu / conn * 1000:.2f} | {store} "
      f"| {int(written) / float(secs):.0f} "
      f"| {sum(starv) / len(starv):.1f} / {max(starv)} | {max(loops):.0f} | {idle:.0f} "
      f"| {int(rss) / 1024:.0f} | {lines} | {rows} | {lost} | {warns} |")
PY
}

runs=()
for i in $(seq "$rounds"); do runs+=("off$i:off" "on$i:on"); done
runs+=("locked:locked" "pg:pg" "pgaway:pgaway")
[ "$full_kb" -gt 0 ] && runs+=("full:full")
for r in "${runs[@]}"; do
    name=${r%%:*} mode=${r#*:}
    [ -n "$only" ] && ! grep -qw "$mode" <<<"$only" && continue
    [ -z "$only" ] && [ "${mode#pg}" != "$mode" ] && continue
    run "$name" "$mode"
done
