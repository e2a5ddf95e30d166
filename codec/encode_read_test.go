package codec

import (
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"neuralzip/dtype"
)

// failingReader fails every read that reaches failAt, and records reads
// made after the test marked Encode as returned.
type failingReader struct {
	data     []byte
	failAt   int64
	returned atomic.Bool
	late     atomic.Int32
}

var errDisk = errors.New("disk on fire")

func (r *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if r.returned.Load() {
		r.late.Add(1)
	}
	if len(p) == 1<<20 {
		// the hasher's pieces: slow, and they do not fail, so that the
		// workers fail while it still reads
		time.Sleep(2 * time.Millisecond)
		return copy(p, r.data[off:]), nil
	}
	if off+int64(len(p)) > r.failAt {
		return 0, errDisk
	}
	return copy(p, r.data[off:]), nil
}

// A read error fails Encode at any thread count, and nothing (workers or
// the goroutine that hashes ahead) reads the input after Encode returned.
func TestEncodeReadError(t *testing.T) {
	data := realisticValues(dtype.BF16, 3<<20, 7)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}
	for _, threads := range []int{1, 2, 4} {
		for _, failAt := range []int64{0, 1 << 20, int64(len(data)) - 1} {
			r := &failingReader{data: data, failAt: failAt}
			_, err := Encode(io.Discard, []Input{{Name: "w", R: r, Size: int64(len(data)), Segments: segs}}, Options{Threads: threads})
			r.returned.Store(true)
			time.Sleep(5 * time.Millisecond) // time for a stray reader to show
			if !errors.Is(err, errDisk) {
				t.Fatalf("threads %d, fail at %d: want the read error, got %v", threads, failAt, err)
			}
			if n := r.late.Load(); n != 0 {
				t.Fatalf("threads %d, fail at %d: %d reads after Encode returned", threads, failAt, n)
			}
		}
	}
}
