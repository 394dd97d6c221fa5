#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The shipped Prometheus rules and Grafana dashboard hold: `promtool check rules` passes the
# recording and alert rules of conf/prometheus, `promtool test rules` passes their unit tests
# (conf/prometheus/tests), and conf/grafana/rimecast.json is JSON whose every query parses
# (promtool, with Grafana's variables given values) and, as every rule's expression, names
# only recording rules of rimecast.rules.yml, `up`, and metric families of the catalogue:
# docs/METRICS.md's table, or with --metrics FILE the families of that /metrics exposition
# (test_prometheus.py passes a live server's).
# --self-test: a dashboard naming a family that does not exist, one using a variable it does
# not define, one with a query that does not parse, and one that is not JSON must each fail.
# Skipped (exit 77) without promtool (Debian's prometheus package).
set -eu
src=${RIMECAST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
promtool=${PROMTOOL:-$(command -v promtool || true)}
[ -n "$promtool" ] || { echo "SKIP: no promtool (Debian's prometheus package)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rimecast-prom.XXXXXX")
trap 'rm -rf "$work"' EXIT

# check_dashboard DASHBOARD RULES CATALOGUE: 0 when every query of the dashboard and every
# expression of the rule files parses and names what exists; else the problems on stderr.
check_dashboard() {
	python3 - "$1" "$2" "$3" "$work" "$promtool" <<'EOF'
import json, os, re, subprocess, sys
dashboard, rules_dir, catalogue, work, promtool = sys.argv[1:6]
bad = []

# the families that exist: the catalogue's, the recording rules', and Prometheus's own `up`
text = open(catalogue, encoding="utf-8").read()
if catalogue.endswith(".md"):
    families = set(re.findall(r"^\| `(rimecast_\w+)` \| (?:gauge|counter) \|", text, re.M))
else:
    families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
if not families:
    bad.append("%s: no metric families found" % catalogue)
rule_files = sorted(os.path.join(rules_dir, f) for f in os.listdir(rules_dir)
                    if f.endswith(".yml"))
records, exprs = set(), []
for path in rule_files:
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"\s*- record: (\S+)\s*$", line)
        if m:
            records.add(m.group(1))
        m = re.match(r"(\s*)expr: (.*)$", line)
        if not m:
            continue
        if m.group(2).strip() in ("|", ">", "|-", ">-"):  # a block: the lines indented more
            body = []
            for more in lines[i + 1:]:
                if more.strip() and len(more) - len(more.lstrip()) <= len(m.group(1)):
                    break
                body.append(more)
            exprs.append(("%s:%d" % (os.path.basename(path), i + 1), "\n".join(body)))
        else:
            exprs.append(("%s:%d" % (os.path.basename(path), i + 1), m.group(2)))
known = families | records | {"up"}

# the dashboard's queries, with its variables given values for promtool
try:
    dash = json.load(open(dashboard, encoding="utf-8"))
except (OSError, ValueError) as e:
    print("check-prometheus: %s: not JSON: %s" % (dashboard, e), file=sys.stderr)
    sys.exit(1)
variables = {v["name"] for v in dash.get("templating", {}).get("list", [])}
values = {"job": "rimecast", "mount": ".+", "__rate_interval": "1m", "__range": "1h",
          "__interval": "1m", "datasource": "prometheus"}
queries = []
def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))
for p in panels(dash.get("panels", [])):
    for t in p.get("targets", []):
        queries.append(("panel %r" % p.get("title"), t.get("expr", "")))
for v in dash.get("templating", {}).get("list", []):
    q = v.get("query")
    q = q.get("query", "") if isinstance(q, dict) else q
    m = re.fullmatch(r"label_values\((.*),\s*\w+\)", q or "")
    if v.get("type") == "query" and not m:
        bad.append("variable %s: not a label_values(...) query: %r" % (v["name"], q))
    elif m:
        queries.append(("variable %s" % v["name"], m.group(1)))
if not queries:
    bad.append("%s: no queries" % dashboard)
parsed = []
for where, q in queries:
    def value(m):
        name = m.group(1) or m.group(2)
        if name not in variables and not name.startswith("__"):
            bad.append("%s: variable $%s is not defined: %s" % (where, name, q))
        return values.get(name, "x")
    parsed.append((where, re.sub(r"\$\{(\w+)\}|\$(\w+)", value, q)))

# every expression parses: one recording rule each, checked by promtool
check = os.path.join(work, "queries.yml")
with open(check, "w", encoding="utf-8") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, (where, q) in enumerate(parsed):
        f.write("      - record: query_%d\n        expr: %s\n" % (i, json.dumps(q)))
r = subprocess.run([promtool, "check", "rules", check], capture_output=True, text=True)
if r.returncode != 0:
    bad.append("queries that do not parse:\n%s%s" % (r.stdout, r.stderr))

# the names an expression reads: strip strings, label matchers, ranges, grouping clauses;
# what is left that is no keyword, function or number is a metric name
KEYWORDS = {"and", "or", "unless", "offset", "bool", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2"}
def names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', "", expr)
    e = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\b\d[\w.]*", " ", e)
    found = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        rest = e[m.end():].lstrip()
        if m.group(0).lower() not in KEYWORDS and not rest.startswith("("):
            found.add(m.group(0))
    return found
for where, q in parsed + exprs:
    for n in sorted(names(q) - known):
        bad.append("%s: %s is neither a metric family nor a recording rule" % (where, n))
for b in bad:
    print("check-prometheus: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
}

if [ "${1:-}" = --self-test ]; then
	dash=$src/conf/grafana/rimecast.json
	cat=$src/docs/METRICS.md
	fails() { # fails WHAT FILE: the check must refuse FILE
		if check_dashboard "$2" "$src/conf/prometheus" "$cat" 2>"$work/err"; then
			echo "FAIL: --self-test: $1 passed" >&2
			exit 1
		fi
	}
	sed 's/job_mount:rimecast_listeners:sum/job_mount:rimecast_listners:sum/' "$dash" >"$work/typo.json"
	fails "a misspelled recording rule" "$work/typo.json"
	grep -q 'rimecast_listners' "$work/err" || { cat "$work/err"; echo "FAIL: typo not named" >&2; exit 1; }
	sed 's/{job=\\"\$job\\"}/{job=\\"$site\\"}/' "$dash" >"$work/var.json"
	fails "an undefined variable" "$work/var.json"
	grep -q 'site' "$work/err" || { cat "$work/err"; echo "FAIL: variable not named" >&2; exit 1; }
	sed 's/job:rimecast_listeners:sum{/job:rimecast_listeners:sum{{/' "$dash" >"$work/syntax.json"
	fails "a query that does not parse" "$work/syntax.json"
	head -c 200 "$dash" >"$work/cut.json"
	fails "a cut file" "$work/cut.json"
	echo "ok: check-prometheus --self-test"
	exit 0
fi

catalogue=$src/docs/METRICS.md
if [ "${1:-}" = --metrics ]; then
	catalogue=$2
fi
"$promtool" check rules "$src"/conf/prometheus/*.yml >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
for t in "$src"/conf/prometheus/tests/*.yml; do
	"$promtool" test rules "$t" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
done
check_dashboard "$src/conf/grafana/rimecast.json" "$src/conf/prometheus" "$catalogue"
if [ -z "${1:-}" ]; then
	"$0" --self-test
fi
echo "ok: the Prometheus rules pass promtool and their tests; the dashboard reads what exists"
