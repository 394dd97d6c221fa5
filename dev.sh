#!/usr/bin/env bash
# Rimecast developer entry point: installs what the build and the tests need (Debian 12),
# builds, and then either runs the server on the default config or runs the whole test suite.
#   ./dev.sh run    install deps, build, install to /usr/local, serve http://localhost:8000/
#   ./dev.sh test   install deps, build, run unit + wire tests, an ASan/UBSan build of the same,
#                   valgrind on the unit tests, the fuzzers for a bounded time, and make distcheck
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

apt_packages=(build-essential autoconf automake libtool pkg-config
  libxml2-dev libxslt1-dev libogg-dev libvorbis-dev libcurl4-openssl-dev libshout-dev liburing-dev libssl-dev libcrypt-dev
  libsqlite3-dev libmaxminddb-dev libmaxmind-db-writer-perl
  mime-support ffmpeg ezstream vorbis-tools icecast2 python3 python3-pytest python3-pytest-xdist python3-matplotlib python3-selenium
  curl clang valgrind procps sysstat chromium chromium-driver systemd logrotate groff-base mpv nginx iproute2
  libpq-dev postgresql prometheus)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

install_deps() {
  local missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  stop_packaged_icecast
}

# icecast2's package starts a system service on port 8000, the port Rimecast takes here: that
# service, and only it, is stopped. Never by process name (Debian's init script stops by the
# executable's path, which is the same thing): a station running both side by side, or a test
# running its own icecast2, keeps it.
#  - systemd as PID 1: the unit is disabled and the processes of its control group are sent
#    SIGTERM (systemctl kill). Not `systemctl stop`: the unit Debian 12 gets is generated from the
#    init script, whose stop would run that script.
#  - otherwise (a container): the process the init script starts, found by what it starts: the
#    user, executable and command line of /etc/init.d/icecast2 (USERID and CONFIGFILE of
#    /etc/default/icecast2). Nothing starts it again at boot there.
stop_packaged_icecast() {
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    if systemctl is-enabled --quiet icecast2 2>/dev/null || systemctl is-active --quiet icecast2 2>/dev/null; then
      echo "== stopping and disabling the icecast2 service (port 8000)"
      as_root systemctl disable icecast2 >/dev/null 2>&1 || true
      as_root systemctl kill --signal=TERM icecast2 >/dev/null 2>&1 || true
    fi
    return 0
  fi
  local pids
  pids=$(packaged_icecast_pids)
  [ -n "$pids" ] || return 0
  echo "== stopping the icecast2 service started by its init script (pid $pids, port 8000)"
  # shellcheck disable=SC2086 # one word per pid
  as_root kill -TERM $pids 2>/dev/null || true
  local p tries=0
  for p in $pids; do
    while [ -d "/proc/$p" ] && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
  done
}

# The pids of the icecast2 that /etc/init.d/icecast2 started: run as USERID, with the command
# line `/usr/bin/icecast2 -b -c CONFIGFILE` (the settings of /etc/default/icecast2, which the
# script reads). Owner and command line are readable without privileges.
packaged_icecast_pids() {
  local daemon=/usr/bin/icecast2 conf=/etc/icecast2/icecast.xml user=icecast2 uid d
  [ -x "$daemon" ] || return 0
  if [ -r /etc/default/icecast2 ]; then
    conf=$(CONFIGFILE=$conf; . /etc/default/icecast2 >/dev/null 2>&1; echo "$CONFIGFILE")
    user=$(USERID=$user; . /etc/default/icecast2 >/dev/null 2>&1; echo "$USERID")
  fi
  uid=$(id -u "$user" 2>/dev/null) || return 0
  local want
  want=$(printf '%s\n' "$daemon" -b -c "$conf")
  for d in /proc/[0-9]*; do
    [ "$(stat -c %u "$d" 2>/dev/null)" = "$uid" ] || continue
    [ "$(tr '\0' '\n' <"$d/cmdline" 2>/dev/null)" = "$want" ] || continue
    echo "${d#/proc/}"
  done | tr '\n' ' ' | sed 's/ $//'
}

build() { # build DIR [configure args...]
  local dir=$1; shift
  [ -x configure ] || ./autogen.sh >/dev/null
  mkdir -p "$dir"
  # configured again when the options changed (an older build-asan lacks fault injection)
  if [ ! -f "$dir/Makefile" ] || [ "$(cat "$dir/.dev-configure" 2>/dev/null)" != "$*" ]; then
    (cd "$dir" && "$top/configure" -q "$@")
    echo "$*" >"$dir/.dev-configure"
  fi
  make -C "$dir" -j"$jobs" all >/dev/null
  make -C "$dir" -j"$jobs" check TESTS= >/dev/null  # builds the unit-test programs
}

run_server() {
  build build
  as_root make -C build install >/dev/null
  echo "== Rimecast on http://localhost:8000/ (config /usr/local/etc/rimecast/rimecast.xml)"
  # started as root: it opens the logs (in a folder of the user it drops to), then drops
  if [ "$(id -u)" -eq 0 ]; then
    exec /usr/local/bin/rimecast -c /usr/local/etc/rimecast/rimecast.xml
  fi
  exec sudo /usr/local/bin/rimecast -c /usr/local/etc/rimecast/rimecast.xml
}

stage() { echo "== $* ($(date +%T), $((SECONDS / 60)) min in)"; }

run_tests() {
  local failed=0
  # the wire tests mostly wait on the daemon: one pytest process more than the cores, at
  # least 3 (on 2 cores 3 took 9.5 min where 2 took 13.5), at most 5
  export WIRE_JOBS=${WIRE_JOBS:-$(( jobs < 2 ? 3 : jobs > 4 ? 5 : jobs + 1 ))}
  build build
  stage "unit and wire tests"
  make -C build check -j1 || { failed=1; cat build/test-suite.log 2>/dev/null | tail -200; }
  stage "unit tests under valgrind"
  for t in build/tests/unit/test_*; do
    case "$t" in *.log|*.trs|*.o) continue ;; esac
    [ -x "$t" ] || continue
    RIMECAST_SRCDIR="$top" valgrind -q --error-exitcode=3 --leak-check=full \
      --errors-for-leak-kinds=definite "$t" >/dev/null 2>build/valgrind.log || {
      failed=1; echo "valgrind: $t"; cat build/valgrind.log; }
  done
  stage "ASan/UBSan build (with the failure points tests arm): unit and wire tests"
  build build-asan --enable-sanitizers --enable-fault-injection
  # without the tests marked slow (the plain run above has them) or browser (Chromium pages:
  # the requests they make are also made by tests without a browser)
  WIRE_SKIP_MARKS="slow browser" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    make -C build-asan check -j1 TESTS='$(check_PROGRAMS) tests/wire/run.sh' || { failed=1; tail -200 build-asan/test-suite.log 2>/dev/null; }
  stage "fuzzers"
  FUZZ_JOBS=$jobs FUZZ_SECONDS=${FUZZ_SECONDS:-10} fuzz/run.sh || failed=1
  stage "make distcheck"
  make -C build distcheck DISTCHECK_CONFIGURE_FLAGS=--disable-wire-tests >build/distcheck.log 2>&1 ||
    { failed=1; grep -v '^make' build/distcheck.log | tail -60; }
  if [ $failed -ne 0 ]; then echo "== FAILED"; exit 1; fi
  stage "all tests passed"
}

# sourced (tests/test_dev_deps.sh): the functions only
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-}" in
  run) install_deps; run_server ;;
  test) install_deps; run_tests ;;
  deps) install_deps ;;
  *) echo "usage: $0 run|test" >&2; exit 2 ;;
esac
