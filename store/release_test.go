//go:build !js

package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
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
	if err != nil || !bytes.Equal(got, want[:len(got)]) {
		t.Fatalf("decodeAgain: %d bytes, %v", len(got), err)
	}
}
