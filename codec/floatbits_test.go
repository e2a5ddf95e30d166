package codec

import (
	"math"

	"neuralzip/dtype"
)

// floatBits converts x to the bit pattern of d, rounding to nearest even
// (test helper; the codec itself never converts values).
func floatBits(d dtype.DType, x float64) uint64 {
	switch d {
	case dtype.F64:
		return math.Float64bits(x)
	case dtype.F32:
		return uint64(math.Float32bits(float32(x)))
	case dtype.BF16:
		u := math.Float32bits(float32(x))
		u += 0x7fff + (u>>16)&1
		return uint64(u >> 16)
	case dtype.F16:
		return uint64(f32toF16(float32(x)))
	}
	// 8-bit floats: take the top bits of the F16 pattern (truncating) —
	// good enough for generated test data.
	h := f32toF16(float32(x))
	switch d {
	case dtype.F8E5M2:
		return uint64(h >> 8)
	case dtype.F8E4M3:
		s := h >> 15
		e := int(h>>10&31) - 15 + 7
		m := h >> 7 & 7
		if e <= 0 {
			return uint64(s << 7)
		}
		if e > 15 {
			e, m = 15, 6
		}
		return uint64(s<<7 | uint16(e)<<3 | m)
	case dtype.F8E8M0:
		return uint64(math.Float32bits(float32(x)) >> 23 & 0xff)
	}
	return 0
}

func f32toF16(f float32) uint16 {
	u := math.Float32bits(f)
	s := uint16(u>>16) & 0x8000
	e := int(u>>23&0xff) - 127 + 15
	m := u & 0x7fffff
	switch {
	case e >= 31:
		return s | 0x7c00
	case e <= 0:
		if e < -10 {
			return s
		}
		m |= 0x800000
		shift := uint(14 - e)
		h := m >> shift
		if m>>(shift-1)&1 != 0 {
			h++
		}
		return s | uint16(h)
	}
	h := uint32(e)<<10 | m>>13
	if m&0x1000 != 0 {
		h++
	}
	return s | uint16(h)
}
