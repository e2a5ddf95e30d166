package codec

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"neuralzip/dtype"
)

// Every fast path is compared with its pure-Go twin (and the generic
// reference) on random bit patterns of many lengths and on real weights.

func twinInputs(t *testing.T, size int) [][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	var out [][]byte
	for _, n := range []int{0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000, 4097} {
		b := make([]byte, n*size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		out = append(out, b)
	}
	if d := sharedDir(); d != "" {
		for _, name := range []string{"real-bf16.safetensors", "real-f32.safetensors", "real-f16.safetensors", "real-f16-native.safetensors"} {
			src := realChunk(t, name, 100003)
			if len(src)%size == 0 {
				out = append(out, src)
			}
		}
	}
	return out
}

func TestSplitMergeBF16Twins(t *testing.T) {
	if !useAVX2 {
		t.Log("no AVX2 on this machine: only the Go paths are compared")
	}
	f, _ := specFor(dtype.BF16)
	for _, src := range twinInputs(t, 2) {
		n := len(src) / 2
		e1, r1 := make([]byte, n), make([]byte, n)
		e2, r2 := make([]byte, n), make([]byte, n)
		or1 := splitBF16(src, e1, r1)
		or2 := splitBF16Go(src, e2, r2)
		if !bytes.Equal(e1, e2) || !bytes.Equal(r1, r2) || or1 != or2 {
			t.Fatalf("n=%d: splitBF16 differs from its Go twin", n)
		}
		// generic reference
		e3, r3 := make([]byte, n), make([]byte, n)
		var h [256]uint32
		splitGeneric(src, n, f, e3, [][]byte{r3}, &h)
		if !bytes.Equal(e1, e3) || !bytes.Equal(r1, r3) {
			t.Fatalf("n=%d: splitBF16 differs from splitGeneric", n)
		}
		d1, d2, d3 := make([]byte, 2*n), make([]byte, 2*n), make([]byte, 2*n)
		mergeBF16(d1, e1, r1)
		mergeBF16Go(d2, e1, r1)
		mergeGeneric(d3, n, f, e1, [][]byte{r1})
		if !bytes.Equal(d1, src) || !bytes.Equal(d2, src) || !bytes.Equal(d3, src) {
			t.Fatalf("n=%d: merge does not restore the input", n)
		}
	}
}

func TestSplitMergeF32Twins(t *testing.T) {
	f, _ := specFor(dtype.F32)
	for _, src := range twinInputs(t, 4) {
		n := len(src) / 4
		var h1, h2 [256]uint32
		e1, e2 := make([]byte, n), make([]byte, n)
		p1 := [][]byte{make([]byte, n), make([]byte, n), make([]byte, n)}
		p2 := [][]byte{make([]byte, n), make([]byte, n), make([]byte, n)}
		or1, ok := split(src, n, f, e1, p1, &h1)
		splitGeneric(src, n, f, e2, p2, &h2)
		var st fieldStats
		statsGeneric(src, n, f, &st)
		if !ok || h1 != h2 || or1 != st.orR || !bytes.Equal(e1, e2) {
			t.Fatalf("n=%d: F32 split differs from the generic one", n)
		}
		for p := range p1 {
			if !bytes.Equal(p1[p], p2[p]) {
				t.Fatalf("n=%d: plane %d differs", n, p)
			}
		}
		d1 := make([]byte, 4*n)
		merge(d1, n, f, e1, p1)
		if !bytes.Equal(d1, src) {
			t.Fatalf("n=%d: F32 merge does not restore the input", n)
		}
	}
}

// The generic split/merge must invert each other for every float type, join
// and dropped-bit count the format allows.
func TestGenericFieldsAllSpecs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, d := range []dtype.DType{dtype.F16, dtype.BF16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2, dtype.F8E8M0} {
		base, ok := specFor(d)
		if !ok {
			t.Fatalf("%v: no spec", d)
		}
		n := 777
		for j := uint(0); j <= base.maxJoin(); j++ {
			for tz := uint(0); tz <= base.w()-j; tz++ {
				f := base
				f.j, f.tz = j, tz
				src := make([]byte, n*f.size)
				for i := 0; i < n; i++ {
					// residual (sign<<m | mantissa) with tz low bits zero
					e := r.Uint64() & (1<<f.e - 1)
					rr := r.Uint64() & (1<<f.w() - 1) &^ (1<<tz - 1)
					v := (rr>>f.m)<<(f.m+f.e) | e<<f.m | rr&(1<<f.m-1)
					storeValue(src, i, f.size, v)
				}
				syms := make([]byte, n)
				planes := make([][]byte, f.planes())
				for p := range planes {
					planes[p] = make([]byte, n)
				}
				var h [256]uint32
				splitGeneric(src, n, f, syms, planes, &h)
				for _, s := range syms {
					if uint(s) >= 1<<f.symW() {
						t.Fatalf("%v j=%d tz=%d: symbol %d too wide", d, j, tz, s)
					}
				}
				for p := range planes {
					for _, v := range planes[p] {
						if uint(v) >= 1<<f.planeW(p) {
							t.Fatalf("%v j=%d tz=%d: plane %d value too wide", d, j, tz, p)
						}
					}
				}
				out := make([]byte, len(src))
				mergeGeneric(out, n, f, syms, planes)
				if !bytes.Equal(out, src) {
					t.Fatalf("%v j=%d tz=%d: generic merge does not invert split", d, j, tz)
				}
			}
		}
	}
}

func TestForcedFallbackRoundTrip(t *testing.T) {
	if !useAVX2 {
		t.Skip("no assembly path to turn off")
	}
	useAVX2 = false
	defer func() { useAVX2 = true }()
	src := realisticValues(dtype.BF16, 100000, 9)
	roundTrip(t, src, []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(src))}}, Options{})
}

func TestF16FastPathTwins(t *testing.T) {
	base, _ := specFor(dtype.F16)
	for _, src := range twinInputs(t, 2) {
		n := len(src) / 2
		var st1, st2 fieldStats
		statsF16(src, &st1)
		statsGeneric(src, n, base, &st2)
		if st1 != st2 {
			t.Fatalf("n=%d: statsF16 differs from statsGeneric", n)
		}
		for j := uint(0); j <= 3; j++ {
			f := base
			f.j = j
			s1, s2 := make([]byte, n), make([]byte, n)
			p1 := [][]byte{make([]byte, n), make([]byte, n)}
			p2 := [][]byte{make([]byte, n), make([]byte, n)}
			splitF16(src, j, s1, p1[:f.planes()])
			var h [256]uint32
			splitGeneric(src, n, f, s2, p2[:f.planes()], &h)
			if !bytes.Equal(s1, s2) {
				t.Fatalf("n=%d j=%d: symbols differ", n, j)
			}
			for p := 0; p < f.planes(); p++ {
				if !bytes.Equal(p1[p], p2[p]) {
					t.Fatalf("n=%d j=%d: plane %d differs", n, j, p)
				}
			}
			out := make([]byte, 2*n)
			merge(out, n, f, s1, p1[:f.planes()])
			if !bytes.Equal(out, src) {
				t.Fatalf("n=%d j=%d: merge does not restore", n, j)
			}
		}
	}
}
