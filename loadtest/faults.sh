#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# faults.sh: faults under load, one scenario per subcommand (see docs/FAULTS.md). Each prints a
# PASS/FAIL line per check with its figures and a summary; exits non-zero if a check failed.
#   faults.sh SCENARIO [--listeners N] [--seconds S] [--cycles N] [--icecast-cycles N]
#             [--rimecast BIN] [--icecast BIN] [--swarm BIN] [--keep] [--control]
# --control (sighup-storm, log-full): the same run without the fault (signal 0 instead of
# SIGHUP; the filler written beside the log directory instead of into it), to tell the fault's
# effect from the machine's.
# SCENARIO: source-kill sighup-storm log-full fd-limit start-stop soak hostile
# Everything runs on 127.0.0.1 in a mktemp directory; every process it starts is killed on exit
# and a file system it mounted is unmounted. Run as root (the server drops to nobody; log-full
# mounts a tmpfs). It owns nothing outside its directory.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
scenario=${1:-}; shift || true
listeners=""; seconds=""; cycles=""; icycles=""; keep=0; control=0
rimecast=${RIMECAST_BIN:-}; icecast=/usr/bin/icecast2; swarm=${SWARM_BIN:-}
while [ $# -gt 0 ]; do
    case "$1" in
        --listeners) listeners=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --cycles) cycles=$2; shift 2 ;;
        --icecast-cycles) icycles=$2; shift 2 ;;
        --rimecast) rimecast=$2; shift 2 ;;
        --icecast) icecast=$2; shift 2 ;;
        --swarm) swarm=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        --control) control=1; shift ;;
        *) echo "faults.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
. "$here/checks.sh"
find_binaries faults.sh
clients="$here/faults_clients.py"

