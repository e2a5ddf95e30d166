//go:build !js

package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// randomModel is a model of one file of n random bytes.
func randomModel(seed uint64, n int) []Input {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return []Input{{Name: "weights.bin", R: bytes.NewReader(b), Size: int64(n), Format: "unknown"}}
}

// addModel opens the store at dir for writing (waiting up to wait for the
// lock), adds model name and closes it.
func addModel(dir, name string, ins []Input, wait time.Duration) error {
	w, err := Open(dir, Options{LockWait: wait})
	if err != nil {
		return err
	}
	_, _, err = w.Add(name, ins, AddOptions{})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestReleaseLetsWritersIn keeps a Release store reading without pause
// from several goroutines while another opening adds a model: the add gets
// the lock (a minute's wait is the deadlock guard, not a timing; without
// the pauses of releaseHold the index reads that overlap keep it out for
// ever), and the reader then sees the new model, restores it and a new
// IndexVersion.
func TestReleaseLetsWritersIn(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	a, b := randomModel(1, 300_000), randomModel(2, 200_000)
	if err := addModel(dir, "a", a, 0); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, Options{ReadOnly: true, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v0, err := r.IndexVersion()
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	var rerr atomic.Value
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if g == 0 { // restores: index reads between decodes
					var m *Manifest
					if m, err = r.Model("a"); err == nil {
						err = r.WriteFile(m, 0, new(bytes.Buffer))
					}
				} else { // index reads alone, overlapping without a pause
					_, err = r.Names()
				}
				if err != nil {
					rerr.Store(err)
					return
				}
				reads.Add(1)
			}
		}()
	}
	for reads.Load() == 0 && rerr.Load() == nil {
		time.Sleep(time.Millisecond)
	}
	err = addModel(dir, "b", b, time.Minute)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("add beside a reading Release store: %v", err)
	}
	if e := rerr.Load(); e != nil {
		t.Fatalf("read: %v", e)
	}
	names, err := r.Names()
	if err != nil || !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("names after the add: %q, %v", names, err)
	}
	restore(t, r, "b", fileBytes(t, b))
	if v, err := r.IndexVersion(); err != nil || v == v0 {
		t.Errorf("IndexVersion %q after an add, %q before (%v)", v, v0, err)
	}
}

// TestDecodeAgain reads a unit from a record whose chunk file is gone (as
// after a gc or repack that moved it): the error says so, and
// decodeAgain (UnitBytes' and WriteFile's retry) reads the record again
// and gives the bytes.
func TestDecodeAgain(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	a := randomModel(3, 100_000)
	if err := addModel(dir, "a", a, 0); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, Options{ReadOnly: true, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := r.Model("a")
	if err != nil {
		t.Fatal(err)
	}
	h := m.Files[0].Units[0]
	u, err := r.unitRec(h)
	if err != nil {
		t.Fatal(err)
	}
	u.Pack[0] ^= 1 // a chunk file that is not there
	if _, err := r.decode(h, u, maxDepth); !errors.Is(err, errPackGone) || !errors.Is(err, ErrChunkDamaged) {
		t.Fatalf("decode from a missing chunk file: %v", err)
	}
	got, _, err := r.decodeAgain(h, false, nil)
	want := fileBytes(t, a)[0]
	if err != nil || int64(len(got)) != u.RawLen || !bytes.Equal(got, want[:u.RawLen]) {
		t.Fatalf("decodeAgain: %d bytes (the unit holds %d), %v", len(got), u.RawLen, err)
	}
}

// closeGuard is how long a test waits for what should end at once (a
// deadlock guard, not a timing: a loaded machine is far quicker).
const closeGuard = 30 * time.Second

// TestReleaseCloseWhileLocked closes a Release store whose read waits
// for the lock a writer holds (LockWait 0: without limit, as nzip serve
// opens): Close returns at once, and the waiting read with
// errReleasedClosed, although the writer still holds the index.
func TestReleaseCloseWhileLocked(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if err := addModel(dir, "a", randomModel(5, 50_000), 0); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, Options{ReadOnly: true, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir, Options{LockWait: time.Minute}) // the writer, until the end
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // also lets the old code's Close and read go on after a failure
	read := make(chan error, 1)
	go func() {
		_, err := r.Names()
		read <- err
	}()
	time.Sleep(300 * time.Millisecond) // for the read to wait for the lock (either order passes)
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(closeGuard):
		t.Fatal("Close waits for the writer's lock")
	}
	select {
	case err := <-read:
		if !errors.Is(err, errReleasedClosed) {
			t.Fatalf("read of a store closed while it waited: %v", err)
		}
	case <-time.After(closeGuard):
		t.Fatal("a read waits for the writer's lock after Close")
	}
}

// TestReleaseMigrated migrates a version 1 directory store under a
// Release store that opened it: its reads are ErrMigrated (not a damaged
// chunk: the new index's units have other addresses), and so is its
// IndexVersion; the store opened again reads the model.
func TestReleaseMigrated(t *testing.T) {
	dir := t.TempDir()
	if err := initVersion(dir, Version1); err != nil {
		t.Fatal(err)
	}
	a := randomModel(6, 100_000)
	if err := addModel(dir, "a", a, 0); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, Options{ReadOnly: true, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := r.Model("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(dir, Options{LockWait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UnitBytes(m.Files[0].Units[0]); !errors.Is(err, ErrMigrated) || errors.Is(err, ErrChunkDamaged) {
		t.Fatalf("a unit read after the migration: %v", err)
	}
	if err := r.WriteFile(m, 0, new(bytes.Buffer)); !errors.Is(err, ErrMigrated) {
		t.Fatalf("a file read after the migration: %v", err)
	}
	if _, err := r.IndexVersion(); !errors.Is(err, ErrMigrated) {
		t.Fatalf("IndexVersion after the migration: %v", err)
	}
	n, err := Open(dir, Options{ReadOnly: true, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Version() != Version2 {
		t.Fatalf("version %d after the migration", n.Version())
	}
	restore(t, n, "a", fileBytes(t, a))
}

// TestReleaseIndexReplaced renames a copy of the index over it: the same
// transaction id in another file, which IndexVersion tells apart (a
// migrated index starts its ids again).
func TestReleaseIndexReplaced(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if err := addModel(dir, "a", randomModel(7, 50_000), 0); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, Options{ReadOnly: true, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v0, err := r.IndexVersion()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, indexName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".copy", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".copy", p); err != nil {
		t.Fatal(err)
	}
	// the old file stays open releaseLinger after the last read: the
	// version changes once the next read opens the new one
	for end := time.Now().Add(closeGuard); ; time.Sleep(10 * time.Millisecond) {
		v, err := r.IndexVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v != v0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("IndexVersion %q of a new index file, as of the old", v)
		}
	}
}
