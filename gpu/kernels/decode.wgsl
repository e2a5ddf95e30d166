// NeuralZip decode kernels in WGSL: the same algorithms as decode.cu and
// gpu/twin.go, for WebGPU in the browser build (gpu/webgpu_js.go).
//
// WGSL has neither 64-bit integers nor byte arrays, so the job lists come
// as u32 words (offsets below 4 GiB; webgpu_js.go packs them), bytes are
// read out of u32 words, and bytes are written with atomicOr into
// zero-initialised buffers (WebGPU zeroes new buffers), so that threads
// writing neighbouring bytes of one word never lose each other's writes;
// huff_decode and merge gather a word's bytes first (one atomicOr per word
// or value, not per byte).
//
// Job layouts (u32 words):
//   stream: src, len, n, dst, table, table_log, block, 0              (8)
//   pair:   codes, m, dst, n, top, k, exc_kind, exc_width, exc_off, x, seg, block, 0,0,0,0 (16)
//   block:  out, n, size, e, m, s, j, z, nsrc, index, sparse, mask,
//           4 × (kind, width, off, 0)                                  (28 -> 32)

struct Params {
	count: u32, // jobs, segments or blocks of this dispatch
	first: u32, // merge / exp_hist: first block of this dispatch
	payload_len: u32,
	bad_off: u32, // pair kernels: where the pair jobs' flags start in bad
}

@group(0) @binding(0) var<uniform> prm: Params;
@group(0) @binding(1) var<storage, read> payload: array<u32>;
@group(0) @binding(2) var<storage, read_write> luts: array<u32>; // LUT_ENTRIES per table, built by build_lut
@group(0) @binding(3) var<storage, read> jobs: array<u32>;
@group(0) @binding(4) var<storage, read_write> scratch: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> outb: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> bad: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> aux: array<atomic<u32>>; // pair counts, or histograms

