package analysis

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

func sparseOf(t *testing.T, d dtype.DType, row int, data []byte, piece int) SparseStats {
	t.Helper()
	a, ok := NewSparseAccumulator(d, row)
	if !ok {
		t.Fatalf("no accumulator for %v", d)
	}
	for len(data) > 0 {
		k := min(piece, len(data))
		a.Write(data[:k])
		data = data[k:]
	}
	return a.Stats()
}

// TestSparseStatsByHand: figures worked out by hand, and the same in any
// write pieces.
func TestSparseStatsByHand(t *testing.T) {
	// BF16, rows of 2: column 0 always zero, column 1 two values 1.0 and 2.0
	var data []byte
	for _, v := range []uint16{0, 0x3f80, 0, 0x4000, 0, 0x3f80, 0, 0x4000} {
		data = binary.LittleEndian.AppendUint16(data, v)
	}
	for _, piece := range []int{1, 3, 16} {
		s := sparseOf(t, dtype.BF16, 2, data, piece)
		if s.Values != 8 || s.Zeros != 4 || s.Sparsity() != 0.5 {
			t.Fatalf("piece %d: %+v", piece, s)
		}
		// mask: 8 values at h(1/2) = 8 bits; by column 0 bits; values: 4 at 1 bit
		if s.MaskBits != 8 || s.MaskColumnBits != 0 || s.ValueBits != 4 {
			t.Fatalf("piece %d: mask %v, by column %v, values %v bits", piece, s.MaskBits, s.MaskColumnBits, s.ValueBits)
		}
		if s.Optimum() != 1.5 || s.OptimumColumns() != 0.5 {
			t.Fatalf("optimum %v / %v bytes", s.Optimum(), s.OptimumColumns())
		}
	}
	// F32 keeps its 23 mantissa bits raw: one nonzero value costs 23 bits
	f := binary.LittleEndian.AppendUint32(make([]byte, 12), 0x3f800001)
	if s := sparseOf(t, dtype.F32, 0, f, 4); s.ValueBits != 23 || s.Zeros != 3 {
		t.Fatalf("F32: %+v", s)
	}
	if _, ok := NewSparseAccumulator(dtype.F64, 0); ok {
		t.Fatal("F64 accepted")
	}
}

// TestSparseStatsMatchData: on ../shared/activations the figures equal
// those of stats.json (computed there by numpy from the same bytes).
func TestSparseStatsMatchData(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "activations")
	raw, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err != nil {
		t.Skipf("../shared/activations not here: %v", err)
	}
	var st struct {
		Tensors []struct {
			File, Name       string
			Numel, Zeros     int64
			HMask            float64 `json:"H_mask"`
			HMaskGivenNeuron float64 `json:"H_mask_given_neuron"`
			HJoint           float64 `json:"H_joint"`
			BoundBits        float64 `json:"bound_bits"`
			BoundMantRaw     float64 `json:"bound_bits_mant_raw"`
			Format           string
		}
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	checked := 0
	for _, x := range st.Tensors {
		b, ok := files[x.File]
		if !ok {
			if b, err = os.ReadFile(filepath.Join(dir, x.File)); err != nil {
				t.Fatal(err)
			}
			files[x.File] = b
		}
		data, d := safetensorsTensor(t, b, x.Name)
		s := sparseOf(t, d, 512, data, 1<<20)
		n := float64(x.Numel)
		want := x.BoundBits
		if d == dtype.F32 {
			want = x.BoundMantRaw
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(b)) }
		if s.Values != x.Numel || s.Zeros != x.Zeros || !near(s.MaskBits/n, x.HMask) || !near(s.MaskColumnBits/n, x.HMaskGivenNeuron) || !near(8*s.Optimum()/n, want) {
			t.Errorf("%s %s: zeros %d (want %d), H_mask %.6f (%.6f), by unit %.6f (%.6f), optimum %.6f bits (%.6f)", x.File, x.Name, s.Zeros, x.Zeros, s.MaskBits/n, x.HMask, s.MaskColumnBits/n, x.HMaskGivenNeuron, 8*s.Optimum()/n, want)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("stats.json lists no tensors")
	}
}

// safetensorsTensor returns the bytes and dtype of a tensor of a
// safetensors file (the minimal reader these tests need).
func safetensorsTensor(t *testing.T, b []byte, name string) ([]byte, dtype.DType) {
	t.Helper()
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var x struct {
		Dtype   string
		Offsets [2]int64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(hdr[name], &x); err != nil {
		t.Fatal(err)
	}
	d, _ := dtype.Parse(x.Dtype)
	base := int64(8 + n)
	return b[base+x.Offsets[0] : base+x.Offsets[1]], d
}

// TestFP8Fields: the exponent statistics of FP8 use exponent fields of 4
// (E4M3) and 5 (E5M2) bits: every code once gives a uniform histogram of
// 16 or 32 bins, 4 or 5 bits of entropy, and the bound keeps the other
// 4 or 3 bits raw; NaN and Inf codes count in their bins like any other.
func TestFP8Fields(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, c := range []struct {
		d          dtype.DType
		bins, rest int
	}{{dtype.F8E4M3, 16, 4}, {dtype.F8E5M2, 32, 3}} {
		st, ok := Float(c.d, all)
		if !ok || len(st.Hist) != c.bins || st.ExpBits+st.OtherBits != 8 || st.OtherBits != c.rest {
			t.Fatalf("%v: %d bins, %d+%d bits", c.d, len(st.Hist), st.ExpBits, st.OtherBits)
		}
		for e, n := range st.Hist {
			if n != uint64(256/c.bins) {
				t.Fatalf("%v: exponent %d counted %d times", c.d, e, n)
			}
		}
		if math.Abs(st.ExpEntropy-math.Log2(float64(c.bins))) > 1e-12 || st.Bound() != 256*8/8 {
			t.Fatalf("%v: entropy %v, bound %v", c.d, st.ExpEntropy, st.Bound())
		}
		// the sparse statistics: one zero, 255 distinct nonzero codes
		a, _ := NewSparseAccumulator(c.d, 16)
		a.Write(all)
		s := a.Stats()
		if s.Zeros != 1 || math.Abs(s.ValueBits-255*math.Log2(255)) > 1e-9 {
			t.Fatalf("%v: %+v", c.d, s)
		}
	}
}
