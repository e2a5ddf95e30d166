package main

import (
	"fmt"
	"slices"
	"strconv"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"neuralzip/analysis/chart"
	"neuralzip/app/core"
	"neuralzip/lossy"
)

// rdTab is the Rate–distortion screen's tab: short, the tab column is as
// wide as its longest name ("Rate–distortion" made it 28 pixels wider and
// the Open screen wider than the window).
const rdTab = "Lossy"

// Scopes of the rate-distortion screen (scopeModel and scopeTensor as the
// histogram's).
const scopeLayer = "Layer"

// rdScreen shows what the lossy lab's methods (package lossy) would cost
// the current model: error against measured bits per parameter, a curve
// per method, for the model, a layer or a tensor; nzip's lossless rate on
// the same axes; a bitrate slider with E8's predicted and measured size;
// and, for a language model, the original's and a lossy model's greedy
// text side by side.
type rdScreen struct {
	wb      *workbench
	content fyne.CanvasObject
	scope   *widget.RadioGroup
	pick    *widget.Select // the layer or tensor of the scope
	title   *widget.Label
	compute *widget.Button
	jobs    *jobBar
	phase   *widget.Label
	chart   *chartView

	rate      *widget.Slider
	rateL     *widget.Label
	predicted *widget.Label
	measured  *widget.Label
	lossless  *widget.Label
	slideJobs *jobBar

	method    *widget.Select
	genBtn    *widget.Button
	genJobs   *jobBar
	genWho    *widget.Label
	genStats  *widget.Label
	origText  *widget.Label
	lossyText *widget.Label

	rds   map[*core.Model]*core.RD
	slide map[*core.Model]map[float64]core.RDRun // e8 runs at slider rates
	// E8's sampled estimate of each tensor (bytes), by slider rate
	predTensors map[*core.Model]map[float64][]float64
	gens        map[*core.Model]*core.LossyGen // nil key: the stories260K demo
	noGen       map[*core.Model]string         // why nzip generate does not run a model
}

// rdSlider is the slider's range (bits per parameter) and step.
const (
	rdSlideMin  = 2
	rdSlideMax  = 8
	rdSlideStep = 0.5
)

