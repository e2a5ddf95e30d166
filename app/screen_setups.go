package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"neuralzip/analysis/chart"
	"neuralzip/app/core"
	"neuralzip/codec"
)

// setupsScreen builds setups from the current model or the selection,
// saves and loads .nzsetup files, and compares setups across the open
// models: per model, ratio against compress speed with the Pareto front,
// and the table of every measurement.
type setupsScreen struct {
	wb       *workbench
	content  fyne.CanvasObject
	from     *widget.RadioGroup
	k        *widget.Select
	buildBtn *widget.Button
	saveBtn  *widget.Button
	list     *widget.List
	chosen   int // index into wb.setups, -1: none
	detail   *widget.Label
	models   *fyne.Container
	modelSel map[*core.Model]bool
	compare  *widget.Button
	jobs     *jobBar
	status   *widget.Label
	chunk    *widget.Select
	trade    *chartView
	table    *widget.Label
	rows     []core.CompareRow
}

const (
	fromModel     = "Whole model"
	fromSelection = "Selected tensors"
)

func newSetupsScreen(wb *workbench) *setupsScreen {
	s := &setupsScreen{wb: wb, chosen: -1, modelSel: map[*core.Model]bool{}, jobs: newJobBar()}
	s.from = widget.NewRadioGroup([]string{fromModel, fromSelection}, nil)
	s.from.Required = true
	s.from.SetSelected(fromModel)
	s.k = widget.NewSelect([]string{"auto", "1", "2", "4", "8", "16"}, nil)
	s.k.SetSelected("auto")
	s.buildBtn = widget.NewButtonWithIcon("Build setup", theme.ContentAddIcon(), s.build)
	s.buildBtn.Importance = widget.HighImportance
	load := widget.NewButtonWithIcon("Load .nzsetup…", theme.FolderOpenIcon(), func() {
		if hostBrowser { // the page's file input takes .nzsetup files too
			hostPickFiles(wb.open_)
			return
		}
		s.loadDialog()
	})
	save := widget.NewButtonWithIcon("Save…", theme.DocumentSaveIcon(), s.saveDialog)
	s.saveBtn = save
	s.list = widget.NewList(func() int { return len(wb.setups) },
		func() fyne.CanvasObject { return widget.NewLabel("") },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			ns := wb.setups[i]
			if ns.Setup.IsGaussian() {
				o.(*widget.Label).SetText(ns.Name + "  (built in, not stored in archives)")
				return
			}
			o.(*widget.Label).SetText(fmt.Sprintf("%s  (%d bytes)", ns.Name, len(ns.Setup.Bytes())))
		})
	s.list.OnSelected = func(i widget.ListItemID) { s.chosen = i; s.showDetail() }
	s.detail = widget.NewLabel("Build a setup from the open model or load one.")
	s.detail.Wrapping = fyne.TextWrapWord
	s.models = container.NewVBox()
	var chunks []string
	for _, c := range core.ChunkChoices {
		chunks = append(chunks, core.ChunkLabel(c))
	}
	s.chunk = widget.NewSelect(chunks, nil)
	s.chunk.SetSelected(core.ChunkLabel(codec.DefaultChunkValues))
	s.table = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	s.compare = widget.NewButtonWithIcon("Compare", theme.MediaPlayIcon(), s.runCompare)
	s.compare.Importance = widget.HighImportance
	exportJSON := widget.NewButtonWithIcon("Export JSON…", theme.DownloadIcon(), s.exportDialog)
	s.status = widget.NewLabel("")
	s.status.Truncation = fyne.TextTruncateEllipsis
	s.trade = newChartView(wb, "setup-tradeoff", "")
	s.trade.SetBuilder(nil, "Press Compare to measure no setup, the Gaussian setup and every setup here on each checked model.")

	left := container.NewVBox(
		heading("Build"), formRow("From", s.from), formRow("Tables per dtype (K)", s.k), container.NewHBox(s.buildBtn, load, save),
		widget.NewSeparator(), heading("Setups"))
	detail := container.NewVScroll(s.detail)
	detail.SetMinSize(fyne.NewSize(200, 150))
	leftPane := container.NewBorder(left, container.NewVBox(widget.NewSeparator(), detail), nil, nil, s.list)
	// the model list scrolls: with many open models it must not make the
	// window taller than the screen
	models := container.NewVScroll(s.models)
	models.SetMinSize(fyne.NewSize(0, 80))
	cmp := container.NewVBox(heading("Compare across models"), models,
		container.NewHBox(widget.NewLabel("Values per block"), s.chunk, s.compare, exportJSON, s.jobs.content), s.status)
	tableScroll := container.NewScroll(s.table)
	tableScroll.SetMinSize(fyne.NewSize(0, 120))
	charts := container.NewVSplit(s.trade.content, tableScroll)
	charts.Offset = 0.64
	right := container.NewBorder(cmp, nil, nil, nil, charts)
	split := container.NewHSplit(container.NewPadded(leftPane), container.NewPadded(right))
	split.Offset = 0.34
	s.content = split
	wb.modelListeners = append(wb.modelListeners, s.refreshModels)
	s.refreshModels()
	return s
}

