#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# audience-figures.sh: how long /admin/audience.json takes on a large store (docs/PERFORMANCE.md,
# "Audience figures: one pass"). Lets the first server create the store (the published schema),
# stops it, fills it with N sessions over the D days up to now (most minutes to hours long, a
# fifth under a minute, one in 200 days long; a dozen mounts, countries, returning listeners;
# one in 33 a robot's and one in 97 over the concurrency limit: invalid traffic), then starts
# each binary in turn on it and times, --repeat times each, the figures of the last 24 h by
# hour, the last 7 days by day and the last 30 days by day, net (traffic=net, the default) and
# gross (traffic=gross; a binary from before invalid traffic was told apart ignores the
# parameter and counts every session: its answers are gross ones). The same from and to for
# every binary, so their answers are compared too: "same" says whether each binary's periods
# are the first one's for that query. Prints a table: median and slowest seconds, the server's
# CPU seconds per query (user and system, from /proc: what the query cost it, which other work
# on a busy machine moves far less than the time), the machine's idle % while the queries ran,
# the periods and rows answered, the server's peak RSS.
#   audience-figures.sh [--sessions 300000] [--days 2] [--large (1000000 over 30 days)]
#                       [--repeat 3] [--rimecast BIN]... [--keep]
# Run it under the machine's measurement lock when others measure (flock LOCKFILE ...). Runs on
# 127.0.0.1 in a mktemp directory, as root (the server drops to nobody); every server it started
# is stopped on exit, by PID.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
sessions=300000; days=2; repeat=3; keep=0; bins=()
while [ $# -gt 0 ]; do
    case "$1" in
        --sessions) sessions=$2; shift 2 ;;
        --days) days=$2; shift 2 ;;
        --large) sessions=1000000; days=30; shift ;;
        --repeat) repeat=$2; shift 2 ;;
        --rimecast) bins+=("$2"); shift 2 ;;
        --keep) keep=1; shift ;;
        *) sed -n 3,16p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
