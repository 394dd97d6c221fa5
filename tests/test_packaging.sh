#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The packaging files this build installs: the man page renders without warnings and lists
# --version and --upgrade, the systemd unit is a notify service (no -b; notifications accepted
# from the whole unit, so that the new process of an upgrade can name itself the main one;
# reload by SIGHUP; hardened) that `systemd-analyze verify` accepts (when systemd-analyze is
# there), and the logrotate file parses (when logrotate is).
set -eu
builddir=${RIMECAST_BUILDDIR:-.}
work=$(mktemp -d "${TMPDIR:-/tmp}/rimecast-packaging.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

make -s -C "$builddir" --no-print-directory rimecast.8 rimecast.service rimecast.logrotate
unit=$builddir/rimecast.service

if command -v groff >/dev/null 2>&1; then
    out=$(groff -man -ww -z "$builddir/rimecast.8" 2>&1) || fail "groff: $out"
    [ -z "$out" ] || fail "man page warnings: $out"
    for opt in --version --upgrade SIGUSR2; do
        groff -man -Tascii -P-cbou "$builddir/rimecast.8" 2>/dev/null | grep -q -- "$opt" ||
            fail "the man page does not list $opt"
    done
else
    echo "groff not installed: man page not rendered"
fi
! grep -q '@[a-z]*@' "$builddir/rimecast.8" "$unit" "$builddir/rimecast.logrotate" ||
    fail "an unsubstituted @path@ is left"

for want in '^Type=notify$' '^NotifyAccess=all$' '^ExecReload=+/bin/kill -HUP \$MAINPID$' '^NoNewPrivileges=yes$' \
    '^ProtectSystem=strict$' '^ReadWritePaths=.*/log/rimecast' '^ProtectHome=yes$' \
    '^PrivateTmp=yes$' '^AmbientCapabilities=CAP_NET_BIND_SERVICE$' '^ExecStart=.*/rimecast -c '; do
    grep -q "$want" "$unit" || fail "rimecast.service lacks $want"
done
! grep -q '^ExecStart=.* -b' "$unit" || fail "the unit must not daemonize (-b): systemd follows the process it started"

if command -v systemd-analyze >/dev/null 2>&1; then
    # verify checks that ExecStart exists: point it at this build's binary
    sed -e "s|^ExecStart=[^ ]*|ExecStart=$(cd "$builddir" && pwd)/rimecast|" "$unit" \
        >"$work/rimecast.service"
    if ! out=$(systemd-analyze verify --man=no "$work/rimecast.service" 2>&1); then
        fail "systemd-analyze verify: $out"
    fi
    echo "$out" | grep -i 'rimecast.service' && fail "systemd-analyze verify warned: $out"
    echo "systemd-analyze verify: ok"
else
    echo "systemd-analyze not installed: unit not verified"
fi

if command -v logrotate >/dev/null 2>&1; then
    logrotate -d -s "$work/state" "$builddir/rimecast.logrotate" >"$work/lr.log" 2>&1 ||
        fail "logrotate: $(cat "$work/lr.log")"
    ! grep -qi '^error' "$work/lr.log" || fail "logrotate: $(cat "$work/lr.log")"
else
    echo "logrotate not installed: rotation file not parsed"
fi
echo "ok: packaging files"
