package chart

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/cmpimg"
)

var update = flag.Bool("update", false, "rewrite the golden images in testdata/")

// golden renders p at 480×320 pixels and compares it with
// testdata/name.png (per-pixel, within a small colour tolerance for
// anti-aliasing differences between platforms).
func golden(t *testing.T, name string, p *plot.Plot) {
	t.Helper()
	goldenSize(t, name, p, 480, 320)
}

// goldenSize is golden for a figure of w×h pixels.
func goldenSize(t *testing.T, name string, p Figure, w, h int) {
	t.Helper()
	got, err := PNG(p, w, h, 96)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".png")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./analysis/chart -update to create it)", err)
	}
	ok, err := cmpimg.EqualApprox("png", got, want, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		bad := filepath.Join(t.TempDir(), name+".png")
		os.WriteFile(bad, got, 0o644)
		t.Errorf("%s differs from %s (got: %s; -update rewrites it)", name, path, bad)
	}
}

// gaussHist is the exponent histogram of 10^6 values of a BF16 Gaussian
// with σ = 2^-5, from the model itself (bias 127).
func gaussHist() ([]uint64, []float64) {
	h := make([]uint64, 256)
	model := make([]float64, 256)
	for e := 1; e < 255; e++ {
		lo := math.Ldexp(1, e-127)
		p := math.Erf(2*lo/(math.Sqrt2*0.03125)) - math.Erf(lo/(math.Sqrt2*0.03125))
		model[e] = p
		h[e] = uint64(math.Round(p * 1e6 * (1 + 0.1*math.Sin(float64(e)))))
	}
	return h, model
}

func TestExpHistogramGolden(t *testing.T) {
	h, model := gaussHist()
	for _, tc := range []struct {
		name string
		log  bool
		st   Style
	}{{"hist-linear-light", false, Light()}, {"hist-log-dark", true, Dark()}} {
		p, err := ExpHistogram(Histogram{Title: "layer.weight (BF16)", Hist: h, Bias: 127, Model: model, ModelLabel: "Gaussian σ=0.031", Log: tc.log,
			Notes: []string{"entropy 2.71 bits", "Huffman 2.74 bits"}}, tc.st)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, tc.name, p)
	}
}

// A histogram with many zeros far below the other exponents: the zero bin
// becomes a note instead of a bar at the far left.
func TestExpHistogramZerosGolden(t *testing.T) {
	h, model := gaussHist()
	h[0] = 200000
	p, err := ExpHistogram(Histogram{Title: "pruned.weight (BF16)", Hist: h, Bias: 127, Model: model, Log: true, Notes: []string{"entropy 3.10 bits"}}, Light())
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Min < -60 || p.X.Min > -20 {
		t.Errorf("x axis starts at %g, want the lowest populated binade (the zero bin left out)", p.X.Min)
	}
	golden(t, "hist-zeros-light", p)
}

func TestBitPlanesGolden(t *testing.T) {
	labels := []string{"sign", "m6", "m5", "m4", "m3", "m2", "m1", "m0"}
	ones := []float64{0.5, 0.49, 0.47, 0.5, 0.5, 0.5, 0.02, 0}
	ent := make([]float64, len(ones))
	for i, p := range ones {
		if p > 0 && p < 1 {
			ent[i] = -p*math.Log2(p) - (1-p)*math.Log2(1-p)
		}
	}
	p, err := BitPlaneBars(BitPlanes{Title: "sign and mantissa bits", Labels: labels, Ones: ones, Entropy: ent, Notes: []string{"1 constant bit"}}, Light())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "bitplanes", p)
}

