#!/bin/sh
# Instruction counts of compress and decompress (callgrind), which unlike
# wall time do not depend on what else runs on the machine.
#
#   scripts/icount.sh FILE [CHUNK [SETUP]]
#
# Runs nzlab icount (cmd/nzlab) three times under valgrind: baseline (read
# the file, SHA-256 it), compress, compress+decompress; prints the differences:
# instructions of compress (SHA-256 of the original excluded) and of
# decompress (SHA-256 check skipped), one thread, GOMAXPROCS=1. SETUP is a
# .nzsetup file or "gaussian"; blocks then use it as `nzip compress -setup` does.
set -eu
f=$1
chunk=${2:-65536}
setup=${3:-}
command -v valgrind >/dev/null || { echo "icount: valgrind is needed (apt-get install valgrind)"; exit 1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
go build -o "$t/nzlab" ./cmd/nzlab
run() {
	GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 \
		valgrind --tool=callgrind --callgrind-out-file="$t/cg.$1" "$t/nzlab" icount -ops "$1" -chunk "$chunk" -setup "$setup" -th default "$f" 2>&1 |
		sed -n 's/.*refs: *//p' | tr -d ,
}
a=$(run none)
b=$(run enc)
c=$(run encdec)
echo "$(basename "$f") chunk=$chunk setup=${setup:-none}: compress $(((b - a) / 1000000))M decompress $(((c - b) / 1000000))M instructions, ratio $(cat /tmp/icount.ratio)"
