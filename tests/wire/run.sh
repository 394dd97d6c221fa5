#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs the black-box wire tests (pytest) against the daemon in $RIMECAST_BIN.
# Used by `make check` (RIMECAST_BIN, RIMECAST_SRCDIR, RIMECAST_BUILDDIR set) and by hand:
#   tests/wire/run.sh [pytest args...]      e.g. -k burst, -x, -v
# WIRE_JOBS=N runs the tests in N processes (pytest-xdist; most tests wait on the daemon, not
# on the CPU); each process takes server ports from a range of its own (conftest.py).
# WIRE_SKIP_MARKS="slow browser" leaves out the tests with those markers (conftest.py): the
# sanitizer build's run skips what the plain run already covers and a sanitizer adds nothing to.
# RIMECAST_BIN=/usr/bin/icecast2 runs the shared tests against the reference server.
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
: "${RIMECAST_SRCDIR:=$top}"
if [ -z "$RIMECAST_BIN" ]; then
	if [ -n "$RIMECAST_BUILDDIR" ]; then
		RIMECAST_BIN=$RIMECAST_BUILDDIR/rimecast
	else
		RIMECAST_BIN=$top/rimecast
	fi
fi
export RIMECAST_BIN RIMECAST_SRCDIR
# The source tree may be read-only (make distcheck): no bytecode, no cache.
PYTHONDONTWRITEBYTECODE=1
export PYTHONDONTWRITEBYTECODE
if [ ! -x "$RIMECAST_BIN" ]; then
	echo "run.sh: server binary $RIMECAST_BIN not found or not executable" >&2
	exit 1
fi

if /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1; then
	py=/usr/bin/python3
elif python3 -c 'import pytest' >/dev/null 2>&1; then
	py=python3
else
	echo "run.sh: no python3 with pytest found" >&2
	exit 1
fi

par=""
if [ "${WIRE_JOBS:-1}" -gt 1 ]; then
	if "$py" -c 'import xdist' >/dev/null 2>&1; then
		par="-n $WIRE_JOBS"
	else
		echo "run.sh: WIRE_JOBS=$WIRE_JOBS but no pytest-xdist (python3-pytest-xdist): one process" >&2
	fi
fi

# -m "not slow and not browser": before the caller's arguments, so that a -m of theirs wins
set -- ${WIRE_SKIP_MARKS:+-m "not $(echo $WIRE_SKIP_MARKS | sed 's/ / and not /g')"} "$@"

cd "$here" || exit 1
out=$(mktemp "${TMPDIR:-/tmp}/wire-run.XXXXXX") || exit 1
# shellcheck disable=SC2086
{ "$py" -m pytest -q -ra -p no:cacheprovider -c "$here/pytest.ini" --rootdir "$here" $par "$@"
  echo "$?" >"$out.rc"; } | tee "$out"
rc=$(cat "$out.rc")
failed=$(sed -n 's/^FAILED \([^ ]*\).*/\1/p' "$out")
rm -f "$out" "$out.rc"
if [ "$rc" -eq 5 ]; then
	echo "run.sh: no tests were collected" >&2
	exit 1
fi
# When a few tests fail, they run once more on their own (timing on a busy machine): the first
# failure stays printed above and a test that passes the second time is named as flaky.
n=$(printf '%s\n' "$failed" | grep -c .)
if [ "$rc" -eq 1 ] && [ "$n" -ge 1 ] && [ "$n" -le 3 ]; then
	echo "run.sh: running once more on their own:" $failed
	# shellcheck disable=SC2086
	if "$py" -m pytest -q -ra -p no:cacheprovider -c "$here/pytest.ini" --rootdir "$here" $failed; then
		echo "run.sh: FLAKY (failed once, passed on their own):" $failed
		exit 0
	fi
	exit 1
fi
exit "$rc"
