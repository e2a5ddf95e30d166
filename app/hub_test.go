package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
	"neuralzip/store"
)

// writeHubModel writes a two-tensor safetensors model whose values come
// from f, as F32 or (bf16) its round-to-nearest-even BF16 cast.
func writeHubModel(t *testing.T, dir, name string, bf16 bool, f func(i int) float32) string {
	t.Helper()
	const n = 6000
	dt, width := "F32", 4
	if bf16 {
		dt, width = "BF16", 2
	}
	var data []byte
	for i := 0; i < 2*n; i++ {
		x := math.Float32bits(f(i))
		if bf16 {
			data = binary.LittleEndian.AppendUint16(data, uint16((x+0x7fff+(x>>16)&1)>>16))
		} else {
			data = binary.LittleEndian.AppendUint32(data, x)
		}
	}
	hdr := fmt.Sprintf(`{"a":{"dtype":"%s","shape":[%d],"data_offsets":[0,%d]},"b":{"dtype":"%s","shape":[%d],"data_offsets":[%d,%d]}}`,
		dt, n, n*width, dt, n, n*width, 2*n*width)
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	file = append(append(file, hdr...), data...)
	p := filepath.Join(dir, name, "model.safetensors")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, file, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The Hub screen puts the open models in a store: a model, its BF16 cast
// and an unrelated model give two families and a cast row of near bytes.
func TestHubScreen(t *testing.T) {
	wb := newTestBench(t)
	dir := t.TempDir()
	base := func(i int) float32 { return float32(math.Sin(float64(i)*0.37)) * 0.05 }
	wb.open(writeHubModel(t, dir, "base", false, base))
	wb.wait()
	wb.open(writeHubModel(t, dir, "base-bf16", true, base))
	wb.wait()
	wb.open(writeHubModel(t, dir, "other", false, func(i int) float32 { return float32(math.Cos(float64(i)*1.91)) * 0.2 }))
	wb.wait()
	if len(wb.models) != 3 {
		t.Fatalf("%d models open", len(wb.models))
	}
	wb.selectTab("Hub")
	test.Tap(wb.hub.build)
	wb.wait()
	h := wb.hub.hub
	if h == nil {
		t.Fatalf("no hub built (status %q)", wb.hub.status.Text)
	}
	if len(h.Models) != 3 || h.Models[1].Name != "base-bf16/model.safetensors" {
		t.Fatalf("hub models %+v", h.Models)
	}
	if len(h.Families) != 2 || h.Models[0].Family != h.Models[1].Family || h.Models[2].Family == h.Models[0].Family {
		t.Errorf("families %v", h.Families)
	}
	if !strings.HasPrefix(wb.hub.status.Text, "3 models") {
		t.Errorf("status %q", wb.hub.status.Text)
	}
	cell := widget.NewLabel("")
	wb.hub.matrixCell(widget.TableCellID{Row: 1, Col: 0}, cell)
	if cell.Text != "s 0.00 n 1.00" {
		t.Errorf("cast's matrix cell %q, want all near", cell.Text)
	}
	wb.hub.modelCell(widget.TableCellID{Row: 1, Col: 4}, cell)
	if cell.Text != "1" {
		t.Errorf("cast's base %q", cell.Text)
	}
	if got := len(wb.hub.families.Objects); got != 5 {
		t.Errorf("%d family lines, want 2 headings and 3 models", got)
	}
	// built while another screen shows, the Hub must not make the window
	// taller than the screen (AGENTS.md: lists of models scroll)
	wb.selectTab("Open")
	wb.hub.show(h)
	if mh := wb.win.Content().MinSize().Height; mh > defaultHeight {
		t.Errorf("window content needs %v px, more than the default %v", mh, defaultHeight)
	}
	wb.selectTab("Hub")
	if p := os.Getenv("HUB_PNG"); p != "" { // a look at the screen: HUB_PNG=/tmp/hub.png
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := png.Encode(f, wb.win.Canvas().Capture()); err != nil {
			t.Fatal(err)
		}
	}
}

// hubScreenStore makes a store in dir of a model, its BF16 cast and a
// fine-tune (org/base, org/base-bf16, org/tuned) and returns its location
// and the models' files.
func hubScreenStore(t *testing.T, dir string) (string, map[string]string) {
	t.Helper()
	base := func(i int) float32 { return float32(math.Sin(float64(i)*0.37)) * 0.05 }
	tuned := func(i int) float32 { return base(i) + float32(math.Sin(float64(i)*2.1))*0.0005 }
	loc := filepath.Join(dir, "store")
	if err := store.Init(loc); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(loc, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, m := range []struct {
		name string
		bf16 bool
		f    func(int) float32
	}{{"org/base", false, base}, {"org/base-bf16", true, base}, {"org/tuned", false, tuned}} {
		p := writeHubModel(t, dir, m.name, m.bf16, m.f)
		cm, err := core.OpenPath(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ins []store.Input
		for _, f := range cm.Files {
			ins = append(ins, store.Input{Name: f.Name, R: f.R, Size: f.Size, Format: f.Format, Segments: f.Segments})
		}
		if _, _, err := st.Add(m.name, ins, store.AddOptions{}); err != nil {
			t.Fatal(err)
		}
		cm.Close()
		files[m.name] = p
	}
	st.Close()
	return loc, files
}

// The Hub screen opens a store made with nzip store: its models, families
// as trees of bases with chain depths, the matrix; a model restored to
// files and opened in the other screens, read from the store.
func TestHubOpenStore(t *testing.T) {
	dir := t.TempDir()
	loc, files := hubScreenStore(t, dir)

	wb := newTestBench(t)
	wb.selectTab("Hub")
	wb.hub.loc.SetText(filepath.Join(dir, "none"))
	test.Tap(wb.hub.openBtn)
	wb.wait()
	if !strings.Contains(wb.hub.status.Text, "not a store") {
		t.Errorf("a missing store: status %q", wb.hub.status.Text)
	}
	wb.hub.loc.SetText(loc)
	test.Tap(wb.hub.openBtn)
	wb.wait()
	h := wb.hub.hub
	if h == nil || len(h.Models) != 3 || h.Source != loc || !strings.HasPrefix(wb.hub.status.Text, "Store "+loc) {
		t.Fatalf("store not shown: %+v, status %q", h, wb.hub.status.Text)
	}
	if len(h.Families) != 1 {
		t.Errorf("families %v, want one (the cast and the fine-tune coded against the base)", h.Families)
	}
	var lines []string
	for _, o := range wb.hub.families.Objects {
		lines = append(lines, o.(*widget.Label).Text)
	}
	tree := strings.Join(lines, "\n")
	if !strings.Contains(tree, "1. org/base  (depth 0)") || !strings.Contains(tree, "└─ ") || !strings.Contains(tree, "org/base-bf16  (depth 1)") {
		t.Errorf("family tree:\n%s", tree)
	}
	cell := widget.NewLabel("")
	wb.hub.modelCell(widget.TableCellID{Row: 1, Col: 6}, cell)
	if cell.Text != "1" {
		t.Errorf("the cast's chain depth %q, want 1", cell.Text)
	}
	// all of the cast's tensors are near the base (its header, a unit of
	// its own, is the rest)
	if f := h.NearFrac(1, 0); f < 0.98 || h.SharedFrac(1, 0) != 0 {
		t.Errorf("cast vs base: near %.3f shared %.3f, want all near", f, h.SharedFrac(1, 0))
	}
	if !wb.hub.useBtn.Disabled() {
		t.Error("Open in workbench enabled with no model selected")
	}
	// restore the fine-tune, then open it in the other screens
	wb.hub.models.Select(widget.TableCellID{Row: 2, Col: 0})
	if wb.hub.useBtn.Disabled() || wb.hub.getBtn.Disabled() {
		t.Fatal("a selected model cannot be opened or got")
	}
	out := t.TempDir()
	if err := wb.hub.store.Get("org/tuned", out, false); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, "model.safetensors"))
	want, _ := os.ReadFile(files["org/tuned"])
	if !bytes.Equal(got, want) {
		t.Errorf("restored model: %d bytes, differs from the original's %d", len(got), len(want))
	}
	test.Tap(wb.hub.useBtn)
	wb.wait()
	wb.wait()
	if wb.current == nil || !strings.HasPrefix(wb.current.Path, "store:") || wb.current.Name != "org/tuned" || len(wb.current.Tensors) != 2 {
		t.Fatalf("the stored model is not the current one: %+v", wb.current)
	}
	wb.selectTab("Histograms")
	wb.wait()
	if wb.hist.hist.plot == nil {
		t.Error("no histogram of the model opened from the store")
	}
}
