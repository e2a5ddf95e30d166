package main

import (
	"fmt"
	"io"
	"runtime"
	"strconv"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"gonum.org/v1/plot"

	"neuralzip/analysis/chart"
	"neuralzip/app/core"
)

// runScreen runs a codec on the current model: compress, decompress,
// check the roundtrip bit-exact, and keep a history.
type runScreen struct {
	wb       *workbench
	content  fyne.CanvasObject
	codecSel *widget.Select
	setupSel *widget.Select
	threads  *widget.Select
	backend  *widget.Select
	runBtn   *widget.Button
	archBtn  *widget.Button // downloads the latest run's archive
	jobs     *jobBar
	phase    *widget.Label
	ratio    *widget.Label
	speed    *widget.Label
	verdict  *widget.Label
	shaOrig  *widget.Label
	shaDec   *widget.Label
	history  *widget.Table
	chart    *chartView
	last     core.RunResult
	archive  []byte // the latest successful run's compressed bytes
}

var historyCols = []string{"Model", "Codec", "Threads", "Ratio", "Compress MB/s", "Decompress MB/s", "Roundtrip", "Compressed"}
var historyWidths = []float32{220, 130, 70, 80, 120, 130, 100, 110}

func newRunScreen(wb *workbench) *runScreen {
	s := &runScreen{wb: wb, jobs: newJobBar()}
	s.codecSel = widget.NewSelect(core.Codecs(false), nil)
	s.codecSel.SetSelected(core.CodecNZip)
	s.setupSel = widget.NewSelect(nil, nil)
	s.setupSel.PlaceHolder = "(build or load one on Setups)"
	var th []string
	for i := 1; i <= max(runtime.NumCPU(), 1); i++ {
		th = append(th, strconv.Itoa(i))
	}
	s.threads = widget.NewSelect(th, nil)
	s.threads.SetSelected(th[len(th)-1])
	s.backend = widget.NewSelect(core.Backends(), nil)
	s.backend.SetSelected(core.BackendCPU)
	s.runBtn = widget.NewButtonWithIcon("Compress + decompress", theme.MediaPlayIcon(), s.start)
	s.runBtn.Importance = widget.HighImportance
	s.phase = widget.NewLabel("")
	big := func() *widget.Label {
		l := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		l.SizeName = theme.SizeNameSubHeadingText
		return l
	}
	s.ratio, s.speed, s.verdict = big(), big(), big()
	s.shaOrig = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	s.shaDec = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	s.shaOrig.Truncation = fyne.TextTruncateEllipsis
	s.shaDec.Truncation = fyne.TextTruncateEllipsis

	s.history = widget.NewTableWithHeaders(
		func() (int, int) { return len(wb.runs), len(historyCols) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) {
			o.(*widget.Label).SetText(s.historyCell(len(wb.runs)-1-id.Row, id.Col))
		})
	s.history.ShowHeaderColumn = false
	s.history.CreateHeader = func() fyne.CanvasObject {
		return widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	}
	s.history.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) { o.(*widget.Label).SetText(historyCols[id.Col]) }
	for c, w := range historyWidths {
		s.history.SetColumnWidth(c, w)
	}
	s.chart = newChartView(wb, "run-history", "")
	s.chart.SetBuilder(nil, "Runs appear here.")
	csvB := widget.NewButtonWithIcon("Export CSV…", theme.DownloadIcon(), func() { s.exportDialog("csv") })
	jsonB := widget.NewButtonWithIcon("Export JSON…", theme.DownloadIcon(), func() { s.exportDialog("json") })

	form := container.New(layoutForm(),
		widget.NewLabel("Codec"), s.codecSel,
		widget.NewLabel("Setup"), s.setupSel,
		widget.NewLabel("Threads"), s.threads,
		widget.NewLabel("Backend"), s.backend,
	)
	s.archBtn = widget.NewButtonWithIcon("Save archive…", theme.DownloadIcon(), s.saveArchive)
	s.archBtn.Disable()
	controls := container.NewVBox(heading("Run the codec on the current model"), form, container.NewHBox(s.runBtn, s.jobs.content), s.phase)
	if hostRunNote != "" {
		note := widget.NewLabel(hostRunNote)
		note.Wrapping = fyne.TextWrapWord
		controls.Add(note)
	}
	result := container.NewVBox(container.NewHBox(heading("Result"), layoutSpacer(), s.archBtn),
		container.NewGridWithColumns(3, s.ratio, s.speed, s.verdict),
		container.New(layoutForm(), widget.NewLabel("SHA-256 original"), s.shaOrig, widget.NewLabel("SHA-256 decoded"), s.shaDec))
	top := container.NewGridWithColumns(2, container.NewPadded(controls), container.NewPadded(result))
	hist := container.NewBorder(container.NewHBox(heading("History"), layoutSpacer(), csvB, jsonB), nil, nil, nil, s.history)
	bottom := container.NewHSplit(hist, s.chart.content)
	bottom.Offset = 0.62
	s.content = container.NewBorder(top, nil, nil, nil, container.NewPadded(bottom))
	s.clearResult()
	return s
}

