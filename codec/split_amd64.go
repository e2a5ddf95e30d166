//go:build amd64 && !noasm && gc

package codec

import "encoding/binary"

//go:noescape
func mergeBF16AVX2(dst, e, r *byte, n int)

//go:noescape
func splitBF16AVX2(src, e, r *byte, n int, or *[32]byte)

// mergeBF16Asm merges the largest multiple of 32 values it can and returns
// how many it did.
func mergeBF16Asm(dst, e, r []byte) int {
	n := len(e) &^ 31
	if !use.avx2 || n == 0 {
		return 0
	}
	mergeBF16AVX2(&dst[0], &e[0], &r[0], n)
	return n
}

func splitBF16Asm(src, e, r []byte) (int, byte) {
	n := len(e) &^ 31
	if !use.avx2 || n == 0 {
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
	if !use.avx2 || !use.avx512 || n == 0 {
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
	if !use.avx2 || !use.avx512 || w == 0 || w >= 8 || len(src) < 64 {
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
	if !use.avx2 || !use.avx512 || n == 0 {
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
	if !use.avx2 || !use.avx512 || n == 0 {
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
	if !use.avx2 || !use.avx512 || n == 0 {
		return 0
	}
	_ = src[2*n-1]
	p1, sh := f16Second(j, planes, n)
	splitF16AVX512(&src[0], &syms[0], &planes[0][:n][0], p1, n, sh, &f16Perm, &f16Deinterleave)
	return n
}
