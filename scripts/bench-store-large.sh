#!/bin/bash
# The store's large-model rows (docs/store.md): for each FILE, RUNS passes
# of, interleaved, `nzip compress`, `nzip store add` into a fresh store,
# `nzip decompress` and `nzip store get` (checked byte for byte), all with
# -threads 2. Prints wall seconds, CPU seconds (user+sys, in parentheses)
# and the ratios add/compress and get/decompress speed (≥ 0.9 is the
# target). With OLD (another nzip binary) each pass runs both builds.
#
#   scripts/bench-store-large.sh [-old OLD] NZIP RUNS FILE...
#
# The files: go run ./scripts/bf16cast [-f32] OUT MODELS... (the models of
# scripts/bench-fast.sh -human).
set -eu
OLD=""
if [ "${1:-}" = "-old" ]; then OLD=$2; shift 2; fi
NZIP=$1; RUNS=$2; shift 2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
t() { TIMEFORMAT='%R %U %S'; { time "$@" >/dev/null 2>&1; } 2>"$T/tm" || { echo "FAIL: $*" >&2; exit 1; }; awk '{printf "%.3f %.3f", $1, $2+$3}' "$T/tm"; }
pass() {
	local nz=$1 f=$2 r=$3 label=$4
	rm -rf "$T/s" "$T/a.nzip" "$T/out1" "$T/out2"
	read -r cw cc <<<"$(t "$nz" compress -threads 2 -o "$T/a.nzip" "$f")"
	"$nz" store init "$T/s" >/dev/null
	read -r aw ac <<<"$(t "$nz" store add -threads 2 -q -name m "$T/s" "$f")"
	read -r dw dc <<<"$(t "$nz" decompress -threads 2 -o "$T/out1" "$T/a.nzip")"
	read -r gw gc <<<"$(t "$nz" store get -threads 2 -o "$T/out2" "$T/s" m)"
	cmp -s "$f" "$T/out2" || { echo "store get: other bytes" >&2; exit 1; }
	printf "%s %s run %d: compress %.3f (%.3f) add %.3f (%.3f) add/compress %.2f | decompress %.3f (%.3f) get %.3f (%.3f) get/decompress %.2f | archive %d, chunk files %d bytes\n" \
		"$label" "$(basename "$f")" "$r" "$cw" "$cc" "$aw" "$ac" "$(echo "$cw/$aw" | bc -l)" "$dw" "$dc" "$gw" "$gc" "$(echo "$dw/$gw" | bc -l)" \
		"$(stat -c %s "$T/a.nzip")" "$(du -sb "$T/s/packs" | cut -f1)"
}
for f in "$@"; do
	for r in $(seq "$RUNS"); do
		[ -n "$OLD" ] && pass "$OLD" "$f" "$r" old
		pass "$NZIP" "$f" "$r" new
	done
done