// refreshCodecs updates the codec and setup pickers after setups change.
func (s *runScreen) refreshCodecs() {
	wb := s.wb
	var names []string
	for _, ns := range wb.setups {
		names = append(names, ns.Name)
	}
	s.setupSel.Options = names
	if s.setupSel.Selected == "" && len(names) > 0 {
		s.setupSel.SetSelected(names[len(names)-1])
	}
	s.setupSel.Refresh()
	cur := s.codecSel.Selected
	s.codecSel.Options = core.Codecs(len(wb.setups) > 0)
	s.codecSel.SetSelected(cur)
}

func (s *runScreen) clearResult() {
	s.ratio.SetText("ratio —")
	s.speed.SetText("— MB/s")
	s.verdict.SetText("roundtrip —")
	s.shaOrig.SetText("")
	s.shaDec.SetText("")
}

// start runs the chosen codec in the background.
func (s *runScreen) start() {
	wb := s.wb
	m := wb.current
	if m == nil {
		s.phase.SetText("Open a model first.")
		return
	}
	spec := core.RunSpec{Codec: s.codecSel.Selected, Backend: s.backend.Selected}
	spec.Threads, _ = strconv.Atoi(s.threads.Selected)
	if spec.Codec == core.CodecNZipSetup {
		for _, ns := range wb.setups {
			if ns.Name == s.setupSel.Selected {
				spec.Setup, spec.SetupName = ns.Setup, ns.Name
			}
		}
		if spec.Setup == nil {
			s.phase.SetText("Choose a setup (build or load one on the Setups screen).")
			return
		}
	}
	ctx, gen := s.jobs.start()
	prog := s.jobs.progress(gen)
	s.runBtn.Disable()
	s.clearResult()
	s.phase.SetText(fmt.Sprintf("Reading %s…", m.Name))
	wb.go_(func() func() {
		src, segs, starts, err := m.ReadAll()
		if err != nil {
			return func() { s.runBtn.Enable(); s.jobs.done(gen); wb.showError(err) }
		}
		lastPhase := ""
		r := core.Run(ctx, m, src, segs, starts, spec, func(phase string, f float64) {
			if phase != lastPhase {
				lastPhase = phase
				fyne.Do(func() {
					if s.jobs.gen == gen {
						s.phase.SetText(phaseText(phase, spec.Codec))
					}
				})
			}
			prog(f)
		})
		return func() {
			s.runBtn.Enable()
			s.jobs.done(gen)
			s.finish(m, r)
		}
	})
}

func phaseText(phase, codec string) string {
	switch phase {
	case core.PhaseCompress:
		return "Compressing with " + codec + "…"
	case core.PhaseDecompress:
		return "Decompressing…"
	}
	return "Checking the roundtrip…"
}

