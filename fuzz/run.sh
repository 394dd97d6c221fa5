#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh: builds and runs every libFuzzer driver fuzz/fuzz_NAME.c for a bounded time.
#
# Each driver names what it needs in comment lines of its own:
#   // fuzz-sources: src/http/parser.c src/core/str.c   (required: sources to compile with it)
#   // fuzz-pkgs: libxml-2.0 ogg                         (optional: pkg-config packages)
#   // fuzz-args: -max_len=20000                         (optional: extra libFuzzer flags)
# Usage: fuzz/run.sh [NAME...]   (default: all drivers; NAME is "http" for fuzz_http.c)
# Environment: FUZZ_SECONDS (default 20) per driver, or FUZZ_RUNS (a number of executions
# instead of a time; no time limit then), FUZZ_JOBS (drivers at a time, default 1),
# FUZZ_WORKERS (processes per driver sharing one corpus, each running FUZZ_RUNS or for
# FUZZ_SECONDS; default 1), CC
# (default clang), FUZZ_KEEP=1 keeps the build directory. Seeds in fuzz/corpus/NAME/ are used
# when present. Exits non-zero when a driver fails to build or finds a crash; the build
# directory (with the crash input) is kept.
# FUZZ_MERGE=DIR: instead of fuzzing, minimise fuzz/corpus/NAME/ plus DIR/NAME/ (new seeds)
# with -merge=1 into a fresh directory that then replaces fuzz/corpus/NAME/.
set -u

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.." || exit 2
top=$(pwd)
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
CC=${CC:-clang}
build=$(mktemp -d "${TMPDIR:-/tmp}/rimecast-fuzz.XXXXXX") || exit 2
failed=""

directive() { # directive FILE KEY -> value of the first "// KEY:" line
    sed -n "s|^// $2:[[:space:]]*||p" "$1" | head -n 1
}

if [ $# -gt 0 ]; then
    drivers=""
    for name in "$@"; do
        drivers="$drivers fuzz/fuzz_${name#fuzz_}.c"
    done
else
    drivers=$(ls fuzz/fuzz_*.c 2>/dev/null)
fi

# FUZZ_JOBS=N (N > 1): drivers built and run N at a time, each one's output printed whole when
# it ends; the exit status says whether any failed.
if [ "${FUZZ_JOBS:-1}" -gt 1 ] && [ -z "${FUZZ_MERGE:-}" ] && [ "$(echo $drivers | wc -w)" -gt 1 ]; then
    rmdir "$build"
    # shellcheck disable=SC2086
    if printf '%s\n' $drivers | xargs -P "$FUZZ_JOBS" -I{} sh -c \
        'out=$(FUZZ_JOBS=1 "$0" "$(basename "$1" .c)" 2>&1); rc=$?; printf "%s\n" "$out"; exit $rc' \
        "$self" {}; then
        echo "run.sh: all fuzzers passed"
        exit 0
    fi
    echo "run.sh: some fuzzers failed (their output above)" >&2
    exit 1
fi

for src in $drivers; do
    name=$(basename "$src" .c)
    if [ ! -f "$src" ]; then
        echo "run.sh: no such driver: $src" >&2
        failed="$failed $name"
        continue
    fi
    sources=$(directive "$src" fuzz-sources)
    pkgs=$(directive "$src" fuzz-pkgs)
    args=$(directive "$src" fuzz-args)
    pkgflags=""
    if [ -n "$pkgs" ]; then
        # shellcheck disable=SC2086
        if ! pkgflags=$(pkg-config --cflags --libs $pkgs); then
            echo "run.sh: $name: pkg-config failed for: $pkgs" >&2
            failed="$failed $name"
            continue
        fi
    fi
    echo "== $name: building ($sources${pkgs:+; $pkgs})"
    # shellcheck disable=SC2086
    if ! "$CC" -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -Isrc "$src" $sources $pkgflags -o "$build/$name"; then
        echo "run.sh: $name: build failed" >&2
        failed="$failed $name"
        continue
    fi
    mkdir -p "$build/corpus-$name"
    seeds=""
    [ -d "fuzz/corpus/${name#fuzz_}" ] && seeds="fuzz/corpus/${name#fuzz_}"
    if [ -n "${FUZZ_MERGE:-}" ]; then
        short=${name#fuzz_}
        mkdir -p "$build/merged-$short" "fuzz/corpus/$short"
        extra=""
        [ -d "$FUZZ_MERGE/$short" ] && extra="$FUZZ_MERGE/$short"
        # shellcheck disable=SC2086
        if ! "$build/$name" -merge=1 $args "$build/merged-$short" "fuzz/corpus/$short" $extra \
            >"$build/$name.log" 2>&1; then
            tail -n 20 "$build/$name.log" >&2
            failed="$failed $name"
            continue
        fi
        rm -rf "fuzz/corpus/$short"
        mv "$build/merged-$short" "fuzz/corpus/$short"
        echo "== $name: corpus $(ls "fuzz/corpus/$short" | wc -l) files, $(du -sk "fuzz/corpus/$short" | cut -f1) KB"
        continue
    fi
    limit="-max_total_time=$FUZZ_SECONDS"
    [ -n "${FUZZ_RUNS:-}" ] && limit="-runs=$FUZZ_RUNS"
    what="${FUZZ_SECONDS}s"
    [ -n "${FUZZ_RUNS:-}" ] && what="$FUZZ_RUNS runs"
    par=""
    if [ "${FUZZ_WORKERS:-1}" -gt 1 ]; then
        par="-jobs=$FUZZ_WORKERS -workers=$FUZZ_WORKERS"
        what="$what x $FUZZ_WORKERS processes"
    fi
    echo "== $name: running ($what)"
    # (-jobs processes write fuzz-N.log into the current directory, the build directory; the
    # parent copies each into its own output when the process ends)
    # shellcheck disable=SC2086
    if ! (cd "$build" && "$build/$name" $limit $par -print_final_stats=1 \
        -artifact_prefix="$build/$name-" $args "$build/corpus-$name" ${seeds:+"$top/$seeds"}) \
        >"$build/$name.log" 2>&1; then
        tail -n 40 "$build/$name.log" >&2
        echo "run.sh: $name: FAILED (log and crash input in $build)" >&2
        failed="$failed $name"
        continue
    fi
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^Done ' "$build/$name.log" | tr '\n' ' '
    echo
    grep -E '^#[0-9]+[[:space:]]+DONE ' "$build/$name.log" | tail -n 1
done

if [ -n "$failed" ]; then
    echo "run.sh: failed:$failed (build directory kept: $build)" >&2
    exit 1
fi
if [ "${FUZZ_KEEP:-0}" = 1 ]; then
    echo "build directory kept: $build"
else
    rm -rf "$build"
fi
echo "run.sh: all fuzzers passed"
