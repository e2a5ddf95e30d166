package trajectory

import (
	"context"
	"io"
	"runtime"
	"testing"

	"neuralzip/codec"
)

// allocatedBytes returns the bytes fn allocates.
func allocatedBytes(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A million threads (EncodeOptions.Threads) is clamped: packing, verifying,
// streaming and extracting a small run allocate little.
func TestThreadsClamped(t *testing.T) {
	steps := synthSteps(3)
	opt := codec.EncodeOptions{Threads: 1_000_000}
	dopt := codec.DecodeOptions{Threads: opt.Threads}
	var f *memFile
	check := func(what string, fn func() error) {
		t.Helper()
		var err error
		if n := allocatedBytes(func() { err = fn() }); err != nil || n > 64<<20 {
			t.Fatalf("%s with a million threads: %v, %d MiB allocated", what, err, n>>20)
		}
	}
	check("pack", func() error { f = packOpt(t, steps, 2, RefPrevious, opt); return nil })
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	check("Verify", func() error { return a.Verify(context.Background(), dopt, nil) })
	check("Extract", func() error { _, err := a.Extract(context.Background(), 2, dopt); return err })
	check("StreamWith", func() error {
		s, err := a.StreamWith(context.Background(), 2, dopt)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.WriteFile(context.Background(), io.Discard, 0, dopt)
	})
	checkAll(t, f, steps)
}
