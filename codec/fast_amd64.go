//go:build amd64 && !noasm && gc

package codec

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAVX2 selects the assembly fast paths; tests turn it off to check the
// pure-Go twins.
var useAVX2 = cpu.X86.HasAVX2

// useAVX512 selects the AVX-512 paths (F, BW and VBMI), also only with useAVX2.
var useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI

// useAVX512G selects the AVX-512 ungrouping (BW, VBMI2 and BMI1, POPCNT
// besides).
var useAVX512G = useAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI2 && cpu.X86.HasBMI1 && cpu.X86.HasPOPCNT

// useAVX512W selects the AVX-512 decoding of 2- and 4-byte values in 16-
// and 32-bit lanes (F, BW, VBMI, VBMI2; DQ too for 4-byte values).
var useAVX512W = useAVX512 && cpu.X86.HasAVX512VBMI2

// useAVX512Q selects the AVX-512 decoding of 4-byte values (F, DQ, VBMI).
var useAVX512Q = useAVX512 && cpu.X86.HasAVX512DQ

// useAVX512BW selects the AVX-512 pair expansion (F, BW).
var useAVX512BW = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// useAVX512T selects the AVX-512 token coding (F, CD).
var useAVX512T = cpu.X86.HasAVX512F && cpu.X86.HasAVX512CD

//go:noescape
func mergeBF16AVX2(dst, e, r *byte, n int)

//go:noescape
func splitBF16AVX2(src, e, r *byte, n int, or *[32]byte)

// mergeBF16Asm merges the largest multiple of 32 values it can and returns
// how many it did.
func mergeBF16Asm(dst, e, r []byte) int {
	n := len(e) &^ 31
	if !useAVX2 || n == 0 {
		return 0
	}
	mergeBF16AVX2(&dst[0], &e[0], &r[0], n)
	return n
}

func splitBF16Asm(src, e, r []byte) (int, byte) {
	n := len(e) &^ 31
	if !useAVX2 || n == 0 {
		return 0, 0
	}
	var or [32]byte
	splitBF16AVX2(&src[0], &e[0], &r[0], n, &or)
	var o byte
	for _, b := range or {
		o |= b
	}
	return n, o
}

//go:noescape
func expandPairsAsm(dst, codes *byte, m int, tab *[256]uint32) int

// expandPairsFast writes the symbols of codes[i:] until the first escape or
// invalid code and returns the index it stopped at. dst must hold 2*len(codes)
// bytes.
func expandPairsFast(dst, codes []byte, i int, tab *[256]uint32) int {
	if !useAVX2 || i >= len(codes) { // the scalar assembly needs nothing more, but shares the switch
		return i
	}
	_ = dst[2*len(codes)-1]
	return i + expandPairsAsm(&dst[2*i], &codes[i], len(codes)-i, tab)
}

//go:noescape
func expandPairsAVX512(dst, codes *byte, m int, tab *[256]uint32, esc int, exc *byte, nexc int, x *int) int

// expandPairsWide does what it can of expandPairs with AVX-512 (32 codes
// at a time, escapes filled from exc) when every code below esc has a pair
// (the pair codes of a stream; setup tables with holes are left to the
// other paths). It returns the codes done and moves *x on by the
// exceptions used.
func expandPairsWide(dst, codes []byte, tab *[256]uint32, esc byte, exc []byte, x *int) int {
	m := len(codes)
	if !useAVX2 || !useAVX512BW || m < 64 {
		return 0
	}
	for c, v := range tab {
		if (v>>16 != 0) != (c >= int(esc)) {
			return 0
		}
	}
	_ = dst[2*m-1]
	var e *byte
	if len(exc) > 0 {
		e = &exc[0]
	}
	return expandPairsAVX512(&dst[0], &codes[0], m, tab, int(esc), e, len(exc), x)
}

// useHuffEnc2 selects huffEnc2Asm (BMI2 for the shifts); tests turn it
// off to check huffEnc2Go.
var useHuffEnc2 = cpu.X86.HasBMI2

// huffEnc2Asm is huffEnc2Go in assembly (n > 0 symbols in each stream).
//
//go:noescape
func huffEnc2Asm(out0, out1, src0, src1 *byte, n int, enc *[256]uint64, w *[2]huffW)

//go:noescape
func encodeHuffStreamAsm(out, src *byte, n int, enc *[256]uint32) int

