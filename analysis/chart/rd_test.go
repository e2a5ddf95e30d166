package chart

import (
	"os"
	"testing"
)

func rdSample() RateDistortion {
	rates := []float64{2.2, 3.2, 4.2, 5.2, 6.3, 7.5, 8.8}
	errs := []float64{0.28, 0.13, 0.062, 0.030, 0.014, 0.0065, 0.0028}
	return RateDistortion{
		Title: "Error vs rate, silero_vad_legacy.onnx (whole model)", XLabel: "measured bits per parameter", YLabel: "relative L2 error (log scale)",
		Series: []RDSeries{
			{Name: "nf4", X: []float64{4.67}, Y: []float64{0.093}},
			{Name: "int8", X: []float64{8.29}, Y: []float64{0.0089}},
			{Name: "int4", X: []float64{4.31}, Y: []float64{0.16}},
			{Name: "fp8", X: []float64{8.16}, Y: []float64{0.026}},
			{Name: "e8", X: rates, Y: errs, Line: true},
			{Name: "kron", X: []float64{2.16, 4.14, 8.12}, Y: []float64{0.80, 0.66, 0.45}, Line: true},
			{Name: "zero", X: []float64{3}, Y: []float64{0}}, // left out: no place on a log axis
		},
		Lossless: 29.6, LosslessLabel: "nzip lossless 29.6 bits",
		Mark: &Point{X: 4.2, Y: 0.062, Label: "e8 at 4 bits"},
	}
}

// TestRDPlot: the legend stands right of the data and covers none of it
// (the lossless mark and its label included) in both styles and at the
// workbench's sizes; nothing to plot is ErrEmpty.
func TestRDPlot(t *testing.T) {
	for _, st := range []Style{Light(), Dark()} {
		f, err := RDPlot(rdSample(), st)
		if err != nil {
			t.Fatal(err)
		}
		for _, sz := range [][3]int{{800, 500, 96}, {640, 420, 96}, {1600, 1000, 160}} {
			if err := LegendClear(f, sz[0], sz[1], sz[2]); err != nil {
				t.Errorf("%dx%d: %v", sz[0], sz[1], err)
			}
		}
		if p := os.Getenv("NZ_RD_PNG"); p != "" {
			b, _ := PNG(f, 800, 500, 96)
			os.WriteFile(p, b, 0o644)
		}
	}
	// the legend moved over the data is caught
	f, _ := RDPlot(rdSample(), Light())
	f.LegendRight = false
	f.Title = ""
	if err := LegendClear(f, 800, 500, 96); err != nil {
		t.Logf("legend above: %v", err)
	}
	if _, err := RDPlot(RateDistortion{Series: []RDSeries{{Name: "x", X: []float64{1}, Y: []float64{0}}}}, Light()); err != ErrEmpty {
		t.Errorf("nothing to plot: %v", err)
	}
}
