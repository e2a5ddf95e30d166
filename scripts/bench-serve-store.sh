#!/bin/sh
# nzip serve of a store against nzip store get (docs/serve.md): each model
# file is added to a new store as its own model (bench/NAME, in the order
# given, so a BF16 export added after its F32 original is stored as a
# cast), then downloaded whole with curl (one connection, to /dev/null) from
# "nzip serve STORE" and restored by "nzip store get -o - | cat", in turns,
# on the same CPUs (taskset, 2 cores), loopback. Prints the best of RUNS
# runs in MB/s of original bytes and the ratio.
#   scripts/bench-serve-store.sh [NZIP [SHARED]]    (RUNS=7 CPUS=0,1 MODELS="a b")
set -eu
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
RUNS=${RUNS:-7}
CPUS=${CPUS:-0,1}
MODELS=${MODELS:-"$SHARED/models/bench/real-f32.safetensors $SHARED/models/bench/real-bf16.safetensors"}
PORT=${PORT:-18432}
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$NZIP" store init "$tmp/st" >/dev/null
for m in $MODELS; do
  n=$(basename "$m" .safetensors)
  "$NZIP" store add -q -name "bench/$n" "$tmp/st" "$m"
done
taskset -c "$CPUS" "$NZIP" serve -addr "127.0.0.1:$PORT" -cache-dir "" "$tmp/st" >"$tmp/log" 2>&1 &
pid=$!
now() { date +%s.%N; }
best() { sort -g | head -1; }
printf 'best of %s runs, CPUs %s\n' "$RUNS" "$CPUS"
printf '| %-28s | %10s | %14s | %10s | %6s |\n' "model (stored as)" "bytes" "store get MB/s" "curl MB/s" "× get"
for m in $MODELS; do
  n=$(basename "$m" .safetensors)
  f=$(basename "$m")
  url="http://127.0.0.1:$PORT/bench/$n/resolve/main/$f"
  for _ in $(seq 100); do curl -sf -o /dev/null -I "$url" && break; sleep 0.1; done
  size=$(stat -c %s "$m")
  : >"$tmp/get"; : >"$tmp/curl"
  for _ in $(seq "$RUNS"); do
    t0=$(now); taskset -c "$CPUS" "$NZIP" store get -o - "$tmp/st" "bench/$n" | cat >/dev/null; t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$tmp/get"
    t0=$(now); curl -sf -o /dev/null "$url"; t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$tmp/curl"
  done
  curl -sf "$url" | cmp -s - "$m" || { echo "$n: the served file differs"; exit 1; }
  
  g=$(best <"$tmp/get"); c=$(best <"$tmp/curl")
  printf '| %-28s | %10d | %14.0f | %10.0f | %6.2f |\n' "bench/$n" "$size" \
    "$(echo "$size/$g/1000000" | bc -l)" "$(echo "$size/$c/1000000" | bc -l)" "$(echo "$g/$c" | bc -l)"
done
