package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"neuralzip/analysis"
	"neuralzip/analysis/chart"
	"neuralzip/app/core"
)

// newTestBench builds the workbench on fyne's test app, in a window of the
// default size, started. Background work runs inline: fyne's test driver runs
// fyne.Do callbacks on the calling goroutine, so work on goroutines would
// touch widgets concurrently and make the tests racy. The work itself
// (statistics on two workers, codec runs, setups) is the same.
func newTestBench(t *testing.T) *workbench {
	t.Helper()
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	wb := newWorkbench(a, w)
	wb.inline = true
	wb.start()
	w.Resize(fyne.NewSize(defaultWidth, defaultHeight))
	t.Cleanup(func() {
		wb.wait()
		for _, m := range wb.models {
			m.Close()
		}
	})
	return wb
}

// openDemo taps the demo model's Open button and waits for the model and
// its statistics.
func openDemo(t *testing.T, wb *workbench, name string) *core.Model {
	t.Helper()
	wb.selectTab("Open")
	test.Tap(wb.open_.demoBtns[name])
	wb.wait()
	if wb.current == nil || wb.current.Path != core.AssetPrefix+name {
		t.Fatalf("demo %s did not open (status %q)", name, wb.status.Text)
	}
	if wb.currentStats() == nil {
		t.Fatalf("no statistics for %s (status %q)", name, wb.status.Text)
	}
	return wb.current
}

// tensorBytes reads tensor i of m.
func tensorBytes(t *testing.T, m *core.Model, i int) []byte {
	t.Helper()
	tn := &m.Tensors[i]
	b := make([]byte, tn.Bytes)
	if _, err := m.Files[tn.File].R.ReadAt(b, tn.Offset); err != nil {
		t.Fatal(err)
	}
	return b
}

// modelEntropy is the exponent entropy of all float tensors of m of dtype
// F32 (the demos' weights), computed directly with package analysis.
func modelEntropy(t *testing.T, m *core.Model) float64 {
	var all analysis.FloatStats
	first := true
	for i := range m.Tensors {
		tn := &m.Tensors[i]
		if !tn.IsFloat() {
			continue
		}
		st, _ := analysis.Float(tn.DType, tensorBytes(t, m, i))
		if first {
			all = st
			all.Hist = slices.Clone(st.Hist)
			first = false
			continue
		}
		all.Merge(st)
	}
	return analysis.Entropy(all.Hist)
}

func TestOpenScreen(t *testing.T) {
	wb := newTestBench(t)
	m := openDemo(t, wb, "silero-vad")
	if m.Name != "silero_vad_legacy.onnx" || m.Format != "onnx" || len(m.Tensors) != 263 {
		t.Fatalf("opened %s (%s, %d tensors)", m.Name, m.Format, len(m.Tensors))
	}
	want := fmt.Sprintf("exponent entropy %.3f bits", modelEntropy(t, m))
	if !strings.Contains(wb.open_.info.Text, want) {
		t.Errorf("model summary %q lacks %q", wb.open_.info.Text, want)
	}
	if r := wb.app.Preferences().StringList(prefRecent); len(r) != 1 || r[0] != "demo:silero-vad" {
		t.Errorf("recent files %v", r)
	}
	// a second model; the first stays open, the recent list grows
	openDemo(t, wb, "selfie-segmentation")
	if len(wb.models) != 2 || wb.current.Format != "tflite" {
		t.Fatalf("%d models, current %s", len(wb.models), wb.current.Format)
	}
	if r := wb.app.Preferences().StringList(prefRecent); len(r) != 2 || r[0] != "demo:selfie-segmentation" {
		t.Errorf("recent files %v", r)
	}
	// opening an open model again switches to it
	test.Tap(wb.open_.demoBtns["silero-vad"])
	wb.wait()
	if len(wb.models) != 2 || wb.current != m {
		t.Errorf("reopen: %d models", len(wb.models))
	}
	// a recent file opens a model again after it was closed
	wb.closeModel(m)
	if len(wb.models) != 1 || wb.current == m {
		t.Fatalf("close: %d models", len(wb.models))
	}
	recent := wb.open_.recent.Objects[1].(*widget.Button) // "demo:silero-vad", second
	if recent.Text != "demo:silero-vad" {
		t.Fatalf("recent button %q", recent.Text)
	}
	test.Tap(recent)
	wb.wait()
	if wb.current == nil || wb.current.Path != "demo:silero-vad" {
		t.Fatal("recent file did not open")
	}
	// a file from disk that is not a checkpoint opens as opaque bytes
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("not a checkpoint"), 0o644)
	wb.open(p)
	wb.wait()
	if wb.current.Path != p || len(wb.current.Tensors) != 0 || !strings.Contains(wb.open_.info.Text, "no float tensors") {
		t.Errorf("opaque file: %q", wb.open_.info.Text)
	}
	wb.selectTab("Histograms")
	if wb.hist.hist.plot != nil || !wb.hist.hist.msg.Visible() {
		t.Error("histogram of a model without tensors")
	}
}

