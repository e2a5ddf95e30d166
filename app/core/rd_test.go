package core

import (
	"context"
	"math"
	"runtime"
	"slices"
	"testing"

	"neuralzip/lossy"
)

// rdDemo measures the demo model at two rates (the screen's seven take
// longer than a unit test should).
func rdDemo(t *testing.T, name string) (*Model, *RD) {
	t.Helper()
	m, err := Open(AssetPrefix+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	defer func(r []float64) { RDRates = r }(RDRates)
	RDRates = []float64{2, 4}
	rd, err := NewRD(m)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Coded() == 0 {
		t.Fatalf("%s: no tensor the lab codes", name)
	}
	var last float64
	if err := rd.Compute(context.Background(), func(f float64) { last = f }); err != nil {
		t.Fatal(err)
	}
	if math.Abs(last-1) > 1e-9 {
		t.Errorf("progress ends at %v", last)
	}
	return m, rd
}

// TestRDCurves: a curve per method (points for the unrated, one a rate
// for the rated); the whole model's points are lossy.Run's model rows;
// a tensor's are its own rows; a layer's lie between its tensors'.
func TestRDCurves(t *testing.T) {
	m, rd := rdDemo(t, "selfie-segmentation")
	all := make([]int, len(m.Tensors))
	for i := range all {
		all[i] = i
	}
	curves := rd.Curves(all)
	var names []string
	for _, c := range curves {
		names = append(names, c.Method)
		want := 1
		if c.Rated {
			want = 2
		}
		if len(c.Points) != want {
			t.Errorf("%s: %d points", c.Method, len(c.Points))
		}
	}
	want := []string{"nf4", "int8", "int4", "fp8", "fp8row", "fp8e5", "fp8e5row", "fp8h", "fp8hd", "e8", "lowrank", "kron"}
	if !slices.Equal(names, want) {
		t.Fatalf("methods %v", names)
	}
	src, _, starts, err := m.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var ts []lossy.Tensor
	for _, tn := range m.Tensors {
		off := starts[tn.File] + tn.Offset
		ts = append(ts, lossy.Tensor{Name: tn.Name, DType: tn.DType, Shape: tn.Shape, Offset: off, Data: src[off : off+tn.Bytes]})
	}
	for _, c := range []struct {
		method string
		bits   float64
		curve  int
		point  int
	}{{"nf4", 0, 0, 0}, {"e8", 4, slices.Index(want, "e8"), 1}} {
		ms, _ := lossy.ByName(c.method)
		rows, _, err := lossy.Run(src, ts, ms[0], c.bits)
		if err != nil {
			t.Fatal(err)
		}
		total := rows[len(rows)-1]
		got := curves[c.curve].Points[c.point]
		if math.Abs(got.BitsPerParam-total.BitsPerParam) > 1e-9 || math.Abs(got.RelL2-total.RelL2) > 1e-6*total.RelL2 {
			t.Errorf("%s %g: model %+v, lossy.Run %+v", c.method, c.bits, got, total)
		}
		// the first coded tensor alone
		k := slices.IndexFunc(ts, lossy.Tensor.Coded)
		tp := rd.Curves([]int{k})[c.curve].Points[c.point]
		if math.Abs(tp.BitsPerParam-rows[0].BitsPerParam) > 1e-9 || math.Abs(tp.RelL2-rows[0].RelL2) > 1e-6*rows[0].RelL2 {
			t.Errorf("%s %g: tensor %+v, lossy.Run %+v", c.method, c.bits, tp, rows[0])
		}
	}
	// a layer: its error lies between its coded tensors'
	for _, layer := range m.Layers() {
		var idx, coded []int
		for i, tn := range m.Tensors {
			if tn.Layer == layer {
				idx = append(idx, i)
				if rd.Tensors[i].Coded {
					coded = append(coded, i)
				}
			}
		}
		if len(coded) < 2 {
			continue
		}
		lp, _ := rd.Point(rd.Runs[0], idx)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, i := range coded {
			p, _ := rd.Point(rd.Runs[0], []int{i})
			lo, hi = min(lo, p.RelL2), max(hi, p.RelL2)
		}
		if lp.RelL2 < lo*(1-1e-9) || lp.RelL2 > hi*(1+1e-9) {
			t.Errorf("layer %s: error %v outside its tensors' [%v, %v]", layer, lp.RelL2, lo, hi)
		}
		break
	}
	// a tensor the lab keeps has no curves
	if k := slices.IndexFunc(rd.Tensors, func(t RDTensor) bool { return !t.Coded }); k >= 0 && rd.Curves([]int{k}) != nil {
		t.Errorf("curves of kept tensor %s", m.Tensors[k].Name)
	}
}

// TestRDDeterministic: one processor or several, the same runs.
func TestRDDeterministic(t *testing.T) {
	m, err := Open(AssetPrefix+"selfie-segmentation", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var runs [][]RDRun
	for _, procs := range []int{1, 2} {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		rd, err := NewRD(m)
		if err != nil {
			t.Fatal(err)
		}
		var got []RDRun
		for _, name := range []string{"e8", "kron"} {
			ms, _ := lossy.ByName(name)
			r, err := rd.Measure(context.Background(), ms[0], 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Seconds = 0
			got = append(got, r)
		}
		runs = append(runs, got)
	}
	for k := range runs[0] {
		a, b := runs[0][k], runs[1][k]
		if !slices.Equal(a.Bytes, b.Bytes) || !slices.Equal(a.SqErr, b.SqErr) {
			t.Errorf("%s: differs between one processor and two", a.Method)
		}
	}
	// cancelled
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rd, _ := NewRD(m)
	if _, err := rd.Measure(ctx, lossy.Methods()[0], 0, nil); err != ErrCancelled {
		t.Errorf("cancelled: %v", err)
	}
}

// TestRDLossless: nzip's share of each tensor gives the lossless rate of
// any scope; the model's is near the archive's size over its values.
func TestRDLossless(t *testing.T) {
	m, err := Open(AssetPrefix+"selfie-segmentation", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rd, err := NewRD(m)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(m.Tensors))
	for i := range all {
		all[i] = i
	}
	if _, ok := rd.LosslessBits(all); ok {
		t.Fatal("a lossless rate before any run")
	}
	if err := rd.ComputeLossless(context.Background(), m, nil); err != nil {
		t.Fatal(err)
	}
	b, ok := rd.LosslessBits(all)
	// F16 weights: nzip codes them in fewer than 16 bits, more than 8
	if !ok || b <= 8 || b >= 16 || rd.LosslessFrom != LosslessFromComputed {
		t.Errorf("lossless %v bits/param (%v) from %q", b, ok, rd.LosslessFrom)
	}
	if tb, ok := rd.LosslessBits(all[:1]); !ok || tb <= 0 {
		t.Errorf("a tensor's lossless rate %v %v", tb, ok)
	}
}

// TestRDPredictE8: the sampled estimate is near what the coder writes.
func TestRDPredictE8(t *testing.T) {
	m, err := Open(AssetPrefix+"selfie-segmentation", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rd, err := NewRD(m)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(m.Tensors))
	for i := range all {
		all[i] = i
	}
	ms, _ := lossy.ByName("e8")
	run, err := rd.Measure(context.Background(), ms[0], 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := rd.Point(run, all)
	pred, err := rd.PredictE8(context.Background(), all, 4)
	if err != nil {
		t.Fatal(err)
	}
	if r := pred / float64(p.Bytes); r < 0.85 || r > 1.15 {
		t.Errorf("predicted %.0f bytes, measured %d", pred, p.Bytes)
	}
}

// TestLossyGenDemo: stories260K side by side: int8 agrees with the
// original on nearly every token, 2-bit kron far less; texts are text.
func TestLossyGenDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs stories260K")
	}
	g, err := DemoLossyGen()
	if err != nil {
		t.Fatal(err)
	}
	hi, err := g.Compare(context.Background(), "int8", 4)
	if err != nil {
		t.Fatal(err)
	}
	if hi.Bits != 0 || hi.Top1 < 0.9 || hi.KL <= 0 || hi.KL > 0.05 || hi.Original == "" || hi.Lossy == "" || hi.Prompt == "" || hi.Tokens == 0 {
		t.Errorf("int8: %+v", hi)
	}
	lo, err := g.Compare(context.Background(), "kron", 2)
	if err != nil {
		t.Fatal(err)
	}
	if lo.Top1 >= hi.Top1 || lo.KL <= hi.KL || lo.Bits != 2 {
		t.Errorf("kron 2 bits %+v not worse than int8 %+v", lo, hi)
	}
	again, _ := g.Compare(context.Background(), "kron", 2)
	if again != lo {
		t.Errorf("not deterministic: %+v, then %+v", lo, again)
	}
}
