//go:build !amd64 || noasm || !gc

package b3

var useAVX512 = false

func chunks16(cvs *[8][16]uint32, buf *[GroupSize]byte, lo, hi uint32) { panic("b3: no AVX-512") }

func parents16(cvs *[8][16]uint32, left, right *[8][16]uint32) { panic("b3: no AVX-512") }
