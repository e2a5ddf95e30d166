//go:build !js

package store

import (
	"bytes"
	"errors"
	"path"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// failingReader reads left bytes, then fails.
type failingReader struct {
	r    *bytes.Reader
	left atomic.Int64
}

var errSecondRead = errors.New("second read")

func (f *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if f.left.Add(-int64(len(p))) < 0 {
		return 0, errSecondRead
	}
	return f.r.ReadAt(p, off)
}

// TestAddBatchFailsWhileWriting: an AddBatch that fails while its chunk
// file is being written (its -compare archive, coded beside the units,
// cannot read the second half of the input again) returns the error,
// stores nothing and leaves nothing in tmp: its chunk file, if it was
// done already, is an orphan that GC removes.
func TestAddBatchFailsWhileWriting(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	ins := inputs(t, path.Join(hub, "base/model.f32.safetensors"))
	b := fileBytes(t, ins)[0]
	fr := &failingReader{r: bytes.NewReader(b)}
	fr.left.Store(int64(len(b) + len(b)/2))
	ins[0].R = fr
	s, dir := tempStore(t)
	if _, _, err := s.AddBatch([]BatchModel{{Name: "m", Files: ins}}, AddOptions{Compare: true}); !errors.Is(err, errSecondRead) {
		t.Fatalf("got %v, want the input's error", err)
	}
	if names, err := s.Names(); err != nil || len(names) != 0 {
		t.Fatalf("models %v (%v), want none", names, err)
	}
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"tmp", "packs"} {
		if left := filesUnder(filepath.Join(dir, d)); len(left) > 0 {
			t.Errorf("left in %s: %v", d, left)
		}
	}
}
