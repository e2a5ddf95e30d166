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
				var b []byte
				var err error
				if rng.IntN(2) == 0 {
					b, err = p.get(step)
				} else { // streamed: a prefix first, then the rest
					if b, err = p.stream(step); err == nil {
						n := rng.IntN(len(b) + 1)
						if err = p.ready(int64(n)); err == nil && !bytes.Equal(b[:n], want[step][:n]) {
							t.Fatalf("chunk %d worker=%v: step %d's first %d bytes differ", chunk, worker, step, n)
						}
						if err == nil {
							err = p.ready(int64(len(b)))
						}
					}
				}
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
// whichever side decodes it, and nothing hangs: a block of its own (the
// default chunk), and the last block of a tensor of several (-chunk 4096),
// whose first rows a streamed matmul has already used when the error
// comes.
func TestPrefetchCorrupt(t *testing.T) {
	atLeastTwoProcs(t)
	orig := readFile(t, needFile(t, "models/original/stories260K.bf16.safetensors"))
	for _, chunk := range []int{0, 4096} {
		a := compress(t, orig, codec.EncodeOptions{ChunkValues: chunk})
		rd, err := codec.NewMemReader(a)
		if err != nil {
			t.Fatal(err)
		}
		blocks := rd.Files()[0].Blocks()
		rd.Close()
		var bi int
		if chunk == 0 {
			// the payload of the second-largest block (a weight, not the header)
			big, next := 0, 0
			for i, b := range blocks {
				if b.Length > blocks[big].Length {
					big, next = i, big
				} else if b.Length > blocks[next].Length && i != big {
					next = i
				}
			}
			bi = next
		} else {
			// the last block of the largest unit of several blocks
			var u *unit
			for _, v := range openBytes(t, a, Options{}).st.(*archiveStore).units {
				if len(v.lens) >= 2 && (u == nil || v.length > u.length) {
					u = v
				}
			}
			if u == nil {
				t.Fatal("-chunk 4096: no tensor spans several blocks")
			}
			bi = u.b1 - 1
		}
		b := blocks[bi]
		if b.Compressed < 8 {
			t.Fatalf("block %d has %d compressed bytes", bi, b.Compressed)
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
				t.Fatalf("chunk %d, prefetch=%v: a corrupt block decoded without error", chunk, prefetch)
			}
			msgs = append(msgs, err.Error())
			// the pipeline restarts after the error: the next pass fails the same way
			if _, err2 := m.Forward(1, 0); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("chunk %d, prefetch=%v: after %q the next pass gave %v", chunk, prefetch, err, err2)
			}
		}
		if msgs[0] != msgs[1] {
			t.Errorf("chunk %d: without prefetching %q, with %q", chunk, msgs[0], msgs[1])
		}
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

// A unit whose decode fails after its first blocks: stream hands it out,
// ready gives the rows decoded before the bad block and then the error,
// and the pipeline restarts (the next get decodes again and fails again).
// The worker's part is played by the test, so the failure meets ready,
// not the forward pass's own decode.
func TestStreamFailsMidUnit(t *testing.T) {
	orig := readFile(t, needFile(t, "models/original/stories260K.bf16.safetensors"))
	a := compress(t, orig, codec.EncodeOptions{ChunkValues: 4096})
	as := openBytes(t, a, Options{}).st.(*archiveStore)
	// the first step whose unit spans several blocks, and is not the first run
	step := -1
	for i, u := range as.units {
		if i > 0 && len(u.lens) >= 3 && as.units[i-1] != u {
			step = i
			break
		}
	}
	if step < 0 {
		t.Fatal("-chunk 4096: no tensor spans three blocks")
	}
	u := as.units[step]
	rd, err := codec.NewMemReader(a)
	if err != nil {
		t.Fatal(err)
	}
	b := rd.Files()[0].Blocks()[u.b1-1]
	rd.Close()
	bad := bytes.Clone(a)
	bad[b.Payload+b.Compressed/2] ^= 0x40
	m := openBytes(t, bad, Options{})
	p := newPipeStore(m.st.(*archiveStore), false)
	if _, err := p.get(step - 1); err != nil { // the run before, decoded by the forward pass
		t.Fatal(err)
	}
	p.mu.Lock()
	k, ok := p.claimLocked()
	p.mu.Unlock()
	if c := p.runs[(p.start+k)%len(p.runs)]; !ok || c.b0 != u.b0 || c.b1 != u.b1 {
		t.Fatalf("claimed %v, sequence %d, not the unit of step %d", ok, k, step)
	}
	p.decodeSeq(k) // as the worker would: fails at the last block
	got, err := p.stream(step)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	good := u.length - u.lens[len(u.lens)-1] - p.curOff // the tensor's bytes before the bad block
	if good <= 0 {
		t.Fatalf("the tensor of step %d starts in the unit's last block", step)
	}
	if err := p.ready(good); err != nil {
		t.Fatalf("ready(%d) of the bytes decoded before the bad block: %v", good, err)
	}
	want, err := openBytes(t, a, Options{}).st.get(step)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:good], want[:good]) {
		t.Fatal("the rows decoded before the bad block differ")
	}
	err = p.ready(int64(len(got)))
	if err == nil {
		t.Fatal("ready of the whole tensor: no error")
	}
	if p.cur != -1 {
		t.Fatalf("after the error the forward pass still holds sequence %d", p.cur)
	}
	if _, err2 := p.get(step); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("get after the error: %v, want %v", err2, err)
	}
}
