#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The command line: -v/--version print the version, -h/--help the usage (both exit 0 on
# stdout); an unknown option or a missing -c prints the usage on stderr and exits 2.
set -eu
bin=${RIMECAST_BIN:-./rimecast}
fail() { echo "FAIL: $*" >&2; exit 1; }

for opt in -v --version; do
    out=$("$bin" "$opt") || fail "$opt exited $?"
    echo "$out" | grep -Eq '^Rimecast [0-9]+\.[0-9]+' || fail "$opt printed: $out"
done
for opt in -h --help; do
    out=$("$bin" "$opt") || fail "$opt exited $?"
    echo "$out" | grep -q -- '--config=CONFIG' || fail "$opt printed: $out"
done
rc=0; "$bin" --no-such-option >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "an unknown option exited $rc"
rc=0; err=$("$bin" 2>&1 >/dev/null) || rc=$?
[ "$rc" -eq 2 ] && echo "$err" | grep -q usage || fail "no -c: exit $rc, $err"
echo "ok: command line"
