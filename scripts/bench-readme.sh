#!/bin/sh
# Measure the README's benchmark tables: nzip bench on the real-weights
# corpus, 1 and 2 threads, three passes each (the best speed of the passes
# counts: the development VM's speed varies from minute to minute), then
# print the Markdown tables. Needs ../shared and python3.
set -eu
NZIP=${NZIP:-bin/nzip}
SHARED=${SHARED:-../shared}
out=${OUT:-$(mktemp -d)}
F="$SHARED/models/bench/real-bf16.safetensors $SHARED/models/bench/real-f16.safetensors
   $SHARED/models/bench/real-f16-native.safetensors $SHARED/models/bench/real-f32.safetensors
   $SHARED/trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"
for i in 1 2 3; do
  "$NZIP" bench -json -threads 1 -runs 3 $F > "$out/t1-$i.json"
  "$NZIP" bench -json -threads 2 -runs 3 $F > "$out/t2-$i.json"
done
GOMAXPROCS=1 "$NZIP" bench -json -codecs nzip -threads 1 -runs 5 $F > "$out/p1.json"
python3 "$(dirname "$0")/bench_tables.py" "$out"
