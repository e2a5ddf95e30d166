package codec

// Fast paths of the field split for the common cases (no join, no dropped
// bits). Each has the pure-Go reference in fields.go as its twin; tests
// compare them on real and generated data.

// split writes symbols and residual planes for the block's spec and returns
// the OR of all residuals (so the caller can decide to drop zero bits).
// hist receives the symbol histogram when histOK; the BF16 fast path leaves
// counting to the stream coder, which derives it from the pair codes.
func split(src []byte, n int, f fieldSpec, syms []byte, planes [][]byte, hist *[256]uint32) (orR uint64, histOK bool) {
	if n == 0 {
		*hist = [256]uint32{}
		return 0, true
	}
	if f.j == 0 && f.tz == 0 {
		switch {
		case f.size == 2 && f.e == 8: // BF16
			return uint64(splitBF16(src[:2*n], syms[:n], planes[0][:n])), false
		case f.size == 4 && f.e == 8: // F32
			return splitF32(src[:4*n], syms[:n], planes[0][:n], planes[1][:n], planes[2][:n], hist), true
		}
	}
	splitFields(src, n, f, syms, planes, hist)
	var st fieldStats
	statsFields(src, n, f, &st)
	return st.orR, true
}

// splitBF16 splits BF16 values into exponents e and sign+mantissa bytes r
// and returns the OR of all r.
func splitBF16(src, e, r []byte) byte {
	done, or := splitBF16Asm(src, e, r)
	return or | splitBF16Go(src[2*done:], e[done:], r[done:])
}

// splitBF16Go is the pure-Go twin of the assembly split.
func splitBF16Go(src, e, r []byte) byte {
	var or byte
	n := len(e)
	if n == 0 {
		return 0
	}
	_ = r[n-1]
	_ = src[2*n-1]
	for i := 0; i < n; i++ {
		lo, hi := src[2*i], src[2*i+1]
		rx := hi&0x80 | lo&0x7f
		e[i], r[i] = hi<<1|lo>>7, rx
		or |= rx
	}
	return or
}

// splitF32 is the F32 split for j = 0, tz = 0 (with AVX-512 most values
// at once, splitF32Fast, then the histogram of their exponents; the loop
// below is its twin).
func splitF32(src, e, p0, p1, p2 []byte, hist *[256]uint32) uint64 {
	var h [4][256]uint32
	var or uint32
	n := len(e)
	_ = p0[n-1]
	_ = p1[n-1]
	_ = p2[n-1]
	_ = src[4*n-1]
	k, or64 := splitF32Fast(src, e, p0, p1, p2)
	if k > 0 {
		or = uint32(or64)
		countHist(&h[0], e[:k])
	}
	for i := k; i < n; i++ {
		s := src[4*i : 4*i+4]
		b0, b1, b2, b3 := s[0], s[1], s[2], s[3]
		ex := b3<<1 | b2>>7
		p0[i] = b0
		p1[i] = b1
		t := b3&0x80 | b2&0x7f
		p2[i] = t
		e[i] = ex
		or |= uint32(b0) | uint32(b1)<<8 | uint32(t)<<16
		h[i&3][ex]++
	}
	for s := range hist {
		hist[s] = h[0][s] + h[1][s] + h[2][s] + h[3][s]
	}
	// residual layout: sign<<23 | mantissa; t holds sign at bit 7 of byte 2
	return uint64(or)
}

// merge is the inverse of the split for the block's spec.
func merge(dst []byte, n int, f fieldSpec, syms []byte, planes [][]byte) {
	if n == 0 {
		return
	}
	if f.size == 2 && f.e == 5 && f.tz == 0 {
		mergeF16(dst[:2*n], f.j, syms[:n], planes)
		return
	}
	if f.j == 0 && f.tz == 0 {
		switch {
		case f.size == 2 && f.e == 8:
			mergeBF16(dst[:2*n], syms[:n], planes[0][:n])
			return
		case f.size == 4 && f.e == 8:
			mergeF32(dst[:4*n], syms[:n], planes[0][:n], planes[1][:n], planes[2][:n])
			return
		}
	}
	mergeFields(dst, n, f, syms, planes)
}

func mergeBF16(dst, e, r []byte) {
	done := mergeBF16Asm(dst, e, r)
	mergeBF16Go(dst[2*done:], e[done:], r[done:])
}

// mergeBF16Go is the pure-Go twin of the assembly merge.
func mergeBF16Go(dst, e, r []byte) {
	n := len(e)
	if n == 0 {
		return
	}
	_ = r[n-1]
	_ = dst[2*n-1]
	for i := 0; i < n; i++ {
		ex, rx := e[i], r[i]
		d := dst[2*i : 2*i+2]
		d[0] = ex<<7 | rx&0x7f
		d[1] = rx&0x80 | ex>>1
	}
}

