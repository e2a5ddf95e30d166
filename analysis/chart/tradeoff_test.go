package chart

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

func TestParetoFront(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		pts  [][2]float64
		want []int
	}{
		{"none", nil, nil},
		{"single point", [][2]float64{{3, 1.5}}, []int{0}},
		{"all dominated by one", [][2]float64{{1, 1}, {2, 2}, {5, 3}, {4, 2.5}}, []int{2}},
		{"a trade-off, in X order", [][2]float64{{300, 1.2}, {100, 1.5}, {200, 1.4}, {150, 1.3}}, []int{1, 2, 0}},
		{"equal points are both on it", [][2]float64{{2, 2}, {1, 3}, {2, 2}}, []int{1, 0, 2}},
		{"same speed: the higher ratio", [][2]float64{{2, 1}, {2, 3}, {1, 4}}, []int{2, 1}},
		{"same ratio: the faster", [][2]float64{{1, 2}, {3, 2}, {2, 1}}, []int{1}},
		{"NaN is never on it", [][2]float64{{nan, 9}, {1, 1}, {2, nan}}, []int{1}},
	} {
		pts := make([]Point, len(tc.pts))
		for i, p := range tc.pts {
			pts[i] = Point{X: p[0], Y: p[1]}
		}
		if got := ParetoFront(pts); !slices.Equal(got, tc.want) {
			t.Errorf("%s: front %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFrontSteps(t *testing.T) {
	pts := []Point{{X: 300, Y: 1.2}, {X: 100, Y: 1.5}, {X: 200, Y: 1.4}}
	got := frontSteps(pts, ParetoFront(pts))
	want := [][2]float64{{100, 1.5}, {100, 1.4}, {200, 1.4}, {200, 1.2}, {300, 1.2}}
	if len(got) != len(want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].X != w[0] || got[i].Y != w[1] {
			t.Errorf("step %d: %v, want %v", i, got[i], w)
		}
	}
}

// runTradeoff is the Run screen's chart after the screenshot tour: three
// codecs on the CPU, then nzip on the GPU kernels' Go twin (this run).
func runTradeoff() Tradeoff {
	t := Tradeoff{Title: "Runs on silero_vad_legacy.onnx", XLabel: "compress / decompress MB/s, one run", YLabel: "ratio (original / compressed)",
		Series: []string{"compress", "decompress"}, Highlight: "this run"}
	for _, r := range []struct {
		name      string
		c, d, rat float64
	}{{"zstd-3", 102, 696, 2.1274}, {"zipnn", 248, 596, 1.1925}, {"nzip", 111, 475, 2.4282}, {"nzip @cpu (this run)", 155, 252, 2.4282}} {
		hi := strings.HasSuffix(r.name, "(this run)")
		t.Points = append(t.Points, Point{X: r.c, Y: r.rat, Label: r.name, Series: 0, Highlight: hi}, Point{X: r.d, Y: r.rat, Label: r.name, Series: 1, Highlight: hi})
	}
	return t
}

// setupPanels is the Setups screen's comparison after the tour: three
// models, no setup, the Gaussian one and one built from the first model.
func setupPanels() []Tradeoff {
	setups := []string{"none", "gaussian", "silero_vad_legacy.onnx"}
	var out []Tradeoff
	for _, m := range []struct {
		name   string
		rat, c []float64
	}{
		{"silero_vad_legacy.onnx", []float64{2.4282, 2.4250, 2.4256}, []float64{50, 81, 69}},
		{"selfie_segmentation.tflite", []float64{1.2524, 1.2485, 1.2404}, []float64{77, 52, 72}},
		{"blazeface-front.json", []float64{2.5076, 2.5026, 2.4760}, []float64{141, 120, 150}},
	} {
		t := Tradeoff{Title: m.name, XLabel: "compress MB/s", YLabel: "ratio", Front: true}
		for i, s := range setups {
			t.Points = append(t.Points, Point{X: m.c[i], Y: m.rat[i], Label: s, Series: i})
		}
		out = append(out, t)
	}
	return out
}

func TestTradeoffGolden(t *testing.T) {
	p, err := TradeoffPlot(runTradeoff(), Light())
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Label.Text != "compress / decompress MB/s, one run (log scale)" {
		t.Errorf("x label %q: speeds from 102 to 696 MB/s want a log scale", p.X.Label.Text)
	}
	goldenSize(t, "tradeoff-run", p, 560, 360)
	f, err := TradeoffPanels("Ratio vs compress speed", setupPanels(), 3, Dark())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Plots) != 3 || f.Plots[0].Title.Text != "silero_vad_legacy.onnx" || f.Plots[1].Y.Label.Text != "" || f.Plots[2].X.Label.Text != "compress MB/s" {
		t.Errorf("panels: %d, titles and labels %q %q %q", len(f.Plots), f.Plots[0].Title.Text, f.Plots[1].Y.Label.Text, f.Plots[2].X.Label.Text)
	}
	goldenSize(t, "tradeoff-panels", f, 800, 360)
}

