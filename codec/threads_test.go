package codec

import (
	"bytes"
	"context"
	"io"
	"testing"

	"neuralzip/dtype"
)

// EncodeOptions.Threads far beyond what can run (a million goroutines, each
// with its coder, took half a minute and gigabytes) is clamped to
// MaxThreads and to the blocks there are: coding and every way of decoding
// a small file allocate little.
func TestThreadsClamped(t *testing.T) {
	if n, ok := ClampThreads(1_000_000); !ok || n != MaxThreads() || n > 256 || n < 1 {
		t.Fatalf("ClampThreads(1e6) = %d, %v (MaxThreads %d)", n, ok, MaxThreads())
	}
	for _, n := range []int{0, 1, MaxThreads()} {
		if m, ok := ClampThreads(n); ok || m != n {
			t.Fatalf("ClampThreads(%d) = %d, %v", n, m, ok)
		}
	}
	data := realisticValues(dtype.BF16, 20000, 1)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}
	opt := EncodeOptions{Threads: 1_000_000}
	var arc []byte
	var err error
	check := func(what string, fn func()) {
		t.Helper()
		if n := allocated(fn); err != nil || n > 64<<20 {
			t.Fatalf("%s with a million threads: %v, %d MiB allocated", what, err, n>>20)
		}
	}
	check("compress", func() { arc, err = CompressBytes(context.Background(), data, segs, opt) })
	var out []byte
	check("decompress", func() { out, err = DecompressBytes(context.Background(), arc, opt.Decoding()) })
	if !bytes.Equal(out, data) {
		t.Fatal("roundtrip differs")
	}
	rd, err := NewMemReader(arc)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	check("WriteFile", func() { err = rd.WriteFile(context.Background(), io.Discard, 0, opt.Decoding()) })
	check("WriteTensor", func() { _, err = rd.WriteTensor(context.Background(), io.Discard, "w", opt.Decoding()) })
	check("ReadFileTo", func() { _, err = rd.ReadFileTo(context.Background(), nil, 0, opt.Decoding()) })
}
