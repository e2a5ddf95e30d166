package serve

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"neuralzip/checkpoint"
	"neuralzip/internal/weedtest"
	"neuralzip/store"
)

// manyStore builds a store of n models at loc ("": a new directory), each
// the hub's base F32 and BF16 files under a name of its own ("org/m0000"…;
// their units shared), in one AddBatch.
func manyStore(tb testing.TB, loc string, n int) string {
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
	dir := loc
	if dir == "" {
		dir = filepath.Join(tb.TempDir(), "many")
	}
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
func BenchmarkStoreListing(b *testing.B) { benchListing(b, manyStore(b, "", 1000)) }

// BenchmarkStoreListingS3 is BenchmarkStoreListing on an s3:// store (a
// SeaweedFS server, as the s3:// tests; skipped without one).
func BenchmarkStoreListingS3(b *testing.B) {
	benchListing(b, manyStore(b, "s3://"+weedtest.Bucket(b)+"/many", 1000))
}

func benchListing(b *testing.B, loc string) {
	srv := New(Config{Log: discard()})
	defer srv.Close()
	src, err := srv.openStore(loc)
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

// TestSourceStoreLive opens a store as one tree (serve.Open, as nzip mount
// does) and changes it beside: Refresh shows a model added (its file
// reading bit-exact), leaves out one whose path a shown file takes (with a
// log line), keeps the *File of every unchanged file, and drops a model
// removed. It needs no FUSE: the mount's own test (serve/mount) does.
func TestSourceStoreLive(t *testing.T) {
	dir, want := hubStore(t)
	var logs lockedLog
	src, err := Open(dir, Config{Log: log.New(&logs, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	if !src.Live() {
		t.Fatal("a store source is not live")
	}
	before := map[string]*File{}
	for _, f := range src.Files() {
		before[f.Name] = f
	}
	if len(before) != len(want) {
		t.Fatalf("%d files, want %d", len(before), len(want))
	}
	gen := src.Refresh(ctx)
	extra := make([]byte, 50_000)
	for i := range extra {
		extra[i] = byte(i * 7 / 3)
	}
	in := func() []store.Input {
		return []store.Input{{Name: "weights.bin", R: bytes.NewReader(extra), Size: int64(len(extra)), Format: "unknown"}}
	}
	writeStore(t, dir, func(st *store.Store) error {
		if _, _, err := st.Add("extra", in(), store.AddOptions{}); err != nil {
			return err
		}
		_, _, err := st.Add("base/model.f32.safetensors/x", in(), store.AddOptions{}) // under a file
		return err
	})
	wait := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(deadlock); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not after %v", what, deadlock)
			}
		}
	}
	wait("the added model", func() bool { return src.Refresh(ctx) != gen })
	now := map[string]*File{}
	for _, f := range src.Files() {
		now[f.Name] = f
	}
	if len(now) != len(want)+1 || now["extra/weights.bin"] == nil {
		t.Fatalf("after the add: %d files, extra/weights.bin %v", len(now), now["extra/weights.bin"] != nil)
	}
	for name, f := range before {
		if now[name] != f {
			t.Errorf("%s: another *File after an add to another model", name)
		}
	}
	got := make([]byte, len(extra))
	if n, err := now["extra/weights.bin"].ReadAt(ctx, got, 0); n != len(extra) || !bytes.Equal(got, extra) {
		t.Errorf("the added model's file: %d bytes, %v", n, err)
	}
	if !strings.Contains(logs.String(), `"base/model.f32.safetensors/x" gives a path`) {
		t.Errorf("the model under a file not logged: %s", logs.String())
	}

	gen = src.Refresh(ctx)
	writeStore(t, dir, func(st *store.Store) error { return st.Remove("stories/ft-continued") })
	wait("the removed model", func() bool { return src.Refresh(ctx) != gen })
	for _, f := range src.Files() {
		if strings.HasPrefix(f.Name, "stories/ft-continued/") {
			t.Errorf("%s still listed", f.Name)
		}
	}
	if n := len(src.Files()); n != len(want)+1-2 {
		t.Errorf("%d files after the removal, want %d", n, len(want)-1)
	}
}