// mergeF32 is the inverse of splitF32 (with AVX-512 most values at once,
// mergeF32Fast; the loop below is its twin).
func mergeF32(dst, e, p0, p1, p2 []byte) {
	n := len(e)
	_ = p0[n-1]
	_ = p1[n-1]
	_ = p2[n-1]
	_ = dst[4*n-1]
	for i := mergeF32Fast(dst, e, p0, p1, p2); i < n; i++ {
		ex, t := e[i], p2[i]
		d := dst[4*i : 4*i+4]
		d[0] = p0[i]
		d[1] = p1[i]
		d[2] = ex<<7 | t&0x7f
		d[3] = t&0x80 | ex>>1
	}
}

// F16 (s1 e5 m10): the high byte of a value is s e5 m9 m8 and the low byte
// m7..m0. For every join width j the symbol (e<<j | top j residual bits)
// and the second residual plane (the other 3-j of s, m9, m8) are functions
// of the high byte alone, and the first plane is the low byte (tz = 0). So
// the split is a table lookup per value, and the merge the inverse lookup.

// f16Perm[hi] = e<<3 | s<<2 | m9<<1 | m8, a permutation of the high byte.
var f16Perm, f16Inv = func() (p, inv [256]byte) {
	for hi := 0; hi < 256; hi++ {
		e := hi >> 2 & 31
		v := e<<3 | (hi>>7)<<2 | hi&3
		p[hi] = byte(v)
		inv[v] = byte(hi)
	}
	return
}()

// statsF16 computes fieldStats (jmax = 3) from the high bytes.
func statsF16(src []byte, st *fieldStats) {
	var h [4][256]uint32
	var orLo, orHi byte
	n := len(src) / 2
	i := 0
	for ; i+4 <= n; i += 4 {
		s := src[2*i : 2*i+8 : 2*i+8]
		h[0][s[1]]++
		h[1][s[3]]++
		h[2][s[5]]++
		h[3][s[7]]++
		orLo |= s[0] | s[2] | s[4] | s[6]
		orHi |= s[1] | s[3] | s[5] | s[7]
	}
	for ; i < n; i++ {
		h[0][src[2*i+1]]++
		orLo |= src[2*i]
		orHi |= src[2*i+1]
	}
	*st = fieldStats{jmax: 3}
	for hi := range 256 {
		st.top[f16Perm[hi]] = h[0][hi] + h[1][hi] + h[2][hi] + h[3][hi]
	}
	// residual = s<<10 | m: sign bit 7 and m9 m8 of the high byte
	st.orR = uint64(orLo) | uint64(orHi&3)<<8 | uint64(orHi>>7)<<10
}

// splitF16 is the fast split for F16 with tz = 0 (with AVX-512 most
// values at once, splitF16Fast; the loops below are its twin).
func splitF16(src []byte, j uint, syms []byte, planes [][]byte) {
	n := len(syms)
	if n == 0 {
		return
	}
	p0 := planes[0][:n]
	_ = src[2*n-1]
	k := splitF16Fast(src, j, syms, planes)
	if j == 3 {
		for i := k; i < n; i++ {
			p0[i] = src[2*i]
			syms[i] = f16Perm[src[2*i+1]]
		}
		return
	}
	p1 := planes[1][:n]
	sh := 3 - j
	mask := byte(1)<<sh - 1
	for i := k; i < n; i++ {
		p0[i] = src[2*i]
		c := f16Perm[src[2*i+1]]
		syms[i] = c >> sh
		p1[i] = c & mask
	}
}

// mergeF16 is the inverse of splitF16 (with AVX-512 most values at once,
// mergeF16Fast; the loops below are its twin).
func mergeF16(dst []byte, j uint, syms []byte, planes [][]byte) {
	n := len(syms)
	if n == 0 {
		return
	}
	p0 := planes[0][:n]
	_ = dst[2*n-1]
	k := mergeF16Fast(dst, j, syms, planes)
	if j == 3 {
		for i := k; i < n; i++ {
			dst[2*i] = p0[i]
			dst[2*i+1] = f16Inv[syms[i]]
		}
		return
	}
	p1 := planes[1][:n]
	sh := 3 - j
	for i := k; i < n; i++ {
		dst[2*i] = p0[i]
		dst[2*i+1] = f16Inv[syms[i]<<sh|p1[i]]
	}
}
