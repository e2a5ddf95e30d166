#!/bin/sh
# Installs valgrind (callgrind: the instruction counts of make test's speed
# guard, scripts/icount-check.sh) where it is missing.
set -eu
command -v dpkg >/dev/null 2>&1 || { command -v valgrind >/dev/null && exit 0; echo "valgrind-deps: install valgrind"; exit 1; }
exec "$(dirname "$0")/apt-deps.sh" valgrind-deps valgrind
