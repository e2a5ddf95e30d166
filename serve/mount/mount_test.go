//go:build linux

package mount

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/serve"
	"neuralzip/store"
)

// needFUSE skips a test, saying why, where FUSE cannot be used.
func needFUSE(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("%v: skipping", err)
	}
}

// mounted reports whether dir is in /proc/mounts.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

// mountSource opens and mounts a source in a temporary directory; cleanup
// unmounts it and checks that no mount is left.
func mountSource(t *testing.T, source string, lg *log.Logger) string {
	t.Helper()
	src, err := serve.Open(source, serve.Config{Log: lg})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(dir, 0o755)
	m, err := New(src, dir, Options{Log: lg})
	if err != nil {
		src.Close()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("%v: skipping", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
		done := make(chan struct{})
		go func() { m.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the file system still serves 5 s after Unmount (a file left open?)")
		}
		src.Close()
		if mounted(t, dir) {
			t.Errorf("%s is still mounted", dir)
		}
	})
	return dir
}

// model returns the bytes of a real model from ../shared, or skips.
func model(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", rel))
	if err != nil {
		t.Skipf("%s not present: skipping", rel)
	}
	return b
}

// writeArchive writes an archive of files (name → bytes), with blocks of
// chunk values (0: the default), and returns its block lists by file name.
func writeArchive(t *testing.T, path string, chunk int, names []string, data [][]byte) map[string][]codec.BlockInfo {
	t.Helper()
	var in []codec.Input
	for i, n := range names {
		in = append(in, codec.Input{Name: n, R: bytes.NewReader(data[i]), Size: int64(len(data[i]))})
	}
	var buf bytes.Buffer
	if _, err := codec.Encode(context.Background(), &buf, in, codec.EncodeOptions{ChunkValues: chunk}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := codec.NewMemReader(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string][]codec.BlockInfo{}
	for _, fi := range r.Files() {
		blocks[fi.Name] = fi.Blocks()
	}
	return blocks
}

// TestMount mounts a multi-file archive holding real BF16 models, and a
// directory of the same files: names, sizes and modes; every file's SHA-256; preads at the
// archive's block edges and around multiples of 128 KiB; an mmap read;
// writing refused.
func TestMount(t *testing.T) {
	needFUSE(t)
	stories := model(t, "models/original/stories260K.bf16.safetensors")
	real := model(t, "models/bench/real-bf16.safetensors")
	work := t.TempDir()
	files := map[string][]byte{
		"stories260K.bf16.safetensors": stories,
		"real-bf16.safetensors":        real,
		"config.json":                  []byte(`{"dim": 64}`),
		"sub/deeper/x.bin":             bytes.Repeat([]byte("0123456789abcdef"), 40_000),
		"sub/empty.bin":                {},
	}
	var names []string
	var data [][]byte
	for n, b := range files {
		names = append(names, n)
		data = append(data, b)
	}
	arc := filepath.Join(work, "m.nzip")
	blocks := writeArchive(t, arc, 0, names, data)
	plain := filepath.Join(work, "plain")
	for n, b := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(plain, n)), 0o755)
		os.WriteFile(filepath.Join(plain, n), b, 0o644)
	}
	lg := log.New(io.Discard, "", 0)
	for _, source := range []string{arc, plain} {
		dir := mountSource(t, source, lg)
		// the tree: every file, its directories, nothing else
		seen := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			st, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			if d.IsDir() {
				if st.Mode().Perm() != 0o555 {
					t.Errorf("%s: directory %s has mode %v", source, rel, st.Mode())
				}
				return nil
			}
			want, ok := files[filepath.ToSlash(rel)]
			if !ok || st.Size() != int64(len(want)) || st.Mode() != 0o444 {
				t.Errorf("%s: %s: mode %v, %d bytes", source, rel, st.Mode(), st.Size())
			}
			seen++
			got, err := os.ReadFile(p)
			if err != nil || sha256.Sum256(got) != sha256.Sum256(want) {
				t.Errorf("%s: %s: SHA-256 differs (%v)", source, rel, err)
			}
			return nil
		})
		if err != nil || seen != len(files) {
			t.Fatalf("%s: %d files seen: %v", source, seen, err)
		}

		// preads at block edges, around 128 KiB multiples and at random
		name, want := "real-bf16.safetensors", real
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() }) // before the unmount
		var offs []int64
		for _, b := range blocks[name] {
			offs = append(offs, b.Offset-1, b.Offset, b.Offset+b.Length-3)
		}
		if len(blocks[name]) < 10 {
			t.Fatalf("%s has %d blocks: no edges to test", name, len(blocks[name]))
		}
		for k := int64(131072); k < int64(len(want)); k += 131072 {
			offs = append(offs, k-5, k, k+1)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for range 50 {
			offs = append(offs, rng.Int64N(int64(len(want))))
		}
		for i, off := range offs {
			off = max(0, off)
			p := make([]byte, 1+rng.IntN(200_000))
			if i%3 == 0 {
				p = p[:1+rng.IntN(16)]
			}
			n, err := f.ReadAt(p, off)
			exp := want[off:min(int64(len(want)), off+int64(len(p)))]
			if !bytes.Equal(p[:n], exp) || n < len(p) && err != io.EOF {
				t.Fatalf("%s: pread of %d bytes at %d: %d, %v: wrong bytes", source, len(p), off, n, err)
			}
		}
		// mmap
		m, err := syscall.Mmap(int(f.Fd()), 0, len(want), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.Fatalf("%s: mmap: %v", source, err)
		}
		if !bytes.Equal(m, want) {
			t.Errorf("%s: the mapped bytes differ", source)
		}
		syscall.Munmap(m)
		f.Close()
		// read-only
		if _, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0); err == nil {
			t.Errorf("%s: opened for writing", source)
		}
		if err := os.WriteFile(filepath.Join(dir, "new"), []byte("x"), 0o644); err == nil {
			t.Errorf("%s: created a file", source)
		}
	}
}

