#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# README.md's "Running it yourself" works as written on a fresh checkout: the files git tracks
# here (with their edits; the whole source folder when it is no git checkout, as in make
# distcheck) are copied to an empty folder, the block's build line is stood in for by the binary
# this build made, and the block's ./rimecast line is run unchanged in the copy's top folder. It
# must serve the status page on "/" and the admin page on "/admin/" (admin/hackme, as README
# says), warn about nothing it cannot read, and stop cleanly on Ctrl-C (SIGINT).
# The README's port is 8000: as root the test runs in a network namespace of its own, so that a
# server already on 8000 is neither disturbed nor mistaken for this one; otherwise it is skipped
# when 8000 is taken.
set -eu
src=${RIMECAST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bin=${RIMECAST_BIN:-$src/rimecast}
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

if [ "$(id -u)" -eq 0 ] && [ -z "${RIMECAST_README_NETNS:-}" ] && command -v ip >/dev/null 2>&1 &&
    unshare -n true 2>/dev/null; then
    RIMECAST_README_NETNS=1 exec unshare -n "$0" "$@"
fi
if [ -n "${RIMECAST_README_NETNS:-}" ]; then
    ip link set lo up || fail "cannot bring up loopback in the test's network namespace"
fi
command -v curl >/dev/null || skip "no curl"
rc=0
curl -s -o /dev/null --max-time 2 http://127.0.0.1:8000/ || rc=$?
[ "$rc" -eq 7 ] || skip "port 8000 is taken"
[ -x "$bin" ] || fail "no server binary at $bin"

work=$(mktemp -d "${TMPDIR:-/tmp}/rimecast-readme.XXXXXX")
pid=
cleanup() {
    [ -z "$pid" ] || kill -KILL "-$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work" # read by the user the server drops to when started as root
copy=$work/rimecast

# a fresh checkout: what git tracks, nothing a build made
mkdir "$copy"
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1 &&
    [ "$(cd "$(git -C "$src" rev-parse --show-toplevel)" && pwd)" = "$(cd "$src" && pwd)" ]; then
    (cd "$src" && git ls-files -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
        tar -xf - -C "$copy"
else
    cp -R "$src/." "$copy"
    chmod -R u+w "$copy"
fi
[ -f "$copy/README.md" ] || fail "the copy of the source tree has no README.md"

# the block under "## Running it yourself": build lines, then the ./rimecast line
block=$(awk '/^## /{section=$0} section=="## Running it yourself" && /^```/{n++; next}
             section=="## Running it yourself" && n==1' "$copy/README.md")
[ -n "$block" ] || fail "README.md has no command block under \"## Running it yourself\""
run=$(printf '%s\n' "$block" | grep '^\./rimecast ') || fail "no ./rimecast line in: $block"
[ "$(printf '%s\n' "$run" | wc -l)" -eq 1 ] || fail "more than one ./rimecast line: $run"
build=$(printf '%s\n' "$block" | grep -v '^\./rimecast ')
printf '%s\n' "$build" | grep -q 'make' || fail "the block does not build: $build"
echo "build step (stood in for by $bin): $build"
echo "run step, as written: $run"
cp "$bin" "$copy/rimecast"

out=$work/server.out
(cd "$copy" && exec setsid sh -c "$run" >"$out" 2>&1 </dev/null) &
pid=$!
page=$work/page
status=
i=0
while [ $i -lt 100 ]; do # up to 10 s for the port to answer
    kill -0 "$pid" 2>/dev/null || { cat "$out"; fail "the server exited at start-up"; }
    status=$(curl -s -o "$page" -w '%{http_code}' --max-time 2 http://localhost:8000/) || status=
    [ -n "$status" ] && [ "$status" != 000 ] && break
    sleep 0.1
    i=$((i + 1))
done
[ "$status" = 200 ] || { cat "$out"; fail "GET / answered ${status:-nothing}, not the status page"; }
grep -q '<html' "$page" && grep -qi 'rimecast' "$page" || { cat "$out" "$page"; fail "GET / is no status page"; }
status=$(curl -s -o "$page" -w '%{http_code}' --max-time 5 -u admin:hackme http://localhost:8000/admin/) || status=
[ "$status" = 200 ] || { cat "$out"; fail "GET /admin/ answered $status, not the admin page"; }
grep -q '<html' "$page" && grep -q 'listmounts' "$page" || { cat "$out" "$page"; fail "GET /admin/ is no admin page"; }
if grep -E 'WARN|ERROR' "$out"; then fail "the server warned at start-up (above)"; fi

kill -INT "-$pid" # Ctrl-C: to the foreground process group
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || { cat "$out"; fail "the server exited $rc on SIGINT"; }
echo "ok: README's \"Running it yourself\" serves / and /admin/"
