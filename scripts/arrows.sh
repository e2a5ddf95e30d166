#!/bin/sh
# The house drawing (../shared/DESIGN.md, AGENTS.md): arrows point down only.
#
#   3  app, cmd, wasm, scripts
#   2  trajectory, gpu, analysis, infer, store, checkpoint/codecseg
#   1  codec, checkpoint, assets
#   0  dtype
#
# Fails, naming each, on an import (go list, tests excluded) of a package
# of a higher level, or of another room of the same level below 3 (codec
# and checkpoint do not import each other; codec/baseline → codec is one
# room).
set -eu
GO=${GO:-go}
level() {
	case $1 in
	neuralzip/dtype*) echo 0 ;;
	neuralzip/checkpoint/codecseg) echo 2 ;;
	neuralzip/codec* | neuralzip/checkpoint* | neuralzip/assets*) echo 1 ;;
	neuralzip/trajectory* | neuralzip/gpu* | neuralzip/analysis* | neuralzip/infer* | neuralzip/store*) echo 2 ;;
	*) echo 3 ;;
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
			if [ "$li" -gt "$lp" ] || { [ "$li" -eq "$lp" ] && [ "$lp" -lt 3 ] && [ "$(room "$pkg")" != "$(room "$imp")" ]; }; then
				echo "arrows: $pkg (level $lp) imports $imp (level $li)"
				bad=1
			fi
		done
	done
	[ $bad = 0 ] && echo "arrows: all point down"
	exit $bad
}
