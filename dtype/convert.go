package dtype

import "math"

// F16ToF32 widens an F16 value exactly (NaN payloads kept).
func F16ToF32(h uint16) float32 {
	s := uint32(h>>15) << 31
	e := uint32(h>>10) & 0x1f
	m := uint32(h) & 0x3ff
	switch {
	case e == 0 && m == 0:
		return math.Float32frombits(s)
	case e == 0: // subnormal: normalise
		for m&0x400 == 0 {
			m <<= 1
			e--
		}
		e++
		m &= 0x3ff
	case e == 31:
		return math.Float32frombits(s | 0x7f800000 | m<<13)
	}
	return math.Float32frombits(s | (e+112)<<23 | m<<13)
}

// F32ToF16 rounds x to F16, to nearest even; values past the largest
// finite F16 become infinities and NaNs stay NaNs (quiet).
func F32ToF16(x float32) uint16 {
	b := math.Float32bits(x)
	s := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return s | 0x7e00 | uint16(a>>13)&0x1ff
	case a >= 0x477ff000: // rounds to 65520 or more
		return s | 0x7c00
	case a < 0x33000001: // at most half the smallest subnormal
		return s
	case a < 0x38800000: // subnormal
		m := a&0x7fffff | 0x800000
		shift := 126 - a>>23
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && h&1 != 0 {
			h++
		}
		return s | uint16(h)
	}
	r := a + 0xfff + (a>>13)&1
	return s | uint16((r-0x38000000)>>13)
}

// F32ToBF16 rounds x to BF16, to nearest even (as torch's
// .to(torch.bfloat16)); NaNs stay NaNs (quiet).
func F32ToBF16(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
