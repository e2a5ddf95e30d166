//go:build !js

package core

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"neuralzip/serve"
)

// serveStore serves the store at loc with nzip serve's server and returns
// its URL.
func serveStore(t *testing.T, loc string) string {
	t.Helper()
	return serveStoreToken(t, loc, "")
}

// TestOpenHubStoreURL opens a store through nzip serve's hub endpoint, in
// pages of two models, and checks that the Hub screen's view is the one
// the store's directory gives (models, bytes, families, chains, matrix),
// that a model restored through the server's download API is the
// original byte for byte, and that a model opened by ranges reads as the
// original.
func TestOpenHubStoreURL(t *testing.T) {
	loc, root, _ := hubTestStore(t)
	want, hs, err := OpenHubStore(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	hs.Close()
	u := serveStore(t, loc)

	defer func(n int) { HubPageSize = n }(HubPageSize)
	HubPageSize = 2
	var pages []int
	got, hs, err := OpenHubStorePages(context.Background(), u, func(h *Hub, total int) {
		if total != len(want.Models) {
			t.Errorf("page: a store of %d models, want %d", total, len(want.Models))
		}
		pages = append(pages, len(h.Models))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	if !reflect.DeepEqual(pages, []int{2, 4}) {
		t.Errorf("pages listed %v models, want [2 4] (then the whole store)", pages)
	}
	if got.Source != u || !hs.Served() {
		t.Errorf("source %q (served %v), want %q", got.Source, hs.Served(), u)
	}
	got.Source = want.Source
	if !reflect.DeepEqual(got, want) {
		t.Errorf("from the URL:\n%+v\nfrom the directory:\n%+v", got, want)
	}
	if got.Shared == nil || len(got.Families) != 1 {
		t.Errorf("matrix %v, %d families", got.Shared != nil, len(got.Families))
	}

	name := "ft-continued/model.bf16.safetensors"
	orig, err := os.ReadFile(filepath.Join(root, "ft-continued", "model.bf16.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := hs.Get(name, dir, false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "model.bf16.safetensors"))
	if !bytes.Equal(b, orig) {
		t.Errorf("restored through the server: %d bytes, differs from the original's %d", len(b), len(orig))
	}
	if err := hs.Get(name, dir, false); err == nil {
		t.Error("a second get over the file: no error")
	}
	if err := hs.Get("no/such", dir, false); err == nil {
		t.Error("get of a model not in the store: no error")
	}
	var read []string
	if err := hs.ReadFiles(name, func(f string, data []byte) error {
		read = append(read, f)
		if f == "model.bf16.safetensors" && !bytes.Equal(data, orig) {
			t.Errorf("ReadFiles: %d bytes, differ from the original's %d", len(data), len(orig))
		}
		return nil
	}); err != nil || len(read) != 1 {
		t.Errorf("ReadFiles: %v, files %v", err, read)
	}

	m, err := hs.Open(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	w, err := OpenPath(filepath.Join(root, "ft-continued", "model.bf16.safetensors"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(m.Tensors) != len(w.Tensors) || m.Format != w.Format || m.Path != "store:"+u+"#"+name {
		t.Fatalf("opened: %d tensors %q path %q, want %d %q", len(m.Tensors), m.Format, m.Path, len(w.Tensors), w.Format)
	}
	for i, tn := range m.Tensors {
		a, c := make([]byte, tn.Bytes), make([]byte, w.Tensors[i].Bytes)
		if _, err := m.Files[tn.File].R.ReadAt(a, tn.Offset); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		w.Files[w.Tensors[i].File].R.ReadAt(c, w.Tensors[i].Offset)
		if tn.Name != w.Tensors[i].Name || !bytes.Equal(a, c) {
			t.Fatalf("tensor %s differs from the original's", tn.Name)
		}
	}
}

// TestOpenHubStoreURLErrors: a server serving no store, a server that is
// not nzip serve, and one whose answer is not a hub page give clear
// errors.
func TestOpenHubStoreURLErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644)
	srv := serve.New(serve.Config{Log: log.New(io.Discard, "", 0)})
	if err := srv.Add("local/dir", dir); err != nil {
		t.Fatal(err)
	}
	noStore := httptest.NewServer(srv)
	defer noStore.Close()
	defer srv.Close()
	answer := func(status int, body string) string {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	for _, c := range []struct{ u, want string }{
		{noStore.URL, "serves no store"},
		{answer(http.StatusNotFound, "<html>no</html>"), "not an nzip serve of a store"},
		{answer(http.StatusOK, "<html>hello</html>"), "not a valid nzip hub page"},
		{answer(http.StatusOK, `{"format":"nzip-hub/1","stores":1,"total":3,"from":0,"next":7,"models":[]}`), "not a valid nzip hub page"},
		{answer(http.StatusOK, `{"format":"nzip-hub/2"}`), "format"},
		{"http://127.0.0.1:1/some/path", "expected the address"},
	} {
		_, _, err := OpenHubStore(context.Background(), c.u)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.u, err, c.want)
		}
	}
}
