package dtype

import "testing"

func TestNamesRoundTrip(t *testing.T) {
	for d := DType(1); d < numDTypes; d++ {
		got, ok := Parse(d.String())
		if !ok || got != d {
			t.Errorf("Parse(%q) = %v, %v; want %v", d.String(), got, ok, d)
		}
		if d.Bits() == 0 {
			t.Errorf("%v has no size", d)
		}
	}
	if _, ok := Parse("Q4_K"); ok {
		t.Error("Parse accepted an unknown name")
	}
	if d, ok := Parse("bf16"); !ok || d != BF16 {
		t.Error("Parse is not case-insensitive")
	}
}

func TestLayouts(t *testing.T) {
	for d := DType(1); d < numDTypes; d++ {
		l, ok := d.FloatLayout()
		if !ok {
			continue
		}
		if l.Width() != d.Bits() {
			t.Errorf("%v: layout width %d != %d bits", d, l.Width(), d.Bits())
		}
		if !d.IsFloat() {
			t.Errorf("%v has a float layout but IsFloat is false", d)
		}
	}
}

func TestByteLen(t *testing.T) {
	cases := []struct {
		d    DType
		n    int64
		want int64
		ok   bool
	}{
		{F32, 3, 12, true}, {F4, 3, 2, true}, {F6E2M3, 4, 3, true}, {BF16, 0, 0, true},
		{F64, 1 << 61, 0, false}, {Invalid, 1, 0, false}, {U8, -1, 0, false},
	}
	for _, c := range cases {
		got, ok := c.d.ByteLen(c.n)
		if got != c.want || ok != c.ok {
			t.Errorf("%v.ByteLen(%d) = %d, %v; want %d, %v", c.d, c.n, got, ok, c.want, c.ok)
		}
	}
}
