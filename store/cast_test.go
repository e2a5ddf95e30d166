package store

import (
	"encoding/binary"
	"math"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
)

type codecSegment = codec.Segment

const f32 = dtype.F32

// TestCastRNE checks the casts on every 16-bit value and every midpoint
// between neighbours: exact values round-trip, midpoints go to the even
// neighbour.
func TestCastRNE(t *testing.T) {
	for _, tc := range []struct {
		name string
		to   func(uint32) uint16
		from func(uint16) float32
	}{
		{"bf16", f32ToBF16, func(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }},
		{"f16", f32ToF16, f16ToF32},
	} {
		for h := 0; h < 1<<16; h++ {
			v := tc.from(uint16(h))
			if math.IsNaN(float64(v)) {
				continue
			}
			if got := tc.to(math.Float32bits(v)); got != uint16(h) {
				t.Fatalf("%s: %#04x → %v → %#04x", tc.name, h, v, got)
			}
			// the midpoint to the next value of larger magnitude
			next := uint16(h + 1)
			w := tc.from(next)
			if next&0x7fff == 0 || math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) || math.IsInf(float64(v), 0) {
				continue
			}
			mid := float32((float64(v) + float64(w)) / 2)
			if float64(mid) != (float64(v)+float64(w))/2 {
				t.Fatalf("%s: midpoint of %#04x not exact in F32", tc.name, h)
			}
			want := uint16(h)
			if h&1 == 1 {
				want = next
			}
			if got := tc.to(math.Float32bits(mid)); got != want {
				t.Fatalf("%s: midpoint of %#04x and %#04x → %#04x, want %#04x", tc.name, h, next, got, want)
			}
		}
	}
	// overflow, underflow and the largest values
	for _, c := range []struct {
		x    float32
		want uint16
	}{{65520, 0x7c00}, {65519.996, 0x7bff}, {1e-10, 0}, {-1e-10, 0x8000}, {float32(math.Inf(-1)), 0xfc00}} {
		if got := f32ToF16(math.Float32bits(c.x)); got != c.want {
			t.Errorf("f16(%v) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
}

// TestCastNaNNotRelated: a BF16 tensor whose NaN is not the one our cast
// writes is coded normally, not stored as a (wrong) cast.
func TestCastNaNNotRelated(t *testing.T) {
	s := NewMem(Options{})
	n := 1024
	src := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(float32(i)*0.001-0.3))
	}
	binary.LittleEndian.PutUint32(src[40:], 0x7f812345) // a signalling NaN with payload
	seg := func(t dtype.DType, b []byte) []Input {
		return []Input{{Name: "m", R: bytesReader(b), Size: int64(len(b)), Segments: []codec.Segment{{Length: int64(len(b)), Name: "w", DType: t, Shape: []int64{int64(n)}}}}}
	}
	if _, _, err := s.Add("f32", seg(dtype.F32, src), AddOptions{}); err != nil {
		t.Fatal(err)
	}
	ours := castF32(nil, src, dtype.BF16)
	theirs := append([]byte(nil), ours...)
	binary.LittleEndian.PutUint16(theirs[20:], 0x7fc0) // torch's canonical NaN
	for _, c := range []struct {
		name  string
		b     []byte
		casts int
	}{{"ours", ours, 1}, {"theirs", theirs, 0}} {
		_, st, err := s.Add(c.name, seg(dtype.BF16, c.b), AddOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Casts != c.casts {
			t.Fatalf("%s: %d casts, want %d", c.name, st.Casts, c.casts)
		}
		restore(t, s, c.name, [][]byte{c.b})
	}
}

// TestCastTwins: castF32's two-words-at-a-time loops give what the
// one-value functions give, and f32ToF16's one-addition rounding what
// f32ToF16Rare's case-by-case one gives, on a spread of the 2^32 bit
// patterns (every sign, exponent and rounding case) and odd lengths.
func TestCastTwins(t *testing.T) {
	var xs []uint32
	for x := uint64(0); x < 1<<32; x += 65521 {
		xs = append(xs, uint32(x), uint32(x)|0x1000, uint32(x)&^0x1fff|0x1000, uint32(x)^0x80000000)
	}
	for e := uint32(0); e < 256; e++ {
		for _, m := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fe000, 0x7ff000, 0x7fffff} {
			xs = append(xs, e<<23|m, 0x80000000|e<<23|m)
		}
	}
	for _, x := range xs {
		if a, b := f32ToF16(x), f32ToF16Rare(x); a != b {
			t.Fatalf("f16 of %#08x: %#04x, case by case %#04x", x, a, b)
		}
	}
	for _, n := range []int{len(xs), len(xs) - 1, 1, 0} {
		src := make([]byte, 4*n+3) // a trailing partial word is ignored
		for i, x := range xs[:n] {
			binary.LittleEndian.PutUint32(src[4*i:], x)
		}
		for _, ct := range castTypes {
			to := f32ToF16
			if ct == dtype.BF16 {
				to = f32ToBF16
			}
			out := castF32([]byte{7}, src, ct)
			if len(out) != 1+2*n || out[0] != 7 {
				t.Fatalf("%v: %d bytes for %d values after 1", ct, len(out), n)
			}
			for i, x := range xs[:n] {
				if got, want := binary.LittleEndian.Uint16(out[1+2*i:]), to(x); got != want {
					t.Fatalf("%v of %#08x (value %d of %d): %#04x, want %#04x", ct, x, i, n, got, want)
				}
			}
		}
	}
}