func TestTensorsScreen(t *testing.T) {
	wb := newTestBench(t)
	m := openDemo(t, wb, "silero-vad")
	wb.selectTab("Tensors")
	s := wb.tensors
	test.Tap(s.group) // off: one row per tensor
	if s.group.Checked || len(s.rows) != len(m.Tensors) {
		t.Fatalf("ungrouped: %d rows for %d tensors", len(s.rows), len(m.Tensors))
	}
	test.Type(s.filter, "forward_basis")
	if len(s.rows) != 2 {
		t.Fatalf("filter: %d rows", len(s.rows))
	}
	for r := range s.rows {
		if n := m.Tensors[s.rows[r].tensor].Name; !strings.Contains(n, "forward_basis") {
			t.Fatalf("filter shows %q", n)
		}
	}
	i := s.rows[0].tensor
	st, _ := analysis.Float(m.Tensors[i].DType, tensorBytes(t, m, i))
	if got, want := s.cellText(0, colEntropy), fmt.Sprintf("%.3f", st.ExpEntropy); got != want {
		t.Errorf("entropy cell %q, want %q", got, want)
	}
	if got, want := s.cellText(0, colBound), core.HumanBytes(int64(st.Bound()+0.5)); got != want {
		t.Errorf("bound cell %q, want %q", got, want)
	}
	if s.cellText(0, colDType) != "F32" || s.cellText(0, colShape) != "[258×1×256]" || s.cellText(0, colAchieved) != "" {
		t.Errorf("row: %q %q %q", s.cellText(0, colDType), s.cellText(0, colShape), s.cellText(0, colAchieved))
	}
	// tapping the row selects the tensor and focuses it; again unselects
	s.table.Select(widget.TableCellID{Row: 0, Col: colName})
	if sel := wb.selection(); len(sel) != 1 || sel[0] != i || wb.focus != i || s.cellText(0, colSel) != "●" {
		t.Fatalf("selection %v, focus %d", sel, wb.focus)
	}
	if !strings.Contains(s.summary.Text, "2 of 263 tensors shown, 1 selected") {
		t.Errorf("summary %q", s.summary.Text)
	}
	s.table.Select(widget.TableCellID{Row: 0, Col: colBytes})
	if len(wb.selection()) != 0 {
		t.Fatal("second tap did not unselect")
	}
	// sort by entropy, descending: values in order, non-floats last
	s.filter.SetText("")
	s.sortSel.SetSelected("Exp. entropy")
	test.Tap(s.desc)
	prev := 100.0
	for r := range s.rows {
		e := s.sortKey(s.rows[r].tensor, colEntropy)
		if e > prev {
			t.Fatalf("row %d: entropy %g after %g", r, e, prev)
		}
		prev = e
	}
	// grouped by layer: a heading per layer; tapping it selects the layer
	test.Tap(s.group)
	if s.rows[0].tensor != -1 {
		t.Fatal("no layer heading first")
	}
	layer := s.rows[0]
	s.table.Select(widget.TableCellID{Row: 0, Col: colName})
	if n := len(wb.selection()); n != layer.count {
		t.Errorf("layer tap selected %d, want %d", n, layer.count)
	}
	test.Tap(s.clearB)
	if len(wb.selection()) != 0 {
		t.Error("clear selection")
	}
}

