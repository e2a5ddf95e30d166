package codec

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// sparseGoldenValues makes ReLU-like sparse values with integer
// arithmetic only (as goldenValues): value i is zero unless a draw passes
// its column's threshold (columns of row values have their own zero rate,
// some never fire), else goldenValues' value, made positive unless mixed.
func sparseGoldenValues(d dtype.DType, n, row int, zeroPermille uint64, mixed bool, seed uint64) []byte {
	out := goldenValues(d, n, seed)
	size := d.Size()
	l, _ := d.FloatLayout()
	x := seed * 31
	next := func() uint64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	colRate := make([]uint64, row)
	for c := range colRate {
		// the column's zero rate, spread around zeroPermille
		colRate[c] = min(1000, zeroPermille*(next()%200+900)/1000)
		if next()%16 == 0 {
			colRate[c] = 1000
		}
	}
	sign := uint64(1) << (l.Exp + l.Mant)
	for i := 0; i < n; i++ {
		v := loadValue(out, i, size)
		switch {
		case next()%1000 < colRate[i%row]:
			v = 0
		case !mixed:
			v &^= sign
		}
		if v == 0 && next()%1000 >= colRate[i%row] {
			v = 1 // a nonzero value where the draw says so
		}
		storeValue(out, i, size, v)
	}
	return out
}

// patternValues keeps the values of goldenValues where keep says so
// (made positive) and zeros the others.
func patternValues(d dtype.DType, n int, seed uint64, keep func(i int, r uint64) bool) []byte {
	out := goldenValues(d, n, seed)
	size := d.Size()
	l, _ := d.FloatLayout()
	x := seed * 17
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		v := loadValue(out, i, size) &^ (1 << (l.Exp + l.Mant))
		if v == 0 || !keep(i, x>>33) {
			v = 0
		}
		storeValue(out, i, size, v)
	}
	return out
}

// sparseGoldenInput is a safetensors file of sparse tensors that the
// encoder codes with every mask method.
func sparseGoldenInput() ([]byte, []Segment) {
	ts := []refT{
		{"act.bf16", dtype.BF16, []int64{64, 512}, sparseGoldenValues(dtype.BF16, 64*512, 512, 850, false, 1)},
		{"act.f16", dtype.F16, []int64{128, 256}, sparseGoldenValues(dtype.F16, 128*256, 256, 998, false, 2)},
		{"pruned.f32", dtype.F32, []int64{32, 512}, sparseGoldenValues(dtype.F32, 32*512, 512, 500, true, 3)},
		{"act.f8e4m3", dtype.F8E4M3, []int64{128, 128}, sparseGoldenValues(dtype.F8E4M3, 128*128, 128, 900, false, 4)},
		{"grad.f8e5m2", dtype.F8E5M2, []int64{128, 128}, sparseGoldenValues(dtype.F8E5M2, 128*128, 128, 700, true, 5)},
		// 2:4 structured sparsity: two of every four values kept
		{"pruned24.bf16", dtype.BF16, []int64{16384}, patternValues(dtype.BF16, 16384, 6, func(i int, _ uint64) bool {
			r := uint64(i/4+1) * 0x9e3779b97f4a7c15 >> 40 // the group's choice
			a, b := r%4, (r/4)%3
			if b >= a {
				b++
			}
			return uint64(i%4) == a || uint64(i%4) == b
		})},
		// clusters of three nonzero values, far apart
		{"spikes.f16", dtype.F16, []int64{16384}, patternValues(dtype.F16, 16384, 7, func(i int, r uint64) bool { return i%1000 < 3 || i%1777 < 2 })},
	}
	return safetensorsFile(`{"format":"pt","source":"neuralzip codec/sparse_golden_test.go"}`, ts)
}

// TestGoldenSparse pins format version 8's sparse blocks as TestGolden
// pins the rest: the golden archive decodes to the input, holds every
// mask method and a dropped sign, and the encoder writes it byte for byte
// (regenerate with -update after a deliberate change). It is written
// with EncodeOptions.Best (masks chosen by bytes alone), so that the
// column mask, which the default path takes only where it pays for its
// decoding time (cost.go), is in it.
func TestGoldenSparse(t *testing.T) {
	path := filepath.Join("testdata", "golden-sparse-v8.nzip")
	src, segs := sparseGoldenInput()
	var buf bytes.Buffer
	if _, err := Encode(context.Background(), &buf, []Input{{Name: "sparse.safetensors", Format: "safetensors", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, EncodeOptions{ChunkValues: 16384, Threads: 2, Best: true}); err != nil {
		t.Fatal(err)
	}
	arc := buf.Bytes()
	golden := checkGolden(t, path, arc, src, sparseVersion)
	rd, err := NewMemReader(golden)
	if err != nil {
		t.Fatal(err)
	}
	var masks [3]int
	signs := 0
	for _, b := range rd.Files()[0].Blocks() {
		if b.Kind != KindFloat || FloatForm(golden[b.Payload]) != FormSparse {
			continue
		}
		h, err := ReadSparseHeader(golden[b.Payload:b.Payload+b.Compressed], int(b.Length)/b.DType.Size(), b.DType)
		if err != nil {
			t.Fatal(err)
		}
		masks[h.Mask]++
		if h.SignDropped {
			signs++
		}
	}
	if masks[0] == 0 || masks[1] == 0 || masks[2] == 0 || signs == 0 {
		t.Errorf("golden sparse blocks: masks (bitmap, gaps, columns) %v, %d with the sign dropped; want each", masks, signs)
	}
}
