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
