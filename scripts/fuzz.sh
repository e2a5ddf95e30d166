#!/bin/sh
# Run every Go fuzz target of the module for $FUZZTIME each.
set -eu
FUZZTIME=${FUZZTIME:-3s}
GO=${GO:-go}
for pkg in $($GO list ./...); do
  dir=$($GO list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  for t in $targets; do
    echo "fuzz $pkg $t ($FUZZTIME)"
    $GO test -run "^$" -fuzz "^$t\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 5s "$pkg" >/tmp/nzip-fuzz.log 2>&1 || { cat /tmp/nzip-fuzz.log; exit 1; }
  done
done
