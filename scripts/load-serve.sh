#!/bin/sh
# The long load test of nzip serve (docs/serve.md): one server holding
# archives of real weights (BF16 and F32), a store of the shared
# hub's models (F32 and BF16, deltas and casts) and a directory of plain
# files; 64 clients on loopback for DUR, whole files and random ranges,
# every byte compared (scripts/loadserve), the server's resident memory
# sampled and bounded by MAXRSS. Exits 1 on any error.
#   scripts/load-serve.sh [NZIP [SHARED]]    (DUR=60s CLIENTS=64 CACHE=268435456 MAXRSS=805306368)
set -eu
NZIP=$(realpath "${1:-bin/nzip}")
SHARED=${2:-../shared}
DUR=${DUR:-60s}
CLIENTS=${CLIENTS:-64}
CACHE=${CACHE:-268435456}
MAXRSS=${MAXRSS:-805306368}
PORT=${PORT:-18434}
B=$SHARED/models/bench
H=$SHARED/hub/stories260K
[ -d "$B" ] && [ -d "$H" ] || { echo "$B or $H not present: skipping"; exit 0; }
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/plain"
cp "$SHARED/models/original/stories260K.bf16.safetensors" "$tmp/plain/"
"$NZIP" compress -q -o "$tmp/bf16.nzip" "$B/real-bf16.safetensors"
"$NZIP" compress -q -o "$tmp/f32.nzip" "$B/real-f32.safetensors"
"$NZIP" store init "$tmp/st" >/dev/null
# a model's name is the path given to add: hub/base/model.f32.safetensors,
# served as the file model.f32.safetensors of the repository hub/base
set --
for m in base ft-continued ft-fortunes-full; do
  mkdir -p "$tmp/hub/$m"
  cp "$H/$m/model.f32.safetensors" "$H/$m/model.bf16.safetensors" "$tmp/hub/$m/"
  set -- "$@" "hub/$m/model.f32.safetensors" "hub/$m/model.bf16.safetensors"
done
(cd "$tmp" && "$NZIP" store add -q st "$@")
"$NZIP" serve -addr "127.0.0.1:$PORT" -cache-dir "" -cache-bytes "$CACHE" "bench/bf16=$tmp/bf16.nzip" "bench/f32=$tmp/f32.nzip" "bench/plain=$tmp/plain" "$tmp/st" >"$tmp/log" 2>&1 &
pid=$!
base="http://127.0.0.1:$PORT"
for _ in $(seq 100); do curl -sf -o /dev/null -I "$base/bench/plain/resolve/main/stories260K.bf16.safetensors" && break; sleep 0.1; done
set --
set -- "bench/bf16/real-bf16.safetensors=$B/real-bf16.safetensors" "bench/f32/real-f32.safetensors=$B/real-f32.safetensors"
set -- "$@" "bench/plain/stories260K.bf16.safetensors=$SHARED/models/original/stories260K.bf16.safetensors"
for m in base ft-continued ft-fortunes-full; do
  for f in model.f32.safetensors model.bf16.safetensors; do set -- "$@" "hub/$m/$f=$H/$m/$f"; done
done
go run ./scripts/loadserve -base "$base" -pid "$pid" -clients "$CLIENTS" -dur "$DUR" -max-rss "$MAXRSS" "$@"
if grep -qi "error\|panic" "$tmp/log"; then echo "the server logged errors:"; cat "$tmp/log"; exit 1; fi
