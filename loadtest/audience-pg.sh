#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# audience-pg.sh: how long /admin/audience.json takes on the PostgreSQL store of a network
# (docs/PERFORMANCE.md, "Audience figures on PostgreSQL"). Makes a PostgreSQL cluster of its
# own (initdb and pg_ctl from /usr/lib/postgresql/*/bin, run as the postgres user in a mktemp
# directory, on a free 127.0.0.1 port), lets a server make the schema, fills the sessions table
# with N sessions over the D days up to now from three servers (the sessions of
# audience-figures.sh: a fifth under a minute, most minutes to hours, one in 200 days long; a
# dozen mounts and countries; returning listeners), then starts a server on it and times the
# figures: the last 30 days by day first (nothing kept yet: every day made), then --repeat times
# again (the days before today read from the figures the first ask kept), the last 7 days by
# day, the last 24 h by hour, one server's 30 days by day (first, then again), and the 30 days
# as one period (never kept); then, the kept figures forgotten, a server started anew makes the
# days' figures ahead by itself (as it does 10 s after it connects, then every 10 minutes) and
# the 30 days by day are asked once it said so. With --sqlite the same sessions go into an
# SQLite store too and a server on it answers the same questions: "same" says whether the two
# answers are equal. One session in 33 is a robot's and one in 97 over the concurrency limit
# (invalid traffic): the queries ask for the net figures (traffic=net), and the 30 days by day
# once more for the gross ones. With --before BIN a build from before invalid traffic was told
# apart answers the same questions first, on the same store (the figures it kept forgotten
# before the server under test starts: they count every session). With --cold, the first ask
# of each store comes cold (the server and PostgreSQL stopped, the page cache dropped, both
# started again: root only), and after the days made ahead the 30 days by day and one
# server's are asked once more cold. With --keys every session has its listener's key (32 hex
# digits, as the servers write them: the figures follow pauses by key); without, none (the
# records of servers from before keys, counted by address and agent).
# Prints a table: seconds (the first ask, the median of the others), the CPU seconds per ask of
# the server and of PostgreSQL's processes (user and system, from /proc: what the asks cost,
# which other work on a busy machine moves far less than the time), the machine's idle % while
# they ran, the periods and rows answered, and whether the answer is the first store's (with
# --before: the build before's, for the first store).
#   audience-pg.sh [--sessions 1000000] [--days 30] [--repeat 3] [--sqlite] [--rimecast BIN]
#                  [--before BIN] [--keep] [--cold] [--keys]
# Run it under the machine's measurement lock when others measure (flock LOCKFILE ...). As
# root (PostgreSQL runs as postgres, the server drops to nobody); every process it started is
# stopped on exit, by PID.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
sessions=1000000; days=30; repeat=3; sqlite=0; keep=0; bin=""; before=""; cold_runs=0; keys=0
while [ $# -gt 0 ]; do
    case "$1" in
        --sessions) sessions=$2; shift 2 ;;
        --days) days=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --sqlite) sqlite=1; shift ;;
        --rimecast) bin=$2; shift 2 ;;
        --before) before=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        --cold) cold_runs=1; shift ;;
        --keys) keys=1; shift ;;
        *) sed -n 3,34p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
for c in "$bin" "${RIMECAST_BIN:-}" "$top/build/rimecast" "$top/rimecast"; do
    [ -n "$c" ] && [ -x "$c" ] && { bin=$c; break; }
done
[ -x "$bin" ] || { echo "audience-pg.sh: rimecast binary not found" >&2; exit 2; }
[ -z "$before" ] || [ -x "$before" ] || { echo "audience-pg.sh: no binary at $before" >&2; exit 2; }
run_bin=$bin
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "audience-pg.sh: no PostgreSQL in /usr/lib/postgresql" >&2; exit 2; }