fn pbyte(i: u32) -> u32 {
	return (payload[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn sbyte(i: u32) -> u32 {
	return (atomicLoad(&scratch[i >> 2u]) >> ((i & 3u) * 8u)) & 0xffu;
}

fn sput(i: u32, v: u32) {
	atomicOr(&scratch[i >> 2u], (v & 0xffu) << ((i & 3u) * 8u));
}

fn obyte(i: u32) -> u32 {
	return (atomicLoad(&outb[i >> 2u]) >> ((i & 3u) * 8u)) & 0xffu;
}

const WEIGHTS_PER_TABLE = 256u;
const LUT_ENTRIES = 2048u;

// build_lut: thread t expands table t's huff0 weights (bytes of jobs) into
// its decoding table (see buildLUT in twin.go).
@compute @workgroup_size(64)
fn build_lut(@builtin(global_invocation_id) gid: vec3<u32>) {
	let t = gid.x;
	if (t >= prm.count) {
		return;
	}
	var rank: array<u32, 16>;
	var start: array<u32, 16>;
	var total = 0u;
	let w0 = t * WEIGHTS_PER_TABLE;
	for (var s = 0u; s < WEIGHTS_PER_TABLE; s++) {
		let x = (jobs[(w0 + s) >> 2u] >> (((w0 + s) & 3u) * 8u)) & 15u;
		rank[x] += 1u;
		if (x > 0u) {
			total += 1u << (x - 1u);
		}
	}
	let tl = 31u - countLeadingZeros(total); // total is 1 << tl
	var next = 0u;
	for (var x = 1u; x <= tl; x++) {
		start[x] = next;
		next += rank[x] << (x - 1u);
	}
	let base = t * LUT_ENTRIES;
	for (var s = 0u; s < WEIGHTS_PER_TABLE; s++) {
		let x = (jobs[(w0 + s) >> 2u] >> (((w0 + s) & 3u) * 8u)) & 0xffu;
		if (x == 0u) {
			continue;
		}
		let e = (tl + 1u - x) | (s << 8u);
		let end = start[x] + ((1u << x) >> 1u);
		for (var i = start[x]; i < end; i++) {
			luts[base + i] = e;
		}
		start[x] = end;
	}
}

// huff_decode: one thread per stream job (see decodeStream in twin.go).
// The code at bit position p is bits [p-tl, p) of the stream, read from
// the (at most three) bytes that hold them; bits below the stream's start
// read as 0.
@compute @workgroup_size(64)
fn huff_decode(@builtin(global_invocation_id) gid: vec3<u32>) {
	let t = gid.x;
	if (t >= prm.count) {
		return;
	}
	let j = t * 8u;
	let src = jobs[j];
	let len = jobs[j + 1u];
	let n = jobs[j + 2u];
	let dst = jobs[j + 3u];
	let table = jobs[j + 4u] * LUT_ENTRIES;
	let tl = i32(jobs[j + 5u]);
	let mask = (1u << u32(tl)) - 1u;
	let last = pbyte(src + len - 1u);
	if (last == 0u) {
		atomicStore(&bad[t], 1u);
		return;
	}
	var p = i32(8u * len) - i32(countLeadingZeros(last) - 24u + 1u);
	var acc = 0u;
	for (var k = 0u; k < n; k++) {
		let lo = p - tl;
		var idx: u32;
		if (lo >= 0) {
			let q = src + u32(lo >> 3);
			var v = pbyte(q);
			if (u32(lo >> 3) + 1u < len) {
				v |= pbyte(q + 1u) << 8u;
			}
			if (u32(lo >> 3) + 2u < len) {
				v |= pbyte(q + 2u) << 16u;
			}
			idx = (v >> u32(lo & 7)) & mask;
		} else {
			var v = pbyte(src);
			if (len > 1u) {
				v |= pbyte(src + 1u) << 8u;
			}
			idx = (v << u32(-lo)) & mask;
		}
		let e = luts[table + idx];
		p -= i32(e & 0xffu);
		if (p < 0) {
			atomicStore(&bad[t], 1u);
			return;
		}
		// symbols gather in acc until their word is full: one atomicOr
		// per word instead of one per byte
		let at = dst + k;
		acc |= ((e >> 8u) & 0xffu) << ((at & 3u) * 8u);
		if ((at & 3u) == 3u || k + 1u == n) {
			atomicOr(&scratch[at >> 2u], acc);
			acc = 0u;
		}
	}
	if (p != 0) {
		atomicStore(&bad[t], 1u);
	}
}

const SRC_PAYLOAD = 0u;
const SRC_SCRATCH = 1u;
const SRC_PACKED = 2u;

fn field(kind: u32, width: u32, off: u32, i: u32) -> u32 {
	if (kind == SRC_PAYLOAD) {
		return pbyte(off + i);
	}
	if (kind == SRC_SCRATCH) {
		return sbyte(off + i);
	}
	if (kind == SRC_PACKED) {
		let bit = i * width;
		let at = off + (bit >> 3u);
		var v = pbyte(at);
		if (at + 1u < prm.payload_len) {
			v |= pbyte(at + 1u) << 8u;
		}
		return (v >> (bit & 7u)) & ((1u << width) - 1u);
	}
	return off;
}

const PAIR_SEGMENT = 256u;

// pair_count: one thread per segment (see pairCount in twin.go); jobs is
// the pair list, followed at prm.first words by the segment list.
@compute @workgroup_size(64)
fn pair_count(@builtin(global_invocation_id) gid: vec3<u32>) {
	let t = gid.x;
	if (t >= prm.count) {
		return;
	}
	let ji = jobs[prm.first + t];
	let j = ji * 16u;
	let lo = (t - jobs[j + 10u]) * PAIR_SEGMENT;
	let hi = min(lo + PAIR_SEGMENT, jobs[j + 1u]);
	let esc = jobs[j + 5u] * jobs[j + 5u];
	var c = 0u;
	for (var i = lo; i < hi; i++) {
		let v = sbyte(jobs[j] + i);
		if (v == esc) {
			c++;
		} else if (v > esc) {
			atomicStore(&bad[prm.bad_off + ji], 1u);
		}
	}
	atomicStore(&aux[t], c);
}

// pair_scan: one thread per pair job (see pairScan in twin.go).
@compute @workgroup_size(64)
fn pair_scan(@builtin(global_invocation_id) gid: vec3<u32>) {
	let ji = gid.x;
	if (ji >= prm.count) {
		return;
	}
	let j = ji * 16u;
	let m = jobs[j + 1u];
	let n = jobs[j + 3u];
	let x = jobs[j + 9u];
	let seg = jobs[j + 10u];
	var run = 0u;
	for (var s = seg; s < seg + (m + PAIR_SEGMENT - 1u) / PAIR_SEGMENT; s++) {
		let c = atomicLoad(&aux[s]);
		atomicStore(&aux[s], run);
		run += c;
	}
	if (2u * run + (n & 1u) != x) {
		atomicStore(&bad[prm.bad_off + ji], 1u);
		return;
	}
	if ((n & 1u) != 0u) {
		sput(jobs[j + 2u] + n - 1u, field(jobs[j + 6u], jobs[j + 7u], jobs[j + 8u], x - 1u));
	}
}

// pair_expand: one thread per segment (see pairExpand in twin.go).
@compute @workgroup_size(64)
fn pair_expand(@builtin(global_invocation_id) gid: vec3<u32>) {
	let t = gid.x;
	if (t >= prm.count) {
		return;
	}
	let j = jobs[prm.first + t] * 16u;
	let lo = (t - jobs[j + 10u]) * PAIR_SEGMENT;
	let hi = min(lo + PAIR_SEGMENT, jobs[j + 1u]);
	let k = jobs[j + 5u];
	let esc = k * k;
	let x = jobs[j + 9u];
	var e = 2u * atomicLoad(&aux[t]);
	let top = jobs[j + 4u];
	let dst = jobs[j + 2u];
	for (var i = lo; i < hi; i++) {
		let v = sbyte(jobs[j] + i);
		if (v < esc) {
			sput(dst + 2u * i, pbyte(top + v / k));
			sput(dst + 2u * i + 1u, pbyte(top + v % k));
		} else if (v == esc && e + 2u <= x) {
			sput(dst + 2u * i, field(jobs[j + 6u], jobs[j + 7u], jobs[j + 8u], e));
			sput(dst + 2u * i + 1u, field(jobs[j + 6u], jobs[j + 7u], jobs[j + 8u], e + 1u));
			e += 2u;
		}
	}
}

// merge: value gid.x of block prm.first + gid.y (see mergeValue in
// twin.go).
@compute @workgroup_size(64)
fn merge(@builtin(global_invocation_id) gid: vec3<u32>) {
	let b = (prm.first + gid.y) * 32u;
	let i = gid.x;
	if (i >= jobs[b + 1u]) {
		return;
	}
	let size = jobs[b + 2u];
	let e = jobs[b + 3u];
	let m = jobs[b + 4u];
	let s = jobs[b + 5u];
	let jn = jobs[b + 6u];
	let z = jobs[b + 7u];
	let nsrc = jobs[b + 8u];
	var at = i; // the value's index in the sources
	if (jobs[b + 10u] != 0u) {
		// sparse: the mask word (two u32) and the nonzero values before
		// it: its group's prefix and the words of the group before it; a
		// zero value leaves the zeroed output as it is
		let mw = jobs[b + 11u] >> 2u;
		let wi = i >> 6u;
		let lo = payload[mw + 2u * wi];
		let hi = payload[mw + 2u * wi + 1u];
		let bit = i & 63u;
		var below = 0u;
		if (bit < 32u) {
			if (((lo >> bit) & 1u) == 0u) {
				return;
			}
			below = countOneBits(lo & ((1u << bit) - 1u));
		} else {
			if (((hi >> (bit - 32u)) & 1u) == 0u) {
				return;
			}
			below = countOneBits(lo) + countOneBits(hi & ((1u << (bit - 32u)) - 1u));
		}
		for (var k = wi & ~7u; k < wi; k++) {
			below += countOneBits(payload[mw + 2u * k]) + countOneBits(payload[mw + 2u * k + 1u]);
		}
		let words = (jobs[b + 1u] + 63u) >> 6u;
		at = payload[mw + 2u * words + (wi >> 3u)] + below;
	}
	let sym = field(jobs[b + 12u], jobs[b + 13u], jobs[b + 14u], at);
	var rest = 0u;
	for (var k = 1u; k < nsrc; k++) {
		let o = b + 12u + 4u * k;
		rest |= field(jobs[o], jobs[o + 1u], jobs[o + 2u], at) << (8u * (k - 1u));
	}
	let w = s + m;
	let r = ((sym & ((1u << jn) - 1u)) << (w - jn)) | (rest << z);
	let ex = sym >> jn;
	let v = ((r >> m) << (m + e)) | (ex << m) | (r & ((1u << m) - 1u));
	let o = jobs[b] + i * size;
	// the value's bytes go to one word, or two when it straddles them
	let sh = (o & 3u) * 8u;
	let vm = select(0xffffffffu, (1u << (8u * min(size, 3u))) - 1u, size < 4u) & v;
	atomicOr(&outb[o >> 2u], vm << sh);
	if (sh + 8u * size > 32u) {
		atomicOr(&outb[(o >> 2u) + 1u], vm >> (32u - sh));
	}
}

// exp_hist: value gid.x of block prm.first + gid.y, counted into
// aux[256 * block + exponent].
@compute @workgroup_size(64)
fn exp_hist(@builtin(global_invocation_id) gid: vec3<u32>) {
	let bi = prm.first + gid.y;
	let b = bi * 32u;
	let i = gid.x;
	if (i >= jobs[b + 1u]) {
		return;
	}
	let size = jobs[b + 2u];
	let o = jobs[b] + i * size;
	var v = 0u;
	for (var k = 0u; k < size; k++) {
		v |= obyte(o + k) << (8u * k);
	}
	atomicAdd(&aux[256u * bi + ((v >> jobs[b + 4u]) & ((1u << jobs[b + 3u]) - 1u))], 1u);
}
