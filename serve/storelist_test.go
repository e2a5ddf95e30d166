package serve

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/store"
)

// manyStore builds a directory store of n models, each the hub's base
// F32 and BF16 files under a name of its own ("org/m0000"…; their units
// shared), in one AddBatch.
func manyStore(tb testing.TB, n int) string {
	tb.Helper()
	var hub string
	for _, d := range []string{"../../shared/hub/stories260K", "../shared/hub/stories260K"} {
		if _, err := os.Stat(filepath.Join(d, "base")); err == nil {
			hub = d
		}
	}
	if hub == "" {
		tb.Skip("no ../shared/hub/stories260K: skipping")
	}
	type in struct {
		name   string
		b      []byte
		format string
		segs   []checkpoint.Segment
	}
	var files []in
	for _, name := range []string{"model.f32.safetensors", "model.bf16.safetensors"} {
		p := filepath.Join(hub, "base", name)
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		cm, err := checkpoint.OpenPath(p)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, in{name, b, cm.Files[0].Layout.Format, cm.Files[0].Layout.Segments})
	}
	dir := filepath.Join(tb.TempDir(), "many")
	if err := store.Init(dir); err != nil {
		tb.Fatal(err)
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	var ms []store.BatchModel
	for i := range n {
		var ins []store.Input
		for _, f := range files {
			ins = append(ins, store.Input{Name: f.name, R: bytes.NewReader(f.b), Size: int64(len(f.b)), Format: f.format, Segments: f.segs})
		}
		ms = append(ms, store.BatchModel{Name: fmt.Sprintf("org/m%04d", i), Files: ins})
	}
	if _, _, err := st.AddBatch(ms, store.AddOptions{}); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// BenchmarkStoreListing times reading a released store's listing of 1,000
// models: whole (first, as at start) and again with nothing changed (a
// refresh after a write to another model reuses the others' files).
func BenchmarkStoreListing(b *testing.B) {
	dir := manyStore(b, 1000)
	srv := New(Config{Log: discard()})
	defer srv.Close()
	src, err := srv.openStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	src.org = DefaultStoreOrg
	b.Run("first", func(b *testing.B) {
		for range b.N {
			src.models, src.repos = nil, nil
			if err := srv.readStore(src, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("again", func(b *testing.B) {
		for range b.N {
			if err := srv.readStore(src, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
