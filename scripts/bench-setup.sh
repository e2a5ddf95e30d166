#!/bin/sh
# Speed of setup coding against per-block tables (README, "Setups"): for
# each chunk size, a setup with pair codes and one with singles only are
# built from real-bf16, then nzip bench runs one block at a time (-threads 1;
# GOMAXPROCS=1 unless set: with 2 the file's SHA-256 runs beside the coding),
# setup external, three passes; the best of each is printed.
#
#   scripts/bench-setup.sh [NZIP [SHARED]]
set -eu
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
F=$SHARED/models/bench/real-bf16.safetensors
[ -f "$F" ] || { echo "$F not present: skipping"; exit 0; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for c in 65536 4096; do
	"$NZIP" setup build -q -o "$T/p$c.nzsetup" -chunk $c "$F"
	"$NZIP" setup build -q -o "$T/s$c.nzsetup" -chunk $c -pairs=false "$F"
done
echo "| values per block | coding | ratio | compress MB/s | decompress MB/s |"
echo "|---|---|---|---|---|"
for c in 65536 4096; do
	for pass in 1 2 3; do
		for s in p s; do
			GOMAXPROCS=${GOMAXPROCS:-1} "$NZIP" bench -json -threads 1 -runs 5 -codecs nzip,nzip+setup -chunk $c \
				-setup "$T/$s$c.nzsetup" -setup-external "$F" |
				sed "s/\"codec\": *\"nzip+setup\"/\"codec\":\"setup-$s\"/"
		done
	done | python3 -c '
import json, sys
best = {}
text, dec, i, arrays = sys.stdin.read(), json.JSONDecoder(), 0, []
while text[i:].strip():
    a, i = dec.raw_decode(text, i + len(text[i:]) - len(text[i:].lstrip()))
    arrays.append(a)
for a in arrays:
    for r in a:
        k = r["codec"]
        if k == "order-0 bound" or "ratio" not in r: continue
        b = best.setdefault(k, dict(r))
        b["compress_mb_s"] = max(b["compress_mb_s"], r["compress_mb_s"])
        b["decompress_mb_s"] = max(b["decompress_mb_s"], r["decompress_mb_s"])
names = {"nzip": "per-block tables", "setup-p": "setup, pair codes", "setup-s": "setup, singles only"}
for k in ("nzip", "setup-p", "setup-s"):
    if k in best:
        b = best[k]
        print("| %s | %s | %.4f | %.0f | %.0f |" % (sys.argv[1], names[k], b["ratio"], b["compress_mb_s"], b["decompress_mb_s"]))
' $c
done
