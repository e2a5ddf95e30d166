//go:build amd64 && !noasm && gc

package codec

import (
	"slices"
	"unsafe"
)

// refDeltasAsm reads refTok at a stride of 16 bytes.
var _ = [1]struct{}{}[unsafe.Sizeof(refTok{})-16]

//go:noescape
func refDeltasAsm(ds *uint32, ts *byte, n int, tab *refTok, pad *byte, bp uint, limit uint) (int, uint)

//go:noescape
func add16AVX2(d, ref *byte, ds *uint32, n int)

// refDeltasFast is refApply.deltas over all of ts with the check of the
// extra-bit position every refCheckEvery values; it returns the values
// done (fewer than len(ts) when the position passed limit) and the
// position. pad must hold the padding decodeRefFloat gives it.
func (ap *refApply) refDeltasFast(ds []uint32, ts []byte, bp, limit uint) (int, uint) {
	if !use.avx2 || len(ts) == 0 {
		return ap.deltasChecked(ds, ts, bp, limit)
	}
	_ = ds[len(ts)-1]
	if uint(len(ap.pad)) < limit/8+refPad {
		panic("codec: reference extra bits without their padding")
	}
	return refDeltasAsm(&ds[0], &ts[0], len(ts), &ap.tab[0], &ap.pad[0], bp, limit)
}

// deltasAdd16Rest decodes the 2-byte values of ts that deltasAddFast left
// into d (references ref, scratch ds), checking the position as
// deltasChecked does: with AVX2 the assembly extra-bit pass and add16Fast,
// otherwise deltasAdd16Checked. It returns the values done and the
// position.
func (ap *refApply) deltasAdd16Rest(d, ref []byte, ds []uint32, ts []byte, bp, limit uint) (int, uint) {
	if !use.avx2 {
		return ap.deltasAdd16Checked(d, ref, ts, bp, limit)
	}
	done, bp := ap.refDeltasFast(ds, ts, bp, limit)
	add16Fast(d, ref, ds[:done])
	return done, bp
}

// add16Fast is add16 with the multiple of 16 values it can in AVX2.
func add16Fast(d, ref []byte, ds []uint32) {
	n := len(ds) &^ 15
	if use.avx2 && n > 0 {
		_, _ = d[2*n-1], ref[2*n-1]
		add16AVX2(&d[0], &ref[0], &ds[0], n)
	} else {
		n = 0
	}
	add16(d[2*n:], ref[2*n:], ds[n:])
}

//go:noescape
func refExps16AVX2(ex, ref *byte, n int, m, em uint)

// refExps16Fast is refExps16 with the multiple of 32 values it can in AVX2.
func refExps16Fast(ex, ref []byte, m uint, em uint16) {
	n := len(ex) &^ 31
	if use.avx2 && n > 0 {
		_ = ref[2*n-1]
		refExps16AVX2(&ex[0], &ref[0], n, m, uint(em))
	} else {
		n = 0
	}
	refExps16(ex[n:], ref[2*n:], m, em)
}

//go:noescape
func refDeltasAdd16AVX512(dst, ref, ts *byte, n int, pad *byte, bp, limit, q uint) (int, uint)

//go:noescape
func refDeltasAdd16WAVX512(dst, ref, ts *byte, n int, pad *byte, bp, limit, q uint) (int, uint)

//go:noescape
func refDeltasAdd32DAVX512(dst, ref, ts *byte, n int, pad *byte, bp, limit, q uint) (int, uint)

//go:noescape
func refDeltasAdd16WAVX2(dst, ref, ts *byte, n int, pad *byte, bp, limit, q uint) (int, uint)

// The fused extra-bit/add passes deltasAddFast can run.
const (
	deltasNone = iota
	deltas16W  // 2-byte values, 32 at a time in 16-bit lanes (VBMI2)
	deltas16   // 2-byte values, 16 at a time in 32-bit lanes
	deltas16W2 // 2-byte values, 16 at a time in AVX2's 16-bit lanes (q ≥ 1), without AVX-512
	deltas32D  // 4-byte values, 16 at a time in 32-bit lanes (DQ, VBMI2)
	deltas32   // 4-byte values, 8 at a time in 64-bit lanes (DQ)
)

// refDeltasKernel picks the pass for values of the given size (q
// sub-bucket bits) and the values it takes at a time.
func refDeltasKernel(size int, q uint) (kernel, step int) {
	switch {
	case !use.avx2:
	case size == 2 && use.avx512 && use.avx512Lanes:
		return deltas16W, 32
	case size == 2 && use.avx512:
		return deltas16, 16
	case size == 2 && q >= 1:
		return deltas16W2, 16
	case size == 4 && use.avx512Wide && use.avx512Lanes:
		return deltas32D, 16
	case size == 4 && use.avx512Wide:
		return deltas32, 8
	}
	return deltasNone, 0
}

