package infer

import (
	"bytes"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"neuralzip/codec"
)

// atLeastTwoProcs runs the test with GOMAXPROCS ≥ 2, so that prefetching
// is on even on a one-core machine.
func atLeastTwoProcs(t *testing.T) {
	if p := runtime.GOMAXPROCS(0); p < 2 {
		runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(p) })
	}
}

// A job the worker has not started is taken back by collect, and the
// worker then skips it; a started one is waited for. Each job is decoded
// exactly once, by one side or the other.
func TestWorkerTakeBack(t *testing.T) {
	atLeastTwoProcs(t)
	var calls atomic.Int64
	decode := func(resident) error { calls.Add(1); return nil }
	// no goroutine yet: the job must be taken back
	w := &worker{wake: make(chan struct{}, 1), doneC: make(chan struct{}, 1), decode: decode, spin: 20 * time.Microsecond}
	w.post(resident{lo: 1})
	if taken, err := w.collect(); !taken || err != nil {
		t.Fatalf("unstarted job: taken %v, err %v", taken, err)
	}
	go w.run()
	defer w.quit()
	byWorker := 0
	const jobs = 2000
	for i := range jobs {
		w.post(resident{lo: int64(i)})
		if i%2 == 0 {
			time.Sleep(time.Duration(i%5) * time.Microsecond)
		}
		taken, err := w.collect()
		if err != nil {
			t.Fatal(err)
		}
		if !taken {
			byWorker++
		}
	}
	if got := calls.Load(); got != int64(byWorker) {
		t.Errorf("the worker decoded %d jobs, collect says %d", got, byWorker)
	}
	t.Logf("%d of %d jobs decoded by the worker", byWorker, jobs)
}

// A failed decode on the worker reaches collect.
func TestWorkerError(t *testing.T) {
	atLeastTwoProcs(t)
	release := make(chan struct{})
	bad := errors.New("bad block")
	w := newWorker(func(resident) error { <-release; return bad }, 0)
	defer w.quit()
	w.post(resident{})
	for w.state.Load() != jobBusy {
		runtime.Gosched()
	}
	go func() { time.Sleep(time.Millisecond); close(release) }()
	if taken, err := w.collect(); taken || !errors.Is(err, bad) {
		t.Fatalf("taken %v, err %v; want the worker's error", taken, err)
	}
}

// A corrupt block is reported the same with and without prefetching,
// whichever side decodes it, and nothing hangs.
func TestPrefetchCorrupt(t *testing.T) {
	atLeastTwoProcs(t)
	orig := readFile(t, needFile(t, "models/original/stories260K.bf16.safetensors"))
	a := compress(t, orig, codec.Options{})
	rd, err := codec.NewMemReader(a)
	if err != nil {
		t.Fatal(err)
	}
	// the payload of the second-largest block (a weight, not the header)
	blocks := rd.Files()[0].Blocks()
	big, next := 0, 0
	for i, b := range blocks {
		if b.Length > blocks[big].Length {
			big, next = i, big
		} else if b.Length > blocks[next].Length && i != big {
			next = i
		}
	}
	b := blocks[next]
	rd.Close()
	if b.Compressed < 8 {
		t.Fatalf("block %d has %d compressed bytes", next, b.Compressed)
	}
	bad := bytes.Clone(a)
	bad[b.Payload+b.Compressed/2] ^= 0x40
	var msgs []string
	for _, prefetch := range []bool{false, true} {
		m := openBytes(t, bad, Options{Prefetch: prefetch})
		var err error
		for pos := 0; pos < 3 && err == nil; pos++ {
			_, err = m.Forward(1, pos)
		}
		if err == nil {
			t.Fatalf("prefetch=%v: a corrupt block decoded without error", prefetch)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] {
		t.Errorf("without prefetching %q, with %q", msgs[0], msgs[1])
	}
}

// With one processor, Prefetch decodes inline: no worker, the same logits.
func TestPrefetchOneProc(t *testing.T) {
	c := exactCase{file: "models/original/stories260K.bf16.safetensors", tok: loadTok512(t), prompt: "Once upon a time"}
	orig := readFile(t, needFile(t, c.file))
	want := run(t, openBytes(t, orig, Options{}), c)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m := openBytes(t, compress(t, orig, codec.Options{}), Options{Prefetch: true})
	if as := m.st.(*archiveStore); as.prefetch || as.worker != nil {
		t.Fatal("a worker with GOMAXPROCS=1")
	}
	if got := run(t, m, c); got.LogitsSHA256 != want.LogitsSHA256 {
		t.Errorf("logits %s, from the original file %s", got.LogitsSHA256, want.LogitsSHA256)
	}
}

// A worker that never gets to run (a machine whose other cores are busy)
// costs the forward pass nothing but the posts: every job is taken back
// and decoded inline, the logits stay the original's.
func TestPrefetchWorkerStalled(t *testing.T) {
	atLeastTwoProcs(t)
	c := exactCase{file: "models/original/stories260K.bf16.safetensors", tok: loadTok512(t), prompt: "Once upon a time"}
	orig := readFile(t, needFile(t, c.file))
	want := run(t, openBytes(t, orig, Options{}), c)
	m := openBytes(t, compress(t, orig, codec.Options{}), Options{Prefetch: true})
	as := m.st.(*archiveStore)
	if as.worker == nil {
		t.Skip("no prefetch worker on " + runtime.GOOS + " (one thread)")
	}
	as.worker.quit()
	as.worker = &worker{wake: make(chan struct{}, 1), doneC: make(chan struct{}, 1), decode: as.decode} // no goroutine
	got := run(t, m, c)
	if got.LogitsSHA256 != want.LogitsSHA256 {
		t.Errorf("logits %s, from the original file %s", got.LogitsSHA256, want.LogitsSHA256)
	}
	if as.byWorker != 0 || as.backoff == 0 {
		t.Errorf("a stalled worker decoded %d bytes; backoff %d", as.byWorker, as.backoff)
	}
	as.worker = newWorker(as.decode, 0) // for Close
}
