#!/bin/bash
# The store's large-model rows by CPU time (docs/store.md): for each FILE,
# RUNS rounds of, interleaved, `nzip compress`, `nzip store add` into a
# fresh store, `nzip decompress` and `nzip store get` with -threads 2,
# each command timed by `perf stat -e task-clock` (CPU ms) and the clock
# (wall ms), old and new build in turn; prints each step's median and
# minimum, then the median speed ratios add/compress and get/decompress
# (wall, CPU in parentheses). Every get is checked byte for byte.
#
#   scripts/bench-store-cpu.sh OLD NEW RUNS FILE...
set -eu
OLD=$1; NEW=$2; RUNS=$3; shift 3
command -v perf >/dev/null || { echo "needs perf" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# run LABEL CMD...: appends "cpu wall" (ms) to $T/LABEL
run() {
	local label=$1; shift
	local t0 t1
	t0=$(date +%s%N)
	perf stat -x, -e task-clock -o "$T/ps" "$@" >/dev/null 2>&1 || { echo "FAIL: $*" >&2; exit 1; }
	t1=$(date +%s%N)
	echo "$(grep task-clock "$T/ps" | cut -d, -f1) $(((t1 - t0) / 1000000))" >>"$T/$label"
}
for f in "$@"; do
	rm -rf "$T"/*.t "$T/a.nzip" "$T/sold" "$T/snew"
	"$NEW" compress -threads 2 -q -o "$T/a.nzip" "$f" >/dev/null
	for b in old new; do
		nz=$OLD; [ $b = new ] && nz=$NEW
		"$nz" store init "$T/s$b" >/dev/null
		"$nz" store add -threads 2 -q -name m "$T/s$b" "$f"
	done
	for r in $(seq "$RUNS"); do
		for b in old new; do
			nz=$OLD; [ $b = new ] && nz=$NEW
			rm -rf "$T/c.nzip" "$T/st" "$T/o1" "$T/o2"
			run $b.compress.t "$nz" compress -threads 2 -q -o "$T/c.nzip" "$f"
			"$nz" store init "$T/st" >/dev/null
			run $b.add.t "$nz" store add -threads 2 -q -name m "$T/st" "$f"
			run $b.decompress.t "$nz" decompress -threads 2 -q -o "$T/o1" "$T/a.nzip"
			run $b.get.t "$nz" store get -threads 2 -o "$T/o2" "$T/s$b" m
			cmp -s "$f" "$T/o2" || { echo "store get: other bytes" >&2; exit 1; }
		done
	done
	python3 - "$T" "$(basename "$f")" <<'PY'
import statistics as st, sys
d, name = sys.argv[1], sys.argv[2]
med = {}
for b in ("old", "new"):
    for step in ("compress", "add", "decompress", "get"):
        rows = [tuple(map(float, l.split())) for l in open(f"{d}/{b}.{step}.t")]
        cpu, wall = [r[0] for r in rows], [r[1] for r in rows]
        med[b, step] = (st.median(wall), st.median(cpu))
        print(f"{b} {name} {step}: wall ms median {st.median(wall):.0f} min {min(wall):.0f}, CPU ms median {st.median(cpu):.1f} min {min(cpu):.1f} ({len(rows)} runs)")
    (cw, cc), (aw, ac) = med[b, "compress"], med[b, "add"]
    (dw, dc), (gw, gc) = med[b, "decompress"], med[b, "get"]
    print(f"{b} {name}: add/compress {cw/aw:.2f} ({cc/ac:.2f}), get/decompress {dw/gw:.2f} ({dc/gc:.2f})")
PY
done
