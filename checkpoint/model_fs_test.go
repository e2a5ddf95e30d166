package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// noReaderAtFS hides io.ReaderAt of its files, so that OpenFS reads them
// into memory.
type noReaderAtFS struct{ fs.FS }

type plainFile struct{ fs.File }

func (f noReaderAtFS) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return plainFile{file}, nil
}

// TestOpenFSMatchesOpenPath opens every testdata model through OpenPath and
// through OpenFS on the same directory (with and without io.ReaderAt) and
// on an in-memory copy: same files, names, sizes and layouts.
func TestOpenFSMatchesOpenPath(t *testing.T) {
	var paths []string
	filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".bin") && !strings.Contains(p, "failed") {
			paths = append(paths, p)
		}
		return nil
	})
	if len(paths) < 10 {
		t.Fatalf("only %d testdata files", len(paths))
	}
	mem := fstest.MapFS{}
	filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			mem[filepath.ToSlash(p)] = &fstest.MapFile{Data: b}
		}
		return nil
	})
	opened := 0
	for _, p := range paths {
		want, werr := OpenPath(p)
		for _, c := range []struct {
			name string
			fsys fs.FS
			path string
		}{
			{"dirfs", os.DirFS(filepath.Dir(p)), filepath.Base(p)},
			{"noreaderat", noReaderAtFS{os.DirFS(filepath.Dir(p))}, filepath.Base(p)},
			{"mapfs", mem, filepath.ToSlash(p)},
		} {
			got, gerr := OpenFS(c.fsys, c.path)
			if (werr == nil) != (gerr == nil) {
				t.Errorf("%s (%s): OpenPath error %v, OpenFS error %v", p, c.name, werr, gerr)
				continue
			}
			if werr != nil {
				var fe1, fe2 *FormatError
				if errors.As(werr, &fe1) != errors.As(gerr, &fe2) {
					t.Errorf("%s (%s): errors differ in kind: %v vs %v", p, c.name, werr, gerr)
				}
				continue
			}
			if got.Format != want.Format || len(got.Files) != len(want.Files) {
				t.Errorf("%s (%s): %s with %d files, want %s with %d", p, c.name, got.Format, len(got.Files), want.Format, len(want.Files))
				continue
			}
			for i := range want.Files {
				g, w := got.Files[i], want.Files[i]
				if g.Name != w.Name || g.Size != w.Size || !reflect.DeepEqual(g.Layout, w.Layout) {
					t.Errorf("%s (%s): file %d: %s %d bytes, want %s %d bytes (layouts equal: %v)", p, c.name, i, g.Name, g.Size, w.Name, w.Size, reflect.DeepEqual(g.Layout, w.Layout))
				}
			}
		}
		if werr == nil {
			opened++
		}
	}
	if opened < 10 {
		t.Errorf("only %d testdata models opened", opened)
	}
}

func TestOpenFSErrors(t *testing.T) {
	mem := fstest.MapFS{"m/model.json": &fstest.MapFile{Data: mustRead(t, "testdata/tfjs/model.json")}}
	if _, err := OpenFS(mem, "m/model.json"); err == nil || !strings.Contains(err.Error(), "weight") {
		t.Errorf("TF.js model without its weight files: %v, want an error naming the weight file", err)
	}
	if _, err := OpenFS(mem, "../x"); err == nil {
		t.Error("invalid path accepted")
	}
	if _, err := OpenFS(mem, "m"); err == nil {
		t.Error("directory accepted")
	}
	if _, err := OpenFS(mem, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzOpenFS opens a model and one companion held in memory (an ONNX model
// with external data, a TF.js model.json with a weight file): errors, never
// a panic or a hang.
func FuzzOpenFS(f *testing.F) {
	for _, p := range [][2]string{{"testdata/onnx/external.onnx", "testdata/onnx/external.bin"}, {"testdata/tfjs/model.json", ""}, {"testdata/tfjs/layers/model.json", "testdata/tfjs/layers/group1-shard1of1.bin"}} {
		main, err := os.ReadFile(p[0])
		if err != nil {
			f.Fatal(err)
		}
		var comp []byte
		if p[1] != "" {
			if comp, err = os.ReadFile(p[1]); err != nil {
				f.Fatal(err)
			}
		}
		f.Add(filepath.Base(p[0]), main, filepath.Base(p[1]), comp)
	}
	f.Fuzz(func(t *testing.T, name string, main []byte, compName string, comp []byte) {
		if !fs.ValidPath(name) || name == "." {
			return
		}
		fsys := fstest.MapFS{name: &fstest.MapFile{Data: main}}
		if fs.ValidPath(compName) && compName != "." && compName != name {
			fsys[compName] = &fstest.MapFile{Data: comp}
		}
		if m, err := OpenFS(fsys, name); err == nil && len(m.Files) == 0 {
			t.Fatal("a model without files")
		}
	})
}