// deltasAddFast decodes the multiple of refDeltasKernel's step of the
// values of ts it can straight into dst (signed values of that size,
// references ref), the extra bits read from position bp with q sub-bucket
// bits, checking limit every refCheckEvery values as deltasChecked; it
// returns the values it took on (0 without a fast path), the values done
// (fewer when the position passed limit) and the position. (The kernels
// are called directly, not through a func value, which would make the
// caller's token table escape.)
func (ap *refApply) deltasAddFast(dst, ref, ts []byte, bp, limit, q uint, size int) (tried, done int, pos uint) {
	kernel, step := refDeltasKernel(size, q)
	if kernel == deltasNone || len(ts) < step {
		return 0, 0, bp
	}
	n := len(ts) &^ (step - 1)
	_, _ = dst[size*n-1], ref[size*n-1]
	if uint(len(ap.pad)) < limit/8+refPad || q > 6 {
		panic("codec: reference extra bits without their padding")
	}
	d, r, t, p := &dst[0], &ref[0], &ts[0], &ap.pad[0]
	switch kernel {
	case deltas16W:
		done, pos = refDeltasAdd16WAVX512(d, r, t, n, p, bp, limit, q)
	case deltas16:
		done, pos = refDeltasAdd16AVX512(d, r, t, n, p, bp, limit, q)
	case deltas16W2:
		done, pos = refDeltasAdd16WAVX2(d, r, t, n, p, bp, limit, q)
	case deltas32D:
		done, pos = refDeltasAdd32DAVX512(d, r, t, n, p, bp, limit, q)
	default:
		done, pos = refDeltasAdd32AVX512(d, r, t, n, p, bp, limit, q)
	}
	return n, done, pos
}

//go:noescape
func refUngroupAVX512(tv, ex, grouped *byte, gtab *[256]byte, o *[256]uint32, n, G int, scratch *[64]byte)

//go:noescape
func refCountGroupsAVX512(ex *byte, gtab *[256]byte, n, G int, count *[256]uint32)

// refUngroupFast puts the tokens of the multiple of 64 values it can back
// in value order with AVX-512 (one chain: o[g] is the next token of group
// g in grouped, moved on) and returns the values done (0 without AVX-512
// or with more than refFastGroups groups) and the largest token. Every
// group of gtab must be below G; the offsets must stay inside grouped
// (decodeRefFloat's counts guarantee it).
func refUngroupFast(tv, ex, grouped []byte, gtab *[256]byte, o *[256]uint32, G int) (int, byte) {
	n := len(tv) &^ 63
	if !use.avx2 || !use.avx512Group || n == 0 || G > refFastGroups {
		return 0, 0
	}
	_, _ = ex[n-1], grouped[len(tv)-1]
	var scratch [64]byte
	refUngroupAVX512(&tv[0], &ex[0], &grouped[0], gtab, o, n, G, &scratch)
	return n, slices.Max(scratch[:])
}

// refCountGroupsFast adds to count[g] the values of ex whose context maps
// to group g, for the multiple of 64 values it can with AVX-512 (the same
// conditions as refUngroupFast), and returns how many it counted.
func refCountGroupsFast(ex []byte, gtab *[256]byte, G int, count *[256]uint32) int {
	n := len(ex) &^ 63
	if !use.avx2 || !use.avx512Group || n == 0 || G > refFastGroups {
		return 0
	}
	refCountGroupsAVX512(&ex[0], gtab, n, G, count)
	return n
}

//go:noescape
func refTokens16AVX512(toks, ctxs *byte, xs *uint32, xns, src, ref *byte, n int, m, em, q uint)

//go:noescape
func refTokens32AVX512(toks, ctxs *byte, xs *uint32, xns, src, ref *byte, n int, m, em, q uint)

// refTokensFast is refTokens for the multiple of 16 values it can of a
// 2- or 4-byte signed format with AVX-512; it returns how many it did.
func refTokensFast(toks, ctxs []byte, xs []uint32, xns []byte, src, ref []byte, p *refSpec) int {
	n := len(toks) &^ 15
	if !use.avx2 || !use.avx512Tokens || n == 0 || p.s != 1 || (p.size != 2 && p.size != 4) {
		return 0
	}
	_, _, _, _, _ = ctxs[n-1], xs[n-1], xns[n-1], src[p.size*n-1], ref[p.size*n-1]
	if p.size == 4 {
		refTokens32AVX512(&toks[0], &ctxs[0], &xs[0], &xns[0], &src[0], &ref[0], n, p.m, uint(p.emask), p.q)
	} else {
		refTokens16AVX512(&toks[0], &ctxs[0], &xs[0], &xns[0], &src[0], &ref[0], n, p.m, uint(p.emask), p.q)
	}
	return n
}

//go:noescape
func refDeltasAdd32AVX512(dst, ref, ts *byte, n int, pad *byte, bp, limit, q uint) (int, uint)

//go:noescape
func refExps32AVX512(ex, ref *byte, n int, m, em uint)

// refExps32Fast writes the exponents of the multiple of 16 4-byte values
// it can with AVX-512 and returns how many.
func refExps32Fast(ex, ref []byte, m uint, em uint32) int {
	n := len(ex) &^ 15
	if !use.avx2 || !use.avx512Wide || n == 0 {
		return 0
	}
	_ = ref[4*n-1]
	refExps32AVX512(&ex[0], &ref[0], n, m, uint(em))
	return n
}
