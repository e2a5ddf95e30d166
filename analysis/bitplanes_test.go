package analysis

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"neuralzip/dtype"
)

func TestBitPlanesBF16(t *testing.T) {
	// values: +1.0 (0x3F80), -1.5 (0xBFC0), +2.0 (0x4000), -0.0 (0x8000)
	vals := []uint16{0x3F80, 0xBFC0, 0x4000, 0x8000}
	data := make([]byte, 2*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint16(data[2*i:], v)
	}
	b, ok := NewBitPlanes(dtype.BF16)
	if !ok {
		t.Fatal("BF16 not supported")
	}
	// split at odd offsets: values straddle writes
	b.Write(data[:1])
	b.Write(data[1:5])
	b.Write(data[5:])
	if b.Values != 4 || b.Sign != 1 || b.Exp != 8 || b.Mant != 7 {
		t.Fatalf("values %d layout %d/%d/%d", b.Values, b.Sign, b.Exp, b.Mant)
	}
	ones := b.Count()
	for bit := 0; bit < 16; bit++ {
		var want uint64
		for _, v := range vals {
			want += uint64(v >> bit & 1)
		}
		if ones[bit] != want {
			t.Errorf("bit %d: %d ones, want %d", bit, ones[bit], want)
		}
	}
	if b.SignBit() != 15 || b.Fraction(15) != 0.5 || math.Abs(b.BitEntropy(15)-1) > 1e-12 {
		t.Errorf("sign: bit %d fraction %g entropy %g", b.SignBit(), b.Fraction(15), b.BitEntropy(15))
	}
	// mantissa bit 6 is set only in -1.5; bits 0..5 are always 0
	if got := b.ConstantMantissaBits(); got != 6 {
		t.Errorf("constant mantissa bits = %d, want 6", got)
	}
	want := binaryEntropy(0.25)
	if math.Abs(b.MantissaEntropy()-want) > 1e-12 {
		t.Errorf("mantissa entropy %g, want %g", b.MantissaEntropy(), want)
	}
	c, _ := NewBitPlanes(dtype.BF16)
	c.Write(data)
	c.Merge(b)
	if c.Values != 8 || c.Count()[14] != 2*ones[14] {
		t.Errorf("merge: %d values, bit 14 %d", c.Values, c.Ones[14])
	}
}

func TestBitPlanesF32MatchesLoop(t *testing.T) {
	data := make([]byte, 4*1000)
	x := uint32(12345)
	for i := 0; i < 1000; i++ {
		x = x*1664525 + 1013904223
		binary.LittleEndian.PutUint32(data[4*i:], x)
	}
	b, _ := NewBitPlanes(dtype.F32)
	b.Write(data[:7])
	b.Write(data[7:])
	ones := b.Count()
	for bit := 0; bit < 32; bit++ {
		var want uint64
		for i := 0; i < 1000; i++ {
			want += uint64(binary.LittleEndian.Uint32(data[4*i:]) >> bit & 1)
		}
		if ones[bit] != want {
			t.Fatalf("bit %d: %d, want %d", bit, ones[bit], want)
		}
	}
	if _, ok := NewBitPlanes(dtype.I32); ok {
		t.Error("I32 accepted")
	}
}

// Compacted counters (per-bit counts only) count, merge and keep counting
// exactly like full ones, and hold no byte histograms.
func TestBitPlanesCompact(t *testing.T) {
	data := make([]byte, 4*1001)
	for i := range 1001 {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(math.Sin(float64(i)))*float32(i%7)))
	}
	all, _ := NewBitPlanes(dtype.F32)
	all.Write(data)
	want := append([]uint64(nil), all.Count()...)
	check := func(name string, got *BitPlanes) {
		t.Helper()
		if g := got.Count(); !slices.Equal(g, want) || got.Values != all.Values {
			t.Fatalf("%s: ones %v values %d, want %v %d", name, g, got.Values, want, all.Values)
		}
	}

	// writing on after Compact, with a value straddling the two writes
	a, _ := NewBitPlanes(dtype.F32)
	a.Write(data[:4*500+2])
	a.Compact()
	if a.bytes != nil {
		t.Fatal("Compact kept the byte histograms")
	}
	a.Write(data[4*500+2:])
	check("written after Compact", a)

	// merges of two halves, either side compacted or not
	for _, compact := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		p, _ := NewBitPlanes(dtype.F32)
		p.Write(data[:2000])
		q, _ := NewBitPlanes(dtype.F32)
		q.Write(data[2000:])
		if compact[0] {
			p.Compact()
		}
		if compact[1] {
			q.Compact()
		}
		p.Merge(q)
		check(fmt.Sprintf("merge, compacted %v", compact), p)
	}
}