func newRDScreen(wb *workbench) *rdScreen {
	s := &rdScreen{wb: wb, jobs: newJobBar(), slideJobs: newJobBar(), genJobs: newJobBar(),
		rds: map[*core.Model]*core.RD{}, slide: map[*core.Model]map[float64]core.RDRun{}, predTensors: map[*core.Model]map[float64][]float64{},
		gens: map[*core.Model]*core.LossyGen{}, noGen: map[*core.Model]string{}}
	s.scope = widget.NewRadioGroup([]string{scopeModel, scopeLayer, scopeTensor}, func(string) { s.refreshPick(); s.refresh() })
	s.scope.Horizontal = true
	s.scope.Required = true
	s.pick = widget.NewSelect(nil, func(string) { s.refresh() })
	s.pick.Hide()
	s.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.title.Truncation = fyne.TextTruncateEllipsis
	s.compute = widget.NewButtonWithIcon("Measure", theme.MediaPlayIcon(), func() { s.start() })
	s.compute.Importance = widget.HighImportance
	s.phase = widget.NewLabel("")
	s.phase.Truncation = fyne.TextTruncateEllipsis
	s.chart = newChartView(wb, "rate-distortion", "")

	s.rate = widget.NewSlider(rdSlideMin, rdSlideMax)
	s.rate.Step = rdSlideStep
	s.rate.SetValue(4)
	s.rateL = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.rate.OnChanged = func(float64) { s.showRate() }
	s.rate.OnChangeEnded = func(float64) { s.measureRate() }
	trunc := func() *widget.Label {
		l := widget.NewLabel("")
		l.Truncation = fyne.TextTruncateEllipsis
		return l
	}
	s.predicted, s.measured, s.lossless = trunc(), trunc(), trunc()

	var names []string
	for _, m := range lossy.Methods() {
		names = append(names, m.Name())
	}
	s.method = widget.NewSelect(names, nil)
	s.method.SetSelected("e8")
	s.genBtn = widget.NewButtonWithIcon("Generate side by side", theme.MediaPlayIcon(), func() { s.generate() })
	s.genWho = widget.NewLabel("")
	s.genWho.Wrapping = fyne.TextWrapWord
	s.genStats = widget.NewLabel("")
	s.genStats.Wrapping = fyne.TextWrapWord
	text := func() *widget.Label {
		l := widget.NewLabel("")
		l.Wrapping = fyne.TextWrapWord
		return l
	}
	s.origText, s.lossyText = text(), text()

	// the job bar last: nothing moves when it hides (the browser did not
	// lay the row out again, and the button stood where the bar had been)
	controls := container.NewHBox(widget.NewLabel("Show"), s.scope, container.NewGridWrap(fyne.NewSize(300, s.pick.MinSize().Height), s.pick),
		s.compute, s.jobs.content)
	top := container.NewPadded(container.NewVBox(controls, container.NewBorder(nil, nil, nil, nil, s.title)))
	slider := container.NewVBox(heading("Bitrate (e8)"),
		container.NewBorder(nil, nil, nil, s.rateL, s.rate),
		container.New(layoutForm(), widget.NewLabel("Predicted"), s.predicted, widget.NewLabel("Measured"), s.measured,
			widget.NewLabel("Lossless"), s.lossless),
		s.slideJobs.content)
	gen := container.NewVBox(heading("Generation, original vs lossy"),
		container.NewHBox(widget.NewLabel("Method"), s.method, s.genBtn, s.genJobs.content),
		wrapBox(s.genWho, 2), wrapBox(s.genStats, 2),
		container.NewGridWithColumns(2,
			container.NewBorder(heading("Original"), nil, nil, nil, wrapBox(s.origText, 5)),
			container.NewBorder(heading("Lossy"), nil, nil, nil, wrapBox(s.lossyText, 5))))
	right := container.NewVScroll(container.NewVBox(slider, widget.NewSeparator(), gen))
	split := container.NewHSplit(container.NewBorder(nil, s.phase, nil, nil, s.chart.content), container.NewPadded(right))
	split.Offset = 0.6
	s.content = container.NewBorder(top, nil, nil, nil, split)
	s.scope.SetSelected(scopeModel)
	wb.modelListeners = append(wb.modelListeners, func() { s.refreshPick(); s.refresh() })
	wb.selListeners = append(wb.selListeners, func() {
		if s.scope.Selected == scopeTensor {
			s.refreshPick()
			s.refresh()
		}
	})
	s.showRate()
	s.refresh()
	return s
}

// refreshIfStale measures the current model when it has no curves yet,
// else redraws them (an nzip run on the Run screen may have given the
// lossless point since): the tab was shown.
func (s *rdScreen) refreshIfStale() {
	if m := s.wb.current; m != nil && s.rds[m] == nil && s.jobs.cancel == nil {
		s.start()
		return
	}
	s.refresh()
}

// refreshPick fills the layer or tensor picker of the scope.
func (s *rdScreen) refreshPick() {
	wb := s.wb
	if s.pick == nil || s.scope == nil {
		return
	}
	m := wb.current
	if m == nil || s.scope.Selected == scopeModel {
		s.pick.Hide()
		return
	}
	cur := s.pick.Selected
	var opts []string
	want := ""
	switch s.scope.Selected {
	case scopeLayer:
		opts = m.Layers()
		if wb.focus >= 0 {
			want = m.Tensors[wb.focus].Layer
		}
	case scopeTensor:
		for _, t := range m.Tensors {
			opts = append(opts, t.Name)
		}
		if wb.focus >= 0 {
			want = m.Tensors[wb.focus].Name
		}
	}
	s.pick.Options = opts
	switch {
	case want != "" && (cur == "" || s.scope.Selected == scopeTensor):
		s.pick.SetSelected(want)
	case slices.Contains(opts, cur):
		s.pick.SetSelected(cur)
	case len(opts) > 0:
		s.pick.SetSelected(opts[0])
	}
	s.pick.Refresh()
	s.pick.Show()
}

// indices returns the tensors of the scope and the scope's name.
func (s *rdScreen) indices() ([]int, string) {
	m := s.wb.current
	switch s.scope.Selected {
	case scopeLayer:
		var idx []int
		for i, t := range m.Tensors {
			if t.Layer == s.pick.Selected {
				idx = append(idx, i)
			}
		}
		return idx, "layer " + s.pick.Selected
	case scopeTensor:
		i := slices.IndexFunc(m.Tensors, func(t core.Tensor) bool { return t.Name == s.pick.Selected })
		if i < 0 {
			return nil, "no tensor chosen"
		}
		return []int{i}, "tensor " + m.Tensors[i].Name
	}
	return s.wb.all(), "whole model"
}

