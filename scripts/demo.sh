#!/bin/sh
# make run: show nzip on an example model. Uses a real model from ../shared
# when present, otherwise the example safetensors file stored in the golden
# test archive (codec/testdata/golden-v1.nzip).
set -eu
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -f "$SHARED/models/original/stories260K.bf16.safetensors" ]; then
  cp "$SHARED/models/original/stories260K.bf16.safetensors" "$work/model.safetensors"
  echo "== example: stories260K (Llama-2, BF16) from $SHARED"
else
  "$NZIP" decompress -q -o "$work/model.safetensors" codec/testdata/golden-v1.nzip
  echo "== example: the synthetic model of codec/testdata/golden-v1.nzip"
fi
echo "== nzip inspect (last lines)"
"$NZIP" inspect "$work/model.safetensors" | tail -4
echo "== nzip compress"
"$NZIP" compress "$work/model.safetensors"
echo "== nzip verify"
"$NZIP" verify "$work/model.safetensors.nzip"
echo "== nzip decompress"
mv "$work/model.safetensors" "$work/original.safetensors"
"$NZIP" decompress "$work/model.safetensors.nzip"
cmp "$work/original.safetensors" "$work/model.safetensors" && echo "== restored file is byte-identical"
echo "== nzip bench (this model)"
"$NZIP" bench "$work/original.safetensors"
