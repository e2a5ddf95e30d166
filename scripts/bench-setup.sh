#!/bin/sh
# What a setup buys (docs/setups.md): nzip bench of per-block tables
# (nzip), a setup built from real-bf16 (nzip+setup, embedded as compress
# does by default), the built-in Gaussian setup (nzip+gaussian) and ZipNN,
# one thread, at 64 Ki and 4 Ki values per block, on real-bf16 (the
# setup's own corpus) and on BF16 casts of models that real-bf16 does not
# hold (scripts/bf16cast). Each row is the best of three passes of
# `-runs 5`, the codecs interleaved.
#
#   scripts/bench-setup.sh [NZIP [SHARED]]
#   GOMAXPROCS=1 scripts/bench-setup.sh ...   (everything on one core)
set -eu
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
O=$SHARED/models/original
F=$SHARED/models/bench/real-bf16.safetensors
[ -f "$F" ] && [ -d "$O" ] || { echo "$F or $O not present: skipping"; exit 0; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
U=$T/unseen-bf16.safetensors
go run ./scripts/bf16cast "$U" "$O/ch_PP-OCRv4_rec_infer.onnx" "$O/faceres-deep/faceres-deep.json" \
	"$O/movenet-thunder/movenet-thunder.json" "$O/pose_landmark_full.tflite" "$O/pose_landmark_lite.tflite" \
	"$O/tiny-rwkv-4v0-660K-FP32.bin" "$SHARED/trajectories/tinygpt-fortunes/step_001000.f32.safetensors" \
	"$SHARED/trajectories/tinygpt-fortunes/step_000500.f32.safetensors" >/dev/null
for c in 65536 4096; do
	"$NZIP" setup build -q -o "$T/s$c.nzsetup" -chunk $c "$F"
done
echo "| file | values per block | codec | ratio | compress MB/s | decompress MB/s |"
echo "|---|---|---|---|---|---|"
for f in "$F" "$U"; do
	for c in 65536 4096; do
		for pass in 1 2 3; do
			"$NZIP" bench -json -threads 1 -runs 5 -codecs nzip,nzip+setup,nzip+gaussian,zipnn -chunk $c -setup "$T/s$c.nzsetup" "$f"
		done | python3 -c '
import json, sys
best, order = {}, []
text, dec, i = sys.stdin.read(), json.JSONDecoder(), 0
while text[i:].strip():
    a, i = dec.raw_decode(text, i + len(text[i:]) - len(text[i:].lstrip()))
    for r in a:
        k = r["codec"]
        if "ratio" not in r or k == "order-0 bound": continue
        if k not in best: best[k] = dict(r); order.append(k)
        b = best[k]
        b["compress_mb_s"] = max(b["compress_mb_s"], r["compress_mb_s"])
        b["decompress_mb_s"] = max(b["decompress_mb_s"], r["decompress_mb_s"])
        b["ok"] = b.get("ok", True) and r["roundtrip_ok"]
for k in order:
    b = best[k]
    flag = "" if b["ok"] else " (ROUNDTRIP FAILED)"
    print("| %s | %s | %s | %.4f | %.0f | %.0f |%s" % (sys.argv[1], sys.argv[2], k, b["ratio"], b["compress_mb_s"], b["decompress_mb_s"], flag))
' "$(basename "$f" .safetensors)" $c
	done
done