func (s *setupsScreen) refreshModels() {
	wb := s.wb
	s.models.RemoveAll()
	if len(wb.models) == 0 {
		s.models.Add(widget.NewLabel("Open models on the Open screen; each one becomes a column."))
	}
	for _, m := range wb.models {
		m := m
		if _, ok := s.modelSel[m]; !ok {
			s.modelSel[m] = true
		}
		c := widget.NewCheck(fmt.Sprintf("%s (%s, %s)", m.Name, m.Format, core.HumanBytes(m.Size)), func(on bool) { s.modelSel[m] = on })
		c.SetChecked(s.modelSel[m])
		s.models.Add(c)
	}
	s.trade.Restyle()
}

func (s *setupsScreen) showDetail() {
	if s.chosen < 0 || s.chosen >= len(s.wb.setups) {
		return
	}
	ns := s.wb.setups[s.chosen]
	var b strings.Builder
	b.WriteString(ns.Name + "\n")
	for _, l := range core.SetupSummary(ns.Setup) {
		b.WriteString(l + "\n")
	}
	for _, src := range ns.Setup.Sources {
		fmt.Fprintf(&b, "  built from %s (%s, %s)\n", src.Name, src.Format, core.HumanBytes(src.Size))
	}
	s.detail.SetText(b.String())
}

// addSetup adds (or replaces, by name) a setup and selects it.
func (s *setupsScreen) addSetup(ns core.NamedSetup) {
	wb := s.wb
	hostReport("setup", ns.Name)
	for i, x := range wb.setups {
		if x.Name == ns.Name {
			wb.setups[i] = ns
			s.list.Refresh()
			s.list.Select(i)
			wb.run.refreshCodecs()
			return
		}
	}
	wb.setups = append(wb.setups, ns)
	s.list.Refresh()
	s.list.Select(len(wb.setups) - 1)
	wb.run.refreshCodecs()
}

// build builds a setup from the current model or selection.
func (s *setupsScreen) build() {
	wb := s.wb
	m := wb.current
	if m == nil {
		s.status.SetText("Open a model first.")
		return
	}
	var keep map[int]bool
	name := strings.TrimSuffix(m.Name, ".json")
	if s.from.Selected == fromSelection {
		sel := wb.selection()
		if len(sel) == 0 {
			s.status.SetText("Nothing selected: tap tensors on the Tensors screen, or build from the whole model.")
			return
		}
		keep = map[int]bool{}
		for _, i := range sel {
			keep[i] = true
		}
		name += fmt.Sprintf("-sel%d", len(sel))
	}
	k, _ := strconv.Atoi(s.k.Selected) // "auto" → 0
	if k > 0 {
		name += fmt.Sprintf("-k%d", k)
	}
	ctx, gen := s.jobs.start()
	s.jobs.progress(gen)(-1)
	s.status.SetText("Building setup " + name + "…")
	wb.go_(func() func() {
		st, err := core.BuildSetup(ctx, []*core.Model{m}, keep, k, 0)
		return func() {
			if !s.jobs.done(gen) {
				return
			}
			if err != nil {
				s.status.SetText("Build failed: " + err.Error())
				return
			}
			s.addSetup(core.NamedSetup{Name: name, Setup: st})
			s.status.SetText(fmt.Sprintf("Built %s: %d bytes.", name, len(st.Bytes())))
		}
	})
}

func (s *setupsScreen) loadDialog() {
	d := dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
		if err != nil || rc == nil {
			return
		}
		p := rc.URI().Path()
		rc.Close()
		s.load(p)
	}, s.wb.win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".nzsetup"}))
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

// load reads a .nzsetup file.
func (s *setupsScreen) load(p string) {
	ns, err := core.LoadSetup(p)
	if err != nil {
		s.wb.showError(err)
		return
	}
	s.addSetup(ns)
	s.status.SetText("Loaded " + p)
}