//go:noescape
func pairizeAsm(codes, syms *byte, m int, pc *[65536]byte) int

// encodeHuffStreamFast is encodeHuffStream in assembly (out must have
// huffStreamMax(len(src)) bytes).
func encodeHuffStreamFast(out, src []byte, enc *[256]uint32) int {
	if !useAVX2 {
		return encodeHuffStream(out, src, enc)
	}
	_ = out[huffStreamMax(len(src))-1]
	var p *byte
	if len(src) > 0 {
		p = &src[0]
	}
	return encodeHuffStreamAsm(&out[0], p, len(src), enc)
}

// pairizeFast codes pairs from index i until the first escape and returns
// the index it stopped at.
func pairizeFast(codes, syms []byte, i int, pc *[65536]byte) int {
	m := len(codes)
	if !useAVX2 || i >= m {
		return i
	}
	_ = syms[2*m-1]
	return i + pairizeAsm(&codes[i], &syms[2*i], m-i, pc)
}

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
	if !useAVX2 || len(ts) == 0 {
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
	if !useAVX2 {
		return ap.deltasAdd16Checked(d, ref, ts, bp, limit)
	}
	done, bp := ap.refDeltasFast(ds, ts, bp, limit)
	add16Fast(d, ref, ds[:done])
	return done, bp
}

