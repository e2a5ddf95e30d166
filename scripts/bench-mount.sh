#!/bin/sh
# nzip mount against nzip decompress (docs/serve.md): a sequential read of
# a BF16 model from its mounted archive (cat and dd bs=1M, to /dev/null)
# (and cat with -cache-bytes 0: no block cache, no decoding ahead) and
# "nzip decompress -o -" of the same archive into a pipe, in turns,
# each on the same CPUs (taskset, 2 cores: the mount's and the reader's
# work share them). Every read mounts afresh, so neither the kernel's page
# cache nor the block cache holds the file. Prints the best of RUNS runs of
# each in MB/s of original bytes and the ratios. Needs FUSE (root or
# fusermount3, /dev/fuse).
#   scripts/bench-mount.sh [NZIP [SHARED]]    (RUNS=7 CPUS=0,1 MODEL=... FLAGS="-cache-bytes 0")
set -eu
NZIP=${1:-bin/nzip}
SHARED=${2:-../shared}
RUNS=${RUNS:-7}
CPUS=${CPUS:-0,1}
MODEL=${MODEL:-$SHARED/models/bench/real-bf16.safetensors}
tmp=$(mktemp -d)
mkdir "$tmp/mnt"
pid=""
cleanup() {
	[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	grep -q " $tmp/mnt " /proc/mounts && { fusermount3 -u "$tmp/mnt" 2>/dev/null || umount -l "$tmp/mnt"; }
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
name=$(basename "$MODEL")
"$NZIP" compress -q -o "$tmp/$name.nzip" "$MODEL"
size=$(stat -c %s "$MODEL")
now() { date +%s.%N; }
best() { sort -g | head -1; }
# mount starts nzip mount and waits until the file is there
mount() {
	taskset -c "$CPUS" "$NZIP" mount ${FLAGS:-} "$@" "$tmp/$name.nzip" "$tmp/mnt" >"$tmp/log" 2>&1 &
	pid=$!
	for _ in $(seq 200); do [ -e "$tmp/mnt/$name" ] && return; sleep 0.05; done
	cat "$tmp/log"; exit 1
}
umnt() { kill -INT "$pid"; wait "$pid"; pid=""; }
: >"$tmp/dec"; : >"$tmp/cat"; : >"$tmp/dd"; : >"$tmp/cat0"
for _ in $(seq "$RUNS"); do
	t0=$(now); taskset -c "$CPUS" "$NZIP" decompress -q -o - "$tmp/$name.nzip" | cat >/dev/null; t1=$(now)
	echo "$t1 - $t0" | bc -l >>"$tmp/dec"
	mount
	t0=$(now); taskset -c "$CPUS" cat "$tmp/mnt/$name" >/dev/null; t1=$(now)
	echo "$t1 - $t0" | bc -l >>"$tmp/cat"
	umnt
	mount
	t0=$(now); taskset -c "$CPUS" dd if="$tmp/mnt/$name" of=/dev/null bs=1M status=none; t1=$(now)
	echo "$t1 - $t0" | bc -l >>"$tmp/dd"
	umnt
	mount -cache-bytes 0
	t0=$(now); taskset -c "$CPUS" cat "$tmp/mnt/$name" >/dev/null; t1=$(now)
	echo "$t1 - $t0" | bc -l >>"$tmp/cat0"
	umnt
done
mount
cmp -s "$MODEL" "$tmp/mnt/$name" || { echo "the mounted file differs"; exit 1; }
umnt
d=$(best <"$tmp/dec"); c=$(best <"$tmp/cat"); b=$(best <"$tmp/dd"); c0=$(best <"$tmp/cat0")
printf 'model %s, %d bytes, best of %s runs, CPUs %s\n' "$name" "$size" "$RUNS" "$CPUS"
printf '| %-36s | %8s | %6s |\n' "path" "MB/s" "× dec"
printf '| %-36s | %8.0f | %6.2f |\n' "nzip decompress -o - \| cat" "$(echo "$size/$d/1000000" | bc -l)" 1
printf '| %-36s | %8.0f | %6.2f |\n' "cat (nzip mount)" "$(echo "$size/$c/1000000" | bc -l)" "$(echo "$d/$c" | bc -l)"
printf '| %-36s | %8.0f | %6.2f |\n' "dd bs=1M (nzip mount)" "$(echo "$size/$b/1000000" | bc -l)" "$(echo "$d/$b" | bc -l)"
printf '| %-36s | %8.0f | %6.2f |\n' "cat, -cache-bytes 0 (nzip mount)" "$(echo "$size/$c0/1000000" | bc -l)" "$(echo "$d/$c0" | bc -l)"