// start measures every method on the current model in the background,
// and nzip's lossless rate where no nzip run on it gives it.
func (s *rdScreen) start() {
	wb := s.wb
	m := wb.current
	if m == nil {
		return
	}
	ctx, gen := s.jobs.start()
	prog := s.jobs.progress(gen)
	s.compute.Disable()
	s.phase.SetText(fmt.Sprintf("Measuring %d methods on %s…", len(lossy.Methods()), m.Name))
	achieved := wb.achieved[m]
	wb.go_(func() func() {
		rd, err := core.NewRD(m)
		if err == nil && rd.Coded() == 0 {
			err = fmt.Errorf("%s has no float matrix (F32, F16 or BF16, two or more dimensions, 256 values or more) the lossy methods code", m.Name)
		}
		if err == nil {
			err = rd.Compute(ctx, func(f float64) { prog(0.9 * f) })
		}
		if err == nil {
			if len(achieved) == len(rd.Tensors) {
				rd.Lossless, rd.LosslessFrom = achieved, core.LosslessFromRun
			} else {
				err = rd.ComputeLossless(ctx, m, func(f float64) { prog(0.9 + 0.1*f) })
			}
		}
		return func() {
			s.compute.Enable()
			if !s.jobs.done(gen) {
				if s.jobs.cancel == nil { // cancelled, not replaced
					s.phase.SetText(m.Name + ": cancelled.")
					s.refresh()
				}
				return
			}
			if err != nil {
				s.phase.SetText(fmt.Sprintf("%s: %v", m.Name, err))
				hostReport("rd_error", err.Error())
				return
			}
			s.rds[m] = rd
			hostReport("rd_methods", strconv.Itoa(len(rd.Curves(wb.all()))))
			hostReport("rd_model", m.Name)
			s.phase.SetText(fmt.Sprintf("%d of %d tensors coded (the rest kept as stored); e8, lowrank, kron at %s bits.", rd.Coded(), len(rd.Tensors), rdRatesText()))
			s.refresh()
			s.measureRate()
		}
	})
}

func rdRatesText() string {
	return fmt.Sprintf("%g–%g", core.RDRates[0], core.RDRates[len(core.RDRates)-1])
}

// lossBits is the lossless rate of the tensors idx from the last nzip run
// on the Run screen, when there is one, else the one measured here.
func (s *rdScreen) lossBits(rd *core.RD, idx []int) (float64, string, bool) {
	m := s.wb.current
	if a := s.wb.achieved[m]; len(a) == len(rd.Tensors) {
		var b float64
		for _, i := range idx {
			b += a[i]
		}
		if n := rd.Params(idx); n > 0 {
			return b * 8 / float64(n), core.LosslessFromRun, true
		}
	}
	b, ok := rd.LosslessBits(idx)
	return b, rd.LosslessFrom, ok
}

// refresh redraws the chart and the slider's numbers for the scope.
func (s *rdScreen) refresh() {
	wb := s.wb
	if s.chart == nil || s.lossless == nil || s.pick == nil {
		return // still being built
	}
	s.prune()
	m := wb.current
	if m == nil {
		s.title.SetText("No model open.")
		s.chart.SetBuilder(nil, "Open a model first.")
		s.showRate()
		s.showGen()
		return
	}
	idx, scope := s.indices()
	s.title.SetText("Rate–distortion of " + m.Name + " — " + scope)
	rd := s.rds[m]
	if rd == nil {
		msg := "Measure runs every lossy method on " + m.Name + "."
		if s.jobs.cancel != nil {
			msg = "Measuring…"
		}
		s.chart.SetFigure(nil, msg)
		s.showRate()
		s.showGen()
		return
	}
	r, ok := s.rdChart(rd, idx, scope)
	if !ok {
		s.chart.SetFigure(nil, "The lossy methods code no tensor here (the lab keeps 1-D tensors, integers and tensors under 256 values as stored).")
	} else {
		s.chart.SetFigure(func(st chart.Style) (chart.Figure, error) { return chart.RDPlot(r, st) }, "")
	}
	s.showRate()
	s.showGen()
}

