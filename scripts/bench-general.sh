#!/bin/sh
# nzip against general compressors on every real file of
# ../shared/models/original (docs/benchmarks.md, "Against general
# compressors"): archive sizes of nzip (defaults, and -best: codings by
# bytes alone), C zstd -3 and xz -6. A
# model of several files (TF.js: model.json + .bin) is one row, and its
# weight file alone (a bare blob, no model.json) another.
#
#   scripts/bench-general.sh [NZIP [SHARED]]
set -eu
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
O=$SHARED/models/original
[ -d "$O" ] || { echo "$O not present: skipping"; exit 0; }
for c in zstd xz; do command -v $c >/dev/null || { echo "bench-general: $c is needed (apt-get install zstd xz-utils)"; exit 1; }; done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
row() { # name, bytes, files...
	name=$1 orig=$2
	shift 2
	"$NZIP" compress -q -f -o "$T/a.nzip" "$1"
	n=$(stat -c %s "$T/a.nzip")
	"$NZIP" compress -q -f -best -o "$T/b.nzip" "$1"
	b=$(stat -c %s "$T/b.nzip")
	z=$(cat "$@" | zstd -3 -c -q | wc -c)
	x=$(cat "$@" | xz -6 -c | wc -c)
	echo "$name $orig $n $b $z $x"
}
{
	for f in "$O"/*; do
		[ -f "$f" ] && row "$(basename "$f")" "$(stat -c %s "$f")" "$f"
	done
	for d in "$O"/*/; do
		d=${d%/}
		m=$(ls "$d"/*.json | head -1)
		row "$(basename "$d")/ (model.json + weights)" "$(cat "$d"/* | wc -c)" "$m" $(ls "$d"/* | grep -v '\.json$')
		for b in "$d"/*.bin; do
			cp "$b" "$T/$(basename "$b")"
			row "$(basename "$b") alone" "$(stat -c %s "$b")" "$T/$(basename "$b")"
		done
	done
} | awk '
BEGIN { print "| file | bytes | nzip | nzip -best | zstd -3 | xz -6 |"; print "|---|---|---|---|---|---|" }
{ name = $1; for (i = 2; i <= NF - 5; i++) name = name " " $i
  o = $(NF-4); n = $(NF-3); b = $(NF-2); z = $(NF-1); x = $NF
  mark = (n > z) ? " (zstd smaller)" : ((n > x) ? " (xz smaller)" : "")
  printf "| %s | %d | %.3f%s | %.3f | %.3f | %.3f |\n", name, o, o/n, mark, o/b, o/z, o/x
  to += o; tn += n; tb += b; tz += z; tx += x }
END { printf "| **total** | %d | **%.3f** | %.3f | %.3f | %.3f |\n", to, to/tn, to/tb, to/tz, to/tx }'
