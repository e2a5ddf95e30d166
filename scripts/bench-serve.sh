#!/bin/sh
# nzip serve against nzip decompress (docs/serve.md): a whole-file download
# of a BF16 model's archive with curl (one connection) and aria2c (-x8),
# and "nzip decompress -o -" of the same archive into a pipe, in turns,
# each on the same CPUs (taskset, 2 cores), on loopback. Prints the best of
# RUNS runs of each in MB/s of original bytes and the ratios.
#   scripts/bench-serve.sh [NZIP [SHARED]]    (RUNS=7 CPUS=0,1 MODEL=...)
set -eu
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
RUNS=${RUNS:-7}
CPUS=${CPUS:-0,1}
MODEL=${MODEL:-$SHARED/models/bench/real-bf16.safetensors}
PORT=${PORT:-18431}
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
name=$(basename "$MODEL")
"$NZIP" compress -q -o "$tmp/$name.nzip" "$MODEL"
size=$(stat -c %s "$MODEL")
taskset -c "$CPUS" "$NZIP" serve -addr "127.0.0.1:$PORT" -cache-dir "" "bench/m=$tmp/$name.nzip" >"$tmp/log" 2>&1 &
pid=$!
url="http://127.0.0.1:$PORT/bench/m/resolve/main/$name"
for _ in $(seq 100); do curl -sf -o /dev/null -I "$url" && break; sleep 0.1; done
now() { date +%s.%N; }
best() { sort -g | head -1; }
: >"$tmp/dec"; : >"$tmp/curl"; : >"$tmp/aria"; : >"$tmp/aria1"
for _ in $(seq "$RUNS"); do
  t0=$(now); taskset -c "$CPUS" "$NZIP" decompress -q -o - "$tmp/$name.nzip" | cat >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$tmp/dec"
  t0=$(now); curl -sf -o /dev/null "$url"; t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$tmp/curl"
  if command -v aria2c >/dev/null 2>&1; then
    rm -f "$tmp/a.out"
    t0=$(now); aria2c -q -x8 -s8 -k1M --allow-overwrite=true -d "$tmp" -o a.out "$url"; t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$tmp/aria"
    cmp -s "$MODEL" "$tmp/a.out" || { echo "aria2c's file differs"; exit 1; }
    rm -f "$tmp/a.out"
    t0=$(now); aria2c -q -x1 -s1 --allow-overwrite=true -d "$tmp" -o a.out "$url"; t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$tmp/aria1"
  fi
done
cmp -s "$MODEL" "$tmp/a.out" 2>/dev/null || [ ! -s "$tmp/aria" ] || { echo "aria2c's file differs"; exit 1; }
d=$(best <"$tmp/dec"); c=$(best <"$tmp/curl")
printf 'model %s, %d bytes, best of %s runs, CPUs %s\n' "$name" "$size" "$RUNS" "$CPUS"
printf '| %-36s | %8s | %6s |\n' "path" "MB/s" "× dec"
printf '| %-36s | %8.0f | %6.2f |\n' "nzip decompress -o - \| cat" "$(echo "$size/$d/1000000" | bc -l)" 1
printf '| %-36s | %8.0f | %6.2f |\n' "curl (nzip serve)" "$(echo "$size/$c/1000000" | bc -l)" "$(echo "$d/$c" | bc -l)"
if [ -s "$tmp/aria" ]; then
  a=$(best <"$tmp/aria")
  printf '| %-36s | %8.0f | %6.2f |\n' "aria2c -x8 -s8 (nzip serve)" "$(echo "$size/$a/1000000" | bc -l)" "$(echo "$d/$a" | bc -l)"
  a=$(best <"$tmp/aria1")
  printf '| %-36s | %8.0f | %6.2f |\n' "aria2c -x1, one stream (nzip serve)" "$(echo "$size/$a/1000000" | bc -l)" "$(echo "$d/$a" | bc -l)"
fi
