package infer

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"

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

// The ring hands out every step's bytes as the store without prefetching
// does, whatever order the steps are asked in (a pass cut short restarts
// the pipeline), with the worker running and without one (every unit then
// decoded by the forward pass).
func TestPipeOrder(t *testing.T) {
	atLeastTwoProcs(t)
	orig := readFile(t, needFile(t, "models/original/stories260K.bf16.safetensors"))
	for _, chunk := range []int{0, 4096} {
		a := compress(t, orig, codec.EncodeOptions{ChunkValues: chunk})
		ref := openBytes(t, a, Options{})
		sched := ref.sched
		want := make([][]byte, len(sched))
		for i := range sched {
			b, err := ref.st.get(i)
			if err != nil {
				t.Fatal(err)
			}
			want[i] = bytes.Clone(b)
		}
		for _, worker := range []bool{true, false} {
			m := openBytes(t, a, Options{})
			p := newPipeStore(m.st.(*archiveStore), worker)
			m.st = p
			rng := rand.New(rand.NewPCG(1, uint64(chunk)))
			step := 0
			for i := range 40 * len(sched) {
				switch {
				case i%97 == 96: // a jump: the pipeline restarts there
					step = rng.IntN(len(sched))
				case rng.IntN(8) == 0: // the same step again
				default:
					step = (step + 1) % len(sched)
				}
				b, err := p.get(step)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, want[step]) {
					t.Fatalf("chunk %d worker=%v: step %d (%s) differs", chunk, worker, step, sched[step].name)
				}
			}
			if !worker && p.byWorker.Load() != 0 {
				t.Errorf("no worker, yet %d bytes decoded by it", p.byWorker.Load())
			}
			t.Logf("chunk %d worker=%v: %d runs, ring %d bytes, %d of %d bytes decoded by the worker", chunk, worker, len(p.runs), len(p.arena), p.byWorker.Load(), p.decoded.Load())
		}
	}
}

// A corrupt block is reported the same with and without prefetching,
// whichever side decodes it, and nothing hangs.
func TestPrefetchCorrupt(t *testing.T) {
	atLeastTwoProcs(t)
	orig := readFile(t, needFile(t, "models/original/stories260K.bf16.safetensors"))
	a := compress(t, orig, codec.EncodeOptions{})
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
	m := openBytes(t, compress(t, orig, codec.EncodeOptions{}), Options{Prefetch: true})
	if _, ok := m.st.(*archiveStore); !ok {
		t.Fatalf("with GOMAXPROCS=1 the store is a %T", m.st)
	}
	if got := run(t, m, c); got.LogitsSHA256 != want.LogitsSHA256 {
		t.Errorf("logits %s, from the original file %s", got.LogitsSHA256, want.LogitsSHA256)
	}
}

// A worker that never gets to run (a machine whose other cores are busy)
// costs the forward pass nothing but a lock per unit: it decodes every
// unit itself, the logits stay the original's.
func TestPrefetchWorkerStalled(t *testing.T) {
	atLeastTwoProcs(t)
	c := exactCase{file: "models/original/stories260K.bf16.safetensors", tok: loadTok512(t), prompt: "Once upon a time"}
	orig := readFile(t, needFile(t, c.file))
	want := run(t, openBytes(t, orig, Options{}), c)
	m := openBytes(t, compress(t, orig, codec.EncodeOptions{}), Options{})
	p := newPipeStore(m.st.(*archiveStore), false)
	m.st = p
	got := run(t, m, c)
	if got.LogitsSHA256 != want.LogitsSHA256 {
		t.Errorf("logits %s, from the original file %s", got.LogitsSHA256, want.LogitsSHA256)
	}
	if p.byWorker.Load() != 0 || p.decoded.Load() == 0 {
		t.Errorf("a stalled worker decoded %d bytes; the forward pass %d", p.byWorker.Load(), p.decoded.Load())
	}
}