// prune forgets the measurements of closed models (they hold the
// models' bytes).
func (s *rdScreen) prune() {
	for m := range s.rds {
		if !slices.Contains(s.wb.models, m) {
			delete(s.rds, m)
			delete(s.slide, m)
			delete(s.predTensors, m)
		}
	}
	for m := range s.noGen {
		if !slices.Contains(s.wb.models, m) {
			delete(s.noGen, m)
			delete(s.gens, m)
		}
	}
}

// rdChart is the chart of the scope: a series per method, nzip's rate,
// the slider's measured point.
func (s *rdScreen) rdChart(rd *core.RD, idx []int, scope string) (chart.RateDistortion, bool) {
	curves := rd.Curves(idx)
	if curves == nil {
		return chart.RateDistortion{}, false
	}
	r := chart.RateDistortion{
		Title:  fmt.Sprintf("Error vs rate, %s (%s)", rd.Model, scope),
		XLabel: "measured bits per parameter (codes, scales and tables)",
		YLabel: "relative L2 error (log scale)",
	}
	for _, c := range curves {
		ser := chart.RDSeries{Name: c.Method, Line: c.Rated}
		for _, p := range c.Points {
			ser.X, ser.Y = append(ser.X, p.BitsPerParam), append(ser.Y, p.RelL2)
		}
		r.Series = append(r.Series, ser)
	}
	if b, _, ok := s.lossBits(rd, idx); ok {
		r.Lossless, r.LosslessLabel = b, fmt.Sprintf("nzip %.2f bits", b)
	}
	if run, ok := s.slide[s.wb.current][s.rate.Value]; ok {
		if p, ok := rd.Point(run, idx); ok {
			r.Mark = &chart.Point{X: p.BitsPerParam, Y: p.RelL2, Label: fmt.Sprintf("e8 at %g bits", s.rate.Value)}
		}
	}
	return r, true
}

// showRate shows the slider's rate and, where known, e8's predicted and
// measured size and error at it on the scope, and the lossless rate.
func (s *rdScreen) showRate() {
	if s.lossless == nil {
		return
	}
	b := s.rate.Value
	s.rateL.SetText(fmt.Sprintf("%4.1f bits", b))
	m := s.wb.current
	rd := s.rds[m]
	if m == nil || rd == nil {
		s.predicted.SetText("—")
		s.measured.SetText("—")
		s.lossless.SetText("—")
		return
	}
	idx, _ := s.indices()
	n := rd.Params(idx)
	if p, ok := s.predict(rd, idx, b); ok && n > 0 {
		s.predicted.SetText(fmt.Sprintf("%s, %.3f bits/param (sampled estimate)", core.HumanBytes(int64(p)), p*8/float64(n)))
	} else {
		s.predicted.SetText("…")
	}
	if run, ok := s.slide[m][b]; ok {
		if p, ok := rd.Point(run, idx); ok {
			s.measured.SetText(fmt.Sprintf("%s, %.3f bits/param, error %.4f", core.HumanBytes(p.Bytes), p.BitsPerParam, p.RelL2))
		} else {
			s.measured.SetText("— (no coded tensor here)")
		}
	} else {
		s.measured.SetText("… (release the slider to measure)")
	}
	if lb, from, ok := s.lossBits(rd, idx); ok {
		s.lossless.SetText(fmt.Sprintf("%.3f bits/param, error 0 (%s)", lb, from))
	} else {
		s.lossless.SetText("—")
	}
}

// predict is E8's sampled estimate on idx at b, in bytes, from what
// measureRate computed (per tensor).
func (s *rdScreen) predict(rd *core.RD, idx []int, b float64) (float64, bool) {
	per, ok := s.predTensors[s.wb.current][b]
	if !ok {
		return 0, false
	}
	var t float64
	for _, i := range idx {
		t += per[i]
	}
	return t, true
}