func TestHistogramScreen(t *testing.T) {
	wb := newTestBench(t)
	m := openDemo(t, wb, "silero-vad")
	big := largestFloat(m)
	wb.focus = big
	wb.selectionChanged()
	wb.selectTab("Histograms")
	s := wb.hist
	st, _ := analysis.Float(m.Tensors[big].DType, tensorBytes(t, m, big))
	if want := fmt.Sprintf("Exponent entropy %.3f bits", st.ExpEntropy); !strings.Contains(s.info.Text, want) {
		t.Errorf("info %q lacks %q", s.info.Text, want)
	}
	if want := fmt.Sprintf("Huffman code %.3f bits", analysis.HuffmanBits(st.Hist)); !strings.Contains(s.info.Text, want) {
		t.Errorf("info %q lacks %q", s.info.Text, want)
	}
	if s.hist.plot == nil || s.bits.plot == nil || s.agg.Model == nil {
		t.Fatal("no plots or no model")
	}
	// the sign bit statistics beside it
	neg := 0
	b := tensorBytes(t, m, big)
	for j := 3; j < len(b); j += 4 {
		neg += int(b[j] >> 7)
	}
	if want := fmt.Sprintf("Negative values: %.2f%%", 100*float64(neg)/float64(len(b)/4)); !strings.Contains(s.planes.Text, want) {
		t.Errorf("planes %q lacks %q", s.planes.Text, want)
	}
	// the whole model
	s.scope.SetSelected(scopeModel)
	if want := fmt.Sprintf("Exponent entropy %.3f bits", modelEntropy(t, m)); !strings.Contains(s.info.Text, want) {
		t.Errorf("model info %q lacks %q", s.info.Text, want)
	}
	// an empty selection says so
	s.scope.SetSelected(scopeSelection)
	if s.hist.plot != nil || !strings.Contains(s.hist.msg.Text, "Nothing selected") {
		t.Errorf("empty selection: %q", s.hist.msg.Text)
	}
	s.scope.SetSelected(scopeTensor)
	before := s.hist.plot
	test.Tap(s.log)
	if s.log.Checked || s.hist.plot == before {
		t.Error("log toggle did not rebuild the plot")
	}
	// export PNG and SVG
	dir := t.TempDir()
	if err := s.hist.export(filepath.Join(dir, "h.png")); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "h.png"))
	if img, err := png.Decode(bytes.NewReader(raw)); err != nil || img.Bounds().Dx() != 1600 {
		t.Errorf("PNG export: %v", err)
	}
	if err := s.bits.export(filepath.Join(dir, "b.svg")); err != nil {
		t.Fatal(err)
	}
	if svg, _ := os.ReadFile(filepath.Join(dir, "b.svg")); !bytes.Contains(svg, []byte("<svg")) {
		t.Error("SVG export")
	}
}

func TestClustersScreen(t *testing.T) {
	wb := newTestBench(t)
	openDemo(t, wb, "silero-vad")
	wb.selectTab("Clusters") // computes on first show
	wb.wait()
	s := wb.clusters
	if s.view == nil || s.view.Chunks == 0 || len(s.view.Clusters) != 4 || s.scatter.plot == nil || s.elbow.plot == nil || s.hists.plot == nil {
		t.Fatalf("view %+v, status %q", s.view, s.status.Text)
	}
	if !strings.Contains(s.status.Text, "all 106 chunks") {
		t.Errorf("status %q", s.status.Text)
	}
	s.k.SetSelected("2")
	wb.wait()
	if len(s.view.Clusters) != 2 || !strings.Contains(s.shares.Text, "Cluster 2:") || strings.Contains(s.shares.Text, "Cluster 3:") {
		t.Errorf("K=2: %d clusters, %q", len(s.view.Clusters), s.shares.Text)
	}
	var share float64
	for _, c := range s.view.Clusters {
		share += c.Share
	}
	if share < 0.999 || share > 1.001 {
		t.Errorf("shares sum to %g", share)
	}
	// small chunks: every chunk is analysed up to the sample limit; past
	// it the screen says it sampled
	s.chunk.SetSelected("1024")
	wb.wait()
	if s.view.Sampled || !strings.Contains(s.status.Text, "all 500 chunks of 1024 values") {
		t.Errorf("1024-value chunks: sampled %v, %q", s.view.Sampled, s.status.Text)
	}
	s.maxChunks = 100
	s.compute()
	wb.wait()
	if !s.view.Sampled || s.view.Chunks != 100 || !strings.Contains(s.status.Text, "a sample of 100 of 500 chunks") {
		t.Errorf("1024-value chunks: sampled %v, %q", s.view.Sampled, s.status.Text)
	}
	// a selection narrows the view to its tensors
	wb.selected[largestFloat(wb.current)] = true
	wb.selectionChanged()
	wb.wait()
	if !strings.Contains(s.status.Text, "the 1 selected tensors") || s.view.TotalValues != wb.current.Tensors[largestFloat(wb.current)].Bytes/4 {
		t.Errorf("selection: %q", s.status.Text)
	}
}

