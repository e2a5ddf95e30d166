// NeuralZip decode kernels: the device half of package gpu.
//
// The host (gpu/plan.go) cuts an archived file into flat job lists; these
// kernels run them. They mirror gpu/twin.go line for line, and the tests
// check them against it: compiled as C++ with shim.h (kernels_test.go, and
// the fake driver fakecuda.cc that runs the CUDA backend's real plumbing),
// and compiled to PTX by scripts/ptx.sh for the CUDA driver.
//
//   build_lut    one thread per Huffman table: weights -> decoding table
//   huff_decode  one thread per huff0 bit stream: symbols into scratch
//   pair_count   one thread per 256 pair codes: escapes counted
//   pair_scan    one thread per pair stream: escape counts -> offsets
//   pair_expand  one thread per 256 pair codes: codes -> symbol pairs
//   merge        one thread per value: symbol + residual planes -> value
//                (a sparse block's zeros from its mask, the rest from the
//                nonzero values)
//   exp_hist     one thread per value: histogram of the exponent field
//
// Job layouts are gpu.StreamJob (64 bytes), gpu.PairJob (96 bytes) and
// gpu.BlockJob (128 bytes).

#if defined(__CUDA__)
// clang -x cuda --cuda-device-only -nocudainc -nocudalib: no CUDA headers,
// so the attributes and special registers are spelled out.
#define KERNEL extern "C" __attribute__((global))
#define DEVICE static __attribute__((device)) inline
#define THREAD_X (__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x())
#define BLOCK_Y (__nvvm_read_ptx_sreg_ctaid_y())
#define ATOMIC_ADD(p, v) __nvvm_atom_add_gen_i((volatile int *)(p), (int)(v))
#define STORE32(p, v) (*(unsigned int *)(p) = (v))
#else
#include "shim.h"
#endif

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

struct StreamJob {
	u64 src, len, n, dst;
	u64 table, table_log;
	u64 block, pad;
};

struct Source {
	u32 kind, width;
	u64 off;
};

enum { SRC_PAYLOAD = 0, SRC_SCRATCH = 1, SRC_PACKED = 2, SRC_CONST = 3 };

struct PairJob {
	u64 codes, m, dst, n;
	u64 top;
	u32 k, pad0;
	Source exc;
	u64 x, seg;
	u64 block, pad1;
};

#define PAIR_SEGMENT 256

struct BlockJob {
	u64 out, n;
	u32 size, e, m, s;
	u32 j, z, nsrc, sparse;
	Source src[4];
	u64 index, mask;
};

DEVICE int clz8(u32 x) {
	int n = 0;
	for (u32 b = 0x80; b != 0 && (x & b) == 0; b >>= 1) n++;
	return n;
}

DEVICE u32 popcount64(u64 x) { return (u32)__builtin_popcountll(x); }

#define WEIGHTS_PER_TABLE 256
#define LUT_ENTRIES 2048

// build_lut: thread t expands table t's weights into its decoding table
// (see buildLUT in twin.go).
KERNEL void build_lut(const u8 *weights, u64 ntables, u16 *luts) {
	u64 t = THREAD_X;
	if (t >= ntables) return;
	const u8 *w = weights + t * WEIGHTS_PER_TABLE;
	u32 rank[16] = {0};
	u32 total = 0;
	for (int s = 0; s < WEIGHTS_PER_TABLE; s++) {
		rank[w[s] & 15]++;
		if (w[s]) total += 1u << (w[s] - 1);
	}
	u32 tl = 0;
	while ((2u << tl) <= total) tl++; // total is 1 << tl
	u32 start[16] = {0};
	u32 next = 0;
	for (u32 x = 1; x <= tl; x++) {
		start[x] = next;
		next += rank[x] << (x - 1);
	}
	u16 *lut = luts + t * LUT_ENTRIES;
	for (u32 s = 0; s < WEIGHTS_PER_TABLE; s++) {
		u32 x = w[s];
		if (x == 0) continue;
		u16 e = (u16)((tl + 1 - x) | s << 8);
		u32 end = start[x] + ((1u << x) >> 1);
		for (u32 i = start[x]; i < end; i++) lut[i] = e;
		start[x] = end;
	}
}

// A huff0 bit stream read from its end (see decodeStream in twin.go):
// p bits are left; the window holds stream bytes [b0, b0+8).
struct BitReader {
	const u8 *src;
	i64 p, b0, tl;
	u64 win, mask;
};

