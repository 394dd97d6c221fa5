# SPDX-License-Identifier: GPL-2.0-or-later
# checks.sh: sourced by the load scripts that judge what they measure (faults.sh, upgrade.sh):
# finding the binaries, PASS/FAIL lines with their count, a free port. Defines functions and
# the counters only; runs nothing.

# find_binaries SCRIPT: $rimecast and $swarm as given (option or environment), else from the
# top directory ($top), else from build/; exits 2 naming SCRIPT when one is missing.
find_binaries() {
    local c
    for c in "$rimecast" "$top/rimecast" "$top/build/rimecast"; do [ -n "$c" ] && [ -x "$c" ] && { rimecast=$c; break; }; done
    for c in "$swarm" "$top/loadtest/swarm" "$top/build/loadtest/swarm"; do [ -n "$c" ] && [ -x "$c" ] && { swarm=$c; break; }; done
    [ -x "$rimecast" ] && [ -x "$swarm" ] || { echo "$1: rimecast or swarm binary not found" >&2; exit 2; }
}

passed=0; failed=0
pass() { passed=$((passed + 1)); echo "PASS $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
info() { echo "     $*"; }

# a port free on 127.0.0.1 now
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
