package analysis

import (
	"encoding/binary"
	"math"
	"testing"

	"neuralzip/dtype"
)

func TestEntropy(t *testing.T) {
	if h := Entropy([]uint64{5, 5}); math.Abs(h-1) > 1e-12 {
		t.Fatalf("two equal symbols: %v", h)
	}
	if h := Entropy([]uint64{1, 1, 1, 1, 0, 0}); math.Abs(h-2) > 1e-12 {
		t.Fatalf("four equal symbols: %v", h)
	}
	if h := Entropy([]uint64{7}); h != 0 {
		t.Fatalf("one symbol: %v", h)
	}
	if h := Entropy(nil); h != 0 {
		t.Fatal("empty")
	}
}

func TestFloatBF16(t *testing.T) {
	// 1.0 (exp 127) twice, 2.0 (exp 128) twice: H = 1 bit, 8 raw bits each
	var b []byte
	for _, v := range []uint16{0x3f80, 0xbf80, 0x4000, 0x4000} {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	st, ok := Float(dtype.BF16, b)
	if !ok || st.Values != 4 || st.Hist[127] != 2 || st.Hist[128] != 2 {
		t.Fatalf("%+v", st)
	}
	if math.Abs(st.ExpEntropy-1) > 1e-12 || math.Abs(st.Bound()-4*(1+8)/8.0) > 1e-12 {
		t.Fatalf("entropy %v bound %v", st.ExpEntropy, st.Bound())
	}
	if _, ok := Float(dtype.I32, b); ok {
		t.Fatal("I32 treated as float")
	}
}

func TestFloatF32AndMerge(t *testing.T) {
	var b []byte
	for _, f := range []float32{1, 1.5, 0.5, -0.25} { // exponents 127, 127, 126, 125
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	st, _ := Float(dtype.F32, b)
	if st.Hist[127] != 2 || st.Hist[126] != 1 || st.Hist[125] != 1 || st.OtherBits != 24 {
		t.Fatalf("%+v", st)
	}
	var all FloatStats
	all.Merge(st)
	all.Merge(st)
	if all.Values != 8 || all.Hist[127] != 4 || math.Abs(all.ExpEntropy-st.ExpEntropy) > 1e-12 {
		t.Fatalf("merge: %+v", all)
	}
}

func TestAccumulatorPieces(t *testing.T) {
	var b []byte
	for i := 0; i < 1000; i++ {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(i)*0.37-100))
	}
	want, _ := Float(dtype.F32, b)
	for _, piece := range []int{1, 3, 4, 7, 1000, 5000} {
		a, ok := NewAccumulator(dtype.F32)
		if !ok {
			t.Fatal("no accumulator")
		}
		for i := 0; i < len(b); i += piece {
			a.Write(b[i:min(i+piece, len(b))])
		}
		got := a.Stats()
		if got.Values != want.Values || got.ExpEntropy != want.ExpEntropy {
			t.Fatalf("piece %d: %d values, H %v; want %d, %v", piece, got.Values, got.ExpEntropy, want.Values, want.ExpEntropy)
		}
	}
}