// TestMountCorrupt: a damaged block gives EIO (and a log line), never
// other bytes; the rest of the file still reads.
func TestMountCorrupt(t *testing.T) {
	needFUSE(t)
	stories := model(t, "models/original/stories260K.bf16.safetensors")
	arc := filepath.Join(t.TempDir(), "c.nzip")
	blocks := writeArchive(t, arc, 0, []string{"m.safetensors"}, [][]byte{stories})["m.safetensors"]
	b := blocks[len(blocks)/2]
	fh, _ := os.OpenFile(arc, os.O_RDWR, 0)
	one := []byte{0}
	fh.ReadAt(one, b.Payload+b.Compressed/2)
	one[0] ^= 0x55
	fh.WriteAt(one, b.Payload+b.Compressed/2)
	fh.Close()
	var logged lockedBuf
	dir := mountSource(t, arc, log.New(&logged, "", 0))
	f, err := os.Open(filepath.Join(dir, "m.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // before the unmount
	p := make([]byte, 100)
	if _, err := f.ReadAt(p, b.Offset+10); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of a damaged block: %v, want EIO", err)
	}
	if !strings.Contains(logged.String(), "m.safetensors") {
		t.Errorf("nothing logged: %q", logged.String())
	}
	if _, err := f.ReadAt(p, 0); err != nil || !bytes.Equal(p, stories[:100]) {
		t.Errorf("read of an intact block: %v", err)
	}
}

// lockedBuf collects the log of the FUSE server's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestMountStore mounts a store of the shared hub's models: a directory per
// model (nested by the model name's parts), each file's SHA-256 equal to the
// original's and to the one the store recorded.
func TestMountStore(t *testing.T) {
	needFUSE(t)
	hub := filepath.Join("..", "..", "..", "shared", "hub", "stories260K")
	if _, err := os.Stat(filepath.Join(hub, "base")); err != nil {
		t.Skip("no ../shared/hub/stories260K: skipping")
	}
	dir := filepath.Join(t.TempDir(), "store")
	if err := store.Init(dir); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for model, sub := range map[string]string{"base": "base", "stories/ft-continued": "ft-continued"} {
		var ins []store.Input
		for _, name := range []string{"model.f32.safetensors", "model.bf16.safetensors"} {
			p := filepath.Join(hub, sub, name)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			cm, err := checkpoint.OpenPath(p)
			if err != nil {
				t.Fatal(err)
			}
			ins = append(ins, store.Input{Name: name, R: bytes.NewReader(data), Size: int64(len(data)),
				Format: cm.Files[0].Layout.Format, Segments: cm.Files[0].Layout.Segments})
			want[model+"/"+name] = data
		}
		if _, _, err := st.Add(model, ins, store.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	mnt := mountSource(t, dir, log.New(io.Discard, "", 0))
	n := 0
	err = filepath.WalkDir(mnt, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		data, ok := want[filepath.ToSlash(rel)]
		if !ok {
			return fmt.Errorf("unexpected file %s", rel)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if sha256.Sum256(got) != sha256.Sum256(data) {
			return fmt.Errorf("%s: differs from the original", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("%d files read, want %d", n, len(want))
	}
}
