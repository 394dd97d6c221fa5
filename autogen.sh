#!/bin/sh
# Regenerates the autotools build files (configure, Makefile.in).
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force