if [ ${#bins[@]} -eq 0 ]; then
    for c in "${RIMECAST_BIN:-}" "$top/rimecast" "$top/build/rimecast"; do
        [ -n "$c" ] && [ -x "$c" ] && { bins=("$c"); break; }
    done
fi
for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "audience-figures.sh: no rimecast binary at ${b:-(none)}" >&2; exit 2; }
done
[ ${#bins[@]} -gt 0 ] || { echo "audience-figures.sh: rimecast binary not found" >&2; exit 2; }

spid=""
work=$(mktemp -d "${TMPDIR:-/tmp}/audience-figures.XXXXXX")
chmod 755 "$work"
cleanup() {
    [ -n "$spid" ] && stop_pid "$spid"
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
db=$work/log/audience.db

# start BIN: a server on the store, its figures answering (its PID in $spid, its port in $port)
start() {
    port=$(free_port)
    "$here/gen-config.sh" --dir "$work" --port "$port" --location "audfig-$$" \
        --extra "<audience><database>audience.db</database><session-log>none</session-log></audience>" \
        >/dev/null || exit 2
    "$1" -c "$work/server.xml" >>"$work/server.out" 2>&1 &
    spid=$!
    for _ in $(seq 300); do
        [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -u admin:hackme \
            "http://127.0.0.1:$port/admin/audience.json?from=0&to=1&period=all")" = 200 ] && return 0
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    echo "audience-figures.sh: $1 did not start (see $work/server.out)" >&2
    exit 2
}

start "${bins[0]}"
for _ in $(seq 100); do [ -f "$db" ] && break; sleep 0.1; done
stop_pid "$spid"; spid=""
[ -f "$db" ] || { echo "audience-figures.sh: the server made no store" >&2; exit 2; }

now=$(date +%s)
echo "filling the store: $sessions sessions over $days days" >&2
python3 - "$db" "$sessions" "$days" "$now" <<'PY' || exit 2
import hashlib, random, sqlite3, sys
path, n, days, now = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(1)
MIN, HOUR, DAY = 60000, 3600000, 86400000
mounts = ["/live", "/live.aac", "/live-low", "/hq.ogg", "/classic", "/jazz", "/rock", "/news",
          "/kids", "/talk", "/chill", "/event"]
weights = [30, 15, 10, 8, 8, 6, 6, 5, 4, 3, 3, 2]
countries = ["DE", "FR", "GB", "US", "NL", "AT", "CH", "BE", "ES", "IT", "PL", "BR", None]
agents = ["VLC/3.0.20 LibVLC/3.0.20", "foobar2000/2.1", "Lavf/60.16.100", "iTunes/12.13",
          "Winamp/5.9", "RadioDroid/0.86", "Sonos/79.1", "AppleCoreMedia/1.0.0.21E236",
          "Echo/1.0 (Alexa)", "curl/8.5.0", None] + [
          "Mozilla/5.0 (X11; Linux x86_64; rv:%d.0) Gecko/20100101 Firefox/%d.0" % (v, v)
          for v in range(100, 125)]
listeners = max(1, n // 3)  # most come back
end_ms, span = now * 1000, int(days * DAY)

def length():
    r = rnd.random()
    if r < 0.2:
        return rnd.randint(2000, 59000)                 # too short to qualify
    if r < 0.995:
        return min(int(rnd.lognormvariate(7.3, 1.2)) * 1000, 12 * HOUR)  # minutes to hours
    return rnd.randint(DAY, 7 * DAY)                    # a speaker left on

con = sqlite3.connect(path)
# each record's listener key (a store made by a binary before keys gets the column; it
# ignores it): one per listener, so that pauses (<resume-seconds>) join its sessions
if "listener_key" not in [r[1] for r in con.execute("PRAGMA table_info(sessions)")]:
    con.execute("ALTER TABLE sessions ADD COLUMN listener_key TEXT")
con.execute("BEGIN")
batch = []
for i in range(n):
    start = end_ms - rnd.randrange(span)
    who = rnd.randrange(listeners)
    mount = rnd.choices(mounts, weights)[0]
    row = (i + 1, mount, mount, start, min(start + length(), end_ms), 100000,
           "10.%d.%d.%d" % (who >> 16 & 255, who >> 8 & 255, who & 255),
           agents[who % len(agents)], None, None, countries[who % len(countries)],
           "client_left", int(rnd.random() < 0.3),
           hashlib.sha256(b"listener %d" % who).hexdigest()[:32])
    batch.append(row)
    if len(batch) == 50000:
        con.executemany("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes,"
                         " ip, user_agent, referer, user, country, ended, preroll, listener_key)"
                         " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", batch)
        batch = []
if batch:
    con.executemany("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes,"
                    " ip, user_agent, referer, user, country, ended, preroll, listener_key)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", batch)
con.execute("COMMIT")
# invalid traffic: the reason (a store made by a binary before it gets the columns; that binary
# ignores them)
have = [r[1] for r in con.execute("PRAGMA table_info(sessions)")]
if "invalid" not in have:
    con.execute("ALTER TABLE sessions ADD COLUMN invalid TEXT NOT NULL DEFAULT ''")
    con.execute("ALTER TABLE sessions ADD COLUMN hls INTEGER NOT NULL DEFAULT 0")
with con:
    con.execute("UPDATE sessions SET invalid = CASE WHEN conn_id % 33 = 0 THEN 'bot'"
                " ELSE 'concurrent' END WHERE conn_id % 33 = 0 OR conn_id % 97 = 0")
con.close()
PY
chown nobody "$work"/log/audience.db* 2>/dev/null

# the server's CPU seconds so far (user and system)
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$spid/stat"; }
# the machine's idle jiffies and all jiffies
cpu_now() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t }' /proc/stat; }

queries=("24 h by hour, net|from=$((now - 86400))&to=$now&period=hour&traffic=net"
         "7 days by day, net|from=$((now - 7 * 86400))&to=$now&period=day&traffic=net"
         "30 days by day, net|from=$((now - 30 * 86400))&to=$now&period=day&traffic=net"
         "24 h by hour, gross|from=$((now - 86400))&to=$now&period=hour&traffic=gross"
         "7 days by day, gross|from=$((now - 7 * 86400))&to=$now&period=day&traffic=gross"
         "30 days by day, gross|from=$((now - 30 * 86400))&to=$now&period=day&traffic=gross")
printf '\n%s sessions over %s days; each query %s times\n\n' "$sessions" "$days" "$repeat"
printf '| binary | query | median s | slowest s | server CPU s | machine idle %% | periods | rows | same | peak RSS MB |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for b in "${bins[@]}"; do
    start "$b"
    for qi in "${!queries[@]}"; do
        name=${queries[$qi]%%|*} q=${queries[$qi]#*|}
        times=(); read -r i0 t0 < <(cpu_now); c0=$(server_cpu)
        for _ in $(seq "$repeat"); do
            times+=("$(curl -s -m 600 -u admin:hackme -o "$work/answer.json" -w '%{time_total}' \
                "http://127.0.0.1:$port/admin/audience.json?$q")")
        done
        read -r i1 t1 < <(cpu_now); c1=$(server_cpu)
        cpu=$(awk -v a="$c0" -v b="$c1" -v n="$repeat" 'BEGIN { printf "%.2f", (b - a) / n }')
        [ "$b" = "${bins[0]}" ] && cp "$work/answer.json" "$work/first-$qi.json"
        same=$(python3 -c '
import json, sys
a, b = (json.load(open(f))["periods"] for f in sys.argv[1:])
print("yes" if a == b else "no")' "$work/answer.json" "$work/first-$qi.json" 2>/dev/null || echo "?")
        read -r periods rows < <(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["periods"]
print(len({e["start"] for e in p}), len(p))' "$work/answer.json" 2>/dev/null || echo "? ?")
        sorted=$(printf '%s\n' "${times[@]}" | sort -g)
        median=$(sed -n "$(( (repeat + 1) / 2 ))p" <<<"$sorted"); slowest=$(tail -1 <<<"$sorted")
        idle=$(awk -v i="$((i1 - i0))" -v t="$((t1 - t0))" 'BEGIN { printf "%.0f", t ? 100 * i / t : 0 }')
        rss=$(awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$spid/status")
        printf '| %s | %s | %.2f | %.2f | %s | %s | %s | %s | %s | %s |\n' "$b" "$name" \
            "$median" "$slowest" "$cpu" "$idle" "$periods" "$rows" "$same" "$rss"
    done
    stop_pid "$spid"; spid=""
done
