#!/bin/sh
# The house drawing (../shared/DESIGN.md, AGENTS.md): arrows point down only.
#
#   4  app, cmd, wasm, scripts, and the rest (serve, lossy, ...)
#   3  trajectory, gpu, analysis, infer, store
#   2  codec, checkpoint, assets
#   1  segment (the Segment that loaders hand to the codec)
#   0  dtype
#
# dtype and segment are the ground floor, segment on dtype (a segment has
# an element type); codec and checkpoint both stand on it and share its
# type, so neither converts the other's.
#
# Fails, naming each, on an import (go list, tests excluded) of a package
# of a higher level, or of another room of the same level below 4 (codec
# and checkpoint do not import each other; codec/baseline → codec is one
# room).
set -eu
GO=${GO:-go}
level() {
	case $1 in
	neuralzip/dtype*) echo 0 ;;
	neuralzip/segment*) echo 1 ;;
	neuralzip/codec* | neuralzip/checkpoint* | neuralzip/assets*) echo 2 ;;
	neuralzip/trajectory* | neuralzip/gpu* | neuralzip/analysis* | neuralzip/infer* | neuralzip/store*) echo 3 ;;
	*) echo 4 ;;
	esac
}
room() { echo "$1" | cut -d/ -f1-2; }
bad=0
list=$($GO list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./...)
echo "$list" | {
	while read -r pkg imports; do
		lp=$(level "$pkg")
		for imp in $imports; do
			case $imp in neuralzip/*) ;; *) continue ;; esac
			li=$(level "$imp")
			if [ "$li" -gt "$lp" ] || { [ "$li" -eq "$lp" ] && [ "$lp" -lt 4 ] && [ "$(room "$pkg")" != "$(room "$imp")" ]; }; then
				echo "arrows: $pkg (level $lp) imports $imp (level $li)"
				bad=1
			fi
		done
	done
	[ $bad = 0 ] && echo "arrows: all point down"
	exit $bad
}
