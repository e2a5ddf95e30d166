package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path"
	"runtime"
	"testing"
)

// tempStore is a directory store in a temporary directory (an in-memory
// store under js, where bbolt does not build).
func tempStore(t testing.TB) (*Store, string) {
	t.Helper()
	if runtime.GOOS == "js" {
		return NewMem(Options{}), ""
	}
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func needDir(t *testing.T) {
	if runtime.GOOS == "js" {
		t.Skip("directory stores need bbolt, which does not build for js")
	}
}

// hubStats is the part of ../shared/hub/stats.json these tests check.
type hubStats struct {
	Variants map[string]struct {
		VsBase struct {
			F32Identical  int `json:"tensors_f32_identical"`
			BF16Identical int `json:"tensors_bf16_identical"`
		} `json:"vs_base"`
	} `json:"variants"`
}

// TestHubDedupAndCasts checks, against the hub's own statistics, that every
// tensor bit-identical to the base is stored once (referenced, not coded)
// and that every BF16 file and the F16 GGUF are casts of their F32 files.
func TestHubDedupAndCasts(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	raw, err := os.ReadFile(path.Join(hub, "..", "stats.json"))
	if err != nil {
		t.Skipf("hub stats.json absent: %v", err)
	}
	var hs hubStats
	if err := json.Unmarshal(raw, &hs); err != nil {
		t.Fatal(err)
	}
	s, _ := tempStore(t)
	add := func(f string) (*Manifest, AddStats) {
		m, st, err := s.Add(f, inputs(t, path.Join(hub, f)), AddOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return m, st
	}
	add("base/model.f32.safetensors")
	add("base/model.bf16.safetensors")
	for v, vs := range hs.Variants {
		_, st := add(v + "/model.f32.safetensors")
		if st.Dedup < vs.VsBase.F32Identical {
			t.Errorf("%s f32: %d units referenced, stats.json has %d tensors identical to the base", v, st.Dedup, vs.VsBase.F32Identical)
		}
		m, st := add(v + "/model.bf16.safetensors")
		tensors := st.Units - 1 // the header
		if st.Dedup < vs.VsBase.BF16Identical || st.Dedup+st.Casts != tensors {
			t.Errorf("%s bf16: %d referenced + %d casts of %d tensors (%d identical to the base)", v, st.Dedup, st.Casts, tensors, vs.VsBase.BF16Identical)
		}
		if m.Added > m.Raw/100 {
			t.Errorf("%s bf16: adds %d bytes of %d", v, m.Added, m.Raw)
		}
	}
	_, st := add("ft-fortunes-full/model.f16.gguf")
	if st.Casts != 47 {
		t.Errorf("F16 GGUF of ft-fortunes-full: %d casts of its 47 tensors", st.Casts)
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
}

// TestRemoveGC removes a base that a delta and a cast still need, then
// everything.
func TestRemoveGC(t *testing.T) {
	needDir(t)
	hub := shared(t, "hub/stories260K")
	s, dir := tempStore(t)
	files := []string{"base/model.f32.safetensors", "ft-fortunes-full/model.f32.safetensors", "base/model.bf16.safetensors"}
	want := addFiles(t, s, hub, files)
	if _, _, err := s.Add(files[0], inputs(t, path.Join(hub, files[0])), AddOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("second add of one name: %v, want ErrExists", err)
	}
	gs, st := removeAndGC(t, s, files, want)
	if err := s.Remove(files[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second rm: %v, want ErrNotFound", err)
	}
	if gs.Packs != 3 || st.Chunks != 0 || len(st.Units) != 0 || st.Stored != 0 {
		t.Fatalf("after rm of everything and gc: removed %d chunk files, left %d (%d units)", gs.Packs, st.Chunks, len(st.Units))
	}
	ents, _ := os.ReadDir(dir + "/tmp")
	if len(ents) != 0 {
		t.Fatalf("%d temporary files left", len(ents))
	}
}

// TestConcurrentAdds: two adders, each with its own Store on one
// directory, take turns through bbolt's file lock; both models land.
func TestConcurrentAdds(t *testing.T) {
	needDir(t)
	hub := shared(t, "hub/stories260K")
	s0, dir := tempStore(t)
	s0.Close() // its lock would hold the adders off until the test ends
	files := []string{"ft-fortunes-lora/model.f32.safetensors", "ft-frozen-embed/model.f32.safetensors", "base/model.f32.safetensors", "base/model.bf16.safetensors"}
	addConcurrently(t, dir, hub, files, Options{})
	s, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names, _ := s.Names()
	if len(names) != len(files) {
		t.Fatalf("%d models, want %d", len(names), len(files))
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
}

// TestMemStore: the in-memory store (the browser's) holds what a directory
// store holds.
func TestMemStore(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	s := NewMem(Options{})
	for _, f := range hubFiles[:3] {
		ins := inputs(t, path.Join(hub, f))
		if _, _, err := s.Add(f, ins, AddOptions{}); err != nil {
			t.Fatal(err)
		}
		restore(t, s, f, fileBytes(t, ins))
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
}

// TestSpans: units cover every byte once, whatever the segments claim.
func TestSpans(t *testing.T) {
	data := bytes.Repeat([]byte{1, 2, 3, 4}, 1000)
	for _, tc := range []struct {
		name string
		segs []segT
	}{
		{"none", nil},
		{"overlap", []segT{{0, 400}, {100, 400}, {1000, 8}}},
		{"beyond", []segT{{3990, 400}, {5000, 4}}},
		{"odd", []segT{{3, 5}}},
	} {
		var cs []codecSegment
		for _, s := range tc.segs {
			cs = append(cs, codecSegment{Offset: s.off, Length: s.n, Name: "x", DType: f32})
		}
		sp := spans(int64(len(data)), cs)
		cur := int64(0)
		for _, s := range sp {
			if s.off != cur || s.n <= 0 {
				t.Fatalf("%s: span %+v after %d", tc.name, s, cur)
			}
			cur += s.n
		}
		if cur != int64(len(data)) {
			t.Fatalf("%s: spans cover %d of %d bytes", tc.name, cur, len(data))
		}
	}
}

type segT struct{ off, n int64 }

// TestModelNames: a name that is empty, not UTF-8 or holds a control
// character (a newline would split ls's lines, an escape reach the
// terminal of whoever lists the store) is refused, by Add and AddBatch,
// before anything is stored; a name of any other characters is a name.
func TestModelNames(t *testing.T) {
	s := NewMem(Options{})
	in := func() []Input {
		b := []byte("not a model, opaque bytes")
		return []Input{{Name: "f", R: bytes.NewReader(b), Size: int64(len(b))}}
	}
	for _, n := range []string{"", "a\nb", "a\tb", "\x1b[2Jx", "a\x00b", "a\x7fb", "a\u0085b", "\xff"} {
		if _, _, err := s.Add(n, in(), AddOptions{}); err == nil {
			t.Errorf("Add %q: no error", n)
		}
		if _, _, err := s.AddBatch([]BatchModel{{Name: n, Files: in()}}, AddOptions{}); err == nil {
			t.Errorf("AddBatch %q: no error", n)
		}
	}
	for _, n := range []string{"../x", "/abs/model", "名前 with spaces", "ft/model.safetensors"} {
		if _, _, err := s.Add(n, in(), AddOptions{}); err != nil {
			t.Errorf("Add %q: %v", n, err)
		}
	}
	if st, err := s.Stats(); err != nil || len(st.Models) != 4 {
		t.Fatalf("stats: %v, %d models, want 4", err, len(st.Models))
	}
}
