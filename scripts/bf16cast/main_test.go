package main

import (
	"math"
	"testing"
)

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f80c000, 0x3f81}, // above half
		{0x7f7fffff, 0x7f80}, // max float32 rounds to +Inf
		{0x80000000, 0x8000}, // -0
		{0x00000001, 0x0000}, // smallest subnormal rounds to 0
		{0x7f800000, 0x7f80}, // +Inf
	} {
		if got := bf16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("bf16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := bf16(math.Float32frombits(0x7f800001)); got&0x7f80 != 0x7f80 || got&0x7f == 0 {
		t.Errorf("a NaN became %#04x", got)
	}
}

func TestF16to32(t *testing.T) {
	for h, want := range map[uint16]float32{
		0x3c00: 1, 0xc000: -2, 0x0001: float32(math.Ldexp(1, -24)), 0x03ff: float32(math.Ldexp(1023, -24)),
		0x0400: float32(math.Ldexp(1, -14)), 0x7bff: 65504, 0x8000: float32(math.Copysign(0, -1)),
	} {
		if got := f16to32(h); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("f16to32(%#04x) = %v, want %v", h, got, want)
		}
	}
	if got := f16to32(0x7c00); !math.IsInf(float64(got), 1) {
		t.Errorf("+Inf became %v", got)
	}
}
