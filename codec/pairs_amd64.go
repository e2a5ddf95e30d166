//go:build amd64 && !noasm && gc

package codec

//go:noescape
func expandPairsAsm(dst, codes *byte, m int, tab *[256]uint32) int

// expandPairsFast writes the symbols of codes[i:] until the first escape or
// invalid code and returns the index it stopped at. dst must hold 2*len(codes)
// bytes.
func expandPairsFast(dst, codes []byte, i int, tab *[256]uint32) int {
	if !use.avx2 || i >= len(codes) { // the scalar assembly needs nothing more, but shares the switch
		return i
	}
	_ = dst[2*len(codes)-1]
	return i + expandPairsAsm(&dst[2*i], &codes[i], len(codes)-i, tab)
}

//go:noescape
func expandPairsAVX512(dst, codes *byte, m int, tab *[256]uint32, esc int, exc *byte, nexc int, x *int) int

// expandPairsWide does what it can of expandPairs with AVX-512 (32 codes
// at a time, escapes filled from exc, each code decided as expandOne does,
// so setup tables with holes take this path too). It returns the codes
// done and moves *x on by the exceptions used.
func expandPairsWide(dst, codes []byte, tab *[256]uint32, esc byte, exc []byte, x *int) int {
	m := len(codes)
	if !use.avx2 || !use.avx512Pairs || m < 64 {
		return 0
	}
	_ = dst[2*m-1]
	var e *byte
	if len(exc) > 0 {
		e = &exc[0]
	}
	return expandPairsAVX512(&dst[0], &codes[0], m, tab, int(esc), e, len(exc), x)
}

//go:noescape
func pairizeAsm(codes, syms *byte, m int, pc *[65536]byte) int

// pairizeFast codes pairs from index i until the first escape and returns
// the index it stopped at.
func pairizeFast(codes, syms []byte, i int, pc *[65536]byte) int {
	m := len(codes)
	if !use.avx2 || i >= m {
		return i
	}
	_ = syms[2*m-1]
	return i + pairizeAsm(&codes[i], &syms[2*i], m-i, pc)
}
