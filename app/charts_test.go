package main

import (
	"slices"
	"testing"

	"neuralzip/analysis/chart"
	"neuralzip/app/core"
)

// TestRunTradeoff: the Run chart has the latest successful run of each
// codec (setup and backend told apart) on the current model, compress and
// decompress, the last run ringed as "this run".
func TestRunTradeoff(t *testing.T) {
	runs := []core.RunResult{
		{Model: "a", Codec: "zstd-3", Backend: core.BackendCPU, Ratio: 2.1, CompressMBs: 100, DecompressMBs: 700},
		{Model: "b", Codec: "zstd-3", Backend: core.BackendCPU, Ratio: 1.5, CompressMBs: 90, DecompressMBs: 600},
		{Model: "a", Codec: "nzip", Backend: core.BackendCPU, Ratio: 2.4, CompressMBs: 110, DecompressMBs: 470},
		{Model: "a", Codec: "zstd-3", Backend: core.BackendCPU, Ratio: 2.1, CompressMBs: 120, DecompressMBs: 720},
		{Model: "a", Codec: "nzip+setup", Setup: "s1", Backend: core.BackendCPU, Ratio: 2.5, CompressMBs: 80, DecompressMBs: 400},
		{Model: "a", Codec: "nzip", Backend: "cpu", Ratio: 2.4, CompressMBs: 150, DecompressMBs: 250},
		{Model: "a", Codec: "dfloat11", Backend: core.BackendCPU, Error: "boom"},
	}
	type pt struct {
		label string
		x     float64
		hi    bool
	}
	check := func(tr chart.Tradeoff, want []pt) {
		t.Helper()
		var got []pt
		for _, p := range tr.Points {
			got = append(got, pt{p.Label, p.X, p.Highlight})
		}
		if !slices.Equal(got, want) {
			t.Errorf("points\n%v, want\n%v", got, want)
		}
	}
	// the failed dfloat11 run comes last: the latest successful one is ringed, as the latest run
	tr, ok := runTradeoff(runs, "a")
	if !ok || !slices.Equal(tr.Series, []string{"compress", "decompress"}) {
		t.Fatalf("%v %+v", ok, tr)
	}
	check(tr, []pt{{"zstd-3", 120, false}, {"zstd-3", 720, false}, {"nzip", 110, false}, {"nzip", 470, false},
		{"nzip+setup s1", 80, false}, {"nzip+setup s1", 400, false}, {"nzip @cpu (latest run)", 150, true}, {"nzip @cpu (latest run)", 250, true}})
	// the run just made
	tr, _ = runTradeoff(runs[:6], "a")
	if tr.Points[6].Label != "nzip @cpu (this run)" || !tr.Points[6].Highlight {
		t.Errorf("%+v", tr.Points[6])
	}
	tr, _ = runTradeoff(runs, "b")
	check(tr, []pt{{"zstd-3 (latest run)", 90, true}, {"zstd-3 (latest run)", 600, true}})
	if _, ok := runTradeoff(runs, "c"); ok {
		t.Error("a model without runs has a chart")
	}
	if _, ok := runTradeoff(runs[6:], "a"); ok {
		t.Error("a failed run makes a chart")
	}
}

// TestSetupTradeoffs: one trade-off per model in the rows' order, a point
// per setup in the setup's colour on every model, failed measurements
// left out.
func TestSetupTradeoffs(t *testing.T) {
	rows := []core.CompareRow{
		{Model: "m1", Setup: "none", Ratio: 2.0, CompressMBs: 50, RoundtripOK: true},
		{Model: "m1", Setup: "gaussian", Ratio: 2.1, CompressMBs: 40, RoundtripOK: true},
		{Model: "m2", Setup: "gaussian", Ratio: 1.2, CompressMBs: 70, RoundtripOK: true},
		{Model: "m2", Setup: "none", Ratio: 1.1, CompressMBs: 80, RoundtripOK: true},
		{Model: "m2", Setup: "s1", Ratio: 1.3, CompressMBs: 60, RoundtripOK: false},
		{Model: "m1", Setup: "s1", Ratio: 2.2, CompressMBs: 30, RoundtripOK: true},
	}
	got := setupTradeoffs(rows)
	if len(got) != 2 || got[0].Title != "m1" || got[1].Title != "m2" || !got[0].Front {
		t.Fatalf("%+v", got)
	}
	series := map[string]int{}
	for _, tr := range got {
		for _, p := range tr.Points {
			if s, ok := series[p.Label]; ok && s != p.Series {
				t.Errorf("%s: setup %s in series %d and %d", tr.Title, p.Label, s, p.Series)
			}
			series[p.Label] = p.Series
		}
	}
	if len(got[0].Points) != 3 || len(got[1].Points) != 2 || got[1].Points[0] != (chart.Point{X: 70, Y: 1.2, Label: "gaussian", Series: 1}) {
		t.Errorf("points %+v | %+v", got[0].Points, got[1].Points)
	}
}