// measureRate measures e8 at the slider's rate on the current model (and
// its sampled estimate) in the background, unless known.
func (s *rdScreen) measureRate() {
	wb := s.wb
	m := wb.current
	rd := s.rds[m]
	if rd == nil {
		return
	}
	b := s.rate.Value
	_, haveRun := s.slide[m][b]
	_, havePred := s.predTensors[m][b]
	if haveRun && havePred {
		s.refresh()
		return
	}
	ctx, gen := s.slideJobs.start()
	prog := s.slideJobs.progress(gen)
	e8 := lossy.Methods()[slices.IndexFunc(lossy.Methods(), func(m lossy.Method) bool { return m.Name() == "e8" })]
	wb.go_(func() func() {
		per := make([]float64, len(rd.Tensors))
		var err error
		for i := range rd.Tensors {
			if per[i], err = rd.PredictE8(ctx, []int{i}, b); err != nil {
				break
			}
		}
		var run core.RDRun
		if err == nil {
			run, err = rd.Measure(ctx, e8, b, prog)
		}
		return func() {
			if !s.slideJobs.done(gen) {
				return
			}
			if err != nil {
				s.measured.SetText(err.Error())
				return
			}
			if s.slide[m] == nil {
				s.slide[m], s.predTensors[m] = map[float64]core.RDRun{}, map[float64][]float64{}
			}
			s.slide[m][b], s.predTensors[m][b] = run, per
			if wb.current == m {
				s.refresh()
			}
			hostReport("rd_rate_measured", strconv.FormatFloat(b, 'g', -1, 64))
		}
	})
}

// generate compares the original with the chosen method at the slider's
// rate, in the background.
func (s *rdScreen) generate() {
	wb := s.wb
	cur := wb.current
	method, bits := s.method.Selected, s.rate.Value
	ctx, gen := s.genJobs.start()
	s.genJobs.progress(gen)(-1)
	s.genBtn.Disable()
	s.genStats.SetText(fmt.Sprintf("Coding with %s and generating…", rdMethodName(method, bits)))
	hostReport("rd_gen_started", method)
	g := s.gens[cur]
	_, tried := s.noGen[cur]
	demo := s.gens[nil]
	wb.go_(func() func() {
		var why string
		var err error
		if g == nil && cur != nil && !tried {
			if g, err = core.LossyGenFor(cur); err != nil {
				why, g = err.Error(), nil
			}
		}
		if g == nil {
			g = demo
			if g == nil {
				g, err = core.DemoLossyGen()
				demo = g
			}
		}
		var res core.LossyGenResult
		if err == nil {
			res, err = g.Compare(ctx, method, bits)
		}
		return func() {
			s.genBtn.Enable()
			if cur != nil && !tried {
				s.noGen[cur] = why
				if why == "" {
					s.gens[cur] = g
				}
			}
			if demo != nil {
				s.gens[nil] = demo
			}
			if !s.genJobs.done(gen) {
				return
			}
			if err != nil {
				s.genStats.SetText(err.Error())
				hostReport("rd_gen_error", err.Error())
				return
			}
			s.showResult(g, res)
			hostReport("rd_gen_top1", fmt.Sprintf("%.3f", res.Top1))
			hostReport("rd_gen_text", res.Lossy)
		}
	})
}

// rdMethodName is a method with its rate, for the rated ones.
func rdMethodName(method string, bits float64) string {
	for _, m := range lossy.Methods() {
		if m.Name() == method && m.Rated() {
			return method + " at " + strconv.FormatFloat(bits, 'g', -1, 64) + " bits"
		}
	}
	return method
}

// showResult shows a side-by-side generation.
func (s *rdScreen) showResult(g *core.LossyGen, r core.LossyGenResult) {
	s.genWho.SetText(fmt.Sprintf("%s, greedy from the prompt %q, %d tokens each.", g.Name, r.Prompt, core.RDGenTokens))
	s.genStats.SetText(fmt.Sprintf("%s: %.3f bits/param, error %.4f; KL %.4f nats, top-1 agreement %.1f %% (%d positions)",
		rdMethodName(r.Method, r.Bits), r.BitsPerParam, r.RelL2, r.KL, 100*r.Top1, r.Tokens))
	s.origText.SetText(r.Original)
	s.lossyText.SetText(r.Lossy)
}

// showGen says which model the generation runs.
func (s *rdScreen) showGen() {
	if s.genWho == nil || s.origText.Text != "" {
		return
	}
	m := s.wb.current
	if m != nil {
		if why, ok := s.noGen[m]; ok && why != "" {
			s.genWho.SetText(fmt.Sprintf("nzip generate does not run %s (%s): the comparison runs the embedded stories260K.", m.Name, why))
			return
		}
	}
	s.genWho.SetText("The current model when nzip generate runs it (Llama-2 as llama2.c, the byte-level GPT), else the embedded stories260K: greedy text of a fixed prompt, KL and top-1 agreement.")
}
