//go:build !js

package core

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/store"
)

// hubTestStore makes a store of ../shared/hub's stories260K models (F32
// first: BF16 exports become casts, the fine-tunes deltas of the base) and
// returns its directory, the models' directory and the stored names.
func hubTestStore(t *testing.T) (loc, root string, names []string) {
	t.Helper()
	root = filepath.Join("..", "..", "..", "shared", "hub", "stories260K")
	if _, err := os.Stat(filepath.Join(root, "base")); err != nil {
		t.Skip("../shared/hub/stories260K not present: skipping")
	}
	loc = filepath.Join(t.TempDir(), "st")
	if err := store.Init(loc); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(loc, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, v := range []string{"base", "ft-continued", "ft-fortunes-full"} {
		for _, f := range []string{"model.f32.safetensors", "model.bf16.safetensors"} {
			m, err := OpenPath(filepath.Join(root, v, f), nil)
			if err != nil {
				t.Fatal(err)
			}
			var ins []store.Input
			for _, mf := range m.Files {
				ins = append(ins, store.Input{Name: mf.Name, R: mf.R, Size: mf.Size, Format: mf.Format, Segments: mf.Segments})
			}
			name := v + "/" + f
			if _, _, err := s.Add(name, ins, store.AddOptions{}); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
			m.Close()
		}
	}
	return loc, root, names
}

// TestOpenHubStore reads a store of ../shared/hub's stories260K models
// (added with their layouts, F32 first: BF16 exports become casts, the
// fine-tunes deltas of the base) as the Hub screen shows it, opens a stored
// model in the workbench (every tensor equal to the original's) and
// restores one to files.
func TestOpenHubStore(t *testing.T) {
	loc, root, names := hubTestStore(t)

	if _, _, err := OpenHubStore(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a store") {
		t.Errorf("an empty directory: %v, want an error saying it is not a store", err)
	}
	h, hs, err := OpenHubStore(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	if len(h.Models) != len(names) || h.Source != loc || h.Stored <= 0 {
		t.Fatalf("%d models, source %q, stored %d", len(h.Models), h.Source, h.Stored)
	}
	at := map[string]int{}
	for i, m := range h.Models {
		at[m.Name] = i
	}
	if len(h.Families) != 1 {
		t.Errorf("%d families, want 1 (every model is coded against the base's F32): %v", len(h.Families), h.Families)
	}
	for _, v := range []string{"base", "ft-continued", "ft-fortunes-full"} {
		f32, b16 := at[v+"/model.f32.safetensors"], at[v+"/model.bf16.safetensors"]
		// the BF16 export is casts of its F32: all of it near (or shared)
		if got := h.Near[b16][f32] + h.Shared[b16][f32]; got < h.Models[b16].TensorBytes*9/10 {
			t.Errorf("%s: BF16 shared+near with its F32 %d of %d bytes", v, got, h.Models[b16].TensorBytes)
		}
		if h.Models[b16].Depth < 1 {
			t.Errorf("%s BF16: chain depth %d, want ≥ 1 (casts)", v, h.Models[b16].Depth)
		}
	}
	if d := h.Models[at["base/model.f32.safetensors"]].Depth; d != 0 {
		t.Errorf("base F32: depth %d, want 0", d)
	}

	// a stored model opened in the workbench reads as the original
	name := "ft-continued/model.bf16.safetensors"
	m, err := hs.Open(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want, err := OpenPath(filepath.Join(root, "ft-continued", "model.bf16.safetensors"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if len(m.Tensors) != len(want.Tensors) || m.Format != want.Format {
		t.Fatalf("opened: %d tensors %q, want %d %q", len(m.Tensors), m.Format, len(want.Tensors), want.Format)
	}
	for i, tn := range m.Tensors {
		w := want.Tensors[i]
		a, b := make([]byte, tn.Bytes), make([]byte, w.Bytes)
		m.Files[tn.File].R.ReadAt(a, tn.Offset)
		want.Files[w.File].R.ReadAt(b, w.Offset)
		if tn.Name != w.Name || !bytes.Equal(a, b) {
			t.Fatalf("tensor %s differs from the original's %s", tn.Name, w.Name)
		}
	}

	// restored to files: byte for byte; an existing file is refused
	dir := t.TempDir()
	if err := hs.Get(name, dir, false); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "model.bf16.safetensors"))
	orig, _ := os.ReadFile(filepath.Join(root, "ft-continued", "model.bf16.safetensors"))
	if !bytes.Equal(got, orig) {
		t.Errorf("restored file: %d bytes, differs from the original's %d", len(got), len(orig))
	}
	if err := hs.Get(name, dir, false); err == nil {
		t.Error("a second get over the file: no error")
	}
}
