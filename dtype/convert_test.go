package dtype

import (
	"math"
	"testing"
)

// TestF16Conversions: every F16 value widens exactly and rounds back to
// itself; midpoints between neighbours round to the even one; overflow and
// underflow go where IEEE rounding puts them.
func TestF16Conversions(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != uint16(h) {
			t.Fatalf("%#04x = %g came back as %#04x", h, f, g)
		}
		// the midpoint to the next value up (within the finite range)
		if h&0x7fff < 0x7bff {
			next := F16ToF32(uint16(h + 1))
			mid := float32((float64(f) + float64(next)) / 2)
			want := uint16(h)
			if h&1 != 0 {
				want = uint16(h + 1)
			}
			if g := F32ToF16(mid); g != want {
				t.Fatalf("midpoint %g of %#04x and %#04x: %#04x, want %#04x", mid, h, h+1, g, want)
			}
		}
	}
	for _, c := range []struct {
		x    float32
		want uint16
	}{{65519, 0x7bff}, {65520, 0x7c00}, {1e9, 0x7c00}, {float32(math.Inf(-1)), 0xfc00}, {1e-8, 0}, {-1e-8, 0x8000}} {
		if g := F32ToF16(c.x); g != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.x, g, c.want)
		}
	}
}

func TestF32ToBF16(t *testing.T) {
	for _, c := range []struct {
		x    uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, {0x3f808000, 0x3f80}, {0x3f818000, 0x3f82}, {0x3f808001, 0x3f81},
		{0x7f7fffff, 0x7f80}, {0x7fc00001, 0x7fc0}, {0x7f800001, 0x7fc0}, {0x80000000, 0x8000},
	} {
		if g := F32ToBF16(math.Float32frombits(c.x)); g != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.x, g, c.want)
		}
	}
}

func TestF32ToBF16Cases(t *testing.T) {
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
		if got := F32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := F32ToBF16(math.Float32frombits(0x7f800001)); got&0x7f80 != 0x7f80 || got&0x7f == 0 {
		t.Errorf("a NaN became %#04x", got)
	}
}

func TestF16ToF32Cases(t *testing.T) {
	for h, want := range map[uint16]float32{
		0x3c00: 1, 0xc000: -2, 0x0001: float32(math.Ldexp(1, -24)), 0x03ff: float32(math.Ldexp(1023, -24)),
		0x0400: float32(math.Ldexp(1, -14)), 0x7bff: 65504, 0x8000: float32(math.Copysign(0, -1)),
	} {
		if got := F16ToF32(h); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("F16ToF32(%#04x) = %v, want %v", h, got, want)
		}
	}
	if got := F16ToF32(0x7c00); !math.IsInf(float64(got), 1) {
		t.Errorf("+Inf became %v", got)
	}
}
