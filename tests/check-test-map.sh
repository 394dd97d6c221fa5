#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/README.md stays true: every test it names (file.py::name in tests/wire, a unit
# program, a fuzz driver, a shell check) exists, and every wire test file, unit program and
# fuzz driver of the tree is named in it at least once (the map of features is complete).
# --self-test: a name that is not there, and a wire file the map leaves out, must each fail.
set -eu
src=${RIMECAST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}

check() { # check TOP README: 0 when the map of TOP is true, else the problems on stderr
	python3 - "$1" "$2" <<'EOF'
import ast, glob, os, re, sys
top, readme = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
bad = []
defs = {}
for path, name in set(re.findall(r"(test_\w+\.py)::(test_\w+)", text)):
    full = os.path.join(top, "tests", "wire", path)
    if full not in defs:
        try:
            tree = ast.parse(open(full, encoding="utf-8").read())
        except OSError:
            bad.append("%s: no such wire test file" % path)
            defs[full] = set()
            continue
        defs[full] = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    if name not in defs[full] and os.path.exists(full):
        bad.append("%s::%s: no such test" % (path, name))
named = set(re.findall(r"\b((?:test|fuzz)_\w+\.(?:py|c))\b", text))
named |= set(re.findall(r"\btests/([\w-]+\.sh)\b", text))
for f in named:
    where = [os.path.join(top, d, f) for d in ("tests/wire", "tests/unit", "fuzz", "tests")]
    if not any(os.path.exists(w) for w in where):
        bad.append("%s: named, but no such file" % f)
for pattern in ("tests/wire/test_*.py", "tests/unit/test_*.c", "fuzz/fuzz_*.c"):
    for f in sorted(glob.glob(os.path.join(top, pattern))):
        if os.path.basename(f) not in named:
            bad.append("%s: not in the map" % os.path.relpath(f, top))
for b in bad:
    print("check-test-map: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
}

if [ "${1:-}" = "--self-test" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/check-test-map.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/tests/wire" "$work/tests/unit" "$work/fuzz"
	printf 'def test_here():\n    pass\n' >"$work/tests/wire/test_a.py"
	printf 'x\n' >"$work/tests/unit/test_u.c"
	printf 'x\n' >"$work/fuzz/fuzz_f.c"
	printf '`test_a.py::test_here` `test_u.c` `fuzz_f.c`\n' >"$work/map.md"
	check "$work" "$work/map.md" || { echo "FAIL: a true map refused" >&2; exit 1; }
	printf '`test_a.py::test_gone` `test_u.c` `fuzz_f.c`\n' >"$work/gone.md"
	if check "$work" "$work/gone.md" 2>/dev/null; then
		echo "FAIL: a test that does not exist passed" >&2
		exit 1
	fi
	printf 'def test_b():\n    pass\n' >"$work/tests/wire/test_b.py"
	if check "$work" "$work/map.md" 2>/dev/null; then
		echo "FAIL: a wire file left out of the map passed" >&2
		exit 1
	fi
	exit 0
fi

check "$src" "$src/tests/README.md"
"$0" --self-test
