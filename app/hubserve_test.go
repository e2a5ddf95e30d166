package main

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
	"neuralzip/serve"
)

// The Hub screen opens a store through nzip serve's URL: the same models
// and families as the store's directory; a model restored and opened in
// the other screens through the server's download API. A server of no
// store says so.
func TestHubOpenURL(t *testing.T) {
	dir := t.TempDir()
	loc, files := hubScreenStore(t, dir)
	srv := serve.New(serve.Config{Log: log.New(io.Discard, "", 0)})
	if err := srv.Add("", loc); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()

	defer func(n int) { core.HubPageSize = n }(core.HubPageSize)
	core.HubPageSize = 1 // a page a model: listed as they come
	wb := newTestBench(t)
	wb.selectTab("Hub")
	wb.hub.loc.SetText(ts.URL)
	test.Tap(wb.hub.openBtn)
	wb.wait()
	h := wb.hub.hub
	if h == nil || len(h.Models) != 3 || h.Source != ts.URL || !strings.HasPrefix(wb.hub.status.Text, "Store "+ts.URL) {
		t.Fatalf("served store not shown: %+v, status %q", h, wb.hub.status.Text)
	}
	if len(h.Families) != 1 || h.Shared == nil || h.NearFrac(1, 0) < 0.98 {
		t.Errorf("families %v, cast near its base %.3f", h.Families, h.NearFrac(1, 0))
	}
	cell := widget.NewLabel("")
	wb.hub.modelCell(widget.TableCellID{Row: 1, Col: 6}, cell)
	if cell.Text != "1" {
		t.Errorf("the cast's chain depth %q, want 1", cell.Text)
	}
	wb.hub.models.Select(widget.TableCellID{Row: 2, Col: 0})
	if wb.hub.useBtn.Disabled() || wb.hub.getBtn.Disabled() {
		t.Fatal("a selected served model cannot be opened or got")
	}
	out := t.TempDir()
	if err := wb.hub.store.Get("org/tuned", out, false); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, "model.safetensors"))
	want, _ := os.ReadFile(files["org/tuned"])
	if !bytes.Equal(got, want) {
		t.Errorf("restored through the server: %d bytes, differs from the original's %d", len(got), len(want))
	}
	test.Tap(wb.hub.useBtn)
	wb.wait()
	wb.wait()
	if wb.current == nil || wb.current.Path != "store:"+ts.URL+"#org/tuned" || len(wb.current.Tensors) != 2 {
		t.Fatalf("the served model is not the current one: %+v", wb.current)
	}

	// a server of a directory only
	plain := serve.New(serve.Config{Log: log.New(io.Discard, "", 0)})
	if err := plain.Add("local/dir", filepath.Join(dir, "org")); err != nil {
		t.Fatal(err)
	}
	pts := httptest.NewServer(plain)
	defer func() { pts.Close(); plain.Close() }()
	wb.hub.loc.SetText(pts.URL)
	test.Tap(wb.hub.openBtn)
	wb.wait()
	if !strings.Contains(wb.hub.status.Text, "serves no store") {
		t.Errorf("a server of no store: status %q", wb.hub.status.Text)
	}
}
