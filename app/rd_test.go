package main

import (
	"math"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"neuralzip/analysis/chart"
	"neuralzip/app/core"
)

// rdFigure is the screen's chart data as drawn.
func rdFigure(t *testing.T, s *rdScreen) chart.RateDistortion {
	t.Helper()
	m := s.wb.current
	idx, scope := s.indices()
	r, ok := s.rdChart(s.rds[m], idx, scope)
	if !ok || s.chart.plot == nil {
		t.Fatalf("no chart (%q)", s.chart.msg.Text)
	}
	return r
}

// TestRDScreen: showing the tab measures every method on the demo model
// (a curve per method), with nzip's lossless rate at error 0 (compressed
// for the chart, then from the Run screen's nzip run); the scope narrows
// to a layer and a tensor; the slider measures e8 at its rate, predicted
// and measured; the chart's legend stays clear of the data.
func TestRDScreen(t *testing.T) {
	wb := newTestBench(t)
	m := openDemo(t, wb, "selfie-segmentation")
	wb.selectTab(rdTab)
	s := wb.rd
	rd := s.rds[m]
	if rd == nil {
		t.Fatalf("not measured: %q", s.phase.Text)
	}
	r := rdFigure(t, s)
	var names []string
	for _, ser := range r.Series {
		names = append(names, ser.Name)
		if want := map[bool]int{false: 1, true: len(core.RDRates)}[ser.Line]; len(ser.X) != want {
			t.Errorf("%s: %d points", ser.Name, len(ser.X))
		}
	}
	if strings.Join(names, ",") != "nf4,int8,int4,fp8,fp8row,fp8e5,fp8e5row,fp8h,fp8hd,e8,lowrank,kron" {
		t.Errorf("series %v", names)
	}
	if r.Lossless <= 8 || r.Lossless >= 16 || rd.LosslessFrom != core.LosslessFromComputed || !strings.Contains(s.lossless.Text, core.LosslessFromComputed) {
		t.Errorf("lossless %v from %q, %q", r.Lossless, rd.LosslessFrom, s.lossless.Text)
	}
	if err := chart.LegendClear(s.chart.plot, 760, 520, 96); err != nil {
		t.Error(err)
	}
	model := r

	// the slider: e8 at 5 bits, predicted and measured
	s.rate.SetValue(5)
	s.measureRate()
	run, ok := s.slide[m][5]
	if !ok {
		t.Fatalf("slider not measured: %q", s.measured.Text)
	}
	p, _ := rd.Point(run, wb.all())
	e8 := model.Series[slices.IndexFunc(model.Series, func(s chart.RDSeries) bool { return s.Name == "e8" })]
	if p.BitsPerParam != e8.X[3] || p.RelL2 != e8.Y[3] {
		t.Errorf("slider at 5 bits %+v, the curve's point %v, %v", p, e8.X[3], e8.Y[3])
	}
	if !strings.Contains(s.measured.Text, "bits/param") || !strings.Contains(s.predicted.Text, "sampled estimate") {
		t.Errorf("measured %q, predicted %q", s.measured.Text, s.predicted.Text)
	}
	if r := rdFigure(t, s); r.Mark == nil || r.Mark.X != p.BitsPerParam {
		t.Errorf("mark %+v", r.Mark)
	}

	// a layer, then a tensor: other points
	s.scope.SetSelected(scopeLayer)
	if !s.pick.Visible() || s.pick.Selected != m.Tensors[wb.focus].Layer {
		t.Errorf("layer picker %v %q", s.pick.Visible(), s.pick.Selected)
	}
	layer := rdFigure(t, s)
	s.scope.SetSelected(scopeTensor)
	if s.pick.Selected != m.Tensors[wb.focus].Name {
		t.Errorf("tensor picker %q, focus %s", s.pick.Selected, m.Tensors[wb.focus].Name)
	}
	tensor := rdFigure(t, s)
	if !strings.Contains(s.title.Text, m.Tensors[wb.focus].Name) || tensor.Series[0].Y[0] == model.Series[0].Y[0] || layer.Title == model.Title {
		t.Errorf("scopes: title %q, nf4 error %v (model %v)", s.title.Text, tensor.Series[0].Y[0], model.Series[0].Y[0])
	}
	// a tensor the lab keeps: a message, no chart
	for i, tn := range rd.Tensors {
		if !tn.Coded {
			s.pick.SetSelected(m.Tensors[i].Name)
			if s.chart.plot != nil || !strings.Contains(s.chart.msg.Text, "no tensor") {
				t.Errorf("kept tensor %s: %q", m.Tensors[i].Name, s.chart.msg.Text)
			}
			break
		}
	}
	s.scope.SetSelected(scopeModel)

	// an nzip run on the Run screen gives the lossless point
	wb.selectTab("Run")
	wb.run.codecSel.SetSelected(core.CodecNZip)
	test.Tap(wb.run.runBtn)
	wb.wait()
	wb.selectTab(rdTab)
	if !strings.Contains(s.lossless.Text, core.LosslessFromRun) {
		t.Errorf("lossless %q after an nzip run", s.lossless.Text)
	}
	want := wb.run.last.Compressed
	if r := rdFigure(t, s); math.Abs(r.Lossless-model.Lossless) > 0.05*model.Lossless || want == 0 {
		t.Errorf("lossless %v from the run, %v compressed here", r.Lossless, model.Lossless)
	}
}

// TestRDGenerate: the side-by-side generation runs stories260K when the
// model shown does not generate text, and the model itself when it does.
func TestRDGenerate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs stories260K")
	}
	wb := newTestBench(t)
	openDemo(t, wb, "selfie-segmentation")
	s := wb.rd
	s.method.SetSelected("int4")
	test.Tap(s.genBtn)
	wb.wait()
	if !strings.Contains(s.genWho.Text, "stories260K") || !strings.Contains(s.genStats.Text, "top-1 agreement") || s.origText.Text == "" || s.lossyText.Text == "" {
		t.Errorf("demo: %q | %q | %q | %q", s.genWho.Text, s.genStats.Text, s.origText.Text, s.lossyText.Text)
	}
	wb.open("../assets/llm/stories260K.bf16.safetensors")
	wb.wait()
	if wb.current == nil || wb.current.Name != "stories260K.bf16.safetensors" {
		t.Skip("stories260K did not open as a model")
	}
	s.method.SetSelected("int8")
	test.Tap(s.genBtn)
	wb.wait()
	if !strings.HasPrefix(s.genWho.Text, "stories260K.bf16.safetensors") || !strings.Contains(s.genStats.Text, "int8") {
		t.Errorf("model: %q | %q", s.genWho.Text, s.genStats.Text)
	}
	// int8 keeps the story: the texts agree at the start
	if o, l := s.origText.Text, s.lossyText.Text; len(o) < 20 || len(l) < 20 || o[:20] != l[:20] {
		t.Errorf("int8 text\n%q, original\n%q", l, o)
	}
}
