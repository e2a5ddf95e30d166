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

	"fyne.io/fyne/v2"
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

// The Hub and Open screens read a server started with a token: without
// it the Hub screen says where to give it; with it in the Bearer token
// field the store is listed, and the Open screen then opens a model of
// that server by URL with the token given (for the session). The token
// shows nowhere.
func TestServerTokenScreens(t *testing.T) {
	loc, _ := hubScreenStore(t, t.TempDir())
	const token = "nz-tok-51c2a9"
	srv := serve.New(serve.Config{Log: log.New(io.Discard, "", 0), Token: token})
	if err := srv.Add("", loc); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()
	defer core.SetToken(ts.URL, "")

	wb := newTestBench(t)
	wb.selectTab("Hub")
	wb.hub.loc.SetText(ts.URL)
	test.Tap(wb.hub.openBtn)
	wb.wait()
	if wb.hub.hub != nil || !strings.Contains(wb.hub.status.Text, "Bearer token field") {
		t.Fatalf("without the token: status %q", wb.hub.status.Text)
	}
	test.Type(wb.hub.token, token)
	wb.hub.token.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	wb.wait()
	if h := wb.hub.hub; h == nil || len(h.Models) != 3 || strings.Contains(wb.hub.status.Text, token) {
		t.Fatalf("with the token: %+v, status %q", h, wb.hub.status.Text)
	}
	u := ts.URL + "/org/tuned"
	test.Type(wb.open_.url, u)
	test.Tap(wb.open_.urlBtn)
	wb.wait()
	if wb.current == nil || wb.current.Path != u {
		t.Fatalf("the Open screen did not open %s with the token: %+v (status %q)", u, wb.current, wb.status.Text)
	}
	if strings.Contains(wb.status.Text, token) || wb.open_.token.Text != "" {
		t.Errorf("the token shows: status %q, Open screen's field %q", wb.status.Text, wb.open_.token.Text)
	}

	// Forget: the field is cleared and the server no longer gets the
	// token, so the store cannot be listed until it is given again.
	test.Type(wb.hub.token, "typed-but-not-sent")
	test.Tap(wb.hub.forget)
	if wb.hub.token.Text != "" || !strings.Contains(wb.hub.status.Text, "No bearer token") || strings.Contains(wb.hub.status.Text, token) {
		t.Fatalf("after Forget: field %q, status %q", wb.hub.token.Text, wb.hub.status.Text)
	}
	test.Tap(wb.hub.openBtn)
	wb.wait()
	if !strings.Contains(wb.hub.status.Text, "Bearer token field") {
		t.Fatalf("the token was not forgotten: status %q", wb.hub.status.Text)
	}
}
