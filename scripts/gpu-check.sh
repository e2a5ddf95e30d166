#!/bin/sh
# make gpu-check: where an NVIDIA GPU and its driver are present, decodes
# every file of ../shared/models/bench on the CUDA backend (nzip bench
# -backend cuda), each file's device work repeated to at least 1 GB,
# checked bit-exact, and prints GB/s per file and the device name.
# Needs no Go on the GPU machine when bin/nzip was built beforehand
# (CGO_ENABLED=0 go build -o bin/nzip ./cmd/nzip).
#   scripts/gpu-check.sh [SHARED]      (env: GPU_BYTES, RUNS, NZIP)
set -eu
cd "$(dirname "$0")/.."
SHARED=${1:-../shared}
NZIP=${NZIP:-bin/nzip}
if [ ! -x "$NZIP" ]; then
  CGO_ENABLED=0 go build -o "$NZIP" ./cmd/nzip
fi
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
files=$(ls "$SHARED"/models/bench/*.safetensors 2>/dev/null || true)
if [ -z "$files" ]; then
  echo "gpu-check: no $SHARED/models/bench/*.safetensors"
  exit 1
fi
# shellcheck disable=SC2086
"$NZIP" bench -codecs nzip -backend cuda -gpu-bytes "${GPU_BYTES:-1000000000}" -runs "${RUNS:-5}" $files
