//go:build !js

package core

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"neuralzip/store"
	"neuralzip/store/storetest"
)

// TestHubURLScale opens a served store of hundreds of models (the shared
// hub's 10 real stories260K files and storetest's synthetic fine-tunes of
// them; NZ_HUB_MODELS sets how many, 400 by default): past HubMatrixMax,
// so the server reads each page's models only when asked. The first page
// reaches the screen before the rest of the store is read, and the whole
// store read by URL is the one its directory gives. It logs the time to
// the first list and to the whole store (docs/store.md).
func TestHubURLScale(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a store of hundreds of models")
	}
	root := filepath.Join("..", "..", "..", "shared", "hub", "stories260K")
	if _, err := os.Stat(filepath.Join(root, "base")); err != nil {
		t.Skip("../shared/hub/stories260K not present: skipping")
	}
	n := 400
	if v := os.Getenv("NZ_HUB_MODELS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("NZ_HUB_MODELS=%q", v)
		}
	}
	loc := filepath.Join(t.TempDir(), "st")
	if err := store.Init(loc); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(loc, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var src []storetest.File
	for _, ty := range []string{"f32", "bf16"} {
		for _, d := range []string{"base", "ft-fortunes-full", "ft-fortunes-lora", "ft-frozen-embed", "ft-continued"} {
			name := d + "/model." + ty + ".safetensors"
			m, err := OpenPath(filepath.Join(root, name), nil)
			if err != nil {
				t.Fatal(err)
			}
			f := m.Files[0]
			data := make([]byte, f.Size)
			if _, err := f.R.ReadAt(data, 0); err != nil {
				t.Fatal(err)
			}
			m.Close()
			src = append(src, storetest.File{Name: name, Data: data, Segs: f.Segments})
			if _, _, err := s.Add(name, []store.Input{{Name: "model.safetensors", R: bytes.NewReader(data), Size: f.Size, Format: "safetensors", Segments: f.Segments}}, store.AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hub := storetest.NewHub(src)
	t0 := time.Now()
	for range n - len(src) {
		m, err := hub.Next()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Add(m.Name, []store.Input{{Name: "model.safetensors", R: bytes.NewReader(m.Data), Size: int64(len(m.Data)), Format: "safetensors", Segments: m.Segs}}, store.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	t.Logf("store of %d models built in %v", n, time.Since(t0).Round(time.Millisecond))

	t0 = time.Now()
	want, hs, err := OpenHubStore(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	hs.Close()
	dirTime := time.Since(t0)

	u := serveStore(t, loc)
	var first time.Duration
	var firstN int
	t0 = time.Now()
	got, hs, err := OpenHubStorePages(context.Background(), u, func(h *Hub, total int) {
		if first == 0 {
			first, firstN = time.Since(t0), len(h.Models)
		}
		if total != n {
			t.Errorf("page: a store of %d models, want %d", total, n)
		}
	})
	all := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	hs.Close()
	if n > HubPageSize && (firstN != HubPageSize || first == 0) {
		t.Errorf("first page: %d models, want %d before the rest", firstN, HubPageSize)
	}
	got.Source = want.Source
	if !reflect.DeepEqual(got, want) {
		t.Error("the store read by URL differs from the one its directory gives")
	}
	if n > HubMatrixMax && got.Shared != nil {
		t.Errorf("a matrix for %d models", n)
	}
	t.Logf("%d models (%d families): first page of %d listed after %v, all after %v (directory: %v)",
		n, len(got.Families), firstN, first.Round(time.Millisecond), all.Round(time.Millisecond), dirTime.Round(time.Millisecond))
}