// add16Fast is add16 with the multiple of 16 values it can in AVX2.
func add16Fast(d, ref []byte, ds []uint32) {
	n := len(ds) &^ 15
	if useAVX2 && n > 0 {
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
	if useAVX2 && n > 0 {
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
	case !useAVX2:
	case size == 2 && useAVX512 && useAVX512W:
		return deltas16W, 32
	case size == 2 && useAVX512:
		return deltas16, 16
	case size == 2 && q >= 1:
		return deltas16W2, 16
	case size == 4 && useAVX512Q && useAVX512W:
		return deltas32D, 16
	case size == 4 && useAVX512Q:
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
	if !useAVX2 || !useAVX512G || n == 0 || G > refFastGroups {
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
	if !useAVX2 || !useAVX512G || n == 0 || G > refFastGroups {
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
	if !useAVX2 || !useAVX512T || n == 0 || p.s != 1 || (p.size != 2 && p.size != 4) {
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
	if !useAVX2 || !useAVX512Q || n == 0 {
		return 0
	}
	_ = ref[4*n-1]
	refExps32AVX512(&ex[0], &ref[0], n, m, uint(em))
	return n
}

//go:noescape
func mergeF16AVX512(dst, syms, p0, p1 *byte, n int, sh int, tab *[256]byte, inter *[128]byte)

//go:noescape
func unpackAVX512(dst, src *byte, blocks int, w int, idx, ctl *[64]byte)

// f16Interleave holds the VPERMI2B indices that interleave 64 low bytes
// (indices 0..63) and 64 high bytes (64..127) into 64 values: the first
// 32, then the last 32.
var f16Interleave = func() (t [128]byte) {
	for k := range 64 {
		t[2*k] = byte(k)
		t[2*k+1] = byte(64 + k)
	}
	return
}()

// mergeF16Fast merges the largest multiple of 64 values of mergeF16 it can
// with AVX-512 (VBMI) and returns how many.
func mergeF16Fast(dst []byte, j uint, syms []byte, planes [][]byte) int {
	n := len(syms) &^ 63
	if !useAVX2 || !useAVX512 || n == 0 {
		return 0
	}
	_ = dst[2*n-1]
	p1, sh := f16Second(j, planes, n)
	mergeF16AVX512(&dst[0], &syms[0], &planes[0][:n][0], p1, n, sh, &f16Inv, &f16Interleave)
	return n
}

// f16Second returns the second plane of n F16 values split with join
// width j and the bits it holds (nil, 0 for j = 3: there is none).
func f16Second(j uint, planes [][]byte, n int) (*byte, int) {
	if j == 3 {
		return nil, 0
	}
	return &planes[1][:n][0], int(3 - j)
}

// unpackIdx[w] spreads the 8w bytes of 64 w-bit symbols so that qword k
// holds bytes kw..kw+7; unpackCtl[w] has VPMULTISHIFTQB take byte j of a
// qword from its bit jw.
var unpackIdx, unpackCtl = func() (idx, ctl [8][64]byte) {
	for w := 1; w < 8; w++ {
		for k := range 8 {
			for j := range 8 {
				idx[w][8*k+j] = byte(k*w + j)
				ctl[w][8*k+j] = byte(j * w)
			}
		}
	}
	return
}()

// unpackFast unpacks the largest multiple of 64 symbols of width w (1..7)
// it can with AVX-512 (VBMI) while each block's 64-byte read stays inside
// src, and returns how many.
func unpackFast(dst, src []byte, w uint) int {
	if !useAVX2 || !useAVX512 || w == 0 || w >= 8 || len(src) < 64 {
		return 0
	}
	blocks := min(len(dst)/64, (len(src)-64)/(8*int(w))+1)
	if blocks <= 0 {
		return 0
	}
	unpackAVX512(&dst[0], &src[0], blocks, int(w), &unpackIdx[w], &unpackCtl[w])
	return 64 * blocks
}

//go:noescape
func mergeF32AVX512(dst, e, p0, p1, p2 *byte, n int, inter, interW *[128]byte)

// f32InterleaveW holds the VPERMI2W indices that interleave 32 words of
// bytes 0,1 (indices 0..31) and 32 of bytes 2,3 (32..63) into values: the
// first 16 values of each, then the next 16.
var f32InterleaveW = func() (t [128]byte) {
	for k := range 32 { // k < 16: the first vector, then the second
		binary.LittleEndian.PutUint16(t[4*k:], uint16(k))
		binary.LittleEndian.PutUint16(t[4*k+2:], uint16(32+k))
	}
	return
}()

// mergeF32Fast merges the largest multiple of 64 values of mergeF32 it can
// with AVX-512 (VBMI) and returns how many.
func mergeF32Fast(dst, e, p0, p1, p2 []byte) int {
	n := len(e) &^ 63
	if !useAVX2 || !useAVX512 || n == 0 {
		return 0
	}
	_, _, _, _ = dst[4*n-1], p0[n-1], p1[n-1], p2[n-1]
	mergeF32AVX512(&dst[0], &e[0], &p0[0], &p1[0], &p2[0], n, &f16Interleave, &f32InterleaveW)
	return n
}

//go:noescape
func splitF32AVX512(src, e, p0, p1, p2 *byte, n int, tr *[64]byte, or *[192]byte)

// f32Transpose has VPERMB gather byte k of 16 values into bytes 16k..16k+15.
var f32Transpose = func() (t [64]byte) {
	for k := range 4 {
		for i := range 16 {
			t[16*k+i] = byte(4*i + k)
		}
	}
	return
}()

// splitF32Fast splits the largest multiple of 64 values of splitF32 it can
// with AVX-512 (VBMI), without the histogram, and returns how many and the
// OR of their residual bytes (as splitF32 returns it).
func splitF32Fast(src, e, p0, p1, p2 []byte) (int, uint64) {
	n := len(e) &^ 63
	if !useAVX2 || !useAVX512 || n == 0 {
		return 0, 0
	}
	_, _, _, _ = src[4*n-1], p0[n-1], p1[n-1], p2[n-1]
	var or [192]byte
	splitF32AVX512(&src[0], &e[0], &p0[0], &p1[0], &p2[0], n, &f32Transpose, &or)
	var o [3]byte
	for k := range 3 {
		for _, b := range or[64*k : 64*k+64] {
			o[k] |= b
		}
	}
	return n, uint64(o[0]) | uint64(o[1])<<8 | uint64(o[2])<<16
}

//go:noescape
func splitF16AVX512(src, syms, p0, p1 *byte, n int, sh int, tab *[256]byte, deint *[128]byte)

// f16Deinterleave holds the VPERMI2B indices that take the low bytes
// (even) and then the high bytes (odd) of 64 two-byte values.
var f16Deinterleave = func() (t [128]byte) {
	for i := range 64 {
		t[i] = byte(2 * i)
		t[64+i] = byte(2*i + 1)
	}
	return
}()

// splitF16Fast splits the largest multiple of 64 values of splitF16 it can
// with AVX-512 (VBMI) and returns how many.
func splitF16Fast(src []byte, j uint, syms []byte, planes [][]byte) int {
	n := len(syms) &^ 63
	if !useAVX2 || !useAVX512 || n == 0 {
		return 0
	}
	_ = src[2*n-1]
	p1, sh := f16Second(j, planes, n)
	splitF16AVX512(&src[0], &syms[0], &planes[0][:n][0], p1, n, sh, &f16Perm, &f16Deinterleave)
	return n
}