func TestSetupsAndRun(t *testing.T) {
	wb := newTestBench(t)
	other := openDemo(t, wb, "selfie-segmentation")
	m := openDemo(t, wb, "blazeface-front")
	wb.selectTab("Setups")
	s := wb.setupsScr
	// the built-in Gaussian setup is there from the start
	if len(wb.setups) != 1 || wb.setups[0].Name != "gaussian" || !wb.setups[0].Setup.IsGaussian() {
		t.Fatalf("setups at start: %+v", wb.setups)
	}
	test.Tap(s.buildBtn)
	wb.wait()
	if len(wb.setups) != 2 || !strings.HasPrefix(s.status.Text, "Built blazeface-front") {
		t.Fatalf("%d setups, %q", len(wb.setups), s.status.Text)
	}
	// from a selection: only the selected tensors' chunks are sampled
	big := largestFloat(m)
	wb.selected[big] = true
	wb.selectionChanged()
	s.from.SetSelected(fromSelection)
	s.k.SetSelected("1")
	test.Tap(s.buildBtn)
	if len(wb.setups) != 3 || wb.setups[2].Name != "blazeface-front-sel1-k1" {
		t.Fatalf("setup from selection: %+v (%q)", wb.setups, s.status.Text)
	}
	for _, sec := range wb.setups[2].Setup.Sections {
		if len(sec.Tables) != 1 {
			t.Errorf("K=1 setup has %d tables for %s", len(sec.Tables), sec.DType)
		}
	}
	wb.setups = wb.setups[:2]
	s.list.Refresh()
	// save, load again under the file's name
	p := filepath.Join(t.TempDir(), "saved.nzsetup")
	if err := s.save(wb.setups[1], p); err != nil {
		t.Fatal(err)
	}
	s.load(p)
	if len(wb.setups) != 3 || wb.setups[2].Name != "saved" || wb.setups[2].Setup.ID() != wb.setups[1].Setup.ID() {
		t.Fatalf("load: %+v", wb.setups)
	}
	// the comparison at the chosen chunk size: none, gaussian and both setups
	s.chunk.SetSelected("4 Ki")
	test.Tap(s.compare)
	wb.wait()
	if len(s.rows) != 2*4 || !strings.Contains(s.status.Text, "every roundtrip bit-exact") || s.trade.plot == nil {
		t.Fatalf("compare: %d rows, %q", len(s.rows), s.status.Text)
	}
	// a panel per model, titled with its name
	if f, ok := s.trade.plot.(*chart.Panels); !ok || len(f.Plots) != 2 || f.Plots[0].Title.Text != other.Name || f.Plots[1].Title.Text != m.Name {
		t.Errorf("trade-off figure %T: %+v", s.trade.plot, s.trade.plot)
	}
	for _, want := range []string{"gaussian", "saved", "none", other.Name, "decompress MB/s"} {
		if !strings.Contains(s.table.Text, want) {
			t.Errorf("comparison table lacks %q:\n%s", want, s.table.Text)
		}
	}
	for _, r := range s.rows {
		if r.Model == other.Name && r.Setup == "none" && r.RatioVsNone != 1 {
			t.Errorf("%+v", r)
		}
	}

	wb.selectTab("Run")
	r := wb.run
	if !slices.Contains(r.codecSel.Options, core.CodecNZipSetup) || !slices.Contains(r.setupSel.Options, "gaussian") || !slices.Contains(r.setupSel.Options, "blazeface-front") {
		t.Fatalf("codecs %v, setups %q", r.codecSel.Options, r.setupSel.Options)
	}
	r.setupSel.SetSelected("blazeface-front")
	var all []byte
	for _, f := range m.Files {
		b := make([]byte, f.Size)
		f.R.ReadAt(b, 0)
		all = append(all, b...)
	}
	sum := sha256.Sum256(all)
	want := hex.EncodeToString(sum[:])
	for i, c := range []string{core.CodecNZip, core.CodecNZipSetup, "zstd-3", "dfloat11"} {
		r.codecSel.SetSelected(c)
		test.Tap(r.runBtn)
		wb.wait()
		if r.verdict.Text != "✓ bit-exact" || r.shaOrig.Text != want || r.shaDec.Text != want {
			t.Fatalf("%s: %q, %s vs %s (%s)", c, r.verdict.Text, r.shaOrig.Text, r.shaDec.Text, r.phase.Text)
		}
		if len(wb.runs) != i+1 || r.historyCell(i, 1) != c && c != core.CodecNZipSetup || r.historyCell(i, 2) != core.BackendCPU || r.historyCell(i, 7) != "✓ bit-exact" {
			t.Errorf("history row %d: %q %q %q", i, r.historyCell(i, 1), r.historyCell(i, 2), r.historyCell(i, 7))
		}
		if !strings.HasPrefix(r.ratio.Text, "ratio 1.") && !strings.HasPrefix(r.ratio.Text, "ratio 2.") {
			t.Errorf("%s: %q", c, r.ratio.Text)
		}
		if r.devSpeed.Text != "—" || r.devMem.Text != "—" {
			t.Errorf("%s on the CPU: device %q, %q", c, r.devSpeed.Text, r.devMem.Text)
		}
	}
	// the built-in Gaussian setup runs like any other
	r.setupSel.SetSelected("gaussian")
	r.codecSel.SetSelected(core.CodecNZipSetup)
	test.Tap(r.runBtn)
	wb.wait()
	if r.verdict.Text != "✓ bit-exact" || r.shaDec.Text != want {
		t.Fatalf("gaussian: %q (%s)", r.verdict.Text, r.phase.Text)
	}
	r.setupSel.SetSelected("blazeface-front")
	// the backends: every one listed, the unavailable ones with their reason
	if len(r.backend.Options) != len(core.Backends()) || r.backend.Selected != r.backend.Options[0] {
		t.Fatalf("backends %q (%q)", r.backend.Options, r.backend.Selected)
	}
	runs := len(wb.runs)
	for _, b := range r.backends {
		if b.Available() {
			continue
		}
		if !strings.Contains(r.unavail.Text, b.Name+" unavailable: "+b.Reason) || !r.unavail.Visible() {
			t.Errorf("no reason for %s: %q", b.Name, r.unavail.Text)
		}
		r.selectBackend(b.Name)
		r.codecSel.SetSelected(core.CodecNZip)
		test.Tap(r.runBtn)
		wb.wait()
		if len(wb.runs) != runs || !strings.Contains(r.phase.Text, "unavailable here: "+b.Reason) {
			t.Errorf("%s: %d runs, %q", b.Name, len(wb.runs), r.phase.Text)
		}
	}
	// baselines decode on the CPU only
	if !r.selectBackend("cpu") || !strings.Contains(r.devInfo.Text, "Go twin") {
		t.Fatalf("device %q", r.devInfo.Text)
	}
	r.codecSel.SetSelected("zstd-3")
	test.Tap(r.runBtn)
	wb.wait()
	if len(wb.runs) != runs || !strings.Contains(r.phase.Text, core.ErrNotOnDevice.Error()) {
		t.Errorf("zstd-3 on cpu: %d runs, %q", len(wb.runs), r.phase.Text)
	}
	// nzip on the GPU kernels' Go twin
	r.codecSel.SetSelected(core.CodecNZip)
	test.Tap(r.runBtn)
	wb.wait()
	if r.verdict.Text != "✓ bit-exact" || r.shaDec.Text != want || len(wb.runs) != runs+1 || r.historyCell(runs, 2) != "cpu" {
		t.Fatalf("nzip on cpu: %q %q (%s)", r.verdict.Text, r.shaDec.Text, r.phase.Text)
	}
	if !strings.HasPrefix(r.resDev.Text, "cpu: ") || !strings.Contains(r.devSpeed.Text, " GB/s with transfers; ") ||
		!strings.HasPrefix(r.devMem.Text, "saved ") || !strings.HasSuffix(r.devMem.Text, " (kept compressed)") || r.devHost.Text == "—" {
		t.Errorf("device result: %q | %q | %q | %q", r.resDev.Text, r.devSpeed.Text, r.devMem.Text, r.devHost.Text)
	}
	// the nzip run filled the tensors' achieved sizes
	wb.selectTab("Tensors")
	found := false
	for row := range wb.tensors.rows {
		if wb.tensors.rows[row].tensor >= 0 && wb.tensors.cellText(row, colAchieved) != "" {
			found = true
			break
		}
	}
	if !found || r.chart.plot == nil {
		t.Error("no achieved sizes or no history chart")
	}
}

