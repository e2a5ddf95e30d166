#!/bin/sh
# Builds SeaweedFS's `weed` (the real S3 server the s3:// store tests run
# against) from the module the Go proxy serves, once: the binary is cached
# in ${NZ_WEED_CACHE:-$HOME/.cache/nzip-weed}/weed-VERSION and its path
# printed. `go install pkg@version` refuses this module (its go.mod has
# replace directives), so it is built inside the downloaded module.
#   scripts/seaweedfs.sh        print the path, building when missing
set -eu
VERSION=v0.0.0-20261109003541-7506e5f91cd6
CACHE=${NZ_WEED_CACHE:-$HOME/.cache/nzip-weed}
BIN=$CACHE/weed-$VERSION
if [ ! -x "$BIN" ]; then
	mkdir -p "$CACHE"
	dir=$(cd /tmp && go mod download -json "github.com/seaweedfs/seaweedfs@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -n "$dir" ] || { echo "seaweedfs: go mod download gave no directory" >&2; exit 1; }
	(cd "$dir" && GOFLAGS=-mod=mod go build -trimpath -o "$BIN.tmp" ./weed)
	mv "$BIN.tmp" "$BIN"
fi
echo "$BIN"
