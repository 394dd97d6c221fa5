#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the Debian package from this tree and checks it. Run from anywhere:
#   packaging/build-deb.sh [OUTDIR]        (the .deb is copied to OUTDIR, default: the current dir)
# Needs: dpkg-dev, debhelper (>= 13) and the build dependencies of debian/control
#   (apt-get install dpkg-dev debhelper pkg-config libxml2-dev libxslt1-dev libogg-dev \
#    libvorbis-dev libcrypt-dev libssl-dev libcurl4-openssl-dev libsqlite3-dev libmaxminddb-dev \
#    groff-base; libvorbis-dev for
#    a unit test: the daemon does not link libvorbis and the package does not depend on it).
# What it tests: `dpkg-buildpackage -us -uc -b` in a copy of the tree (the tracked files and
# uncommitted edits, no build products) succeeds, with the unit tests; the package holds the
# binary, the man page, the systemd unit, the logrotate file and the config; the config is a
# conffile (an edited config is kept on upgrade); the unpacked binary runs. It does not install
# the package into the running system or start the service (that needs systemd as PID 1):
# on a test machine, `dpkg -i rimecast_*.deb` then `systemctl status rimecast` does.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(pwd)}
work=$(mktemp -d "${TMPDIR:-/tmp}/rimecast-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

version=$(sed -n '1s/^rimecast (\([^)]*\)).*/\1/p' "$top/debian/changelog")
mkdir "$work/rimecast-$version"
(cd "$top" && git ls-files -co --exclude-standard -z | tar --null --no-recursion -T - -cf -) |
    tar -xf - -C "$work/rimecast-$version"
(cd "$work/rimecast-$version" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 ||
    { tail -60 "$work/build.log"; fail "dpkg-buildpackage"; }
deb=$(ls "$work"/rimecast_"$version"_*.deb)

dpkg -c "$deb" >"$work/contents"
for f in ./usr/bin/rimecast ./etc/rimecast/rimecast.xml ./lib/systemd/system/rimecast.service \
    ./etc/logrotate.d/rimecast ./usr/share/man/man8/rimecast.8.gz \
    ./usr/share/rimecast/web/status.xsl ./usr/share/doc/rimecast/CONFIG.md; do
    grep -Eq " $f(\.gz)?\$" "$work/contents" || fail "$f is not in the package"
done
dpkg-deb -e "$deb" "$work/control"
grep -qx /etc/rimecast/rimecast.xml "$work/control/conffiles" || fail "the config is not a conffile"
grep -q 'systemctl\|deb-systemd' "$work/control/postinst" || fail "postinst does not enable the unit"
dpkg -I "$deb" | grep -q 'Package: rimecast' || fail "dpkg -I"
! dpkg-deb -f "$deb" Depends | grep -q vorbis ||
    fail "the package depends on libvorbis (only a unit test uses it)"

dpkg -x "$deb" "$work/root"
"$work/root/usr/bin/rimecast" --version | grep -q "^Rimecast $(echo "$version" | sed 's/-.*//')" ||
    fail "the packaged binary does not run"
grep -q '<logdir>/var/log/rimecast</logdir>' "$work/root/etc/rimecast/rimecast.xml" ||
    fail "the packaged config does not log to /var/log/rimecast"
cp "$deb" "$out/"
echo "ok: $(basename "$deb") built and checked"
