package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
	"gonum.org/v1/plot"

	"neuralzip/analysis"
	"neuralzip/analysis/chart"
)

var chunkChoices = []string{"1024", "4096", "16384", "65536", "262144"}

// clustersScreen groups the chunks of the selection (or the model) by
// their exponent histograms: a PCA projection coloured by cluster, each
// cluster's histogram and share, and the coded size as K changes.
type clustersScreen struct {
	wb      *workbench
	content fyne.CanvasObject
	chunk   *widget.Select
	k       *widget.Select
	align   *widget.Check
	status  *widget.Label
	shares  *widget.Label
	scatter *chartView
	hists   *chartView
	elbow   *chartView
	jobs    *jobBar
	stale   bool
	// maxChunks bounds the chunks analysed (0: analysis' default); tests
	// lower it to see the sampling
	maxChunks int
	view      *analysis.ClusterView
	elapsed   time.Duration
}

func newClustersScreen(wb *workbench) *clustersScreen {
	s := &clustersScreen{wb: wb, stale: true, jobs: newJobBar()}
	s.chunk = widget.NewSelect(chunkChoices, func(string) { s.compute() })
	s.chunk.SetSelected("65536")
	var ks []string
	for k := 1; k <= analysis.DefaultClusterMaxK; k++ {
		ks = append(ks, strconv.Itoa(k))
	}
	s.k = widget.NewSelect(ks, func(string) { s.compute() })
	s.k.SetSelected("4")
	s.align = widget.NewCheck("Align by mode (as setups do)", func(bool) { s.compute() })
	s.status = widget.NewLabel("")
	s.status.Truncation = fyne.TextTruncateEllipsis
	s.shares = widget.NewLabel("")
	s.shares.Wrapping = fyne.TextWrapWord
	s.scatter = newChartView(wb, "chunk-clusters", "")
	s.hists = newChartView(wb, "cluster-histograms", "")
	s.elbow = newChartView(wb, "elbow", "")
	controls := container.NewHBox(widget.NewLabel("Chunk (values)"), s.chunk, widget.NewLabel("K"), s.k, s.align, s.jobs.content)
	grid := container.NewGridWithColumns(2,
		s.scatter.content, s.hists.content,
		s.elbow.content, container.NewVScroll(container.NewVBox(heading("Clusters"), s.shares)))
	s.content = container.NewBorder(container.NewPadded(container.NewVBox(controls, s.status)), nil, nil, nil, grid)
	wb.modelListeners = append(wb.modelListeners, s.markStale)
	wb.selListeners = append(wb.selListeners, s.markStale)
	s.scatter.SetBuilder(nil, "Open a model to see its chunks.")
	return s
}

func (s *clustersScreen) visible() bool {
	return s.wb.tabs != nil && s.wb.tabs.Selected() != nil && s.wb.tabs.Selected().Text == "Clusters"
}

func (s *clustersScreen) markStale() {
	s.stale = true
	if s.visible() {
		s.compute()
	}
}

func (s *clustersScreen) refreshIfStale() {
	if s.stale {
		s.compute()
	}
}

// compute clusters the chunks in the background (cancelling a previous
// run) and shows the result.
func (s *clustersScreen) compute() {
	wb := s.wb
	if wb.current == nil || s.k == nil || s.align == nil {
		return
	}
	s.stale = false
	idx := wb.selection()
	what := fmt.Sprintf("the %d selected tensors", len(idx))
	if len(idx) == 0 {
		idx = nil
		what = "the whole model (select tensors to narrow it)"
	}
	chunk, _ := strconv.Atoi(s.chunk.Selected)
	k, _ := strconv.Atoi(s.k.Selected)
	opt := analysis.ClusterOptions{ChunkValues: chunk, K: k, Align: s.align.Checked, MaxChunks: s.maxChunks}
	data := wb.current.Data(idx)
	name := wb.current.Name
	ctx, gen := s.jobs.start()
	s.jobs.progress(gen)(-1)
	s.status.SetText("Clustering chunks of " + what + "…")
	wb.go_(func() func() {
		t0 := time.Now()
		v, err := analysis.ChunkClusters(ctx, data, opt)
		el := time.Since(t0)
		return func() {
			if !s.jobs.done(gen) {
				return
			}
			if err != nil {
				s.view = nil
				if err == context.Canceled {
					s.status.SetText("Cancelled.")
					return
				}
				s.status.SetText(err.Error())
				s.scatter.SetBuilder(nil, "No float tensors to cluster.")
				s.hists.SetBuilder(nil, "")
				s.elbow.SetBuilder(nil, "")
				s.shares.SetText("")
				return
			}
			s.view, s.elapsed = v, el
			s.show(name, what)
			hostReport("clusters", name)
			hostReport("clusters_ms", ms(el))
		}
	})
}

