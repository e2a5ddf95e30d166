package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"

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
	backends []core.BackendInfo // the picker's entries, in its order
	probed   bool               // probeBackends has started
	devInfo  *widget.Label      // the chosen backend's device
	unavail  *widget.Label      // why the unavailable backends are
	unavailB fyne.CanvasObject  // unavail in its box (wrapBox)
	runBtn   *widget.Button
	archBtn  *widget.Button // downloads the latest run's archive
	jobs     *jobBar
	phase    *widget.Label
	ratio    *widget.Label
	speed    *widget.Label
	verdict  *widget.Label
	shaOrig  *widget.Label
	shaDec   *widget.Label
	resDev   *widget.Label // the latest run's backend and device
	coding   *widget.Label // what the codec did beyond the float coder
	devSpeed *widget.Label // its decode rate on the device
	devMem   *widget.Label // device memory saved by keeping weights compressed
	devHost  *widget.Label // what the CPU decoded instead
	history  *widget.Table
	chart    *chartView
	last     core.RunResult
	archive  []byte // the latest successful run's compressed bytes
}

var historyCols = []string{"Model", "Codec", "Backend", "Threads", "Ratio", "Compress MB/s", "Decompress MB/s", "Roundtrip", "Compressed"}
var historyWidths = []float32{200, 130, 80, 70, 80, 120, 130, 100, 110}

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
	s.backend = widget.NewSelect(nil, func(string) { s.showBackend() })
	s.devInfo = widget.NewLabel("")
	s.devInfo.Truncation = fyne.TextTruncateEllipsis
	s.unavail = widget.NewLabel("")
	s.unavail.Wrapping = fyne.TextWrapWord
	s.unavail.SizeName = theme.SizeNameCaptionText
	s.unavailB = wrapBox(s.unavail, 3)
	s.unavailB.Hide()
	s.setBackends([]core.BackendInfo{core.CodecBackend()}) // until probeBackends answers
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
	trunc := func() *widget.Label {
		l := widget.NewLabel("")
		l.Truncation = fyne.TextTruncateEllipsis
		return l
	}
	s.resDev, s.devSpeed, s.devMem, s.devHost = trunc(), trunc(), trunc(), trunc()
	s.coding = widget.NewLabel("")
	s.coding.Wrapping = fyne.TextWrapWord

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
	s.chart = newChartView(wb, "run-tradeoff", "")
	s.chart.SetBuilder(nil, "Runs appear here.")
	wb.modelListeners = append(wb.modelListeners, s.showChart)
	csvB := widget.NewButtonWithIcon("Export CSV…", theme.DownloadIcon(), func() { s.exportDialog("csv") })
	jsonB := widget.NewButtonWithIcon("Export JSON…", theme.DownloadIcon(), func() { s.exportDialog("json") })

	form := container.New(layoutForm(),
		widget.NewLabel("Codec"), s.codecSel,
		widget.NewLabel("Setup"), s.setupSel,
		widget.NewLabel("Threads"), s.threads,
		widget.NewLabel("Backend"), s.backend,
		widget.NewLabel("Device"), s.devInfo,
	)
	s.archBtn = widget.NewButtonWithIcon("Save archive…", theme.DownloadIcon(), s.saveArchive)
	s.archBtn.Disable()
	controls := container.NewVBox(heading("Run the codec on the current model"), form, s.unavailB, container.NewHBox(s.runBtn, s.jobs.content), s.phase)
	if hostRunNote != "" {
		note := widget.NewLabel(hostRunNote)
		note.Wrapping = fyne.TextWrapWord
		controls.Add(note)
	}
	result := container.NewVBox(container.NewHBox(heading("Result"), layoutSpacer(), s.archBtn),
		container.NewGridWithColumns(3, s.ratio, s.speed, s.verdict),
		container.New(layoutForm(), widget.NewLabel("SHA-256 original"), s.shaOrig, widget.NewLabel("SHA-256 decoded"), s.shaDec,
			widget.NewLabel("Decoded by"), s.resDev, widget.NewLabel("On the device"), s.devSpeed,
			widget.NewLabel("Device memory"), s.devMem, widget.NewLabel("On the CPU"), s.devHost,
			widget.NewLabel("Coding"), wrapBox(s.coding, 4)))
	top := container.NewGridWithColumns(2, container.NewPadded(controls), container.NewPadded(result))
	hist := container.NewBorder(container.NewHBox(heading("History"), layoutSpacer(), csvB, jsonB), nil, nil, nil, s.history)
	bottom := container.NewHSplit(hist, s.chart.content)
	bottom.Offset = 0.62
	s.content = container.NewBorder(top, nil, nil, nil, container.NewPadded(bottom))
	s.clearResult()
	return s
}