spid=""; pgpid=""
work=$(mktemp -d "${TMPDIR:-/tmp}/audience-pg.XXXXXX")
chmod 755 "$work"
chown postgres "$work"
cleanup() {
    [ -n "$spid" ] && stop_pid "$spid"
    if [ -n "$pgpid" ]; then
        kill -INT "$pgpid" 2>/dev/null
        for _ in $(seq 600); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
    fi
    [ "$keep" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# stop_pid PID: SIGTERM, then wait for it (bounded: SIGKILL after 30 s)
stop_pid() {
    kill -TERM "$1" 2>/dev/null
    for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
as_pg() { su postgres -s /bin/sh -c "$*"; }
psql_su() { "$pgbin/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "$pgport" -U postgres "$@"; }

# the cluster: passwords over TCP, trust on its socket for this script
pgport=$(free_port)
echo rimecast-pw >"$work/pw"; chown postgres "$work/pw"
as_pg "'$pgbin/initdb' -D '$work/data' -U postgres --pwfile '$work/pw' --auth-local=trust \
    --auth-host=scram-sha-256 -E UTF8 --no-sync" >"$work/initdb.log" 2>&1 ||
    { echo "audience-pg.sh: initdb failed (see $work/initdb.log)" >&2; keep=1; exit 2; }
pg_start() {
    as_pg "'$pgbin/pg_ctl' -D '$work/data' -l '$work/postgres.log' -w -t 60 -o \
        '-c listen_addresses=127.0.0.1 -p $pgport -k $work -c shared_buffers=512MB' start" \
        >/dev/null || { echo "audience-pg.sh: PostgreSQL did not start" >&2; keep=1; exit 2; }
    pgpid=$(head -1 "$work/data/postmaster.pid")
}
pg_start
psql_su -c "CREATE ROLE rimecast LOGIN PASSWORD 'rimecast-pw'" -c "CREATE DATABASE audience OWNER rimecast"
uri="postgresql://rimecast:rimecast-pw@127.0.0.1:$pgport/audience"

# start DB: a server on that store (PID in $spid, port in $port) answering its figures
start() {
    port=$(free_port)
    "$here/gen-config.sh" --dir "$work/srv" --port "$port" --location "audpg-$$" \
        --loglevel 3 \
        --extra "<audience><database>$1</database><session-log>none</session-log><server-name>bench</server-name></audience>" \
        >/dev/null || exit 2
    "$run_bin" -c "$work/srv/server.xml" >>"$work/server.out" 2>&1 &
    spid=$!
    for _ in $(seq 600); do
        [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -u admin:hackme \
            "http://127.0.0.1:$port/admin/audience.json?from=0&to=1&period=all")" = 200 ] && return 0
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    echo "audience-pg.sh: the server did not start (see $work/server.out)" >&2
    exit 2
}

mkdir -p "$work/srv"
start "$uri"                        # the schema
stop_pid "$spid"; spid=""
if [ "$sqlite" = 1 ]; then
    start "audience.db"
    stop_pid "$spid"; spid=""
fi

now=$(date +%s)
echo "filling the store: $sessions sessions over $days days" >&2
# a partition for each day (as the servers' role: they are its own), the sessions, and the
# versions of the hours they cover, as the servers' writes leave them
"$pgbin/psql" -X -q -v ON_ERROR_STOP=1 "$uri" -c "SELECT rimecast_day_partition(d)
    FROM generate_series(($now - ($days + 8) * 86400) / 86400, $now / 86400) AS d" >/dev/null
python3 - "$sessions" "$days" "$now" "$work/srv/log/audience.db" "$sqlite" "$keys" <<'PY' |
import hashlib, random, sqlite3, sys, uuid
n, days, now, db, with_sqlite = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
with_keys = sys.argv[6] == "1"
rnd = random.Random(1)
HOUR, DAY = 3600000, 86400000
mounts = ["/live", "/live.aac", "/live-low", "/hq.ogg", "/classic", "/jazz", "/rock", "/news",
          "/kids", "/talk", "/chill", "/event"]
weights = [30, 15, 10, 8, 8, 6, 6, 5, 4, 3, 3, 2]
countries = ["DE", "FR", "GB", "US", "NL", "AT", "CH", "BE", "ES", "IT", "PL", "BR", None]
agents = ["VLC/3.0.20 LibVLC/3.0.20", "foobar2000/2.1", "Lavf/60.16.100", "iTunes/12.13",
          "Winamp/5.9", "RadioDroid/0.86", "Sonos/79.1", "AppleCoreMedia/1.0.0.21E236",
          "Echo/1.0 (Alexa)", "curl/8.5.0", None] + [
          "Mozilla/5.0 (X11; Linux x86_64; rv:%d.0) Gecko/20100101 Firefox/%d.0" % (v, v)
          for v in range(100, 125)]
servers = ["edge1", "edge2", "edge3"]
listeners = max(1, n // 3)  # most come back
end_ms, span = now * 1000, int(days * DAY)

def length():
    r = rnd.random()
    if r < 0.2:
        return rnd.randint(2000, 59000)                 # too short to qualify
    if r < 0.995:
        return min(int(rnd.lognormvariate(7.3, 1.2)) * 1000, 12 * HOUR)  # minutes to hours
    return rnd.randint(DAY, 7 * DAY)                    # a speaker left on

con = sqlite3.connect(db) if with_sqlite else None
if con:
    con.execute("BEGIN")
batch = []
def t(v):
    return "\\N" if v is None else v
out = sys.stdout
for i in range(n):
    start = end_ms - rnd.randrange(span)
    who = rnd.randrange(listeners)
    mount = rnd.choices(mounts, weights)[0]
    row = (str(uuid.UUID(int=rnd.getrandbits(128))), servers[who % 3 if i % 4 else i % 3], i + 1,
           mount, mount, start, min(start + length(), end_ms), 100000,
           "10.%d.%d.%d" % (who >> 16 & 255, who >> 8 & 255, who & 255),
           agents[who % len(agents)], countries[who % len(countries)], "client_left",
           int(rnd.random() < 0.3),
           hashlib.md5(b"listener %d" % who).hexdigest() if with_keys else None)
    out.write("\t".join(str(t(v)) for v in row[:9]) + "\t%s\t\\N\t\\N\t%s\t%s\t%d\t%s\n"
              % (t(row[9]), t(row[10]), row[11], row[12], t(row[13])))
    if con:
        batch.append(row[2:] + (row[1],))
        if len(batch) == 50000:
            con.executemany("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms,"
                            " bytes, ip, user_agent, country, ended, preroll, listener_key,"
                            " server) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", batch)
            batch = []
if con:
    if batch:
        con.executemany("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms,"
                        " bytes, ip, user_agent, country, ended, preroll, listener_key, server)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", batch)
    con.execute("COMMIT")
    with con:
        con.execute("UPDATE sessions SET invalid = CASE WHEN conn_id % 33 = 0 THEN 'bot'"
                    " ELSE 'concurrent' END WHERE conn_id % 33 = 0 OR conn_id % 97 = 0")
    con.close()
PY
"$pgbin/psql" -X -q -v ON_ERROR_STOP=1 "$uri" -c "COPY sessions (record_id, server, conn_id,
    mount, served, start_ms, end_ms, bytes, ip, user_agent, referer, \"user\", country, ended,
    preroll, listener_key) FROM STDIN" || exit 2
"$pgbin/psql" -X -q -v ON_ERROR_STOP=1 "$uri" -c "INSERT INTO session_hours (hour, version,
    longest_ms) SELECT h, nextval('session_version'), max(CASE WHEN h = start_ms / 3600000 THEN
    greatest(end_ms - start_ms, 0) ELSE 0 END) FROM sessions, generate_series(start_ms / 3600000,
    greatest(end_ms - 1, start_ms) / 3600000) AS h GROUP BY h
    ON CONFLICT (hour) DO UPDATE SET version = excluded.version,
    longest_ms = greatest(session_hours.longest_ms, excluded.longest_ms)" || exit 2
# invalid traffic (the column is the schema's since version 4)
"$pgbin/psql" -X -q -v ON_ERROR_STOP=1 "$uri" -c "UPDATE sessions SET invalid = CASE WHEN
    conn_id % 33 = 0 THEN 'bot' ELSE 'concurrent' END WHERE conn_id % 33 = 0 OR conn_id % 97 = 0" \
    || exit 2
psql_su -d audience -c "VACUUM ANALYZE" || exit 2
chown nobody "$work"/srv/log/audience.db* 2>/dev/null

# ask NAME QUERY ASKS STORE-INDEX QUERY-INDEX: times the query ASKS times, prints its row
ask() {
    local name=$1 q=$2 asks=$3 si=$4 qi=$5
    times=(); read -r i0 t0 < <(cpu_now); s0=$(server_cpu); d0=$(db_cpu)
    for _ in $(seq "$asks"); do
        times+=("$(curl -s -m 600 -u admin:hackme -o "$work/answer.json" -w '%{time_total}' \
            "http://127.0.0.1:$port/admin/audience.json?$q")")
    done
    read -r i1 t1 < <(cpu_now); s1=$(server_cpu); d1=$(db_cpu)
    cpu=$(awk -v a="$s0" -v b="$s1" -v c="$d0" -v d="$d1" -v n="$asks" \
        'BEGIN { printf "%.2f | %.2f", (b - a) / n, (d - c) / n }')
    [ "$si" = b ] && cp "$work/answer.json" "$work/before-$qi.json"
    [ "$si" = 0 ] && cp "$work/answer.json" "$work/first-$qi.json"
    same=-; [ "$si" != 0 ] && [ "$si" != b ] && { same=no; cmp -s "$work/answer.json" "$work/first-$qi.json" && same=yes; }
    [ "$si" = 0 ] && [ -f "$work/before-$qi.json" ] &&
        { same=no; cmp -s "$work/answer.json" "$work/before-$qi.json" && same=yes; }
    read -r periods rows < <(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["periods"]
print(len({e["start"] for e in p}), len(p))' "$work/answer.json" 2>/dev/null || echo "? ?")
    sorted=$(printf '%s\n' "${times[@]}" | sort -g)
    median=$(sed -n "$(( (asks + 1) / 2 ))p" <<<"$sorted"); slowest=$(tail -1 <<<"$sorted")
    idle=$(awk -v i="$((i1 - i0))" -v t="$((t1 - t0))" 'BEGIN { printf "%.0f", t ? 100 * i / t : 0 }')
    printf '| %s | %s | %s | %.2f | %.2f | %s | %s | %s | %s | %s |\n' "$store" "$name" "$asks" \
        "$median" "$slowest" "$cpu" "$idle" "$periods" "$rows" "$same"
}

# CPU seconds so far (user and system) of the server, and of PostgreSQL's processes going on
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ t += $14 + $15 } END { printf "%.2f", t / hz }' "$@" 2>/dev/null; }
server_cpu() { proc_cpu "/proc/$spid/stat"; }
db_cpu() {  # its processes going on, and those that ended (parallel workers: the postmaster's
            # children's times)
    local p files=() reaped
    for p in $(pgrep -P "$pgpid"); do files+=("/proc/$p/stat"); done
    reaped=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15 + $16 + $17) / hz }' \
        "/proc/$pgpid/stat")
    awk -v a="$(proc_cpu "${files[@]}")" -v b="$reaped" 'BEGIN { printf "%.2f", a + b }'
}
# cold STORE: the server and PostgreSQL stopped, the kernel's page cache dropped (as root:
# the database's files are read from the disk again), both started again
cold() {
    stop_pid "$spid"; spid=""
    kill -INT "$pgpid" 2>/dev/null
    for _ in $(seq 600); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
    sync
    echo 3 2>/dev/null >/proc/sys/vm/drop_caches ||
        echo "audience-pg.sh: the page cache could not be dropped (not root?)" >&2
    pg_start
    start "$1"
}

# the machine's idle jiffies and all jiffies
cpu_now() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t }' /proc/stat; }

d30="from=$((now - 30 * 86400))&to=$now&period=day&traffic=net"
queries=("30 days by day, nothing kept|$d30|1"
         "30 days by day, again|$d30|$repeat"
         "7 days by day|from=$((now - 7 * 86400))&to=$now&period=day&traffic=net|$repeat"
         "24 h by hour|from=$((now - 86400))&to=$now&period=hour&traffic=net|$repeat"
         "one server, 30 days by day|server=edge2&$d30|1"
         "one server, 30 days by day, again|server=edge2&$d30|$repeat"
         "30 days as one period|from=$((now - 30 * 86400))&to=$now&period=all&traffic=net|1"
         "30 days by day, gross, nothing kept|${d30%net}gross|1"
         "30 days by day, gross, again|${d30%net}gross|$repeat")
printf '\n%s sessions over %s days from 3 servers\n\n' "$sessions" "$days"
printf '| store | query | asks | median s | slowest s | server CPU s | database CPU s | machine idle %% | periods | rows | same |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
stores=("PostgreSQL|$uri")
[ "$sqlite" = 1 ] && stores+=("SQLite|audience.db")
if [ -n "$before" ]; then  # the build before, on the same store, first
    run_bin=$before store="PostgreSQL, before"
    start "$uri"
    for qi in "${!queries[@]}"; do
        IFS='|' read -r name q asks <<<"${queries[$qi]}"
        ask "$name" "$q" "$asks" b "$qi"
    done
    stop_pid "$spid"; spid=""
    psql_su -d audience -c "TRUNCATE figures_cache" || exit 2  # they count every session
    run_bin=$bin
fi
for si in "${!stores[@]}"; do
    store=${stores[$si]%%|*}
    start "${stores[$si]#*|}"
    for qi in "${!queries[@]}"; do
        IFS='|' read -r name q asks <<<"${queries[$qi]}"
        [ "$cold_runs" = 1 ] && [ "$qi" = 0 ] && { cold "${stores[$si]#*|}"; name="$name, cold"; }
        ask "$name" "$q" "$asks" "$si" "$qi"
    done
    if [ "$si" = 0 ]; then  # the days' figures made ahead by the server itself
        stop_pid "$spid"; spid=""
        psql_su -d audience -c "TRUNCATE figures_cache" || exit 2
        : >"$work/srv/log/error.log"
        start "${stores[$si]#*|}"
        for _ in $(seq 1200); do
            grep -q "made ahead" "$work/srv/log/error.log" && break
            sleep 0.1
        done
        grep -o "the figures of .* made ahead in .*" "$work/srv/log/error.log" >&2
        ask "30 days by day, made ahead" "$d30" "$repeat" 1 0
        if [ "$cold_runs" = 1 ]; then
            cold "${stores[$si]#*|}"
            ask "30 days by day, made ahead, cold" "$d30" 1 1 0
            ask "one server, 30 days by day, made ahead" "server=edge2&$d30" 1 1 4
        fi
    fi
    stop_pid "$spid"; spid=""
done