// next_symbol decodes one symbol, or returns -1 when a code runs past the
// stream's start.
DEVICE int next_symbol(BitReader *r, const u16 *lut) {
	if (r->p - r->tl < 8 * r->b0) {
		r->b0 = (r->p + 7) / 8 - 8;
		u64 win = 0;
		for (i64 i = 7; i >= 0; i--) {
			win <<= 8;
			if (r->b0 + i >= 0) win |= (u64)r->src[r->b0 + i];
		}
		r->win = win;
	}
	u32 e = lut[(r->win >> (u64)(r->p - r->tl - 8 * r->b0)) & r->mask];
	r->p -= (i64)(e & 0xff);
	if (r->p < 0) return -1;
	return (int)(e >> 8);
}

// huff_decode: thread t decodes jobs[t] (see decodeStream in twin.go).
// bad[t] is set to 1 for a damaged stream. Symbols are stored four at a
// time once the output is 4-byte aligned (a thread's stores are not
// coalesced with its neighbours', so fewer, wider ones).
KERNEL void huff_decode(const StreamJob *jobs, u64 njobs, const u8 *payload, const u16 *luts, u8 *scratch, u32 *bad) {
	u64 t = THREAD_X;
	if (t >= njobs) return;
	const StreamJob jb = jobs[t];
	const u16 *lut = luts + jb.table * LUT_ENTRIES;
	u8 *out = scratch + jb.dst;
	BitReader r;
	r.src = payload + jb.src;
	r.tl = (i64)jb.table_log;
	r.mask = ((u64)1 << r.tl) - 1;
	u32 last = r.src[jb.len - 1];
	if (last == 0) {
		bad[t] = 1;
		return;
	}
	r.p = (i64)(8 * jb.len) - (i64)(clz8(last) + 1);
	r.b0 = (i64)1 << 40; // first use loads the window
	r.win = 0;
	u64 n = jb.n, k = 0;
	for (; k < n && ((jb.dst + k) & 3) != 0; k++) {
		int s = next_symbol(&r, lut);
		if (s < 0) {
			bad[t] = 1;
			return;
		}
		out[k] = (u8)s;
	}
	for (; k + 4 <= n; k += 4) {
		int s0 = next_symbol(&r, lut);
		int s1 = next_symbol(&r, lut);
		int s2 = next_symbol(&r, lut);
		int s3 = next_symbol(&r, lut);
		if ((s0 | s1 | s2 | s3) < 0) {
			bad[t] = 1;
			return;
		}
		STORE32(out + k, (u32)s0 | (u32)s1 << 8 | (u32)s2 << 16 | (u32)s3 << 24);
	}
	for (; k < n; k++) {
		int s = next_symbol(&r, lut);
		if (s < 0) {
			bad[t] = 1;
			return;
		}
		out[k] = (u8)s;
	}
	if (r.p != 0) bad[t] = 1;
}

DEVICE u32 field(const Source *s, u64 i, const u8 *payload, u64 payload_len, const u8 *scratch) {
	switch (s->kind) {
	case SRC_PAYLOAD:
		return payload[s->off + i];
	case SRC_SCRATCH:
		return scratch[s->off + i];
	case SRC_PACKED: {
		u64 bit = i * (u64)s->width;
		u64 at = s->off + (bit >> 3);
		u32 v = payload[at];
		if (at + 1 < payload_len) v |= (u32)payload[at + 1] << 8;
		return (v >> (bit & 7)) & ((1u << s->width) - 1);
	}
	}
	return (u32)s->off;
}

// pair_count: segment THREAD_X of the pair jobs (see pairCount in
// twin.go).
KERNEL void pair_count(const PairJob *pairs, const u32 *segs, u64 nsegs, const u8 *scratch, u32 *counts, u32 *bad) {
	u64 t = THREAD_X;
	if (t >= nsegs) return;
	u32 ji = segs[t];
	const PairJob *j = pairs + ji;
	u64 lo = (t - j->seg) * PAIR_SEGMENT;
	u64 hi = lo + PAIR_SEGMENT < j->m ? lo + PAIR_SEGMENT : j->m;
	u32 esc = j->k * j->k;
	u32 c = 0;
	for (u64 i = lo; i < hi; i++) {
		u32 v = scratch[j->codes + i];
		if (v == esc) c++;
		else if (v > esc) bad[ji] = 1;
	}
	counts[t] = c;
}

