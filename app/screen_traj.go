package main

import (
	"fmt"
	"io"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"gonum.org/v1/plot"

	"neuralzip/analysis/chart"
	"neuralzip/app/core"
	"neuralzip/trajectory"
)

// trajScreen treats several checkpoints (the open models, in the order they
// were opened, or the frames of a .nztraj archive) as the steps of a
// training run: the ratio per step coded on its own and against the step
// before, which bits of the values changed from step to step, and how a
// setup built from the first step does on the later ones.
type trajScreen struct {
	wb       *workbench
	content  fyne.CanvasObject
	models   *fyne.Container
	modelSel map[*core.Model]bool
	archive  string // a .nztraj to analyse instead of the models ("" none)
	analyze  *widget.Button
	jobs     *jobBar
	status   *widget.Label
	ratio    *chartView
	changed  *chartView
	steps    []core.TrajStep
	src      []core.TrajSource // the steps' bytes, for Save .nztraj
}

func newTrajScreen(wb *workbench) *trajScreen {
	s := &trajScreen{wb: wb, modelSel: map[*core.Model]bool{}, jobs: newJobBar()}
	s.models = container.NewVBox()
	s.analyze = widget.NewButtonWithIcon("Analyze", theme.MediaPlayIcon(), func() { s.run(nil) })
	s.analyze.Importance = widget.HighImportance
	openTraj := widget.NewButtonWithIcon("Open .nztraj…", theme.FolderOpenIcon(), s.openDialog)
	if hostBrowser {
		openTraj.Hide() // the browser build analyses the open models
	}
	exportJSON := widget.NewButtonWithIcon("Export JSON…", theme.DownloadIcon(), s.exportDialog)
	savePack := widget.NewButtonWithIcon("Save .nztraj…", theme.DocumentSaveIcon(), func() {
		s.pack(func(b []byte) {
			s.wb.saveFile("run.nztraj", func(w io.Writer) error { _, err := w.Write(b); return err })
		})
	})
	s.status = widget.NewLabel("Check two or more open checkpoints of one run (in the order they were opened), or open a .nztraj archive, then Analyze.")
	s.status.Wrapping = fyne.TextWrapWord
	s.ratio = newChartView(wb, "trajectory-ratio", "")
	s.changed = newChartView(wb, "trajectory-changed-bits", "")
	s.ratio.SetBuilder(nil, "Ratio per step: coded on its own, against the step before, and with the first step's setup.")
	s.changed.SetBuilder(nil, "Fraction of values whose bit changed since the step before, per bit plane.")
	list := container.NewVScroll(s.models)
	left := container.NewBorder(heading("Training trajectory: steps"),
		container.NewVBox(widget.NewSeparator(), container.NewHBox(s.analyze, openTraj), container.NewHBox(exportJSON, savePack, s.jobs.content)),
		nil, nil, list)
	charts := container.NewGridWithRows(2, s.ratio.content, s.changed.content)
	right := container.NewBorder(s.status, nil, nil, nil, charts)
	split := container.NewHSplit(container.NewPadded(left), container.NewPadded(right))
	split.Offset = 0.3
	s.content = split
	wb.modelListeners = append(wb.modelListeners, s.refreshModels)
	s.refreshModels()
	return s
}

func (s *trajScreen) refreshModels() {
	s.models.RemoveAll()
	if len(s.wb.models) < 2 {
		s.models.Add(widget.NewLabel("Open two or more checkpoints of a training run on the Open screen; each becomes a step."))
	}
	for _, m := range s.wb.models {
		m := m
		if _, ok := s.modelSel[m]; !ok {
			s.modelSel[m] = true
		}
		c := widget.NewCheck(fmt.Sprintf("%s (%s, %s)", m.Name, m.Format, core.HumanBytes(m.Size)), func(on bool) { s.modelSel[m] = on })
		c.SetChecked(s.modelSel[m])
		s.models.Add(c)
	}
	s.ratio.Restyle()
	s.changed.Restyle()
}

// run analyses the checked models, or the archive at path when path is
// not nil.
func (s *trajScreen) run(path *string) {
	wb := s.wb
	var models []*core.Model
	if path == nil {
		for _, m := range wb.models {
			if s.modelSel[m] {
				models = append(models, m)
			}
		}
		if len(models) < 2 {
			s.status.SetText("Check at least two open checkpoints.")
			return
		}
	}
	ctx, gen := s.jobs.start()
	prog := s.jobs.progress(gen)
	prog(-1)
	s.status.SetText("Analysing…")
	wb.go_(func() func() {
		var src []core.TrajSource
		var err error
		if path != nil {
			src, err = core.TrajSourcesFromArchive(ctx, *path)
		} else {
			src, err = core.TrajSourcesFromModels(models)
		}
		var steps []core.TrajStep
		if err == nil {
			steps, err = core.AnalyzeTrajectory(ctx, src, func(done, total int) { prog(float64(done) / float64(total)) })
		}
		return func() {
			if !s.jobs.done(gen) {
				return
			}
			if err != nil {
				s.status.SetText("Analysis stopped: " + err.Error())
				return
			}
			s.src = src
			s.show(steps)
		}
	})
}

