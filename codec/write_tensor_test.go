package codec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"neuralzip/dtype"
)

// WriteTensor writes exactly a tensor's bytes (Tensor's), for tensors that
// start and end inside blocks, span several, or are empty, at any thread
// count; a name no tensor has is ErrNotFound.
func TestWriteTensor(t *testing.T) {
	tensors := map[string][]byte{
		"a": realisticValues(dtype.BF16, 5000, 1),
		"b": realisticValues(dtype.BF16, 777, 2),
		"c": realisticValues(dtype.BF16, 3000, 3),
		"e": nil,
	}
	file, segs := tensorFile(dtype.BF16, tensors)
	arc, err := CompressBytes(context.Background(), file, segs, EncodeOptions{Threads: 2, ChunkValues: 1000})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewMemReader(arc)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for name, data := range tensors {
		for _, th := range []int{1, 3} {
			var b bytes.Buffer
			info, err := rd.WriteTensor(context.Background(), &b, name, DecodeOptions{Threads: th})
			if err != nil || info.Name != name || !bytes.Equal(b.Bytes(), data) {
				t.Fatalf("tensor %q, %d threads: %v, %d bytes, want %d", name, th, err, b.Len(), len(data))
			}
		}
	}
	if _, err := rd.WriteTensor(context.Background(), io.Discard, "nope", DecodeOptions{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing tensor: %v", err)
	}
}

// WriteTensor streams: a tiny archive of a 256 MiB tensor (duplicate
// blocks) decodes in a few blocks' worth of memory, not the tensor's size.
func TestWriteTensorBounded(t *testing.T) {
	a := bigZeroTensor(t, 64, false)
	rd, err := NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	// the free list may hold small buffers of earlier tests, each of which
	// a 4 MiB block would replace
	for len(freeBufs) > 0 {
		<-freeBufs
	}
	var w countWriter
	n := allocated(func() { _, err = rd.WriteTensor(context.Background(), &w, "t", DecodeOptions{Threads: 2}) })
	if err != nil || w.n != 64<<22 || w.nonzero {
		t.Fatalf("%v: %d bytes written (nonzero %v)", err, w.n, w.nonzero)
	}
	if n > 64<<20 {
		t.Fatalf("a %d-byte archive of a %d MiB tensor allocated %d MiB", len(a), w.n>>20, n>>20)
	}
	t.Logf("%d MiB tensor from %d bytes: %.1f MiB allocated", w.n>>20, len(a), float64(n)/(1<<20))
}

// countWriter counts the bytes written to it and whether any was not 0.
type countWriter struct {
	n       int64
	nonzero bool
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	for _, c := range p {
		if c != 0 {
			w.nonzero = true
			break
		}
	}
	return len(p), nil
}