// probeBackends asks which backends work, once, in the background
// (opening a GPU backend can take a while: driver, device context), and
// fills the picker with the answer. workbench.start calls it, not the
// constructor: tests set the workbench to run background work inline
// after building it, and a probe started while the screens are built
// would update the picker from its goroutine under fyne's test driver
// (which runs fyne.Do callbacks on the caller) while the test's
// goroutine draws other widgets, in the same font cache.
func (s *runScreen) probeBackends() {
	if s.probed {
		return
	}
	s.probed = true
	s.wb.go_(func() func() {
		l := core.ProbeBackends()
		return func() {
			s.setBackends(l)
			var report []string
			for _, b := range l {
				state := "ok"
				if !b.Available() {
					state = b.Reason
				}
				report = append(report, b.Name+"="+state)
			}
			hostReport("backends", strings.Join(report, "; "))
		}
	})
}

// setBackends fills the backend picker, keeping the chosen backend.
func (s *runScreen) setBackends(l []core.BackendInfo) {
	cur := s.backendName()
	s.backends = l
	opts := make([]string, len(l))
	var why []string
	for i, b := range l {
		opts[i] = backendLabel(b)
		if !b.Available() {
			why = append(why, b.Name+" unavailable: "+b.Reason)
		}
	}
	s.backend.Options = opts
	s.backend.SetSelectedIndex(max(slices.IndexFunc(l, func(b core.BackendInfo) bool { return b.Name == cur }), 0))
	s.unavail.SetText(strings.Join(why, "\n"))
	if len(why) == 0 {
		s.unavailB.Hide()
	} else {
		s.unavailB.Show()
	}
}

// backendLabel is b's entry in the picker.
func backendLabel(b core.BackendInfo) string {
	switch {
	case b.Name == core.BackendCPU:
		return b.Name + " — the codec's decoder"
	case !b.Available():
		return b.Name + " — unavailable"
	case b.Name == "cpu":
		return b.Name + " — GPU kernels, Go twin"
	}
	return b.Name + " — GPU"
}

// backendName is the chosen backend (core.RunSpec.Backend).
func (s *runScreen) backendName() string {
	if i := s.backend.SelectedIndex(); i >= 0 && i < len(s.backends) {
		return s.backends[i].Name
	}
	return core.BackendCPU
}

// selectBackend chooses a backend by name; false when there is none.
func (s *runScreen) selectBackend(name string) bool {
	i := slices.IndexFunc(s.backends, func(b core.BackendInfo) bool { return b.Name == name })
	if i >= 0 {
		s.backend.SetSelectedIndex(i)
	}
	return i >= 0
}

// showBackend shows the chosen backend's device.
func (s *runScreen) showBackend() {
	i := s.backend.SelectedIndex()
	if i < 0 || i >= len(s.backends) {
		s.devInfo.SetText("")
		return
	}
	b := s.backends[i]
	switch {
	case !b.Available():
		s.devInfo.SetText("— (unavailable here)")
	default:
		s.devInfo.SetText(b.Device)
	}
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
	s.resDev.SetText("")
	s.devSpeed.SetText("")
	s.devMem.SetText("")
	s.devHost.SetText("")
	s.coding.SetText("")
}

