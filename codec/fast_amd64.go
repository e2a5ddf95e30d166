//go:build amd64 && !noasm && gc

package codec

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly fast paths; tests turn it off to check the
// pure-Go twins.
var useAVX2 = cpu.X86.HasAVX2

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
