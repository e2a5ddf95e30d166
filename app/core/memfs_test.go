package core

import (
	"context"
	"io/fs"
	"reflect"
	"slices"
	"testing"

	"neuralzip/assets"
)

// demoMemFS copies a demo model's files into a MemFS under dir, as a
// browser hands over files dropped together.
func demoMemFS(t *testing.T, d assets.Model, dir string) MemFS {
	t.Helper()
	m := MemFS{}
	for _, f := range d.Files {
		b, err := fs.ReadFile(assets.FS, f)
		if err != nil {
			t.Fatal(err)
		}
		m[dir+pathBase(f)] = b
	}
	return m
}

func pathBase(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// TestOpenFSDemos opens every demo model from the embedded files and from
// an in-memory copy: the same tensors, and data read through the files.
func TestOpenFSDemos(t *testing.T) {
	for _, d := range assets.Models() {
		a, err := OpenAsset(d)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		mem := demoMemFS(t, d, "")
		mains := mem.MainFiles()
		if len(mains) != 1 || mains[0] != pathBase(d.Files[0]) {
			t.Errorf("%s: main files %v, want [%s]", d.Name, mains, pathBase(d.Files[0]))
		}
		b, err := OpenFS(mem, mains[0], nil)
		if err != nil {
			t.Fatalf("%s from memory: %v", d.Name, err)
		}
		if a.Format != b.Format || a.Size != b.Size || len(a.Files) != len(d.Files) || len(b.Files) != len(a.Files) {
			t.Errorf("%s: %s %d bytes %d files vs %s %d bytes %d files", d.Name, a.Format, a.Size, len(a.Files), b.Format, b.Size, len(b.Files))
		}
		if !reflect.DeepEqual(a.Tensors, b.Tensors) || len(a.Tensors) == 0 {
			t.Errorf("%s: tensors differ (%d vs %d)", d.Name, len(a.Tensors), len(b.Tensors))
		}
		sa, _, _, err := a.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		sb, _, _, err := b.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sa, sb) {
			t.Errorf("%s: bytes differ", d.Name)
		}
		a.Close()
		b.Close()
	}
}

func TestMemFSOpaqueAndErrors(t *testing.T) {
	mem := MemFS{"notes.txt": []byte("hello"), "sub/bad.gguf": []byte("GGUF\x03\x00\x00\x00\xff\xff"), "sub/x.bin": nil}
	if got := mem.MainFiles(); !reflect.DeepEqual(got, []string{"notes.txt", "sub/bad.gguf", "sub/x.bin"}) {
		t.Errorf("main files %v", got)
	}
	m, err := OpenFS(mem, "notes.txt", nil)
	if err != nil || m.Format != "unknown" || m.Size != 5 || len(m.Tensors) != 0 {
		t.Fatalf("opaque file: %+v, %v", m, err)
	}
	var warned string
	if _, err := OpenFS(mem, "sub/bad.gguf", func(s string) { warned = s }); err != nil || warned == "" {
		t.Errorf("malformed file: err %v, warning %q", err, warned)
	}
	if _, err := OpenFS(mem, "sub", nil); err == nil {
		t.Error("directory opened")
	}
	if _, err := OpenFS(mem, "missing", nil); err == nil {
		t.Error("missing file opened")
	}
}

// TestRunFromMemory runs nzip on a model opened from memory: bit-exact,
// and the archive is kept.
func TestRunFromMemory(t *testing.T) {
	d, _ := Demo("blazeface-front")
	m, err := OpenFS(demoMemFS(t, d, "drop/"), "drop/blazeface-front.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	src, segs, starts, err := m.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	r := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: CodecNZip, Threads: 1}, nil)
	if r.Error != "" || !r.RoundtripOK || int64(len(r.Archive)) != r.Compressed || r.Compressed == 0 {
		t.Fatalf("run: %+v", r)
	}
}