// TestHistogramDefault: a model opens on its largest float tensor, not
// on its first one (silero-vad's first float tensor is a one-value
// constant, whose histogram shows nothing).
func TestHistogramDefault(t *testing.T) {
	wb := newTestBench(t)
	m := openDemo(t, wb, "silero-vad")
	first := -1
	for i := range m.Tensors {
		if m.Tensors[i].IsFloat() {
			first = i
			break
		}
	}
	if first < 0 || m.Tensors[first].Bytes > 8 {
		t.Fatalf("the demo's first float tensor is not a constant: %+v", m.Tensors[first])
	}
	big := largestFloat(m)
	if wb.focus != big || m.Tensors[big].Bytes <= m.Tensors[first].Bytes {
		t.Fatalf("opened on tensor %d (%d bytes), want the largest float tensor %d", wb.focus, m.Tensors[max(wb.focus, 0)].Bytes, big)
	}
	wb.selectTab("Histograms")
	if !strings.Contains(wb.hist.title.Text, m.Tensors[big].Name) {
		t.Errorf("histogram title %q does not name %s", wb.hist.title.Text, m.Tensors[big].Name)
	}
}

// TestScreensFitWindow: with models open, a setup built and compared and
// codecs run, no screen asks for more than the default window (its content
// made the window grow past the screen, and the screenshots then showed
// charts cut at the screen's edge: a wrapped label asked for the height of
// a word a line, a chart's one-line message for its whole width), and
// checkScreen finds every chart of the screens the tour fills drawn and
// inside the window.
func TestScreensFitWindow(t *testing.T) {
	wb := newTestBench(t)
	for _, d := range []string{"selfie-segmentation", "blazeface-front", "silero-vad"} {
		openDemo(t, wb, d)
	}
	wb.setupsScr.build()
	wb.wait()
	wb.setupsScr.runCompare()
	wb.wait()
	for _, c := range []string{"zstd-3", core.CodecNZip} {
		wb.run.codecSel.SetSelected(c)
		wb.run.start()
		wb.wait()
	}
	if wb.run.coding.Text == "" {
		t.Fatal("the run left no coding text: the test would not see its label")
	}
	for _, name := range screens {
		wb.selectTab(name)
		wb.wait()
		if ms := wb.win.Content().MinSize(); ms.Width > defaultWidth || ms.Height > defaultHeight {
			t.Errorf("%s: the window content asks for %v, more than %vx%v", name, ms, defaultWidth, defaultHeight)
		}
		// the Trajectory screen's charts need a training run (the
		// screenshot tour opens ../shared's)
		if err := checkScreen(wb, name, name != "Trajectory"); err != nil {
			t.Error(err)
		}
	}
}