func (s *clustersScreen) show(model, what string) {
	v := s.view
	sample := fmt.Sprintf("all %d chunks", v.Chunks)
	if v.Sampled {
		sample = fmt.Sprintf("a sample of %d of %d chunks (%.1f%% of the values; evenly spaced)", v.Chunks, v.TotalChunks, 100*float64(v.Values)/float64(v.TotalValues))
	}
	s.status.SetText(fmt.Sprintf("%s: %s tensors of %s; %s of %d values; computed in %s.", model, v.DType, what, sample, v.ChunkValues, s.elapsed.Round(time.Millisecond)))
	names := make([]string, len(v.Clusters))
	for i, c := range v.Clusters {
		names[i] = fmt.Sprintf("cluster %d (%.0f%%)", i+1, 100*c.Share)
	}
	pr := chart.Projection{Title: "Chunk histograms, PCA (weighted by values)", Points: v.Points, Group: v.Assign, Names: names, Explained: v.Explained, Robust: true}
	if v.Sampled {
		pr.Notes = []string{fmt.Sprintf("sample: %d of %d chunks", v.Chunks, v.TotalChunks)}
	}
	s.scatter.SetBuilder(func(st chart.Style) (*plot.Plot, error) { return chart.Scatter(pr, st) }, "")

	bias := 1<<(v.ExpBits-1) - 1
	lo, hi := len(v.Clusters[0].Hist), -1
	zeros := false
	for _, c := range v.Clusters {
		for e, n := range c.Hist {
			if n > 0 && e > 0 {
				lo, hi = min(lo, e), max(hi, e)
			}
		}
		zeros = zeros || c.Hist[0] > 0
	}
	if zeros && (hi < 0 || lo <= 8) {
		// zeros/subnormals next to the rest: show their bin too
		lo, hi = 0, max(hi, 0)
	}
	var series []chart.Series
	for i, c := range v.Clusters {
		var tot float64
		for _, n := range c.Hist {
			tot += float64(n)
		}
		sr := chart.Series{Name: names[i]}
		for e := lo; e <= hi; e++ {
			sr.X = append(sr.X, float64(e-bias))
			y := 0.0
			if tot > 0 {
				y = float64(c.Hist[e]) / tot
			}
			sr.Y = append(sr.Y, y)
		}
		series = append(series, sr)
	}
	xl := "exponent − bias"
	if v.Aligned {
		xl = "aligned exponent − bias"
	}
	if zeros && lo > 0 {
		xl += "  (zeros/subnormals not shown)"
	}
	hl := chart.Lines{Title: "Cluster histograms", XLabel: xl, YLabel: "fraction (log scale)", Series: series, Log: true, IntX: true, Mark: -1}
	s.hists.SetBuilder(func(st chart.Style) (*plot.Plot, error) { return chart.LinePlot(hl, st) }, "")

	var ks, bits, ent []float64
	mark := -1
	for i, e := range v.Elbow {
		ks = append(ks, float64(e.K))
		bits = append(bits, e.Bits)
		ent = append(ent, e.Entropy)
		if e.K == len(v.Clusters) {
			mark = i
		}
	}
	el := chart.Lines{Title: "Bits per exponent vs K (elbow)", XLabel: "K (tables)", YLabel: "bits per exponent",
		Series: []chart.Series{{Name: "Huffman tables", X: ks, Y: bits}, {Name: "ideal (cross-entropy)", X: ks, Y: ent}},
		IntX:   true, HLines: []float64{v.OwnBits}, HLabels: []string{"own Huffman table per chunk"}, Mark: mark}
	s.elbow.SetBuilder(func(st chart.Style) (*plot.Plot, error) { return chart.LinePlot(el, st) }, "")

	var b strings.Builder
	for i, c := range v.Clusters {
		fmt.Fprintf(&b, "Cluster %d: %d chunks, %.1f%% of the values, %.3f bits/exponent with its table\n", i+1, c.Chunks, 100*c.Share, c.Bits)
	}
	if len(v.Elbow) > 0 {
		k := len(v.Clusters)
		fmt.Fprintf(&b, "\nK = %d: %.3f bits/exponent; K = 1: %.3f; every chunk its own table: %.3f (tables not counted); mean chunk entropy %.3f.",
			k, v.Elbow[min(k, len(v.Elbow))-1].Bits, v.Elbow[0].Bits, v.OwnBits, v.EntropyBits)
	}
	s.shares.SetText(b.String())
}