func TestClusterChartsGolden(t *testing.T) {
	var pts [][2]float64
	var grp []int
	for i := 0; i < 60; i++ {
		a := float64(i) * 0.7
		g := i % 3
		pts = append(pts, [2]float64{float64(g)*2 + 0.3*math.Cos(a), float64(g%2) + 0.3*math.Sin(a)})
		grp = append(grp, g)
	}
	p, err := Scatter(Projection{Title: "chunks", Points: pts, Group: grp, Names: []string{"c0 50%", "c1 30%", "c2 20%"}, Explained: [2]float64{0.8, 0.15}, Notes: []string{"sample: 60 of 600 chunks"}}, Light())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "scatter", p)
	ks := []float64{1, 2, 3, 4, 5, 6}
	bits := []float64{3.1, 2.7, 2.62, 2.6, 2.59, 2.585}
	p, err = LinePlot(Lines{Title: "elbow", XLabel: "K", YLabel: "bits per exponent", Series: []Series{{Name: "Huffman", X: ks, Y: bits}}, IntX: true,
		HLines: []float64{2.55}, HLabels: []string{"own table per chunk"}, Mark: 2}, Dark())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "elbow", p)
}

func TestMatrixChartsGolden(t *testing.T) {
	p, err := Heatmap(Matrix{Title: "ratio", Rows: []string{"none", "setup-a", "setup-b"}, Cols: []string{"model-1", "model-2"},
		Values: [][]float64{{1.20, 1.10}, {1.25, 1.12}, {math.NaN(), 1.15}}}, Light())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "heatmap", p)
	p, err = GroupedBars(Bars{Title: "speed", YLabel: "MB/s", Categories: []string{"none", "setup-a"},
		Series: []Series{{Name: "compress", Y: []float64{300, 420}}, {Name: "decompress", Y: []float64{900, 1200}}}}, Light())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "bars", p)
}

func TestRenderAndSVG(t *testing.T) {
	h, _ := gaussHist()
	p, err := ExpHistogram(Histogram{Title: "t", Hist: h, Bias: 127, Notes: []string{"entropy 2.71 bits"}}, Dark())
	if err != nil {
		t.Fatal(err)
	}
	img := Render(p, 300, 200, 96)
	if img.Bounds() != image.Rect(0, 0, 300, 200) {
		t.Fatalf("bounds %v", img.Bounds())
	}
	// the dark background fills the corner; the accent colour appears
	if r, g, b, _ := img.At(1, 1).RGBA(); r>>8 != 0x17 || g>>8 != 0x17 || b>>8 != 0x18 {
		t.Errorf("corner %x %x %x, want the dark background", r>>8, g>>8, b>>8)
	}
	found := false
	for y := 0; y < 200 && !found; y++ {
		for x := 0; x < 300; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == 0x5a && g>>8 == 0x9c && b>>8 == 0xf8 {
				found = true
				break
			}
		}
	}
	if !found {
		t.Error("no bar in the accent colour")
	}
	svg, err := SVG(p, 300, 200)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(svg), []byte("<?xml")) || !strings.Contains(string(svg), "entropy 2.71 bits") {
		t.Errorf("SVG lacks header or notes: %.200s", svg)
	}
	raw, _ := PNG(p, 300, 200, 96)
	if im, err := png.Decode(bytes.NewReader(raw)); err != nil || im.Bounds().Dx() != 300 {
		t.Errorf("PNG: %v %v", err, im)
	}
}

func TestEmpty(t *testing.T) {
	if _, err := ExpHistogram(Histogram{Hist: make([]uint64, 8)}, Light()); err != ErrEmpty {
		t.Errorf("empty histogram: %v", err)
	}
	if _, err := Heatmap(Matrix{}, Light()); err != ErrEmpty {
		t.Errorf("empty matrix: %v", err)
	}
	if _, err := Scatter(Projection{}, Light()); err != ErrEmpty {
		t.Errorf("empty scatter: %v", err)
	}
	if _, err := GroupedBars(Bars{Categories: []string{"a"}, Series: []Series{{Name: "x", Y: []float64{1, 2}}}}, Light()); err == nil {
		t.Error("mismatched bars: no error")
	}
}
