package codec

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// gaussianBF16 makes n BF16 values of a N(0, sigma²) tensor.
func realisticValues(d dtype.DType, n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	size := d.Size()
	out := make([]byte, n*size)
	for i := 0; i < n; i++ {
		x := r.NormFloat64() * 0.02
		storeValue(out, i, size, floatBits(d, x))
	}
	return out
}

func BenchmarkSplitBF16(b *testing.B) {
	n := 1 << 16
	src := realisticValues(dtype.BF16, n, 1)
	f, _ := specFor(dtype.BF16)
	syms := make([]byte, n)
	r := make([]byte, n)
	var hist [256]uint32
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		split(src, n, f, syms, [][]byte{r}, &hist)
	}
}

func BenchmarkMergeBF16(b *testing.B) {
	n := 1 << 16
	src := realisticValues(dtype.BF16, n, 1)
	f, _ := specFor(dtype.BF16)
	syms := make([]byte, n)
	r := make([]byte, n)
	var hist [256]uint32
	split(src, n, f, syms, [][]byte{r}, &hist)
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		merge(dst, n, f, syms, [][]byte{r})
	}
	if !bytes.Equal(dst, src) {
		b.Fatal("mismatch")
	}
}

func realChunk(b testing.TB, d string, n int) []byte {
	dir := needShared(b)
	src, err := os.ReadFile(filepath.Join(dir, "models/bench", d))
	if err != nil {
		b.Skip(err)
	}
	segs := safetensorsSegments(src)
	// the largest tensor
	var best Segment
	for _, s := range segs {
		if s.Length > best.Length {
			best = s
		}
	}
	sz := best.DType.Size()
	if int64(n*sz) > best.Length {
		n = int(best.Length) / sz
	}
	return src[best.Offset : best.Offset+int64(n*sz)]
}

func BenchmarkEncodeFloatBF16(b *testing.B) {
	src := realChunk(b, "real-bf16.safetensors", 1<<16)
	be := &blockEncoder{}
	var out []byte
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		out = be.encodeFloat(out[:0], src, dtype.BF16)
	}
	b.ReportMetric(float64(len(src))/float64(len(out)), "ratio")
	b.Logf("mode %d", be.st.lastMode)
}

func BenchmarkDecodeFloatBF16(b *testing.B) {
	src := realChunk(b, "real-bf16.safetensors", 1<<16)
	be := &blockEncoder{}
	enc := be.encodeFloat(nil, src, dtype.BF16)
	bd := &blockDecoder{}
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := bd.decodeFloat(dst, enc, dtype.BF16); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Equal(dst, src) {
		b.Fatal("mismatch")
	}
}

// BenchmarkFields times the split and merge of specs with dropped bits
// (F32 and BF16 cast up from narrower types, F16 with a join) and of FP8
// specs, the fast loops against the generic reference.
func BenchmarkFields(b *testing.B) {
	n := 1 << 16
	for _, c := range []struct {
		name  string
		d     dtype.DType
		j, tz uint
	}{
		{"F32-tz13", dtype.F32, 0, 13}, // 2 planes, as in /tmp/hm-f32.safetensors
		{"F32-tz16", dtype.F32, 0, 16}, // F32 holding BF16 values (1 plane)
		{"F32-tz4", dtype.F32, 0, 4},   // 3 planes
		{"BF16-tz4", dtype.BF16, 0, 4},
		{"F16-j2-tz3", dtype.F16, 2, 3},
		{"F8E4M3-j2", dtype.F8E4M3, 2, 0}, // one plane of 2 bits
		{"F8E4M3-j4", dtype.F8E4M3, 4, 0}, // the byte is the symbol
		{"F8E5M2-j1", dtype.F8E5M2, 1, 0},
	} {
		f, _ := specFor(c.d)
		f.j, f.tz = c.j, c.tz
		src := realisticValues(c.d, n, 1)
		for i := 0; i < n; i++ { // clear the dropped bits
			v := loadValue(src, i, f.size)
			storeValue(src, i, f.size, v&^(1<<f.tz-1))
		}
		syms := make([]byte, n)
		planes := make([][]byte, f.planes())
		for p := range planes {
			planes[p] = make([]byte, n)
		}
		var hist [256]uint32
		dst := make([]byte, len(src))
		for _, impl := range []string{"fast", "generic"} {
			b.Run("split/"+c.name+"/"+impl, func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					if impl == "fast" {
						splitFields(src, n, f, syms, planes, &hist)
					} else {
						splitGeneric(src, n, f, syms, planes, &hist)
					}
				}
			})
			b.Run("merge/"+c.name+"/"+impl, func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					if impl == "fast" {
						mergeFields(dst, n, f, syms, planes)
					} else {
						mergeGeneric(dst, n, f, syms, planes)
					}
				}
				if !bytes.Equal(dst, src) {
					b.Fatal("merge does not restore the input")
				}
			})
		}
	}
}