func (s *setupsScreen) saveDialog() {
	if s.chosen < 0 || s.chosen >= len(s.wb.setups) {
		s.status.SetText("Choose a setup to save.")
		return
	}
	ns := s.wb.setups[s.chosen]
	if hostBrowser {
		if err := hostDownload(ns.Name+".nzsetup", ns.Setup.Bytes()); err != nil {
			s.wb.showError(err)
			return
		}
		s.status.SetText("Downloaded " + ns.Name + ".nzsetup")
		return
	}
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil || wc == nil {
			return
		}
		p := wc.URI().Path()
		wc.Close()
		if err := s.save(ns, p); err != nil {
			s.wb.showError(err)
		}
	}, s.wb.win)
	d.SetFileName(ns.Name + ".nzsetup")
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

func (s *setupsScreen) save(ns core.NamedSetup, p string) error {
	if err := os.WriteFile(p, ns.Setup.Bytes(), 0o644); err != nil {
		return err
	}
	s.status.SetText("Saved " + p)
	return nil
}

// runCompare measures every setup on every checked model.
func (s *setupsScreen) runCompare() {
	wb := s.wb
	var models []*core.Model
	for _, m := range wb.models {
		if s.modelSel[m] {
			models = append(models, m)
		}
	}
	if len(models) == 0 {
		s.status.SetText("Check at least one open model.")
		return
	}
	setups := append([]core.NamedSetup(nil), wb.setups...)
	chunk := codec.DefaultChunkValues
	for _, c := range core.ChunkChoices {
		if core.ChunkLabel(c) == s.chunk.Selected {
			chunk = c
		}
	}
	ctx, gen := s.jobs.start()
	prog := s.jobs.progress(gen)
	s.status.SetText(fmt.Sprintf("Comparing %d setup(s) and none on %d model(s) at %s values per block…", len(setups), len(models), core.ChunkLabel(chunk)))
	wb.go_(func() func() {
		rows, err := core.CompareSetups(ctx, setups, models, 0, chunk, func(d, t int) { prog(float64(d) / float64(t)) })
		return func() {
			if !s.jobs.done(gen) {
				return
			}
			if err != nil {
				s.status.SetText("Comparison stopped: " + err.Error())
				return
			}
			s.rows = rows
			s.showCompare()
		}
	})
}

func (s *setupsScreen) showCompare() {
	panels := setupTradeoffs(s.rows)
	cols := min(len(panels), 3)
	s.trade.SetFigure(func(st chart.Style) (chart.Figure, error) {
		f, err := chart.TradeoffPanels("Ratio vs compress speed of each setup, per model", panels, cols, st)
		if err != nil {
			return nil, err
		}
		return f, nil
	}, "")
	failed := 0
	for _, r := range s.rows {
		if !r.RoundtripOK {
			failed++
		}
	}
	s.table.SetText(core.CompareTable(s.rows))
	msg := fmt.Sprintf("%d measurements; every roundtrip bit-exact.", len(s.rows))
	if failed > 0 {
		msg = fmt.Sprintf("%d measurements; %d roundtrip(s) FAILED.", len(s.rows), failed)
	}
	s.status.SetText(msg)
}

// setupTradeoffs turns a comparison into one trade-off per model (in the
// rows' order): a point per setup at its compress MB/s and ratio, labelled
// with the setup's name, each setup in the same colour on every model, and
// the Pareto front. Failed measurements are left out.
func setupTradeoffs(rows []core.CompareRow) []chart.Tradeoff {
	var models, setups []string
	for _, r := range rows {
		if !slices.Contains(models, r.Model) {
			models = append(models, r.Model)
		}
		if !slices.Contains(setups, r.Setup) {
			setups = append(setups, r.Setup)
		}
	}
	out := make([]chart.Tradeoff, len(models))
	for i, m := range models {
		out[i] = chart.Tradeoff{Title: m, XLabel: "compress MB/s", YLabel: "ratio", Front: true}
	}
	for _, r := range rows {
		if r.Error != "" || !r.RoundtripOK {
			continue
		}
		i := slices.Index(models, r.Model)
		out[i].Points = append(out[i].Points, chart.Point{X: r.CompressMBs, Y: r.Ratio, Label: r.Setup, Series: slices.Index(setups, r.Setup)})
	}
	return out
}

func (s *setupsScreen) exportDialog() {
	if len(s.rows) == 0 {
		s.status.SetText("Nothing to export yet: run a comparison.")
		return
	}
	s.wb.saveFile("setup-compare.json", func(w io.Writer) error { return core.WriteJSON(w, s.rows) })
}
