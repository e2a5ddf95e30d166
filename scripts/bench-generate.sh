#!/bin/sh
# The nzip generate table of docs/inference.md: each model greedily, 100
# tokens, from its original file, from its archive (default options), and
# from its archive made for running (the built-in Gaussian setup, 8192
# values per block) without and with -prefetch, interleaved RUNS times; the best tokens/s of each counts (the shared development VM's
# speed swings from run to run). Prints a Markdown table.
# Needs ../shared and python3.
set -eu
NZIP=${NZIP:-bin/nzip}
SHARED=${SHARED:-../shared}
RUNS=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TOK="$SHARED/models/tokenizer/tok512.bin"
GPT="$SHARED/trajectories/tinygpt-fortunes"
set -- \
  "$SHARED/models/original/stories260K.bf16.safetensors|Once upon a time|-tokenizer $TOK" \
  "$SHARED/models/original/stories260K.f32.safetensors|Once upon a time|-tokenizer $TOK" \
  "$GPT/step_001000.bf16.safetensors|A fool and his money|-config $GPT/config.json" \
  "$GPT/step_001000.f32.safetensors|A fool and his money|-config $GPT/config.json"
for m in "$@"; do
  f=${m%%|*}; rest=${m#*|}; prompt=${rest%%|*}; flags=${rest#*|}
  name=$(basename "$f")
  "$NZIP" compress -q -f -o "$tmp/$name.nzip" "$f"
  "$NZIP" compress -q -f -setup gaussian -chunk 8192 -o "$tmp/$name.g.nzip" "$f"
  for i in $(seq "$RUNS"); do
    # shellcheck disable=SC2086
    "$NZIP" generate -json -temp 0 -n 100 $flags "$f" "$prompt" > "$tmp/$name.orig.$i.json"
    # shellcheck disable=SC2086
    "$NZIP" generate -json -temp 0 -n 100 $flags "$tmp/$name.nzip" "$prompt" > "$tmp/$name.arch.$i.json"
    # shellcheck disable=SC2086
    "$NZIP" generate -json -temp 0 -n 100 $flags "$tmp/$name.g.nzip" "$prompt" > "$tmp/$name.gauss.$i.json"
    # shellcheck disable=SC2086
    "$NZIP" generate -json -temp 0 -n 100 -prefetch $flags "$tmp/$name.g.nzip" "$prompt" > "$tmp/$name.pf.$i.json"
  done
done
python3 - "$tmp" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
print("| model | weights_bytes | resident_peak_bytes (made for running) | peak / weights | tokens_per_s original | default archive | × | made for running | × | made for running, -prefetch | × | logits_sha256 equal |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
names = sorted({os.path.basename(p).split(".orig.")[0] for p in glob.glob(d + "/*.orig.*.json")})
for n in names:
    o = [json.load(open(p)) for p in glob.glob(f"{d}/{n}.orig.*.json")]
    a = [json.load(open(p)) for p in glob.glob(f"{d}/{n}.arch.*.json")]
    g = [json.load(open(p)) for p in glob.glob(f"{d}/{n}.gauss.*.json")]
    f = [json.load(open(p)) for p in glob.glob(f"{d}/{n}.pf.*.json")]
    to, ta, tg, tf = (max(x["tokens_per_s"] for x in v) for v in (o, a, g, f))
    same = all(x["logits_sha256"] == o[0]["logits_sha256"] and x["tokens"] == o[0]["tokens"] for x in o + a + g + f)
    w, p = f[0]["weights_bytes"], max(x["resident_peak_bytes"] for x in f)
    print(f"| {n} | {w} | {p} | {p / w:.3f} | {to:.0f} | {ta:.0f} | {ta / to:.2f} | {tg:.0f} | {tg / to:.2f} | {tf:.0f} | {tf / to:.2f} | {'yes' if same else 'NO'} |")
PY
