#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `./dev.sh deps` stops the icecast2 service that Debian's package starts (it takes port 8000)
# and nothing else: with that service started by its init script and a decoy icecast2 (the same
# executable and user, its own config, as a station or a test would run one), the deps step
# leaves the decoy running and the service stopped.
# Runs in network and process namespaces of its own (root, unshare): the service's port 8000 and
# the processes dev.sh looks at are this test's only. Skipped when a package is missing (the deps
# step would install it) or without root, unshare or Debian's icecast2.
set -euo pipefail
src=${RIMECAST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

if [ -z "${RIMECAST_DEPS_NS:-}" ]; then
    [ "$(id -u)" -eq 0 ] || skip "needs root"
    [ -x /etc/init.d/icecast2 ] && [ -x /usr/bin/icecast2 ] || skip "no icecast2 package"
    id icecast2 >/dev/null 2>&1 || skip "no icecast2 user"
    unshare -n -p -f --mount-proc true 2>/dev/null || skip "no network and pid namespaces"
    missing=$(bash -c 'source "$1"; for p in "${apt_packages[@]}"; do
        dpkg-query -W -f="\${Status}" "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
        done' _ "$src/dev.sh") || true
    [ -z "$missing" ] || skip "packages missing, the deps step would install them: $missing"
    RIMECAST_DEPS_NS=1 exec unshare -n -p -f --mount-proc "$0" "$@"
fi
ip link set lo up
work=$(mktemp -d "${TMPDIR:-/tmp}/rimecast-deps.XXXXXX")
chmod 755 "$work"

service_pid= decoy_pid=
cleanup() {
    # only what this test started (the namespace ends with it anyway)
    for p in $decoy_pid $service_pid; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# the pid listening on a port (this namespace's only)
listener_pid() {
    ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1
}
wait_listener() { # port: up to 10 s
    local i
    for i in $(seq 100); do
        [ -n "$(listener_pid "$1")" ] && return 0
        sleep 0.1
    done
    return 1
}

# the package's service, as its init script starts it (on 8000)
/etc/init.d/icecast2 start >"$work/service.out" 2>&1 || fail "the init script did not start icecast2"
wait_listener 8000 || fail "the icecast2 service does not listen on 8000"
service_pid=$(listener_pid 8000)

# the decoy: same executable and user, its own config and port
mkdir "$work/log"
chown icecast2 "$work/log"
cat >"$work/decoy.xml" <<EOF
<icecast>
  <authentication><source-password>decoy</source-password><admin-password>decoy</admin-password></authentication>
  <listen-socket><port>18000</port><bind-address>127.0.0.1</bind-address></listen-socket>
  <paths><logdir>$work/log</logdir><webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot></paths>
  <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog></logging>
</icecast>
EOF
chmod 644 "$work/decoy.xml"
setpriv --reuid icecast2 --regid icecast --clear-groups /usr/bin/icecast2 -c "$work/decoy.xml" \
    >"$work/decoy.out" 2>&1 &
decoy_pid=$!
wait_listener 18000 || { cat "$work/decoy.out"; fail "the decoy icecast2 does not listen"; }

"$src/dev.sh" deps >"$work/deps.out" 2>&1 || { cat "$work/deps.out"; fail "./dev.sh deps failed"; }
cat "$work/deps.out"

for i in $(seq 100); do # up to 10 s for the service to stop
    kill -0 "$service_pid" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$service_pid" 2>/dev/null && fail "the icecast2 service (pid $service_pid) still runs"
service_pid=
[ -z "$(listener_pid 8000)" ] || fail "port 8000 is still taken"
# Icecast logs a request to stop at once, and takes a moment to end: its log tells
grep -E 'halt request|Shutting down' "$work/log/error.log" && fail "./dev.sh deps signalled an icecast2 that is not the service"
kill -0 "$decoy_pid" 2>/dev/null || fail "./dev.sh deps killed an icecast2 that is not the service"
curl -s -o /dev/null --max-time 5 http://127.0.0.1:18000/ || fail "the decoy icecast2 no longer answers"
echo "ok: ./dev.sh deps stopped the icecast2 service, the decoy runs on"