// start runs the chosen codec in the background.
func (s *runScreen) start() {
	wb := s.wb
	m := wb.current
	if m == nil {
		s.phase.SetText("Open a model first.")
		return
	}
	spec := core.RunSpec{Codec: s.codecSel.Selected, Backend: s.backendName()}
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
	if err := spec.Check(); err != nil {
		s.phase.SetText(err.Error() + ".")
		return
	}
	if i := s.backend.SelectedIndex(); i >= 0 && i < len(s.backends) && !s.backends[i].Available() {
		s.phase.SetText(fmt.Sprintf("Backend %s is unavailable here: %s.", spec.Backend, s.backends[i].Reason))
		return
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
	s.showDevice(r)
	s.coding.SetText(codingText(r))
	wb.runs = append(wb.runs, r)
	s.history.Refresh()
	if r.TensorBytes != nil && r.Codec == core.CodecNZip {
		wb.achieved[m] = r.TensorBytes
		wb.tensors.rebuild()
	}
	s.showChart()
}

// codingText is the Coding line of a run: what nzip did beyond the float
// coder, "float coder" when nothing else, empty for the baselines.
func codingText(r core.RunResult) string {
	if len(r.Coding) > 0 {
		return strings.Join(r.Coding, "; ")
	}
	if r.Error == "" && (r.Codec == core.CodecNZip || r.Codec == core.CodecNZipSetup) {
		return "float coder on every float block"
	}
	return ""
}

// showDevice shows what decoded the run and, for a device, how fast and
// how much device memory keeping the weights compressed saves.
func (s *runScreen) showDevice(r core.RunResult) {
	s.resDev.SetText(r.Backend)
	if r.Device != "" {
		s.resDev.SetText(r.Backend + ": " + r.Device)
	}
	if r.Error != "" || r.Device == "" {
		s.devSpeed.SetText("—")
		s.devMem.SetText("—")
		s.devHost.SetText("—")
		return
	}
	s.devSpeed.SetText(fmt.Sprintf("%s GB/s (kernels), %s GB/s with transfers; %.1f %% of the bytes", gbs(r.DeviceGBs), gbs(r.DeviceTotalGBs), 100*r.DeviceShare()))
	if r.DeviceSaved >= 0 {
		s.devMem.SetText(fmt.Sprintf("saved %s of %s (kept compressed)", core.HumanBytes(r.DeviceSaved), core.HumanBytes(r.DeviceBytes)))
	} else {
		s.devMem.SetText(fmt.Sprintf("nothing saved: compressed %s, decoded %s", core.HumanBytes(r.ResidentBytes), core.HumanBytes(r.DeviceBytes)))
	}
	s.devHost.SetText("nothing")
	if len(r.HostBlocks) > 0 {
		s.devHost.SetText(strings.Join(r.HostBlocks, ", "))
	}
}

// gbs formats a rate in GB/s with three significant digits or more.
func gbs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
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
		return r.Backend
	case 3:
		return strconv.Itoa(r.Threads)
	case 4:
		if r.Error != "" {
			return "—"
		}
		return fmt.Sprintf("%.4f", r.Ratio)
	case 5:
		return fmt.Sprintf("%.0f", r.CompressMBs)
	case 6:
		return fmt.Sprintf("%.0f", r.DecompressMBs)
	case 7:
		return verdictText(r)
	case 8:
		return core.HumanBytes(r.Compressed)
	}
	return ""
}

// showChart plots every codec's latest run on the current model: ratio
// against compress and decompress MB/s (runTradeoff).
func (s *runScreen) showChart() {
	wb := s.wb
	if wb.current == nil {
		s.chart.SetBuilder(nil, "Runs appear here.")
		return
	}
	t, ok := runTradeoff(wb.runs, wb.current.Name)
	if !ok {
		s.chart.SetBuilder(nil, "Runs on "+wb.current.Name+" appear here.")
		return
	}
	s.chart.SetBuilder(func(st chart.Style) (*plot.Plot, error) { return chart.TradeoffPlot(t, st) }, "")
}

// runTradeoff is the Run chart of the runs on model: for the latest
// successful run of each codec (with its setup and backend), a point at
// its compress MB/s and one at its decompress MB/s, both at its ratio,
// labelled with the codec (and setup, and backend when not the codec's
// own decoder); the latest of them ringed, "(this run)" when it is the
// last run of all. false when model has no successful run.
func runTradeoff(runs []core.RunResult, model string) (chart.Tradeoff, bool) {
	var keys []string
	latest := map[string]core.RunResult{}
	last := -1
	for i, r := range runs {
		if r.Model != model || r.Error != "" {
			continue
		}
		k := runLabel(r)
		if _, ok := latest[k]; !ok {
			keys = append(keys, k)
		}
		latest[k] = r
		last = i
	}
	if last < 0 {
		return chart.Tradeoff{}, false
	}
	hiKey, hiName := runLabel(runs[last]), "this run"
	if last != len(runs)-1 {
		hiName = "latest run"
	}
	// the ring needs no legend entry: its label says what it is
	t := chart.Tradeoff{
		Title:  "Latest run per codec on " + model,
		XLabel: "compress / decompress MB/s, one run",
		YLabel: "ratio (original / compressed)",
		Series: []string{"compress", "decompress"},
	}
	for _, k := range keys {
		r := latest[k]
		hi := k == hiKey
		label := k
		if hi {
			label += " (" + hiName + ")"
		}
		t.Points = append(t.Points,
			chart.Point{X: r.CompressMBs, Y: r.Ratio, Label: label, Series: 0, Highlight: hi},
			chart.Point{X: r.DecompressMBs, Y: r.Ratio, Label: label, Series: 1, Highlight: hi})
	}
	return t, true
}

// runLabel names a run's codec in the Run chart: the codec, its setup,
// and "@backend" when a device backend decoded it.
func runLabel(r core.RunResult) string {
	l := r.Codec
	if r.Setup != "" {
		l += " " + r.Setup
	}
	if r.Backend != "" && r.Backend != core.BackendCPU {
		l += " @" + r.Backend
	}
	return l
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
