#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs the Debian package into a fresh Debian 12 system and boots that system with systemd
# as PID 1 in a container, to check the package as an operator meets it:
#   packaging/container-test.sh DEB|--build [ROOTFS]
# DEB is a package made by packaging/build-deb.sh; --build builds it first from this tree in
# another fresh copy of the system, with only build-essential and the Build-Depends of
# debian/control installed there (apt-get build-dep), so a missing build dependency fails.
# ROOTFS, when given, is a directory made by
#   debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,curl,ca-certificates \
#       bookworm ROOTFS http://deb.debian.org/debian
# and is copied, never changed; without it the script runs that debootstrap itself (a few
# minutes, needs the Debian mirror). Needs root, debootstrap and systemd-container
# (systemd-nspawn). MIRROR overrides the mirror.
#
# What it checks: `apt-get install ./rimecast_*.deb` in the fresh system pulls in its
# dependencies and succeeds without systemd running; an edited config survives installing the
# package again (a conffile); then, booted: rimecast.service is enabled and active, runs as
# nobody, serves the status page on port 8000, takes the edited source password (and refuses
# the packaged "hackme"), `systemctl reload` keeps the same process serving and is logged,
# the logs are in /var/log/rimecast, logrotate's rotation makes it write to the new files,
# the running service is upgraded twice with a listener connected all along (curl, to a file),
# once by `systemctl kill -s USR2 --kill-whom=main rimecast` and once by `rimecast --upgrade`:
# each time `systemctl show -p MainPID` names the new process, the service stays active and
# the listener keeps receiving (a daemon that does not handle SIGUSR2 yet, from before the
# hand-over, is not signalled: those checks are skipped, saying so), and
# `systemctl stop` ends it cleanly. The container has its
# own network namespace (loopback only), so port 8000 of this machine is not touched.
set -eu
deb=${1:?usage: container-test.sh DEB|--build [ROOTFS]}
base=${2:-}
mirror=${MIRROR:-http://deb.debian.org/debian}
top=$(cd "$(dirname "$0")/.." && pwd)
[ "$deb" = --build ] || [ -f "$deb" ] || { echo "container-test.sh: no such package: $deb" >&2; exit 2; }
for tool in systemd-nspawn chroot; do
    command -v $tool >/dev/null || { echo "container-test.sh: $tool is needed" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rimecast-container.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
root=$work/root

if [ -z "$base" ]; then
    command -v debootstrap >/dev/null || { echo "container-test.sh: debootstrap is needed" >&2; exit 2; }
    base=$work/base
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,curl,ca-certificates \
        bookworm "$base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
fi

if [ "$deb" = --build ]; then
    broot=$work/build-root
    cp -a "$base" "$broot"
    cp /etc/resolv.conf "$broot/etc/resolv.conf"
    version=$(sed -n '1s/^rimecast (\([^)]*\)).*/\1/p' "$top/debian/changelog")
    mkdir -p "$broot/src/rimecast-$version"
    (cd "$top" && git ls-files -co --exclude-standard -z | tar --null --no-recursion -T - -cf -) |
        tar -xf - -C "$broot/src/rimecast-$version"
    chroot "$broot" env -u TMPDIR DEBIAN_FRONTEND=noninteractive LC_ALL=C sh -c "
        apt-get update -q && apt-get install -y -q --no-install-recommends build-essential &&
        cd /src/rimecast-$version && apt-get build-dep -y -q --no-install-recommends ./ &&
        dpkg-buildpackage -us -uc -b" >"$work/build.log" 2>&1 ||
        { tail -40 "$work/build.log"; fail "building the package in a fresh system"; }
    deb=$(ls "$broot"/src/rimecast_"$version"_*.deb)
    echo "ok: built in a fresh system with only its Build-Depends: $(basename "$deb")"
fi

cp -a "$base" "$root"
cp "$deb" "$root/root/rimecast.deb"
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root() { chroot "$root" env -u TMPDIR DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

# install, with dependencies from the mirror, while systemd is not running
in_root apt-get update -q >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; fail "apt-get update"; }
in_root apt-get install -y -q /root/rimecast.deb >>"$work/apt.log" 2>&1 ||
    { tail -30 "$work/apt.log"; fail "apt-get install of the package"; }
in_root apt-get install -y -q logrotate >>"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log"; fail "apt-get install logrotate"; }
echo "ok: installed with its dependencies ($(grep -c '^Unpacking' "$work/apt.log") packages unpacked)"
[ -L "$root/etc/systemd/system/multi-user.target.wants/rimecast.service" ] ||
    fail "rimecast.service is not enabled after install"

# the operator edits the config; installing the package again keeps the edit
conf=$root/etc/rimecast/rimecast.xml
grep -q '<source-password>hackme</source-password>' "$conf" || fail "packaged source password"
sed -i 's|<source-password>hackme</source-password>|<source-password>edited-secret</source-password>|' "$conf"
in_root dpkg -i /root/rimecast.deb </dev/null >"$work/reinstall.log" 2>&1 ||
    { tail -20 "$work/reinstall.log"; fail "installing the package again"; }
grep -q '<source-password>edited-secret</source-password>' "$conf" ||
    fail "the edited config was replaced when the package was installed again"
echo "ok: an edited config survives installing the package again"

# booted: the checks run as a unit after rimecast.service, write their result and power off
cat >"$root/usr/local/sbin/rimecast-check" <<'EOF'
#!/bin/sh
out=/root/check.result
: >"$out"
ok() { echo "ok: $*" >>"$out"; }
bad() { echo "FAIL: $*" >>"$out"; }
served() { curl -fsS --max-time 2 http://127.0.0.1:8000/status-json.xsl >/dev/null 2>&1; }
i=0; until served || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
served && ok "the status page is served on port 8000" || bad "nothing served on port 8000"
systemctl is-enabled rimecast >/dev/null && ok "rimecast.service is enabled" || bad "not enabled"
systemctl is-active rimecast >/dev/null && ok "rimecast.service is active" || bad "not active"
pid=$(systemctl show -p MainPID --value rimecast)
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
[ "$uid" = "$(id -u nobody)" ] && ok "the daemon runs as nobody" || bad "the daemon runs as uid '$uid'"
code() { # code PASSWORD -> HTTP status of a source login with it
    head -c 65536 /dev/zero | curl -s -o /dev/null -w '%{http_code}' --max-time 3 -X PUT \
        -u "source:$1" -H 'Content-Type: audio/mpeg' -H 'Expect:' --data-binary @- \
        http://127.0.0.1:8000/check.mp3
}
c=$(code hackme); [ "$c" = 401 ] && ok "the packaged password is refused (401)" || bad "hackme: $c"
c=$(code edited-secret); [ "$c" = 200 ] && ok "the edited password is taken (200)" || bad "edited: $c"
systemctl reload rimecast >>"$out" 2>&1 || { echo "systemctl reload failed:" >>"$out"; systemctl status rimecast --no-pager -n 5 >>"$out" 2>&1; }
i=0; until grep -qi 'reload' /var/log/rimecast/error.log 2>/dev/null || [ $i -ge 50 ]; do
    sleep 0.1; i=$((i + 1)); done
grep -qi 'reload' /var/log/rimecast/error.log && ok "the reload is logged" || bad "no reload in the log"
[ "$(systemctl show -p MainPID --value rimecast)" = "$pid" ] && served &&
    ok "after systemctl reload the same process serves" || bad "reload changed or stopped the process"
[ -s /var/log/rimecast/access.log ] && ok "the access log is written" || bad "no access log"
# upgrades of the running service, a listener connected all along
handles_usr2() { # PID: the process blocks, ignores or catches SIGUSR2 (else it would end it)
    m=0
    for v in $(sed -n 's/^Sig\(Blk\|Ign\|Cgt\):[[:space:]]*/0x/p' "/proc/$1/status"); do
        m=$((m | v))
    done
    [ $((m & (1 << 11))) -ne 0 ]
}
main_pid() { systemctl show -p MainPID --value rimecast; }
grows() { # FILE: it grows within 5 s
    s0=$(stat -c %s "$1"); i=0
    while [ "$(stat -c %s "$1")" -le "$s0" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(stat -c %s "$1")" -gt "$s0" ]
}
upgraded() { # HOW OLD_PID: the service names another main process that serves, the listener goes on
    new=$(main_pid)
    [ "$new" != "$2" ] && [ "$new" != 0 ] && ok "$1: systemctl show -p MainPID names the new process ($2 -> $new)" ||
        bad "$1: MainPID is $new (was $2)"
    grep -q "upgrade: handed over to PID $new" /var/log/rimecast/error.log &&
        ok "$1: the old process logged the hand-over to $new" || bad "$1: no hand-over to $new logged"
    systemctl is-active rimecast >/dev/null && ok "$1: the service is active" || bad "$1: not active"
    kill -0 "$lpid" 2>/dev/null && grows /root/listener.out &&
        ok "$1: the listener connected before it is still receiving" || bad "$1: the listener stopped"
    served && ok "$1: the status page is served" || bad "$1: nothing served"
}
head -c 100000000 /dev/urandom | curl -s -o /dev/null --limit-rate 16k -X PUT -T - \
    -u source:edited-secret -H 'Content-Type: audio/mpeg' -H 'Expect:' http://127.0.0.1:8000/live.mp3 &
spid=$!
i=0; until curl -s --max-time 1 http://127.0.0.1:8000/status-json.xsl | grep -q live.mp3 || [ $i -ge 50 ]; do
    sleep 0.1; i=$((i + 1)); done
: >/root/listener.out # curl makes the file only with the first bytes: grows needs it before
curl -s -o /root/listener.out http://127.0.0.1:8000/live.mp3 &
lpid=$!
grows /root/listener.out && ok "a listener receives /live.mp3" || bad "no listener data"
pid=$(main_pid)
if ! handles_usr2 "$pid"; then
    echo "skip: this rimecast (PID $pid) does not handle SIGUSR2 yet (no upgrade hand-over): upgrade checks not run" >>"$out"
    rimecast --upgrade -c /etc/rimecast/rimecast.xml >>"$out" 2>&1; rc=$?
    [ $rc = 3 ] && [ "$(main_pid)" = "$pid" ] && ok "rimecast --upgrade refuses it (exit 3) and sends nothing" ||
        bad "rimecast --upgrade on a server without the hand-over: exit $rc, MainPID $(main_pid)"
else
    systemctl kill -s USR2 --kill-whom=main rimecast
    i=0; until grep -q 'upgrade: \(handed over\|failed\)' /var/log/rimecast/error.log || [ $i -ge 600 ]; do
        sleep 0.1; i=$((i + 1)); done
    i=0; until [ "$(main_pid)" != "$pid" ] || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
    grep 'upgrade: failed' /var/log/rimecast/error.log >>"$out"
    upgraded "systemctl kill -s USR2" "$pid"
    pid=$(main_pid)
    rimecast --upgrade -c /etc/rimecast/rimecast.xml >>"$out" 2>&1 && ok "rimecast --upgrade exits 0" ||
        bad "rimecast --upgrade exited $?"
    upgraded "rimecast --upgrade" "$pid"
    pid=$(main_pid)
fi
kill "$lpid" "$spid" 2>/dev/null
[ "$(stat -c %U /var/log/rimecast)" = nobody ] && ok "/var/log/rimecast belongs to nobody" ||
    bad "/var/log/rimecast belongs to $(stat -c %U /var/log/rimecast)"
# logrotate's rotation reopens the logs through the reload
if logrotate -f /etc/logrotate.d/rimecast >>"$out" 2>&1 && [ -f /var/log/rimecast/access.log.1 ]; then
    served
    i=0; until [ -s /var/log/rimecast/access.log ] || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
    [ -s /var/log/rimecast/access.log ] && ok "after logrotate the new access log is written" ||
        bad "after logrotate nothing is written to the new access log"
else
    bad "logrotate -f /etc/logrotate.d/rimecast did not rotate the access log"
fi
systemctl stop rimecast
r=$(systemctl show -p Result --value rimecast)
[ "$r" = success ] && ok "systemctl stop ends it cleanly" || bad "stop result: $r"
echo done >>"$out"
systemctl poweroff
EOF
chmod 755 "$root/usr/local/sbin/rimecast-check"
cat >"$root/etc/systemd/system/rimecast-check.service" <<'EOF'
[Unit]
Description=Checks of the installed rimecast package
After=rimecast.service
Wants=rimecast.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/rimecast-check

[Install]
WantedBy=multi-user.target
EOF
ln -s ../rimecast-check.service "$root/etc/systemd/system/multi-user.target.wants/rimecast-check.service"

timeout 300 systemd-nspawn -q --boot --register=no --keep-unit --private-network -D "$root" \
    >"$work/boot.log" 2>&1 </dev/null || true
[ -f "$root/root/check.result" ] || { tail -40 "$work/boot.log"; fail "the checks did not run in the booted system"; }
cat "$root/root/check.result"
grep -qx done "$root/root/check.result" || fail "the checks did not finish"
if grep -q '^FAIL' "$root/root/check.result"; then
    tail -20 "$root/var/log/rimecast/error.log" 2>/dev/null || true
    fail "in the booted system"
fi
grep '^skip:' "$root/root/check.result" >&2 || true
if grep -q '^skip:' "$root/root/check.result"; then
    echo "ok: the package installs, runs as a service under systemd, reloads and stops (upgrades skipped)"
else
    echo "ok: the package installs, runs as a service under systemd, reloads, upgrades and stops"
fi
