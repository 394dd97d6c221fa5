#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when a file of src/ includes a header of a higher layer. The layers, lowest first
# (one line, the only place they are listed; docs/ARCHITECTURE.md explains them):
LAYERS="core conf,format net http auth stream stats yp admin router main"
# A folder may include its own headers and those of any lower layer; folders sharing a layer
# (conf,format) may not include each other. src/main.c is the layer "main"; the generated
# config.h (package version) is allowed everywhere.
srcdir=${RIMECAST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$srcdir/src" || exit 1

rank_of() { # folder -> layer index, or empty
	i=0
	for l in $LAYERS; do
		case ",$l," in *",$1,"*) echo $i; return ;; esac
		i=$((i + 1))
	done
}

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
[ $bad -eq 0 ] && echo "check-layers: every include goes down ($LAYERS)"
exit $bad
