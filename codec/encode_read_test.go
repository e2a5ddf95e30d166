package codec

import (
	"bytes"
	"errors"
	"io"
	"sync"
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

// trackingReader records how far reads of 1 MiB (the hasher's pieces) ran
// ahead of the other reads (the workers' tasks), which it slows down.
type trackingReader struct {
	data       []byte
	mu         sync.Mutex
	workersEnd int64 // end of the furthest task read
	lead       int64 // most the hasher read beyond workersEnd
}

func (r *trackingReader) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	r.mu.Lock()
	if len(p) == 1<<20 {
		r.lead = max(r.lead, end-r.workersEnd)
	} else {
		r.workersEnd = max(r.workersEnd, end)
	}
	r.mu.Unlock()
	if len(p) != 1<<20 {
		time.Sleep(200 * time.Microsecond)
	}
	return copy(p, r.data[off:]), nil
}

// Reading a file (not memory), the hasher stays within hashAheadMax of the
// tasks handed to the workers, so that a file larger than memory is not
// read from disk twice; the archive is the same as with one thread.
func TestHashAheadBounded(t *testing.T) {
	defer func(m int64) { hashAheadMax = m }(hashAheadMax)
	hashAheadMax = 2 << 20
	data := realisticValues(dtype.BF16, 12<<20, 3)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}
	r := &trackingReader{data: data}
	var two, one bytes.Buffer
	if _, err := Encode(&two, []Input{{Name: "w", R: r, Size: int64(len(data)), Segments: segs}}, Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	// dispatched but unread tasks: the two channels' buffers and the workers
	inFlight := int64(2*(2*2+2)+2) * (minTaskBytes + 256<<10)
	if r.lead > hashAheadMax+inFlight {
		t.Fatalf("the hasher read %d bytes beyond the workers (bound %d + %d in flight)", r.lead, hashAheadMax, inFlight)
	}
	if _, err := Encode(&one, []Input{{Name: "w", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs}}, Options{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(two.Bytes(), one.Bytes()) {
		t.Fatal("archives differ between 1 and 2 threads")
	}
	t.Logf("hasher lead %d bytes", r.lead)
}
