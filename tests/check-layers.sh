#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when a file of src/ includes a header of a higher layer. The layers, lowest first
# (one line, the only place they are listed; docs/ARCHITECTURE.md explains them):
LAYERS="core conf,format net http auth ads stream upstream hls audience stats yp admin upgrade router main"
# A folder may include its own headers and those of any lower layer; folders sharing a layer
# (conf,format) may not include each other. src/main.c is the layer "main"; the generated
# build-config.h (package version) is allowed everywhere.
# Inside a folder, files (a .c with its .h as one unit) must not include each other in a ring:
# a ring fails the check.
#   tests/check-layers.sh              the check of $RIMECAST_SRCDIR/src, then the self-test
#   tests/check-layers.sh --self-test  only the self-test: a copy of src/ with one include
#                                      added going up (core -> router), then one going sideways
#                                      (conf -> format), then one closing a ring inside core/
#                                      (escape -> log), must fail with that include (that ring),
#                                      and only it, reported
srcdir=${RIMECAST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}

rank_of() { # folder -> layer index, or empty
	i=0
	for l in $LAYERS; do
		case ",$l," in *",$1,"*) echo $i; return ;; esac
		i=$((i + 1))
	done
}

# check_tree DIR: the check of DIR (a src/ tree); prints what is wrong, returns 1 if anything is.
check_tree() (
	cd "$1" || exit 1
	bad=0
	for f in $(find . -name '*.[ch]' | sed 's|^\./||' | sort); do
		case "$f" in */*) from=${f%%/*} ;; *) from=${f%.[ch]} ;; esac
		rf=$(rank_of "$from")
		if [ -z "$rf" ]; then
			echo "check-layers: src/$f is in no layer (add its folder to LAYERS)"
			bad=1
			continue
		fi
		for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
			case "$inc" in */*) to=${inc%%/*} ;; *) continue ;; esac
			[ "$to" = "$from" ] && continue
			rt=$(rank_of "$to")
			if [ -z "$rt" ] || [ "$rt" -ge "$rf" ]; then
				echo "check-layers: src/$f ($from) includes $inc ($to): not a lower layer"
				bad=1
			fi
		done
	done
	for dir in $(find . -mindepth 1 -maxdepth 1 -type d | sed 's|^\./||' | sort); do
		ring=$(folder_rings "$dir")
		[ -z "$ring" ] && continue
		echo "check-layers: files of src/$dir/ include each other in a ring: $ring"
		bad=1
	done
	exit $bad
)

# folder_rings DIR (inside a src/ tree, as cwd): the units of DIR that stand in a ring of
# includes, space-separated, or nothing. tsort names the members of each loop it breaks.
folder_rings() {
	for f in "$1"/*.[ch]; do
		[ -e "$f" ] || continue
		unit=$(basename "$f"); unit=${unit%.[ch]}
		echo "$unit $unit"
		for inc in $(sed -n "s|^#include \"$1/\([^\"]*\)\.h\".*|\1|p" "$f"); do
			[ "$inc" != "$unit" ] && echo "$inc $unit"
		done
	done | tsort 2>&1 >/dev/null | sed -n 's/^tsort: \([^ :]*\)$/\1/p' | sort -u | tr '\n' ' ' |
		sed 's/ $//'
}

# self_test: the check must fail on a copy of src/ with one bad include, reporting just that.
self_test() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-layers.XXXXXX") || return 1
	# (make distcheck: the source tree, and so the copy, is read-only)
	cp -R "$srcdir/src" "$tmp/src" && chmod -R u+w "$tmp/src" || { rm -rf "$tmp"; return 1; }
	ok=0
	for pair in "core/log.c router/router.h" "conf/config.c format/format.h" \
		"core/escape.c core/log.h"; do
		file=${pair% *} inc=${pair#* }
		cp "$tmp/src/$file" "$tmp/orig"
		echo "#include \"$inc\"" >>"$tmp/src/$file"
		if check_tree "$tmp/src" >"$tmp/out" 2>/dev/null; then
			echo "check-layers self-test: src/$file including $inc was not caught"
			ok=1
		elif ! grep -q "^check-layers: src/$file \|^check-layers: files of src/${file%%/*}/ include each other in a ring: escape log$" "$tmp/out" ||
			[ "$(wc -l <"$tmp/out")" -ne 1 ]; then
			echo "check-layers self-test: src/$file including $inc, reported:"
			cat "$tmp/out"
			ok=1
		fi
		cp "$tmp/orig" "$tmp/src/$file"
	done
	rm -rf "$tmp"
	[ $ok -eq 0 ] && echo "check-layers self-test: an include going up or sideways, or closing a ring in a folder, fails the check"
	return $ok
}

case "${1:-}" in
--self-test) self_test; exit $? ;;
"") ;;
*) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac
check_tree "$srcdir/src" || exit 1
echo "check-layers: every include goes down ($LAYERS)"
self_test
