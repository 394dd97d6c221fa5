#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# `make install` keeps an edited config: installs into a temporary DESTDIR twice with an edit
# in between (the edit survives, the new default lands next to it as rimecast.xml.dist), then
# `make uninstall` keeps the edited config and removes an unedited one. The first install also
# puts the Prometheus rules and the Grafana dashboard in the data folder.
set -eu
builddir=${RIMECAST_BUILDDIR:-.}
work=$(mktemp -d "${TMPDIR:-/tmp}/rimecast-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest=$work/root
log=$work/make.log
fail() { echo "FAIL: $*" >&2; exit 1; }

# the installed paths: ask the Makefile rather than guess the prefix
sysconfdir=${RIMECAST_SYSCONFDIR:-$(env MAKEFLAGS= make -s --no-print-directory -C "$builddir" print-sysconfdir)}
conf="$dest$sysconfdir/rimecast/rimecast.xml"

make -s -C "$builddir" install DESTDIR="$dest" >"$log" 2>&1 || { cat "$log"; fail "first install"; }
[ -f "$conf" ] || fail "no config installed at $conf"
grep -q '<source-password>' "$conf" || fail "installed config is not the default config"
[ ! -e "$conf.dist" ] || fail "rimecast.xml.dist on a first install"

# the Prometheus rules (with their unit tests, which run where they are installed) and the
# Grafana dashboard go to the data folder
pkgdata=$(env MAKEFLAGS= make -s --no-print-directory -C "$builddir" print-pkgdatadir)
for f in prometheus/rimecast.rules.yml prometheus/rimecast.alerts.yml \
    prometheus/tests/rimecast.rules_test.yml prometheus/tests/rimecast.alerts_test.yml \
    grafana/rimecast.json; do
	[ -f "$dest$pkgdata/$f" ] || fail "$f is not installed in $pkgdata"
done
if command -v promtool >/dev/null 2>&1; then
	for t in "$dest$pkgdata"/prometheus/tests/*.yml; do
		promtool test rules "$t" >"$log" 2>&1 || { cat "$log"; fail "installed $t"; }
	done
fi

# a second install of the same build changes nothing
make -s -C "$builddir" install DESTDIR="$dest" >"$log" 2>&1 || { cat "$log"; fail "second install"; }
[ ! -e "$conf.dist" ] || fail "rimecast.xml.dist next to an unedited config"

echo '<!-- edited by the station -->' >>"$conf"
make -s -C "$builddir" install DESTDIR="$dest" >"$log" 2>&1 || { cat "$log"; fail "install over an edited config"; }
grep -q 'edited by the station' "$conf" || fail "make install overwrote the edited config"
[ -f "$conf.dist" ] || fail "the new default config was not installed as rimecast.xml.dist"
grep -q 'rimecast.xml.dist' "$log" || fail "make install did not say where the new config went"

make -s -C "$builddir" uninstall DESTDIR="$dest" >"$log" 2>&1 || { cat "$log"; fail "uninstall"; }
grep -q 'edited by the station' "$conf" || fail "make uninstall removed the edited config"
[ ! -e "$conf.dist" ] || fail "make uninstall left rimecast.xml.dist"

# an unedited config goes with make uninstall
rm -f "$conf"
make -s -C "$builddir" install DESTDIR="$dest" >"$log" 2>&1 || { cat "$log"; fail "reinstall"; }
make -s -C "$builddir" uninstall DESTDIR="$dest" >"$log" 2>&1 || { cat "$log"; fail "uninstall"; }
[ ! -e "$conf" ] || fail "make uninstall left an unedited config"
echo "ok: make install keeps an edited config"