func TestTradeoffEmpty(t *testing.T) {
	if _, err := TradeoffPlot(Tradeoff{Points: []Point{{X: 0, Y: 2}, {X: math.Inf(1), Y: 1}}}, Light()); err != ErrEmpty {
		t.Errorf("no plottable point: %v", err)
	}
	if _, err := TradeoffPanels("t", []Tradeoff{{}, {}}, 2, Light()); err != ErrEmpty {
		t.Errorf("no panel with points: %v", err)
	}
	// an empty panel is left out, the others keep their order
	ps := append([]Tradeoff{{Title: "empty"}}, setupPanels()...)
	f, err := TradeoffPanels("t", ps, 2, Light())
	if err != nil || len(f.Plots) != 3 || f.Plots[0].Title.Text != "silero_vad_legacy.onnx" {
		t.Fatalf("%v, %d panels", err, len(f.Plots))
	}
	if f.Plots[0].X.Label.Text != "" || f.Plots[1].X.Label.Text == "" || f.Plots[2].X.Label.Text == "" || f.Plots[2].Y.Label.Text == "" {
		t.Errorf("2 a row: x labels %q %q %q, y label of the second row %q", f.Plots[0].X.Label.Text, f.Plots[1].X.Label.Text, f.Plots[2].X.Label.Text, f.Plots[2].Y.Label.Text)
	}
}

// The labels of a crowded chart stay inside the data area, off every
// point and off each other; the highlighted one keeps off its ring.
func TestPlaceLabels(t *testing.T) {
	area := vg.Rectangle{Max: vg.Point{X: 300, Y: 200}}
	var marks []labelMark
	for i, at := range []vg.Point{{X: 40, Y: 100}, {X: 60, Y: 100}, {X: 80, Y: 100}, {X: 250, Y: 180}, {X: 280, Y: 20}, {X: 150, Y: 100}, {X: 160, Y: 105}} {
		marks = append(marks, labelMark{At: at, Size: vg.Point{X: 50, Y: 10}, Highlight: i == 5})
	}
	marks = append(marks, labelMark{At: vg.Point{X: 100, Y: 150}}) // no label
	got := placeLabels(area, marks, nil)
	for i, r := range got {
		if marks[i].Size.X == 0 {
			if r != (vg.Rectangle{}) {
				t.Errorf("mark %d has no label but got %v", i, r)
			}
			continue
		}
		if r.Size() != marks[i].Size {
			t.Errorf("label %d: size %v, want %v", i, r.Size(), marks[i].Size)
		}
		if r.Min.X < area.Min.X || r.Min.Y < area.Min.Y || r.Max.X > area.Max.X || r.Max.Y > area.Max.Y {
			t.Errorf("label %d at %v leaves the area %v", i, r, area)
		}
		for j, m := range marks {
			reach := vg.Points(4.5)
			if j == i && m.Highlight {
				reach = vg.Points(8.5)
			}
			mr := vg.Rectangle{Min: vg.Point{X: m.At.X - reach, Y: m.At.Y - reach}, Max: vg.Point{X: m.At.X + reach, Y: m.At.Y + reach}}
			if overlap(r, mr) > 0 {
				t.Errorf("label %d at %v covers point %d at %v", i, r, j, m.At)
			}
		}
		for j := range i {
			if overlap(r, got[j]) > 0 {
				t.Errorf("labels %d and %d overlap: %v, %v", i, j, r, got[j])
			}
		}
	}
}

