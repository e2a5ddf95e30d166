//go:build amd64 && !noasm && gc

package codec

import (
	"encoding/binary"
	"unsafe"
)

//go:noescape
func gatherNonzeroAVX512(src *byte, n, size int, vals, mask *byte, or *[64]byte) (bytes int)

// gatherNonzeroFast gathers the largest multiple of 64 bytes of src it can
// (gatherNonzero's first values) with AVX-512 and returns how many values
// it did, how many of them are nonzero and the OR of their words.
func gatherNonzeroFast(src []byte, size int, vals, mask []byte) (i, m int, or uint64) {
	lanes := 64 / size
	n := len(src) / size &^ (lanes - 1)
	if !use.avx512Gather || n == 0 {
		return 0, 0, 0
	}
	var o [64]byte
	b := gatherNonzeroAVX512(&src[0], n, size, &vals[0], &mask[0], &o)
	for k := 0; k < 64; k += 8 {
		or |= binary.LittleEndian.Uint64(o[k:])
	}
	return n, b / size, or
}

//go:noescape
func scatterNonzeroAVX512(dst *byte, n, size int, vals, mask *byte) (bytes int, zero bool)

// scatterNonzeroFast places the largest multiple of 64 bytes of dst it can
// (scatterNonzero's first values) with AVX-512 and returns how many values
// of dst it did, how many of vals it used and whether one of those was
// zero. vals must hold at least as many values as mask has bits set.
func scatterNonzeroFast(dst, vals, mask []byte, size int) (i, k int, zero bool) {
	lanes := 64 / size
	n := len(dst) / size &^ (lanes - 1)
	if !use.avx512Gather || n == 0 || len(mask) < n/8 {
		return 0, 0, false
	}
	b, z := scatterNonzeroAVX512(&dst[0], n, size, unsafe.SliceData(vals), &mask[0])
	return n, b / size, z
}
