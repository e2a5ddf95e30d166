#!/bin/sh
# docs/programs.md, "Never worse than zstd -3": archive sizes of nzip
# builds (one column each, e.g. an earlier build and this one) beside the
# C zstd -3 and xz -9 of the same files, on the structured float tables
# made from their formulas (codec/neverworse_test.go: mel filterbanks,
# windowed DFT bases, a DCT basis, a positional table; written by
# TestWriteStructured) and on the small real models of assets/ and
# ../shared/models/original that hold such tables or uint8 weights. A
# TF.js model is its model.json (nzip takes the weights file with it);
# zstd and xz then code each file and the sizes are added.
#
#   scripts/never-worse.sh NZIP... (SHARED=../shared by default)
set -eu
[ $# -ge 1 ] || { echo "usage: scripts/never-worse.sh NZIP..." >&2; exit 2; }
SHARED=${SHARED:-../shared}
O=$SHARED/models/original
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir "$t/st"
go test ./codec -run '^TestWriteStructured$' -count=1 -args -write-structured "$t/st" >/dev/null
set -- "$@"
printf '| input | bytes |'
for nz in "$@"; do printf ' %s |' "$(basename "$nz")"; done
printf ' zstd -3 | xz -9 |\n|---|---|'
for nz in "$@"; do printf -- '---|'; done
printf -- '---|---|\n'
for f in "$t"/st/*.safetensors assets/models/silero_vad_legacy.onnx assets/models/selfie_segmentation.tflite \
	assets/models/blazeface-front/blazeface-front.json "$O/silero_vad.onnx" "$O/silero_vad_16k.safetensors" \
	"$O/handtrack/handtrack.json"; do
	[ -f "$f" ] || continue
	files=$f
	case $f in *.json) files="$f ${f%.json}.bin" ;; esac
	size=0 z=0 x=0
	for g in $files; do
		size=$((size + $(wc -c <"$g")))
		z=$((z + $(zstd -3 -q -c "$g" | wc -c)))
		x=$((x + $(xz -9 -c "$g" | wc -c)))
	done
	printf '| %s | %d |' "$(basename "$f")" "$size"
	for nz in "$@"; do
		"$nz" compress -f -o "$t/a.nzip" "$f" >/dev/null 2>&1
		printf ' %d |' "$(wc -c <"$t/a.nzip")"
	done
	printf ' %d | %d |\n' "$z" "$x"
done
