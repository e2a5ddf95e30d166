#!/bin/sh
# The speed guard of make test: instruction counts (callgrind) of compress
# and decompress of fixed real inputs, one thread, on the user's path
# (BLAKE3 digest, checked when decoding), against the budgets committed in
# scripts/icount-budget.tsv. Counts do not depend on what else runs on the
# machine (runs agree within ~0.1 %); a count more than 3 % over its budget
# fails. A change that costs more must raise the budget in the same commit
# and say why in the line's reason; one that costs less may lower it
# (-update writes the counts measured, keeping the reasons; give the new
# reason with REASON=...).
#
#   scripts/icount-check.sh [-update] [SHARED]
#
# Needs valgrind (scripts/valgrind-deps.sh) and ../shared; without the
# shared inputs it says so and checks nothing. valgrind's CPU has AVX2 and
# BMI2 but not AVX-512: the counts are those of the AVX2 tier.
set -eu
update=0
if [ "${1:-}" = "-update" ]; then update=1; shift; fi
SHARED=${1:-../shared}
BUDGET=scripts/icount-budget.tsv
TOL=103 # per cent of the budget
O=$SHARED/models/original
command -v valgrind >/dev/null || { echo "icount-check: valgrind is needed (scripts/valgrind-deps.sh)"; exit 1; }
# the CPU features that choose the codec's code paths under valgrind (which
# hides AVX-512 and SHA-NI): counts are compared only on a CPU with the
# features the budgets were measured with
cpu=$(for f in avx avx2 bmi1 bmi2 popcnt sse4_2 pclmulqdq; do grep -qw "$f" /proc/cpuinfo 2>/dev/null && printf '%s ' "$f"; done)
cpu="cpu: ${cpu% }"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
go build -o "$t/nzlab" ./cmd/nzlab

# name and files of each input: BF16 with many small tensors, F32, F16 (as
# published), sparse activations, a multi-file model (TF.js)
inputs() {
	echo "bf16-small $SHARED/models/bench/real-bf16.safetensors"
	echo "f32 $O/tiny-rwkv-4v0-660K-FP32.bin"
	echo "f16 $SHARED/models/bench/real-f16-native.safetensors"
	echo "sparse $SHARED/activations/relu2-step800.bf16.safetensors"
	echo "multi-file $O/faceres-deep/faceres-deep.json $O/faceres-deep/faceres-deep.bin"
}

run() {
	GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 \
		valgrind --tool=callgrind --callgrind-out-file=/dev/null "$t/nzlab" icount -user -ops "$@" 2>&1 |
		sed -n 's/.*refs: *//p' | tr -d ,
}

: >"$t/measured"
inputs >"$t/inputs"
while read -r name files; do
	for f in $files; do
		[ -f "$f" ] || { echo "icount-check: $f not present: $name not checked"; continue 2; }
	done
	# shellcheck disable=SC2086
	a=$(run none $files)
	# shellcheck disable=SC2086
	b=$(run enc $files)
	# shellcheck disable=SC2086
	c=$(run encdec $files)
	[ -n "$a" ] && [ -n "$b" ] && [ -n "$c" ] || { echo "icount-check: $name: callgrind gave no count"; exit 1; }
	bytes=0
	for f in $files; do bytes=$((bytes + $(wc -c <"$f"))); done
	printf '%s\tcompress\t%s\t%s\n' "$name" $((b - a)) "$bytes" >>"$t/measured"
	printf '%s\tdecompress\t%s\t%s\n' "$name" $((c - b)) "$bytes" >>"$t/measured"
done <"$t/inputs"
[ -s "$t/measured" ] || { echo "icount-check: no input present under $SHARED: nothing checked"; exit 0; }

if [ "$update" = 1 ]; then
	awk -F'\t' -v reason="${REASON:-}" -v cpu="$cpu" 'FNR == NR { if ($0 !~ /^#/ && NF >= 4) why[$1 "\t" $2] = $4; else if ($0 ~ /^#/ && $0 !~ /^# cpu:/) head = head $0 "\n"; next }
		FNR == 1 { printf "%s# %s\n", head, cpu }
		{ k = $1 "\t" $2; r = (reason != "" ? reason : why[k]); if (r == "") r = "first budget"; printf "%s\t%s\t%s\t%s\n", $1, $2, $3, r }' "$BUDGET" "$t/measured" >"$t/new"
	cp "$t/new" "$BUDGET"
	echo "icount-check: $BUDGET updated"
	cat "$BUDGET"
	exit 0
fi

want=$(sed -n 's/^# \(cpu:.*\)/\1/p' "$BUDGET")
if [ "$want" != "$cpu" ]; then
	echo "icount-check: the budgets were measured on a CPU with \"$want\", this one has \"$cpu\": the code paths differ, counts not compared:"
	cat "$t/measured"
	exit 0
fi
awk -F'\t' -v tol="$TOL" 'FNR == NR { if ($0 !~ /^#/ && NF >= 3) { budget[$1 "\t" $2] = $3; why[$1 "\t" $2] = $4 } next }
	{
		k = $1 "\t" $2; b = budget[k]
		if (b == "") { printf "icount-check: %s %s: %d instructions and no budget (add it: scripts/icount-check.sh -update)\n", $1, $2, $3; bad = 1; next }
		if (why[k] == "") { printf "icount-check: %s %s: the budget has no reason\n", $1, $2; bad = 1 }
		pct = 100 * $3 / b
		state = "ok"
		if ($3 * 100 > b * tol) { state = "OVER BUDGET"; bad = 1 } else if ($3 * 100 < b * (200 - tol)) state = "under budget (lower it: scripts/icount-check.sh -update)"
		printf "%-11s %-10s %12d instructions (%6.2f a byte) %6.1f %% of %d: %s\n", $1, $2, $3, $3 / $4, pct, b, state
	}
	END { if (bad) { print "icount-check: over budget: find what costs more (scripts/icount.sh, callgrind_annotate), or raise the budget in scripts/icount-budget.tsv with the reason in the same commit"; exit 1 } }' "$BUDGET" "$t/measured"