// pair_scan: pair job THREAD_X (see pairScan in twin.go).
KERNEL void pair_scan(const PairJob *pairs, u64 npairs, const u8 *payload, u64 payload_len, u8 *scratch, u32 *counts, u32 *bad) {
	u64 ji = THREAD_X;
	if (ji >= npairs) return;
	const PairJob *j = pairs + ji;
	u64 run = 0;
	u64 end = j->seg + (j->m + PAIR_SEGMENT - 1) / PAIR_SEGMENT;
	for (u64 s = j->seg; s < end; s++) {
		u32 c = counts[s];
		counts[s] = (u32)run;
		run += c;
	}
	if (2 * run + (j->n & 1) != j->x) {
		bad[ji] = 1;
		return;
	}
	if (j->n & 1) scratch[j->dst + j->n - 1] = (u8)field(&j->exc, j->x - 1, payload, payload_len, scratch);
}

// pair_expand: segment THREAD_X of the pair jobs (see pairExpand in
// twin.go).
KERNEL void pair_expand(const PairJob *pairs, const u32 *segs, u64 nsegs, const u8 *payload, u64 payload_len, u8 *scratch, const u32 *counts) {
	u64 t = THREAD_X;
	if (t >= nsegs) return;
	const PairJob *j = pairs + segs[t];
	u64 lo = (t - j->seg) * PAIR_SEGMENT;
	u64 hi = lo + PAIR_SEGMENT < j->m ? lo + PAIR_SEGMENT : j->m;
	u32 esc = j->k * j->k;
	u64 e = 2 * (u64)counts[t];
	const u8 *top = payload + j->top;
	u8 *out = scratch + j->dst;
	for (u64 i = lo; i < hi; i++) {
		u32 v = scratch[j->codes + i];
		if (v < esc) {
			out[2 * i] = top[v / j->k];
			out[2 * i + 1] = top[v % j->k];
		} else if (v == esc && e + 2 <= j->x) {
			out[2 * i] = (u8)field(&j->exc, e, payload, payload_len, scratch);
			out[2 * i + 1] = (u8)field(&j->exc, e + 1, payload, payload_len, scratch);
			e += 2;
		}
	}
}

// merge: block blocks[first + blockIdx.y], value THREAD_X (see mergeValue
// in twin.go).
KERNEL void merge(const BlockJob *blocks, u64 first, const u8 *payload, u64 payload_len, const u8 *scratch, u8 *out) {
	const BlockJob *b = blocks + first + BLOCK_Y;
	u64 i = THREAD_X;
	if (i >= b->n) return;
	u8 *o = out + b->out + i * b->size;
	u64 at = i; // the value's index in the sources
	if (b->sparse) {
		// the mask word and the nonzero values before it: its group's
		// prefix and the words of the group before it (8-byte aligned)
		const u64 *words = (const u64 *)(payload + b->mask);
		u64 wi = i / 64;
		u64 wd = words[wi];
		u32 bit = (u32)(i % 64);
		if (((wd >> bit) & 1) == 0) {
			for (u32 k = 0; k < b->size; k++) o[k] = 0;
			return;
		}
		at = ((const u32 *)(words + (b->n + 63) / 64))[wi / 8];
		for (u64 k = wi & ~7ull; k < wi; k++) at += popcount64(words[k]);
		at += popcount64(wd & ((1ull << bit) - 1));
	}
	u32 sym = field(&b->src[0], at, payload, payload_len, scratch);
	u32 rest = 0;
	for (u32 k = 1; k < b->nsrc; k++) rest |= field(&b->src[k], at, payload, payload_len, scratch) << (8 * (k - 1));
	u32 w = b->s + b->m;
	u32 r = (sym & ((1u << b->j) - 1)) << (w - b->j) | rest << b->z;
	u32 e = sym >> b->j;
	u32 v = (r >> b->m) << (b->m + b->e) | e << b->m | (r & ((1u << b->m) - 1));
	for (u32 k = 0; k < b->size; k++) o[k] = (u8)(v >> (8 * k));
}

// exp_hist: counts the exponent field of value THREAD_X of block
// blocks[first + blockIdx.y] into hist[256 * (first + blockIdx.y) + e].
KERNEL void exp_hist(const BlockJob *blocks, u64 first, const u8 *out, u32 *hist) {
	const BlockJob *b = blocks + first + BLOCK_Y;
	u64 i = THREAD_X;
	if (i >= b->n) return;
	const u8 *o = out + b->out + i * b->size;
	u32 v = 0;
	for (u32 k = 0; k < b->size; k++) v |= (u32)o[k] << (8 * k);
	ATOMIC_ADD(hist + 256 * (first + BLOCK_Y) + ((v >> b->m) & ((1u << b->e) - 1)), 1);
}