pids=(); mounted=""
work=$(mktemp -d "${TMPDIR:-/tmp}/faults.XXXXXX")
chmod 755 "$work"
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "$mounted" ] && umount "$mounted" 2>/dev/null
    [ "$keep" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
summary() { echo "summary $scenario: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; }

port=$(free_port)
token="faults-$$-$RANDOM"
stats() { curl -s -m 5 -u admin:hackme "http://127.0.0.1:$port/admin/stats"; }
# turns: the server's slow loop turns (over 10 ms, 100 ms, 0.5 s, 1 s) and its longest turn (s),
# from /metrics, on one line; turns_between A B: what happened between two such readings
turns() {
    curl -s -m 5 -u admin:hackme "http://127.0.0.1:$port/metrics" |
        awk '/^rimecast_worker_slow_turns_total/ {c = c " " $2} /^rimecast_worker_turn_max_seconds/ {m = $2}
             END {print c " " m}'
}
turns_between() {
    python3 -c '
import sys
a, b = (list(map(float, x.split())) for x in sys.argv[1:3])
if len(a) < 5 or len(b) < 5:
    print("server loop turns: not available")
else:
    d = [int(y - x) for x, y in zip(a[:4], b[:4])]
    print("server loop turns over 10 ms / 100 ms / 0.5 s / 1 s: %d / %d / %d / %d; longest turn since start %.1f ms"
          % (d[0], d[1], d[2], d[3], b[4] * 1000))
' "$1" "$2"
}
# swarm_loop FILE FROM TO: the swarm's longest loop turn (ms) in status lines FROM..TO
swarm_loop() { grep '^t=' "$1" | sed -n "$2,$3p" | tr ' ' '\n' | sed -n 's/^swarm_loop_max_ms=//p' | sort -g | tail -1; }

# config DIR [extra XML inserted before </icecast>] [gen-config options...]
config() {
    local dir=$1 extra=$2; shift 2
    "$here/gen-config.sh" --dir "$dir" --port "$port" --location "$token" "$@" >/dev/null || exit 2
    python3 - "$dir/server.xml" "$extra" <<'EOF'
import sys
p, extra = sys.argv[1], sys.argv[2]
s = open(p).read().replace("</icecast>", extra + "\n</icecast>")
open(p, "w").write(s)
EOF
}

# start_server BIN CONF [wrapper...]: sets server_pid; waits until it answers with our token
start_server() {
    local bin=$1 conf=$2; shift 2
    "$@" "$bin" -c "$conf" >"$work/server.out" 2>&1 &
    server_pid=$!; pids+=("$server_pid")
    for _ in $(seq 100); do
        stats | grep -q "$token" && return 0
        sleep 0.1
    done
    echo "faults.sh: the server did not come up" >&2; cat "$work/server.out" >&2; exit 2
}

# run_swarm NAME args...: a swarm process writing NAME.status; sets swarm_pid
run_swarm() {
    local name=$1; shift
    "$swarm" --port "$port" --status "$work/$name.status" "$@" >"$work/$name.out" 2>&1 &
    swarm_pid=$!; pids+=("$swarm_pid")
}
# field FILE KEY [final]: KEY from the last status line (or the final line)
field() {
    local line
    if [ "${3:-}" = final ]; then line=$(grep "^final " "$1" 2>/dev/null | tail -1); else line=$(grep "^t=" "$1" 2>/dev/null | tail -1); fi
    echo "$line" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
# column FILE KEY: KEY of every status line, one a line
column() { grep '^t=' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
maxof() { sort -g | tail -1; }
wait_connected() { # FILE COUNT TIMEOUT_S
    local i
    for i in $(seq $(($3 * 10))); do
        [ "$(field "$1" connected)" = "$2" ] 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
wait_mounts() { # COUNT: mounts with a source
    for _ in $(seq 100); do
        [ "$(stats | grep -o '<sources>[0-9]*' | tr -dc 0-9)" -ge "$1" ] 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
fd_count() { ls "/proc/$1/fd" | wc -l; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
within() { python3 -c "import sys; a,b,p=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= p/100*max(abs(b),1e-9) else 1)" "$@"; }

# ---- source-kill ------------------------------------------------------------------------------
scenario_source_kill() {
    local n=${listeners:-10000}
    local nfb=$((n * 2 / 5)) nsolo=$((n * 2 / 5)) nother=$((n - n * 4 / 5))
    config "$work" "<mount><mount-name>/fb</mount-name><fallback-mount>/backup</fallback-mount>
        <fallback-override>1</fallback-override></mount>"
    start_server "$rimecast" "$work/server.xml"
    run_swarm src --sources 2 --source-mounts /backup,/other --duration 600
    local srcpid=$swarm_pid
    python3 "$clients" --port "$port" --seconds 600 rawsource --mount /fb --kill-file "$work/kill" \
        --mid-file "$work/mid.fb" >"$work/raw.fb" 2>&1 & local raw_fb=$!; pids+=($raw_fb)
    python3 "$clients" --port "$port" --seconds 600 rawsource --mount /solo --kill-file "$work/kill" \
        --mid-file "$work/mid.solo" >"$work/raw.solo" 2>&1 & local raw_solo=$!; pids+=($raw_solo)
    wait_mounts 4 || { fail "4 mounts up"; return; }
    run_swarm fb --listeners "$nfb" --mounts /fb --connect-rate 2000 --drain 5 --duration 600; local fbp=$swarm_pid
    run_swarm solo --listeners "$nsolo" --mounts /solo --connect-rate 2000 --drain 5 --duration 600; local sop=$swarm_pid
    run_swarm other --listeners "$nother" --mounts /other --connect-rate 2000 --drain 5 --duration 600; local otp=$swarm_pid
    check "all listeners streaming ($nfb /fb, $nsolo /solo, $nother /other)" \
        eval 'wait_connected "$work/fb.status" $nfb 60 && wait_connected "$work/solo.status" $nsolo 60 && wait_connected "$work/other.status" $nother 60'
    sleep 6
    local fb_bytes0; fb_bytes0=$(field "$work/fb.status" bytes)
    touch "$work/kill"
    for _ in $(seq 50); do [ -e "$work/mid.fb" ] && [ -e "$work/mid.solo" ] && break; sleep 0.1; done
    kill -9 $raw_fb $raw_solo; wait $raw_fb $raw_solo 2>/dev/null
    local t_kill; t_kill=$(field "$work/fb.status" t)
    info "both sources SIGKILLed after writing half a 1600-byte block (swarm t=$t_kill s)"
    sleep 8
    # reconnect: new sources on the same mounts
    rm -f "$work/kill"
    python3 "$clients" --port "$port" --seconds 600 rawsource --mount /fb >"$work/raw.fb2" 2>&1 & pids+=($!)
    python3 "$clients" --port "$port" --seconds 600 rawsource --mount /solo >"$work/raw.solo2" 2>&1 & pids+=($!)
    sleep 6
    local fb_on_fb; fb_on_fb=$(stats | python3 -c '
import sys, xml.etree.ElementTree as E
d = E.fromstring(sys.stdin.read())
for s in d.findall("source"):
    if s.get("mount") == "/fb": print(s.findtext("listeners"))')
    kill -TERM $fbp $sop $otp; wait $fbp $sop $otp 2>/dev/null
    # bytes kept arriving on /fb: the longest run of status seconds without new bytes after the kill
    local gap; gap=$(grep '^t=' "$work/fb.status" | python3 -c '
import sys
tk = float(sys.argv[1]); rows = []
for l in sys.stdin:
    d = dict(kv.split("=", 1) for kv in l.split())
    rows.append((float(d["t"]), int(d["bytes"])))
gap = 0.0; last_t = None; prev_b = None
for t, b in rows:
    if t < tk - 1: prev_b = b; last_t = t; continue
    if prev_b is not None and b > prev_b: last_t = t
    gap = max(gap, t - last_t); prev_b = b
print("%.1f" % gap)' "$t_kill")
    check "/fb (fallback /backup): no listener closed (server_closed=$(field "$work/fb.status" server_closed))" \
        [ "$(field "$work/fb.status" server_closed)" = 0 ]
    check "/fb: bytes kept arriving, longest stall ${gap} s after the kill (bound 2 s)" \
        python3 -c "import sys; sys.exit(0 if $gap <= 2.0 else 1)"
    check "/fb: listeners back on /fb after the source reconnected (fallback-override): ${fb_on_fb:-?} of $nfb" \
        [ "${fb_on_fb:-0}" = "$nfb" ]
    local sc sr; sc=$(field "$work/solo.status" server_closed final); sr=$(field "$work/solo.status" server_reset final)
    check "/solo (no fallback): all $nsolo listeners closed by the server: $sc" [ "$sc" = "$nsolo" ]
    check "/solo: closed cleanly (EOF, not RST): resets=$sr" [ "$sr" = 0 ]
    local oc os; oc=$(field "$work/other.status" server_closed final); os=$(column "$work/other.status" starving | maxof)
    check "/other undisturbed: server_closed=$oc, most starving in a second=$os" [ "$oc" = 0 -a "$os" = 0 ]
    check "the reconnecting sources were accepted" \
        eval '! grep -q status= "$work/raw.fb2" "$work/raw.solo2"'
    check "server alive" kill -0 "$server_pid"
}

# ---- sighup-storm -----------------------------------------------------------------------------
scenario_sighup_storm() {
    local n=${listeners:-10000} secs=${seconds:-60}
    config "$work" "" --loglevel 3
    start_server "$rimecast" "$work/server.xml"
    run_swarm lis --sources 1 --source-mounts /live --listeners "$n" --mounts /live --connect-rate 2000 \
        --duration $((secs + 120)) --drain 5; local sw=$swarm_pid
    check "$n listeners streaming" wait_connected "$work/lis.status" "$n" 90
    sleep 20 # a quiet baseline of starving counts on this (shared) machine
    local rss0 fd0 l0 l1; rss0=$(rss_kb "$server_pid"); fd0=$(fd_count "$server_pid")
    l0=$(grep -c '^t=' "$work/lis.status")
    local i sig=HUP t0 t1
    [ "$control" = 1 ] && { sig=0; info "control run: signal 0 (no reload) at the same pace"; }
    t0=$(turns)
    for i in $(seq "$secs"); do kill -$sig "$server_pid"; sleep 1; done
    sleep 3
    t1=$(turns)
    local rss1 fd1; rss1=$(rss_kb "$server_pid"); fd1=$(fd_count "$server_pid")
    l1=$(grep -c '^t=' "$work/lis.status")
    info "$(turns_between "$t0" "$t1")"
    info "swarm's longest loop turn: $(swarm_loop "$work/lis.status" $((l0 - 15)) "$l0") ms in the 15 s before, $(swarm_loop "$work/lis.status" $((l0 + 1)) "$l1") ms during"
    local base storm
    base=$(grep '^t=' "$work/lis.status" | sed -n "$((l0 - 15)),${l0}p" | tr ' ' '\n' | sed -n 's/^starving=//p' | sort -g | tail -1)
    storm=$(grep '^t=' "$work/lis.status" | sed -n "$((l0 + 1)),${l1}p" | tr ' ' '\n' | sed -n 's/^starving=//p' | sort -g | tail -1)
    info "starving listeners, most in one second: $base in the 15 s before the storm, $storm during it (load average $(cut -d' ' -f1 /proc/loadavg))"
    local sc st; sc=$(field "$work/lis.status" server_closed); st=$storm
    check "$secs SIGHUPs, 1 a second: no listener dropped (server_closed=$sc, connected=$(field "$work/lis.status" connected))" \
        [ "$sc" = 0 -a "$(field "$work/lis.status" connected)" = "$n" ]
    # Reported, not judged: on a quiet machine the control run (--control, signal 0) shows the
    # same one-second spikes without any reload (docs/FAULTS.md), so a count here says nothing
    # about the reload; the server's loop turns above are what a reload could lengthen.
    info "starving during the storm reported only (compare with a --control run): $st"
    check "RSS before/after within 5 %: $rss0 -> $rss1 KB" within "$rss1" "$rss0" 5
    check "fds before/after within 2: $fd0 -> $fd1" [ $((fd1 - fd0)) -le 2 ]
    if [ "$control" = 1 ]; then
        check "control: no reload logged: $(grep -c -i 'reload' "$work/log/error.log")" [ "$(grep -c -i reload "$work/log/error.log")" = 0 ]
    else
        check "reloads logged: $(grep -c -i 'reload' "$work/log/error.log")" [ "$(grep -c -i reload "$work/log/error.log")" -ge "$secs" ]
    fi
    kill -TERM $sw; wait $sw 2>/dev/null
    check "server alive" kill -0 "$server_pid"
}

# ---- log-full ---------------------------------------------------------------------------------
scenario_log_full() {
    local n=${listeners:-2000} secs=${seconds:-30}
    mkdir -p "$work/log"
    if mount -t tmpfs -o size=1m,mode=0777 tmpfs "$work/log" 2>/dev/null; then
        mounted=$work/log; info "log dir: tmpfs of 1 MB"
    else
        truncate -s 2m "$work/logfs.img" && mkfs.ext2 -q "$work/logfs.img" 2>/dev/null &&
            mount -o loop "$work/logfs.img" "$work/log" 2>/dev/null && chmod 777 "$work/log" &&
            { mounted=$work/log; info "log dir: a 2 MB ext2 loop file system"; }
        [ -n "$mounted" ] || { echo "SKIP log-full: neither a tmpfs nor a loop mount is permitted here"; return; }
    fi
    config "$work" "" --loglevel 4
    start_server "$rimecast" "$work/server.xml"
    run_swarm lis --sources 1 --source-mounts /live --listeners "$n" --mounts /live --connect-rate 2000 \
        --probe-mount /probe --probe-listeners 5 --duration $((secs * 3 + 120)) --drain 5; local sw=$swarm_pid
    check "$n listeners streaming" wait_connected "$work/lis.status" "$((n + 5))" 90
    sleep 15 # a baseline of starving counts on this (shared) machine
    local l0 l1 l2 t0 t1 t2 filler=$work/log/filler; l0=$(grep -c '^t=' "$work/lis.status")
    [ "$control" = 1 ] && { filler=$work/filler; info "control run: the filler goes beside the log directory"; }
    t0=$(turns)
    if [ "$control" = 1 ]; then
        dd if=/dev/zero of="$filler" bs=4k count=256 2>/dev/null
    else
        dd if=/dev/zero of="$filler" bs=4k 2>/dev/null
    fi
    info "log dir full: $(df -k "$work/log" | awk 'NR==2 {print $4}') KB free"
    local i
    for i in $(seq $((secs * 5))); do # short clients: each one an access-log line that fails
        curl -s -m 2 -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/status-json.xsl" >>"$work/times"; sleep 0.2
    done
    l1=$(grep -c '^t=' "$work/lis.status"); t1=$(turns)
    local tmax; tmax=$(sort -g "$work/times" | tail -1)
    check "$((secs * 5)) short requests answered while the disk is full, slowest in $tmax s (bound 1 s)" \
        python3 -c "import sys; sys.exit(0 if $tmax < 1 else 1)"
    local stderr_lines; stderr_lines=$(grep -c "log write failed" "$work/server.out")
    local lo=1 hi=2; [ "$control" = 1 ] && { lo=0; hi=0; }
    check "one 'log write failed' line per log on stderr: $stderr_lines" [ "$stderr_lines" -ge $lo -a "$stderr_lines" -le $hi ]
    rm -f "$filler"
    for i in $(seq 5); do curl -s -m 2 -o /dev/null "http://127.0.0.1:$port/status-json.xsl"; sleep 0.2; done
    sleep 3; l2=$(grep -c '^t=' "$work/lis.status"); t2=$(turns)
    local log_lines; log_lines=$(grep -c "log write failed" "$work/log/error.log")
    info "$(grep "log write failed" "$work/log/error.log" | head -2 | cut -c1-200)"
    check "space back: one 'log write failed ... lines lost' line per log in error.log: $log_lines" \
        [ "$log_lines" -ge $lo -a "$log_lines" -le $hi ]
    info "while full: $(turns_between "$t0" "$t1"); swarm's longest loop turn $(swarm_loop "$work/lis.status" $((l0 + 1)) "$l1") ms (before: $(swarm_loop "$work/lis.status" $((l0 - 12)) "$l0") ms)"
    info "space back: $(turns_between "$t1" "$t2"); swarm's longest loop turn $(swarm_loop "$work/lis.status" $((l1 + 1)) "$l2") ms; starving, most in one second: $(grep '^t=' "$work/lis.status" | sed -n "$((l1 + 1)),${l2}p" | tr ' ' '\n' | sed -n 's/^starving=//p' | sort -g | tail -1)"
    local sc base st p99; sc=$(field "$work/lis.status" server_closed)
    base=$(grep '^t=' "$work/lis.status" | sed -n "$((l0 - 12)),${l0}p" | tr ' ' '\n' | sed -n 's/^starving=//p' | sort -g | tail -1)
    st=$(grep '^t=' "$work/lis.status" | sed -n "$((l0 + 1)),${l1}p" | tr ' ' '\n' | sed -n 's/^starving=//p' | sort -g | tail -1)
    p99=$(grep '^t=' "$work/lis.status" | sed -n "$((l0 + 1)),${l1}p" | tr ' ' '\n' | sed -n 's/^lat_p99_ms=//p' | sort -g | tail -1)
    kill -TERM $sw; wait $sw 2>/dev/null
    info "starving, most in one second: $base before the disk filled, $st while full (load average $(cut -d' ' -f1 /proc/loadavg)); worst probe p99 while full $p99 ms"
    check "streaming went on while the disk was full: server_closed=$sc" [ "$sc" = 0 ]
}

# ---- fd-limit ---------------------------------------------------------------------------------
scenario_fd_limit() {
    local n=${listeners:-10000}
    local limit=$((n + 200)) extra=$((n / 5 + 500))
    [ "$limit" -le 20000 ] || limit=20000
    config "$work" ""
    start_server "$rimecast" "$work/server.xml" prlimit --nofile=$limit:$limit
    run_swarm lis --sources 1 --source-mounts /live --listeners "$n" --mounts /live --connect-rate 2000 \
        --duration 600 --drain 5; local sw=$swarm_pid
    check "$n listeners streaming with the server's fd limit at $limit" wait_connected "$work/lis.status" "$n" 90
    info "server fds: $(fd_count "$server_pid") of $limit"
    sleep 15 # a quiet baseline of starving counts on this (shared) machine
    local l0; l0=$(grep -c '^t=' "$work/lis.status")
    run_swarm over --listeners "$extra" --mounts /live --connect-rate 5000 --max-pending 5000 \
        --connect-timeout 10 --duration 20 --drain 1; local ov=$swarm_pid
    wait $ov 2>/dev/null
    local ce rj oc; ce=$(field "$work/over.status" conn_err final); rj=$(field "$work/over.status" rejected final)
    oc=$(field "$work/over.status" server_closed final)
    local got; got=$(grep '^t=' "$work/over.status" | awk '{for(i=1;i<=NF;i++) if ($i ~ /^connected=/) {split($i,a,"="); if (a[2]>m) m=a[2]}} END{print m+0}')
    # a quick refusal: the first status second where nothing is pending any more
    local done_t; done_t=$(grep '^t=' "$work/over.status" | awk '{for(i=1;i<=NF;i++){split($i,a,"="); v[a[1]]=a[2]} if (v["pending"]==0 && v["t"]>0.5) {print v["t"]; exit}}')
    info "over the limit: $extra connects: streamed at most $got, conn_err=$ce rejected=$rj closed=$oc, none pending after ${done_t:-never} s"
    check "new listeners over the limit refused quickly (none pending after ${done_t:-never} s, bound 5 s)" \
        python3 -c "import sys; sys.exit(0 if '${done_t}' and float('${done_t:-99}') <= 5 else 1)"
    sleep 2
    local l1 base st sc; l1=$(grep -c '^t=' "$work/lis.status")
    base=$(grep '^t=' "$work/lis.status" | sed -n "$((l0 - 12)),${l0}p" | tr ' ' '\n' | sed -n 's/^starving=//p' | maxof)
    st=$(grep '^t=' "$work/lis.status" | sed -n "$((l0 + 1)),${l1}p" | tr ' ' '\n' | sed -n 's/^starving=//p' | maxof)
    sc=$(field "$work/lis.status" server_closed)
    info "starving listeners, most in one second: $base in the 12 s before the flood, $st during it (load average $(cut -d' ' -f1 /proc/loadavg))"
    check "existing listeners kept streaming: server_closed=$sc, starving no worse than before the flood: $base -> $st" \
        [ "$sc" = 0 -a "${st:-0}" -le "${base:-0}" ]
    sleep 2
    run_swarm after --listeners 100 --mounts /live --connect-rate 1000 --duration 8 --drain 1; local af=$swarm_pid
    wait $af 2>/dev/null
    local ac; ac=$(grep '^t=' "$work/after.status" | tr ' ' '\n' | sed -n 's/^connected=//p' | maxof)
    check "service recovered when fds freed: $ac of 100 new listeners streamed" [ "$ac" = 100 ]
    local lines; lines=$(grep -c -i "open-file limit\|too many open files" "$work/log/error.log")
    check "fd exhaustion logged rate-limited: $lines lines" [ "$lines" -ge 1 -a "$lines" -le 10 ]
    kill -TERM $sw; wait $sw 2>/dev/null
    check "server alive" kill -0 "$server_pid"
}

# ---- start-stop -------------------------------------------------------------------------------
startstop_run() { # NAME BIN CYCLES
    mkdir -p "$work/$1"
    config "$work/$1" "" --loglevel 2
    python3 "$clients" --port "$port" --seconds 3600 startstop --bin "$2" --conf "$work/$1/server.xml" \
        --cycles "$3" --out-dir "$work/$1" 2>"$work/$1.err" | tail -1
}
scenario_start_stop() {
    local n=${cycles:-1000} ni=${icycles:-200}
    local r i
    r=$(startstop_run rimecast "$rimecast" "$n"); info "rimecast ($rimecast): $r"
    local get; get() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
    check "rimecast: $(get "$r" cycles) start/stop cycles, crashes=$(get "$r" crash) hangs=$(get "$r" hang) nonzero=$(get "$r" nonzero) sanitizer=$(get "$r" asan)" \
        [ "$(get "$r" cycles)" = "$n" -a "$(get "$r" ok)" = "$n" ]
    info "rimecast: a source was accepted in $(get "$r" src_ok) cycles, listeners in $(get "$r" lis_ok)"
    check "no core files" [ -z "$(find "$work/rimecast" -name 'core*' | head -1)" ]
    if [ -x "$icecast" ] && [ "$ni" -gt 0 ]; then
        i=$(startstop_run icecast2 "$icecast" "$ni"); info "icecast2 ($icecast): $i"
        local c; c=$(get "$i" cycles)
        info "icecast2 crash rate: $(get "$i" crash) of $c = $(python3 -c "print('%.1f' % (100 * $(get "$i" crash) / max(1, $c)))") % (hangs $(get "$i" hang))"
    fi
}

# ---- soak -------------------------------------------------------------------------------------
scenario_soak() {
    local n=${listeners:-10000} secs=${seconds:-3600}
    config "$work" ""
    start_server "$rimecast" "$work/server.xml"
    run_swarm lis --sources 1 --source-mounts /live --listeners "$n" --mounts /live --connect-rate 2000 \
        --duration $((secs + 120)) --drain 5; local sw=$swarm_pid
    check "$n listeners streaming" wait_connected "$work/lis.status" "$n" 90
    python3 "$here/sample.py" --pid "$server_pid" --out "$work/soak.csv" --swarm-status "$work/lis.status" \
        --duration "$secs" --stats-url "http://127.0.0.1:$port/admin/stats" --stats-every 10 & local sp=$!; pids+=($sp)
    local end=$((SECONDS + secs)) k=0
    while [ $SECONDS -lt $end ]; do # sources coming and going, titles every few seconds
        if [ $((k % 10)) = 0 ]; then
            run_swarm "flap$k" --sources 20 --source-mounts "/soak%d:1-20" --duration 25
        fi
        curl -s -m 2 -o /dev/null -u admin:hackme \
            "http://127.0.0.1:$port/admin/metadata?mount=/live&mode=updinfo&song=soak%20title%20$k"
        k=$((k + 1)); sleep 3
    done
    wait $sp 2>/dev/null
    # read before the swarm stops: its own source leaving ends every listener
    local sc st busy total; sc=$(field "$work/lis.status" server_closed)
    st=$(column "$work/lis.status" starving | maxof)
    busy=$(column "$work/lis.status" starving | awk '$1 > 0' | wc -l)
    total=$(column "$work/lis.status" starving | wc -l)
    kill -TERM $sw; wait $sw 2>/dev/null
    python3 "$here/plot.py" --all --out "$work/plots" "$work/soak.csv=soak" >/dev/null 2>&1
    check "plot.py drew the soak" [ -n "$(ls "$work/plots" 2>/dev/null)" ]
    [ -n "${FAULTS_PLOTS:-}" ] && mkdir -p "$FAULTS_PLOTS" && cp "$work"/plots/*.png "$FAULTS_PLOTS/" 2>/dev/null
    python3 - "$work/soak.csv" <<'EOF' | while read -r verdict line; do
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["rss_kb"]]
warm = rows[len(rows) // 5:]
rss = [float(r["rss_kb"]) for r in warm]
fds = [int(float(r["fds"])) for r in warm]
lo, hi = min(rss), max(rss)
print(("PASS" if hi <= lo * 1.05 else "FAIL"),
      "RSS flat after warm-up (first 20 %% skipped): %.0f..%.0f KB, spread %.1f %% (bound 5 %%)" % (lo, hi, 100 * (hi - lo) / lo))
print(("PASS" if fds[-1] <= fds[0] + 25 else "FAIL"),
      "no fd leak: %d fds after warm-up, %d at the end, %d..%d while sources came and went" % (fds[0], fds[-1], min(fds), max(fds)))
EOF
        if [ "$verdict" = PASS ]; then pass "$line"; else fail "$line"; fi
    done
    check "no listener closed by the server in $secs s: server_closed=$sc" [ "$sc" = 0 ]
    # a soak has no quiet phase to compare with: starving is reported, judged in the scenarios
    # that measure a baseline in the same run
    info "starving listeners: in $busy of $total seconds, at most $st in one second (load average $(cut -d' ' -f1 /proc/loadavg))"
    info "metadata updates: $k; flapping source groups: $(( (k + 9) / 10 )) x 20"
    check "server alive" kill -0 "$server_pid"
}

# ---- hostile ----------------------------------------------------------------------------------
hostile_phase() { # NAME SECONDS: listeners + probe; writes NAME.result: cpu% p50 p99 rate starving closed
    local name=$1 secs=$2 c0 c1
    run_swarm "$name" --listeners "$n" --mounts /live --connect-rate 2000 --probe-mount /probe \
        --probe-listeners 10 --duration $((secs + 60)) --drain 2; local sw=$swarm_pid
    wait_connected "$work/$name.status" $((n + 10)) 90 || fail "$name: listeners streaming"
    sleep 3
    [ "$name" = hostile ] && start_hostile "$secs"
    sleep 5
    local l0; l0=$(grep -c '^t=' "$work/$name.status")
    c0=$(cpu_ticks "$server_pid"); sleep "$secs"; c1=$(cpu_ticks "$server_pid")
    kill -TERM $sw; wait $sw 2>/dev/null
    grep '^t=' "$work/$name.status" | tail -n +$((l0 + 1)) | head -n "$secs" | python3 -c '
import sys
lat, rate, starv, closed = [], [], 0, 0
for l in sys.stdin:
    d = dict(kv.split("=", 1) for kv in l.split())
    if float(d["lat_p99_ms"]) >= 0: lat.append((float(d["lat_p50_ms"]), float(d["lat_p99_ms"])))
    rate.append(float(d["rate_p50_kbps"])); starv = max(starv, int(d["starving"])); closed = int(d["server_closed"])
lat.sort(key=lambda x: x[1]); rate.sort()
p50 = sorted(x[0] for x in lat)[len(lat) // 2]; p99 = lat[len(lat) // 2][1]
print("%.1f %.2f %.2f %.1f %d %d" % ((int(sys.argv[1]) - int(sys.argv[2])) / float(sys.argv[4]) / float(sys.argv[3]) * 100,
      p50, p99, rate[len(rate) // 2], starv, closed))' "$c1" "$c0" "$secs" "$(getconf CLK_TCK)" >"$work/$name.result"
}
start_hostile() {
    local secs=$(($1 + 10))
    python3 "$clients" --port "$port" --seconds "$secs" slowloris --count "$slow" --every 2 >"$work/slowloris.out" 2>&1 & pids+=($!)
    python3 "$clients" --port "$port" --seconds "$secs" flap --count "$flaps" >"$work/flap.out" 2>&1 & pids+=($!)
    python3 "$clients" --port "$port" --seconds "$secs" metaflood --mount /live >"$work/metaflood.out" 2>&1 & pids+=($!)
    python3 "$clients" --port "$port" --seconds "$secs" oggbad >"$work/oggbad.out" 2>&1 & pids+=($!)
    hostile_started=1
}
scenario_hostile() {
    local n=${listeners:-2000} secs=${seconds:-30} slow=5000 flaps=1000
    config "$work" "" --write-window 0 --loglevel 2
    start_server "$rimecast" "$work/server.xml"
    run_swarm src --sources 1 --source-mounts /live --duration $((secs * 3 + 400)); local srcp=$swarm_pid
    wait_mounts 1 || { fail "/live up"; return; }
    local q h
    hostile_phase quiet "$secs"; q=$(cat "$work/quiet.result"); info "quiet:   server cpu% p50_ms p99_ms rate_p50_kbps max_starving closed = $q"
    hostile_phase hostile "$secs"; h=$(cat "$work/hostile.result"); info "hostile: server cpu% p50_ms p99_ms rate_p50_kbps max_starving closed = $h"
    sleep 12
    info "$(cat "$work/slowloris.out")"; info "$(cat "$work/flap.out")"; info "$(cat "$work/metaflood.out")"
    info "oggbad: $(cat "$work/oggbad.out")"
    set -- $q; local qc=$1 q50=$2 q99=$3 qr=$4
    set -- $h; local hc=$1 h50=$2 h99=$3 hr=$4 hs=$5 hcl=$6
    info "server CPU: quiet $qc %, hostile $hc % of a core (the hostile clients' own work included)"
    check "listener rate p50 within 10 % of the quiet run: $qr -> $hr kbit/s" within "$hr" "$qr" 10
    check "latency p99 within 10 % (or 2 ms) of the quiet run: $q99 -> $h99 ms (p50 $q50 -> $h50)" \
        python3 -c "import sys; sys.exit(0 if $h99 <= max($q99 * 1.1, $q99 + 2) else 1)"
    set -- $q; local qs=$5
    check "no listener closed under attack ($hcl); starving no worse than quiet: $qs -> $hs" \
        [ "$hcl" = 0 -a "$hs" -le $((qs + qs / 10 + 2)) ]
    local m429; m429=$(sed -n 's/.*status_429=\([0-9]*\).*/\1/p' "$work/metaflood.out")
    check "metadata flood rate-limited: ${m429:-0} answered 429" [ "${m429:-0}" -gt 0 ]
    check "metadata limit logged at most once per 10 s: $(grep -c 'over 10 a second' "$work/log/error.log") lines" \
        [ "$(grep -c 'over 10 a second' "$work/log/error.log")" -le $((secs / 10 + 3)) ]
    kill -TERM $srcp; wait $srcp 2>/dev/null
    check "server alive" kill -0 "$server_pid"
}

case "$scenario" in
    source-kill) scenario_source_kill ;;
    sighup-storm) scenario_sighup_storm ;;
    log-full) scenario_log_full ;;
    fd-limit) scenario_fd_limit ;;
    start-stop) scenario_start_stop ;;
    soak) scenario_soak ;;
    hostile) scenario_hostile ;;
    *) sed -n 3,11p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
summary
