//go:build !js

package store

import (
	"bytes"
	"errors"
	"math/bits"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
)

// TestAddBatchMapped: AddBatch of files (mapped in place where the
// platform maps them: mapInput) makes the directory store that the same
// bytes read from memory make, and that Add makes (its chunk files put
// whole, AddBatch's streamed while coding): the same index, the same
// chunk files; every model restores byte for byte.
func TestAddBatchMapped(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	defer func(m int64) { mapMin = m }(mapMin)
	mapMin = 0 // map every file, however small
	names := hubOrders()["sorted"]
	var inMem, inFiles []BatchModel
	for _, n := range names {
		ins := inputs(t, path.Join(hub, n))
		if len(ins) != 1 {
			t.Fatalf("%s: %d files", n, len(ins))
		}
		files := slices.Clone(ins)
		for i := range files {
			f, err := os.Open(path.Join(hub, n))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			files[i].R = f
		}
		inMem = append(inMem, BatchModel{Name: n, Files: ins})
		inFiles = append(inFiles, BatchModel{Name: n, Files: files})
	}
	stores := map[string]*Store{}
	dirs := map[string]string{}
	for _, how := range []string{"memory", "files", "Add"} {
		s, dir := tempStore(t)
		stores[how], dirs[how] = s, dir
		switch how {
		case "memory":
			if _, _, err := s.AddBatch(inMem, AddOptions{}); err != nil {
				t.Fatal(err)
			}
		case "files":
			if _, _, err := s.AddBatch(inFiles, AddOptions{}); err != nil {
				t.Fatal(err)
			}
		case "Add":
			for _, bm := range inMem {
				if _, _, err := s.Add(bm.Name, bm.Files, AddOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	sameIndex(t, stores["memory"], stores["files"], "mapped files")
	sameIndex(t, stores["Add"], stores["files"], "mapped files")
	packs := func(dir string) []string {
		var out []string
		for _, p := range filesUnder(filepath.Join(dir, "packs")) {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if want, got := packs(dirs["Add"]), packs(dirs["files"]); !slices.Equal(want, got) || len(got) == 0 {
		t.Fatalf("chunk files: Add %v, AddBatch of files %v", want, got)
	}
	if left, _ := os.ReadDir(filepath.Join(dirs["files"], "tmp")); len(left) > 0 {
		t.Fatalf("left in tmp: %v", left)
	}
	for i, bm := range inMem {
		restore(t, stores["files"], bm.Name, fileBytes(t, inMem[i].Files))
	}
}

// TestAddBatchInputCutShort: a mapped input cut short while it is being
// added (after it was mapped, before it is hashed and coded) is an error,
// ErrInputChanged, not a crash; nothing is committed and the store
// still takes the model once the file is whole again.
func TestAddBatchInputCutShort(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(shared(t, "hub/stories260K"), "base", "model.f32.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer func(m int64) { mapMin = m }(mapMin)
	mapMin = 0
	p := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ins := inputs(t, p)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range ins {
		ins[i].R = f
	}
	s, _ := tempStore(t)
	defer func() { testHook = nil }()
	testHook = func(phase string) {
		if phase == "read" {
			if err := os.Truncate(p, 4096); err != nil {
				t.Error(err)
			}
		}
	}
	_, _, err = s.AddBatch([]BatchModel{{Name: "m", Files: ins}}, AddOptions{})
	testHook = nil
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("add of a file cut short: %v, want ErrInputChanged", err)
	}
	if names, err := s.Names(); err != nil || len(names) != 0 {
		t.Fatalf("after the failed add: %v, %v", names, err)
	}
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddBatch([]BatchModel{{Name: "m", Files: ins}}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	restore(t, s, "m", [][]byte{src})
}

// TestStreamable: a model larger than BatchBytes goes through AddBatch
// only when every file of it is mapped and it fits in half the memory;
// a reader that is not a file, a machine of unknown memory or too little
// of it send it through Add.
func TestStreamable(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "big")
	const size = 3 << 20 // above mapMin
	if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file := Input{Name: "big", R: f, Size: size}
	if _, ok := mappable(f, size); !ok || bits.UintSize < 64 {
		if streamable([]Input{file}, size, 1<<40) {
			t.Fatal("streamable where the file is not mapped or the platform is 32-bit")
		}
		t.Skip("inputs are not mapped on this platform, or it is 32-bit")
	}
	mem := uint64(4 * size)
	for _, c := range []struct {
		files []Input
		mem   uint64
		want  bool
	}{
		{[]Input{file}, mem, true},
		{[]Input{file, file}, mem, true},
		{[]Input{file}, 2*size - 1, false}, // more than half the memory
		{[]Input{file}, 0, false},          // memory unknown
		{[]Input{file, {Name: "r", R: bytes.NewReader(make([]byte, size)), Size: size}}, mem, false},
		{[]Input{{Name: "short", R: f, Size: size + 1}}, mem, false},
	} {
		var n int64
		for _, in := range c.files {
			n += in.Size
		}
		if got := streamable(c.files, n, c.mem); got != c.want {
			t.Errorf("%d files, %d bytes, memory %d: streamable %v, want %v", len(c.files), n, c.mem, got, c.want)
		}
	}
}
