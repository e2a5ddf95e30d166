package store

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"neuralzip/checkpoint"
)

// shared is the corpus of real weights (../shared from the repository root).
func shared(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("corpus %s absent (../shared not present): skipping", rel)
	}
	return p
}

// inputs opens a model as nzip compress does: loader layout → codec segments.
func inputs(t testing.TB, path string) []Input {
	t.Helper()
	m, err := checkpoint.OpenPath(path)
	if err != nil {
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			t.Fatal(rerr)
		}
		return []Input{{Name: filepath.Base(path), R: bytes.NewReader(b), Size: int64(len(b)), Format: "unknown"}}
	}
	var out []Input
	for _, f := range m.Files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Name: f.Name, R: bytes.NewReader(b), Size: int64(len(b))}
		if f.Layout != nil {
			in.Format = f.Layout.Format
			in.Segments = f.Layout.Segments
		}
		out = append(out, in)
	}
	return out
}

// fileBytes reads every file of a model as stored in the inputs.
func fileBytes(t testing.TB, ins []Input) [][]byte {
	t.Helper()
	var out [][]byte
	for _, in := range ins {
		b := make([]byte, in.Size)
		if _, err := in.R.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// addFiles adds each of files (relative to dir) to s under its relative
// name and returns their bytes, by name, to compare restores with.
func addFiles(t testing.TB, s *Store, dir string, files []string) map[string][][]byte {
	t.Helper()
	want := map[string][][]byte{}
	for _, f := range files {
		ins := inputs(t, path.Join(dir, f))
		if _, _, err := s.Add(f, ins, AddOptions{}); err != nil {
			t.Fatal(err)
		}
		want[f] = fileBytes(t, ins)
	}
	return want
}

// hubFiles lists the hub's model files, F32 first (casts find their F32).
var hubFiles = []string{
	"base/model.f32.safetensors",
	"ft-fortunes-full/model.f32.safetensors",
	"ft-fortunes-lora/model.f32.safetensors",
	"ft-frozen-embed/model.f32.safetensors",
	"ft-continued/model.f32.safetensors",
	"base/model.bf16.safetensors",
	"ft-fortunes-full/model.bf16.safetensors",
	"ft-fortunes-full/model.f16.gguf",
	"ft-fortunes-lora/model.bf16.safetensors",
	"ft-frozen-embed/model.bf16.safetensors",
	"ft-continued/model.bf16.safetensors",
	"tok512.bin",
}

// restore reads model name back and compares it with want.
func restore(t testing.TB, s *Store, name string, want [][]byte) {
	t.Helper()
	m, err := s.Model(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != len(want) {
		t.Fatalf("%s: %d files, want %d", name, len(m.Files), len(want))
	}
	for fi := range m.Files {
		var buf bytes.Buffer
		if err := s.WriteFile(m, fi, &buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want[fi]) {
			t.Fatalf("%s: file %d restores to other bytes", name, fi)
		}
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// removeAndGC removes files[0], checks that gc keeps every chunk the others
// still need (deltas and casts against it) and that they restore and
// verify, then removes them all and returns what the last gc removed and
// the stats after it.
func removeAndGC(t *testing.T, s *Store, files []string, want map[string][][]byte) (GCStats, *Stats) {
	t.Helper()
	if err := s.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	gs, err := s.GC()
	if err != nil {
		t.Fatal(err)
	}
	if gs.Packs != 0 {
		t.Fatalf("gc removed %d chunk files that the delta and the cast still need", gs.Packs)
	}
	for _, f := range files[1:] {
		restore(t, s, f, want[f])
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	for _, f := range files[1:] {
		if err := s.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if gs, err = s.GC(); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return gs, st
}

// addConcurrently adds each file of the hub as a model from its own Store
// on loc, all at once, and fails on any error.
func addConcurrently(t *testing.T, loc, hub string, files []string, opt Options) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(files))
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(loc, opt)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			_, _, errs[i] = s.Add(f, inputs(t, path.Join(hub, f)), AddOptions{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", files[i], err)
		}
	}
}

// killAt makes testHook kill this process (SIGKILL) when it reaches
// phase: the child side of the kill tests.
func killAt(phase string) {
	testHook = func(p string) {
		if p == phase {
			pr, _ := os.FindProcess(os.Getpid())
			pr.Kill()
			time.Sleep(time.Minute)
		}
	}
}

// filesUnder lists the files under dir (none when it is absent), in
// lexical order.
func filesUnder(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}
