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

// hubModel is the F32 and BF16 files of the shared hub's model sub, as
// store.Add takes them, and their bytes by path under the model's name.
func hubModel(t *testing.T, hub, sub, model string, want map[string][]byte) []store.Input {
	t.Helper()
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
	return ins
}

// deadlock guards the waits of TestMountStoreLive (a change shows within
// a couple of seconds; this only keeps a broken build from hanging).
const deadlock = 2 * time.Minute

// writeStore opens the store for writing beside the mount, as nzip store
// add, rm and gc do from another process, and runs fn; the mount must not
// keep it out.
func writeStore(t *testing.T, dir string, fn func(*store.Store) error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		st, err := store.Open(dir, store.Options{LockWait: deadlock})
		if err != nil {
			done <- err
			return
		}
		err = fn(st)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writing the store beside the mount: %v", err)
		}
	case <-time.After(deadlock + 10*time.Second):
		t.Fatal("writing the store beside the mount: stuck (the mount holds the store)")
	}
}

// waitFor polls cond until it holds, failing after the deadlock guard.
func waitFor(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > deadlock {
			t.Fatalf("%s: not after %v", what, deadlock)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// TestMountStoreLive mounts a store of the shared hub's models and changes
// it from this process as nzip store would from another: a model added
// appears (a name looked up as absent before too) and reads bit-exact; a
// model removed disappears, while a file of it opened before keeps
// reading its bytes, and after gc reads them or fails with EIO, never
// with other bytes.
func TestMountStoreLive(t *testing.T) {
	needFUSE(t)
	hub := filepath.Join("..", "..", "..", "shared", "hub", "stories260K")
	if _, err := os.Stat(filepath.Join(hub, "base")); err != nil {
		t.Skip("no ../shared/hub/stories260K: skipping")
	}
	dir := filepath.Join(t.TempDir(), "store")
	if err := store.Init(dir); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	writeStore(t, dir, func(st *store.Store) error {
		for model, sub := range map[string]string{"base": "base", "stories/ft-continued": "ft-continued"} {
			if _, _, err := st.Add(model, hubModel(t, hub, sub, model, want), store.AddOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	var logged lockedBuf
	mnt := mountSource(t, dir, log.New(&logged, "", 0))
	readAll := func(rel string) error {
		got, err := os.ReadFile(filepath.Join(mnt, rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want[rel]) {
			return fmt.Errorf("%s: %d bytes differ from the original", rel, len(got))
		}
		return nil
	}
	for rel := range want {
		if rel == "stories/ft-continued/model.f32.safetensors" {
			continue // read only after its model is removed and collected
		}
		if err := readAll(rel); err != nil {
			t.Fatal(err)
		}
	}
	// a file of the model to be removed, open (and partly read) before
	goneRel := "stories/ft-continued/model.bf16.safetensors"
	goneWant := want[goneRel]
	f, err := os.Open(filepath.Join(mnt, goneRel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // before the unmount
	// and one not read at all (neither the kernel nor the block cache
	// holds its bytes)
	unreadRel := "stories/ft-continued/model.f32.safetensors"
	unread, err := os.Open(filepath.Join(mnt, unreadRel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unread.Close() })
	unreadWant := want[unreadRel]
	head := make([]byte, 1000)
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head, goneWant[:1000]) {
		t.Fatalf("read before the removal: %v", err)
	}
	// looked up while absent: the kernel may keep the name as absent
	if _, err := os.Stat(filepath.Join(mnt, "lora")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lora before the add: %v", err)
	}

	added := map[string][]byte{}
	writeStore(t, dir, func(st *store.Store) error {
		for model, sub := range map[string]string{"stories/fortunes": "ft-fortunes-full", "lora": "ft-fortunes-lora"} {
			if _, _, err := st.Add(model, hubModel(t, hub, sub, model, added), store.AddOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	took := waitFor(t, "the added models listed", func() bool {
		es, err := os.ReadDir(filepath.Join(mnt, "stories"))
		_, serr := os.Stat(filepath.Join(mnt, "lora", "model.f32.safetensors"))
		return err == nil && len(es) == 2 && es[0].Name() == "fortunes" && serr == nil
	})
	t.Logf("added models listed after %v", took)
	for rel, b := range added {
		want[rel] = b
		if err := readAll(rel); err != nil {
			t.Error(err)
		}
	}

	// lookups of the model's names all through its removal (one that
	// races the tree's change must not bring the name back)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, rel := range []string{goneRel, "stories/ft-continued"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				os.Stat(filepath.Join(mnt, rel))
			}
		}()
	}
	writeStore(t, dir, func(st *store.Store) error { return st.Remove("stories/ft-continued") })
	goneNow := func() bool {
		es, err := os.ReadDir(filepath.Join(mnt, "stories"))
		_, serr := os.Stat(filepath.Join(mnt, goneRel))
		return err == nil && len(es) == 1 && errors.Is(serr, fs.ErrNotExist)
	}
	took = waitFor(t, "the removed model gone", goneNow)
	close(stop)
	wg.Wait()
	t.Logf("removed model gone after %v", took)
	time.Sleep(liveTimeout + lookEvery + 100*time.Millisecond) // what the kernel keeps expired
	if !goneNow() {
		t.Errorf("the removed model is back")
	}
	if _, err := os.Stat(filepath.Join(mnt, "stories", "ft-continued")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed model's directory: %v", err)
	}
	// its units are still in the store: the open file reads them
	p := make([]byte, 100_000)
	if n, err := f.ReadAt(p, int64(len(goneWant))/2); n != len(p) || !bytes.Equal(p, goneWant[len(goneWant)/2:][:n]) {
		t.Errorf("the open file of the removed model: %d bytes, %v", n, err)
	}
	// collected: each read gives the bytes (the caches) or EIO, never others
	writeStore(t, dir, func(st *store.Store) error { _, err := st.GC(); return err })
	eio := map[string]int{}
	for _, c := range []struct {
		name string
		f    *os.File
		want []byte
	}{{goneRel, f, goneWant}, {unreadRel, unread, unreadWant}} {
		for off := 0; off < len(c.want); off += len(p) {
			n, err := c.f.ReadAt(p, int64(off))
			if err != nil && err != io.EOF {
				if !errors.Is(err, syscall.EIO) {
					t.Fatalf("%s: read at %d after gc: %v, want the bytes or EIO", c.name, off, err)
				}
				eio[c.name]++
				continue
			}
			if !bytes.Equal(p[:n], c.want[off:off+n]) {
				t.Fatalf("%s: read at %d after gc: other bytes", c.name, off)
			}
		}
	}
	t.Logf("after gc, reads of the removed model's open files that failed with EIO: %v", eio)
	if eio[unreadRel] == 0 {
		t.Errorf("%s: every read after gc gave the bytes: were its units collected?", unreadRel)
	}
	// the others still read
	delete(want, goneRel)
	delete(want, "stories/ft-continued/model.f32.safetensors")
	n := 0
	err = filepath.WalkDir(mnt, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		n++
		return readAll(filepath.ToSlash(rel))
	})
	if err != nil || n != len(want) {
		t.Errorf("%d files after the changes (want %d): %v", n, len(want), err)
	}
	if !strings.Contains(logged.String(), "changed") {
		t.Errorf("the changes were not logged: %q", logged.String())
	}
}
