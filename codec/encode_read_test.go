package codec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
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
	if off+int64(len(p)) > r.failAt {
		return 0, errDisk
	}
	return copy(p, r.data[off:]), nil
}

// A read error fails Encode at any thread count, and nothing (workers,
// the hasher) reads the input after Encode returned.
func TestEncodeReadError(t *testing.T) {
	data := realisticValues(dtype.BF16, 3<<20, 7)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}
	for _, threads := range []int{1, 2, 4} {
		for _, failAt := range []int64{0, 1 << 20, int64(len(data)) - 1} {
			r := &failingReader{data: data, failAt: failAt}
			_, err := Encode(context.Background(), io.Discard, []Input{{Name: "w", R: r, Size: int64(len(data)), Segments: segs}}, EncodeOptions{Threads: threads})
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

// countingReader counts the bytes read from it and slows the reads down
// (a disk), so that the hasher would run ahead if it read by itself.
type countingReader struct {
	data []byte
	read atomic.Int64
}

func (r *countingReader) ReadAt(p []byte, off int64) (int, error) {
	r.read.Add(int64(len(p)))
	time.Sleep(100 * time.Microsecond)
	return copy(p, r.data[off:]), nil
}

// Reading a file (not memory), every byte is read once at any thread
// count: the hasher takes the workers' copies (a file larger than memory
// is not read from disk twice); the archives are the same. The one
// exception is the sparse probe's few bytes per tensor (probeBlocks).
func TestEncodeReadsOnce(t *testing.T) {
	data := realisticValues(dtype.BF16, 6<<20, 3)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}
	var first []byte
	for _, threads := range []int{1, 2, 4} {
		r := &countingReader{data: data}
		var buf bytes.Buffer
		if _, err := Encode(context.Background(), &buf, []Input{{Name: "w", R: r, Size: int64(len(data)), Segments: segs}}, EncodeOptions{Threads: threads}); err != nil {
			t.Fatal(err)
		}
		if n, probe := r.read.Load(), int64(sparseProbeReads*sparseProbeBytes); n != int64(len(data))+probe {
			t.Fatalf("threads %d: read %d bytes of a %d-byte input (+ %d of the sparse probe)", threads, n, len(data), probe)
		}
		if first == nil {
			first = buf.Bytes()
		} else if !bytes.Equal(buf.Bytes(), first) {
			t.Fatalf("threads %d: the archive differs from one thread's", threads)
		}
		out, err := DecompressBytes(context.Background(), buf.Bytes(), DecodeOptions{})
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("threads %d: roundtrip: %v", threads, err)
		}
	}
}

// TestEncodeCanceled: a context cancelled before Encode starts fails it
// with the context's error, for a file coded by workers (several tasks)
// and for one coded on the caller's goroutine (a single task), and a read
// error of a single-task file is reported as for the others.
func TestEncodeCanceled(t *testing.T) {
	for _, n := range []int{4 << 10, 3 << 20} {
		data := realisticValues(dtype.BF16, n, 8)
		in := []Input{{Name: "w", R: bytes.NewReader(data), Size: int64(len(data)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}}}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, threads := range []int{1, 2} {
			if _, err := Encode(ctx, io.Discard, in, EncodeOptions{Threads: threads}); !errors.Is(err, context.Canceled) {
				t.Fatalf("%d bytes, threads %d: got %v, want context.Canceled", n, threads, err)
			}
		}
	}
	data := realisticValues(dtype.BF16, 4<<10, 9)
	r := &failingReader{data: data, failAt: 0}
	_, err := Encode(context.Background(), io.Discard, []Input{{Name: "w", R: r, Size: int64(len(data)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}}}, EncodeOptions{Threads: 2})
	if !errors.Is(err, errDisk) {
		t.Fatalf("single task: want the read error, got %v", err)
	}
}

// TestEncodeOptionsRefused: options out of range are an error before
// anything is read, a NaN threshold included (it compared false with
// everything and so meant "never build a table of its own").
func TestEncodeOptionsRefused(t *testing.T) {
	data := realisticValues(dtype.BF16, 1024, 3)
	in := []Input{{Name: "w", R: bytes.NewReader(data), Size: int64(len(data)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}}}
	for _, o := range []EncodeOptions{{ChunkValues: 7}, {ZstdLevel: 23}, {Threads: -1}, {SetupThreshold: -0.1}, {SetupThreshold: math.NaN()}, {Digest: 77}} {
		if _, err := Encode(context.Background(), io.Discard, in, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := Encode(context.Background(), io.Discard, in, EncodeOptions{SetupThreshold: math.Inf(1)}); err != nil {
		t.Errorf("an infinite threshold (never a table of its own): %v", err)
	}
}