// TestLegendClear: the legends of GroupedBars (with the data that had the
// Setups screen's speed legend over its right bars), of the Run screen's
// chart and of the Setups panels cover no data at the sizes the workbench
// and the exports draw them; and the check sees a legend that does.
func TestLegendClear(t *testing.T) {
	speed := Bars{Title: "Speed, mean over the models", YLabel: "MB/s", Categories: []string{"none", "gaussian", "silero_vad_legacy.onnx"},
		Series: []Series{{Name: "compress", Y: []float64{89, 95, 97}}, {Name: "decompress", Y: []float64{416, 480, 560}}}}
	ratio := Bars{Title: "Ratio", YLabel: "original / compressed", Categories: []string{"zstd-3", "zipnn", "nzip"},
		Series: []Series{{Name: "ratio", Y: []float64{2.13, 1.19, 2.43}}}}
	sizes := [][3]int{{480, 320, 96}, {460, 330, 96}, {790, 300, 96}, {300, 200, 96}, {1600, 1000, 160}}
	for _, st := range []Style{Light(), Dark()} {
		var figs []Figure
		for _, b := range []Bars{speed, ratio} {
			p, err := GroupedBars(b, st)
			if err != nil {
				t.Fatal(err)
			}
			figs = append(figs, p)
		}
		p, err := TradeoffPlot(runTradeoff(), st)
		if err != nil {
			t.Fatal(err)
		}
		f, err := TradeoffPanels("Ratio vs compress speed", setupPanels(), 3, st)
		if err != nil {
			t.Fatal(err)
		}
		figs = append(figs, p, f)
		for _, fig := range figs {
			for _, sz := range sizes {
				if err := LegendClear(fig, sz[0], sz[1], sz[2]); err != nil {
					t.Errorf("%dx%d: %v", sz[0], sz[1], err)
				}
			}
		}
	}
	// the legend where gonum puts it, inside the data area's top right
	// corner, covers the tallest bar there
	p, err := GroupedBars(speed, Light())
	if err != nil {
		t.Fatal(err)
	}
	p.Legend.YOffs, p.Title.Padding = 0, 0
	if err := LegendClear(p, 480, 320, 96); err == nil || !strings.Contains(err.Error(), "covers data") {
		t.Errorf("a legend inside over the right bars: %v", err)
	}
	// and the run chart's highest, fastest point
	tr := runTradeoff()
	tr.Points = append(tr.Points, Point{X: 1000, Y: 2.6, Label: "x", Series: 1})
	q, err := TradeoffPlot(tr, Light())
	if err != nil {
		t.Fatal(err)
	}
	q.Legend.YOffs = 0
	if err := LegendClear(q, 480, 320, 96); err == nil || !strings.Contains(err.Error(), "covers data") {
		t.Errorf("a legend inside over the top right point: %v", err)
	}
	// a legend pushed out of the figure
	q.Legend.YOffs = 500
	if err := LegendClear(q, 480, 320, 96); err == nil || !strings.Contains(err.Error(), "outside the figure") {
		t.Errorf("a legend above the figure: %v", err)
	}
	// the exponent histogram's bars: its headroom keeps the legend (top
	// right) clear of them, also where the tallest bin is rightmost; the
	// legend moved down onto that bin covers it
	h := make([]uint64, 256)
	for i := 110; i <= 126; i++ {
		h[i] = uint64(1000 - 30*(i-118)*(i-118)/4)
	}
	for _, top := range []uint64{0, 2000} {
		h[127] = top
		if err := legendOnHistogram(h, 0); err != nil {
			t.Errorf("tallest bin %d at the right: %v", top, err)
		}
	}
	if err := legendOnHistogram(h, -60); err == nil || !strings.Contains(err.Error(), "covers data") {
		t.Errorf("a histogram legend over its tallest bin: %v", err)
	}
}

func legendOnHistogram(h []uint64, yOffs vg.Length) error {
	p, err := ExpHistogram(Histogram{Title: "w (BF16)", Hist: h, Bias: 127}, Light())
	if err != nil {
		return err
	}
	p.Legend.YOffs = yOffs
	return LegendClear(p, 480, 320, 96)
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		n      int
		lo, hi float64
		want   []string
	}{
		{6, 2.421, 2.433, []string{"2.422", "2.424", "2.426", "2.428", "2.430", "2.432"}},
		{4, 265, 325, []string{"280", "300", "320"}},
		{4, 45, 155, []string{"50", "100", "150"}},
		{6, 1.238, 1.255, []string{"1.240", "1.245", "1.250", "1.255"}},
		{6, 0, 10, []string{"0", "5", "10"}},
		{4, 55, 145, []string{"60", "80", "100", "120", "140"}},
		{4, 183, 187, []string{"183", "184", "185", "186", "187"}},
		{4, 0.9, 1.6, []string{"1.0", "1.2", "1.4", "1.6"}},
	} {
		var got []string
		for _, k := range (niceTicks{n: tc.n}).Ticks(tc.lo, tc.hi) {
			if k.Value < tc.lo-1e-9 || k.Value > tc.hi+1e-9 {
				t.Errorf("[%g, %g]: tick %g outside", tc.lo, tc.hi, k.Value)
			}
			if !k.IsMinor() {
				got = append(got, k.Label)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("[%g, %g]: %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}