// finish shows a run's result and adds it to the history.
func (s *runScreen) finish(m *core.Model, r core.RunResult) {
	wb := s.wb
	s.archive, r.Archive = r.Archive, nil // only the latest archive is kept
	s.last = r
	s.archBtn.Disable()
	if len(s.archive) > 0 && r.Error == "" {
		s.archBtn.Enable()
	}
	hostReportRun(r)
	if r.Error != "" {
		s.phase.SetText(fmt.Sprintf("%s on %s: %s", r.Codec, m.Name, r.Error))
		s.verdict.SetText("roundtrip —")
		if r.Error == core.ErrCancelled.Error() {
			return
		}
	} else {
		s.phase.SetText(glyphs(fmt.Sprintf("%s on %s: %s → %s", r.Codec, m.Name, core.HumanBytes(r.OriginalBytes), core.HumanBytes(r.Compressed))))
		s.ratio.SetText(fmt.Sprintf("ratio %.4f×", r.Ratio))
		s.speed.SetText(fmt.Sprintf("%.0f / %.0f MB/s", r.CompressMBs, r.DecompressMBs))
	}
	s.verdict.SetText(verdictText(r))
	if r.Error == "" {
		s.verdict.Importance = widget.SuccessImportance
		if !r.RoundtripOK {
			s.verdict.Importance = widget.DangerImportance
		}
		s.verdict.Refresh()
	}
	s.shaOrig.SetText(r.SHA256)
	s.shaDec.SetText(r.SHA256Decoded)
	wb.runs = append(wb.runs, r)
	s.history.Refresh()
	if r.TensorBytes != nil && r.Codec == core.CodecNZip {
		wb.achieved[m] = r.TensorBytes
		wb.tensors.rebuild()
	}
	s.showChart()
}

func verdictText(r core.RunResult) string {
	switch {
	case r.Error != "":
		return glyphs("✗ ") + r.Error
	case r.RoundtripOK:
		return glyphs("✓ bit-exact")
	}
	return glyphs("✗ differs")
}

func (s *runScreen) historyCell(i, c int) string {
	if i < 0 || i >= len(s.wb.runs) {
		return ""
	}
	r := s.wb.runs[i]
	switch c {
	case 0:
		return r.Model
	case 1:
		if r.Setup != "" {
			return r.Codec + " (" + r.Setup + ")"
		}
		return r.Codec
	case 2:
		return strconv.Itoa(r.Threads)
	case 3:
		if r.Error != "" {
			return "—"
		}
		return fmt.Sprintf("%.4f", r.Ratio)
	case 4:
		return fmt.Sprintf("%.0f", r.CompressMBs)
	case 5:
		return fmt.Sprintf("%.0f", r.DecompressMBs)
	case 6:
		return verdictText(r)
	case 7:
		return core.HumanBytes(r.Compressed)
	}
	return ""
}

// showChart plots the ratio of the latest run of each codec on the current
// model.
func (s *runScreen) showChart() {
	wb := s.wb
	var cats []string
	var ratio []float64
	pos := map[string]int{}
	for _, r := range wb.runs {
		if wb.current == nil || r.Model != wb.current.Name || r.Error != "" {
			continue
		}
		name := r.Codec
		if r.Setup != "" {
			name += "/" + r.Setup
		}
		if i, ok := pos[name]; ok {
			ratio[i] = r.Ratio
			continue
		}
		pos[name] = len(cats)
		cats = append(cats, name)
		ratio = append(ratio, r.Ratio)
	}
	if len(cats) == 0 {
		return
	}
	b := chart.Bars{Title: "Ratio on " + wb.current.Name + " (latest run per codec)", YLabel: "original / compressed", Categories: cats,
		Series: []chart.Series{{Name: "ratio", Y: ratio}}}
	s.chart.SetBuilder(func(st chart.Style) (*plot.Plot, error) { return chart.GroupedBars(b, st) }, "")
}

func (s *runScreen) exportDialog(kind string) {
	wb := s.wb
	if len(wb.runs) == 0 {
		s.phase.SetText("No runs to export yet.")
		return
	}
	wb.saveFile("runs."+kind, func(w io.Writer) error {
		if kind == "csv" {
			return core.WriteHistoryCSV(w, wb.runs)
		}
		return core.WriteJSON(w, wb.runs)
	})
}

// saveArchive saves (in the browser: downloads) the latest run's archive.
func (s *runScreen) saveArchive() {
	wb := s.wb
	if len(s.archive) == 0 {
		return
	}
	name := s.last.Model + ".nzip"
	if s.last.Codec != core.CodecNZip && s.last.Codec != core.CodecNZipSetup {
		name = s.last.Model + "." + s.last.Codec
	}
	if hostBrowser {
		if err := hostDownload(name, s.archive); err != nil {
			wb.showError(err)
		}
		return
	}
	b := s.archive
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil || wc == nil {
			return
		}
		_, err = wc.Write(b)
		if cerr := wc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			wb.showError(err)
			return
		}
		wb.setStatus("Wrote %s", wc.URI().Path())
	}, wb.win)
	d.SetFileName(name)
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}