// show draws the charts of an analysis.
func (s *trajScreen) show(steps []core.TrajStep) {
	s.steps = steps
	x := make([]float64, len(steps))
	ind := make([]float64, len(steps))
	cond := make([]float64, len(steps))
	set := make([]float64, len(steps))
	var rawSum, indSum, condSum int64
	for i, st := range steps {
		x[i] = float64(i)
		ind[i] = float64(st.Raw) / float64(st.Independent)
		cond[i] = float64(st.Raw) / float64(st.Conditioned)
		set[i] = st.SetupRatio
		rawSum += st.Raw
		indSum += st.Independent
		condSum += st.Conditioned
	}
	series := []chart.Series{{Name: "coded on its own", X: x, Y: ind}, {Name: "against the step before", X: x, Y: cond}}
	if set[0] > 0 {
		series = append(series, chart.Series{Name: "first step's setup", X: x, Y: set})
	}
	l := chart.Lines{Title: fmt.Sprintf("Ratio per step (whole run: %.3f× on their own, %.3f× conditioned)", float64(rawSum)/float64(indSum), float64(rawSum)/float64(condSum)),
		XLabel: "step (in order)", YLabel: "original / archive", Series: series, IntX: true, Mark: -1}
	s.ratio.SetBuilder(func(st chart.Style) (*plot.Plot, error) { return chart.LinePlot(l, st) }, "")
	// changed bits: rows are bit planes from the top (sign) down
	var cols []string
	var planes int
	for i, st := range steps {
		if st.Changed != nil {
			cols = append(cols, fmt.Sprint(i))
			planes = len(st.Changed)
		}
	}
	if planes == 0 {
		s.changed.SetBuilder(nil, "No float tensors of one width that match between steps.")
	} else {
		m := chart.Matrix{Title: "Values whose bit changed since the step before", XLabel: "step", YLabel: "bit", Format: "%.2f"}
		for b := planes - 1; b >= 0; b-- {
			m.Rows = append(m.Rows, fmt.Sprint(b))
			var row []float64
			for _, st := range steps {
				if st.Changed != nil {
					row = append(row, st.Changed[b])
				}
			}
			m.Values = append(m.Values, row)
		}
		m.Cols = cols
		s.changed.SetBuilder(func(st chart.Style) (*plot.Plot, error) { return chart.Heatmap(m, st) }, "")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d steps: conditioned on the step before, the run takes %.3f of its independent archives", len(steps), float64(condSum)/float64(indSum))
	if last := steps[len(steps)-1]; len(steps) > 1 {
		fmt.Fprintf(&b, "; the last step %.3f of its raw size (on its own %.3f)", float64(last.Conditioned)/float64(last.Raw), float64(last.Independent)/float64(last.Raw))
	}
	if k := trajectory.DefaultK; len(steps) > k {
		p := core.PlanTrajPack(steps, k)
		var at []string
		for i, key := range p.Keys {
			if key {
				at = append(at, fmt.Sprint(i))
			}
		}
		fmt.Fprintf(&b, "; packed with K = %d (no step decodes through more than %d frames), keyframes at steps %s: %.3f of the independent archives (every %dth step: %.3f)",
			k, k, strings.Join(at, ", "), float64(p.Planned)/float64(indSum), k, float64(p.EveryK)/float64(indSum))
	}
	if set[0] > 0 && len(steps) > 1 {
		fmt.Fprintf(&b, "; the first step's setup gives %.4f× on the last step", set[len(set)-1])
	}
	b.WriteString(".")
	s.status.SetText(b.String())
}

// pack codes the analysed steps as a .nztraj (K = 10, keyframes placed as
// nzip trajectory pack places them) in the background and hands the
// archive to save.
func (s *trajScreen) pack(save func([]byte)) {
	if len(s.src) == 0 {
		s.status.SetText("Nothing to save yet: analyse a run first.")
		return
	}
	src := s.src
	ctx, gen := s.jobs.start()
	prog := s.jobs.progress(gen)
	prog(-1)
	s.status.SetText("Packing the run…")
	s.wb.go_(func() func() {
		b, err := core.PackTrajectory(ctx, src, trajectory.DefaultK, func(done, total int) { prog(float64(done) / float64(total)) })
		return func() {
			if !s.jobs.done(gen) {
				return
			}
			if err != nil {
				s.status.SetText("Packing stopped: " + err.Error())
				return
			}
			var raw int64
			for _, st := range src {
				raw += int64(len(st.Data))
			}
			s.status.SetText(fmt.Sprintf("Packed %d steps: %s → %s (%.3f of raw), keyframe interval %d.", len(src), core.HumanBytes(raw), core.HumanBytes(int64(len(b))), float64(len(b))/float64(max(raw, 1)), trajectory.DefaultK))
			save(b)
		}
	})
}

func (s *trajScreen) openDialog() {
	d := dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
		if err != nil || rc == nil {
			return
		}
		p := rc.URI().Path()
		rc.Close()
		s.archive = p
		s.run(&p)
	}, s.wb.win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".nztraj"}))
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

func (s *trajScreen) exportDialog() {
	if len(s.steps) == 0 {
		s.status.SetText("Nothing to export yet: analyse a run first.")
		return
	}
	s.wb.saveFile("trajectory.json", func(w io.Writer) error { return core.WriteJSON(w, s.steps) })
}
