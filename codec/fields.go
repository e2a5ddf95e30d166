package codec

import (
	"encoding/binary"
	"math/bits"

	"neuralzip/dtype"
)

// Field split of floats (see doc.go, "Float blocks").
//
// A value of a float type with S sign bits, E exponent bits and M mantissa
// bits is cut into the exponent e and the residual R = sign<<M | mantissa of
// width W = S+M. The symbol stream carries e<<j | R>>(W-j): the exponent,
// joined with the top j residual bits when that codes better (E+j ≤ 8). The
// remaining W-j residual bits lose tz trailing bits known to be zero in the
// whole block, and the rest is cut into byte planes, low byte first.

// fieldSpec is a float layout with the per-block choices applied.
type fieldSpec struct {
	size int  // bytes per value
	e, m uint // exponent and mantissa bits
	s    uint // sign bits (0 or 1)
	j    uint // residual bits joined into the symbol
	tz   uint // trailing residual bits dropped
}

func (f fieldSpec) w() uint     { return f.s + f.m }          // residual width W
func (f fieldSpec) symW() uint  { return f.e + f.j }          // symbol width
func (f fieldSpec) restW() uint { return f.w() - f.j - f.tz } // coded residual width
func (f fieldSpec) planes() int { return int(f.restW()+7) / 8 }
func (f fieldSpec) planeW(p int) uint {
	r := f.restW() - uint(8*p)
	if r > 8 {
		return 8
	}
	return r
}

func specFor(d dtype.DType) (fieldSpec, bool) {
	l, ok := d.FloatLayout()
	if !ok || l.Exp > 8 {
		return fieldSpec{}, false
	}
	return fieldSpec{size: d.Size(), e: uint(l.Exp), m: uint(l.Mant), s: uint(l.Sign)}, true
}

// maxJoin is the largest join width the symbol byte allows.
func (f fieldSpec) maxJoin() uint { return min(8-f.e, f.w()) }

// loadValue reads value i of width f.size little-endian.
func loadValue(src []byte, i int, size int) uint64 {
	switch size {
	case 1:
		return uint64(src[i])
	case 2:
		return uint64(binary.LittleEndian.Uint16(src[2*i:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(src[4*i:]))
	}
	return binary.LittleEndian.Uint64(src[8*i:])
}

func storeValue(dst []byte, i int, size int, v uint64) {
	switch size {
	case 1:
		dst[i] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(v))
	default:
		binary.LittleEndian.PutUint64(dst[8*i:], v)
	}
}

// fieldStats is what the encoder needs to choose j and tz: the histogram of
// the top byte (exponent joined with maxJoin residual bits) and the OR of all
// residuals.
type fieldStats struct {
	top  [256]uint32
	orR  uint64
	jmax uint
}

// statsGeneric computes fieldStats for n values (the pure-Go reference).
func statsGeneric(src []byte, n int, f fieldSpec, st *fieldStats) {
	*st = fieldStats{jmax: f.maxJoin()}
	W := f.w()
	emask := uint64(1)<<f.e - 1
	mmask := uint64(1)<<f.m - 1
	for i := 0; i < n; i++ {
		v := loadValue(src, i, f.size)
		e := v >> f.m & emask
		r := (v>>(f.m+f.e))<<f.m | v&mmask
		st.orR |= r
		st.top[e<<st.jmax|r>>(W-st.jmax)]++
	}
}

// chooseTZ returns the number of trailing residual bits that are zero in
// every value, limited to the bits below the joined ones.
func chooseTZ(orR uint64, f fieldSpec) uint {
	lim := f.w() - f.j
	if orR == 0 {
		return lim
	}
	return min(uint(bits.TrailingZeros64(orR)), lim)
}

// splitGeneric writes the symbol of every value to syms and the residual
// planes to planes[p] (the pure-Go reference), and fills hist with the
// symbol histogram.
func splitGeneric(src []byte, n int, f fieldSpec, syms []byte, planes [][]byte, hist *[256]uint32) {
	*hist = [256]uint32{}
	W := f.w()
	emask := uint64(1)<<f.e - 1
	mmask := uint64(1)<<f.m - 1
	rest := W - f.j
	rmask := uint64(1)<<rest - 1
	np := f.planes()
	for i := 0; i < n; i++ {
		v := loadValue(src, i, f.size)
		e := v >> f.m & emask
		r := (v>>(f.m+f.e))<<f.m | v&mmask
		s := byte(e<<f.j | r>>rest)
		syms[i] = s
		hist[s]++
		rt := (r & rmask) >> f.tz
		for p := 0; p < np; p++ {
			planes[p][i] = byte(rt >> (8 * p))
		}
	}
	for p := 0; p < np; p++ {
		if pw := f.planeW(p); pw < 8 {
			m := byte(1<<pw - 1)
			for i := range planes[p][:n] {
				planes[p][i] &= m
			}
		}
	}
}

// mergeGeneric is the inverse of splitGeneric (the pure-Go reference).
func mergeGeneric(dst []byte, n int, f fieldSpec, syms []byte, planes [][]byte) {
	W := f.w()
	rest := W - f.j
	np := f.planes()
	emask := uint64(1)<<f.e - 1
	mmask := uint64(1)<<f.m - 1
	for i := 0; i < n; i++ {
		s := uint64(syms[i])
		var rt uint64
		for p := 0; p < np; p++ {
			rt |= uint64(planes[p][i]) << (8 * p)
		}
		r := (s&(1<<f.j-1))<<rest | rt<<f.tz
		e := (s >> f.j) & emask
		v := (r>>f.m)<<(f.m+f.e) | e<<f.m | r&mmask
		storeValue(dst, i, f.size, v)
	}
}
