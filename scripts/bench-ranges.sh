#!/bin/sh
# Range latencies of nzip serve on a large archive (docs/serve.md): every
# float model of ../shared cast to BF16 (scripts/bf16cast), tiled to
# SIZE bytes (scripts/tilemodel: copies with rotated values), compressed,
# served on 2 cores (taskset), then random 1 MiB ranges with 1 and 16
# clients, cold and warm, every range compared with the original
# (scripts/rangebench). Needs about 2×SIZE of free space in TMPDIR.
#   scripts/bench-ranges.sh [NZIP [SHARED]]    (SIZE=1073741824 N=200 CPUS=0,1)
set -eu
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
SIZE=${SIZE:-1073741824}
N=${N:-200}
CPUS=${CPUS:-0,1}
PORT=${PORT:-18433}
O=$SHARED/models/original
[ -d "$O" ] || { echo "$O not present: skipping"; exit 0; }
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
go run ./scripts/bf16cast "$tmp/corpus-bf16.safetensors" "$O/ch_PP-OCRv4_rec_infer.onnx" "$O/faceres-deep/faceres-deep.json" \
	"$O/movenet-thunder/movenet-thunder.json" "$O/pose_landmark_full.tflite" "$O/pose_landmark_lite.tflite" \
	"$O/tiny-rwkv-4v0-660K-FP32.bin" "$O/step_001000.pt" "$SHARED/models/bench/real-f32.safetensors" \
	"$SHARED/models/bench/real-f16-native.safetensors" >/dev/null
go run ./scripts/tilemodel -size "$SIZE" "$tmp/large-bf16.safetensors" "$tmp/corpus-bf16.safetensors"
rm "$tmp/corpus-bf16.safetensors"
"$NZIP" compress -q -o "$tmp/large.nzip" "$tmp/large-bf16.safetensors"
echo "archive: $(stat -c %s "$tmp/large.nzip") bytes of $(stat -c %s "$tmp/large-bf16.safetensors")"
taskset -c "$CPUS" "$NZIP" serve -addr "127.0.0.1:$PORT" -cache-dir "$tmp/sums" "bench/large=$tmp/large.nzip" >"$tmp/log" 2>&1 &
pid=$!
url="http://127.0.0.1:$PORT/bench/large/resolve/main/large-bf16.safetensors"
# the server answers once the file's SHA-256 is known (one decode)
for _ in $(seq 600); do curl -sf -o /dev/null -I "$url" && break; sleep 0.5; done
go run ./scripts/rangebench -url "$url" -original "$tmp/large-bf16.safetensors" -n "$N" -clients 1,16
