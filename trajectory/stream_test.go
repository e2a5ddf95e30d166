package trajectory

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"neuralzip/codec"
)

// TestStreamReadAt reads random ranges of every frame's file through the
// lazily decoded reference files Stream builds (reads that start and end
// inside blocks, cross several, reach the end and past it): the bytes are
// the step's, and a read past the end ends with io.EOF.
func TestStreamReadAt(t *testing.T) {
	steps := synthSteps(6)
	f := packOpt(t, steps, 100, RefPrevious, codec.EncodeOptions{Threads: 1, ChunkValues: 256})
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range a.Frames {
		rd, err := a.FrameReader(i)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			// frame i's reference chain, as Stream sets it up
			s, err := a.Stream(i - 1)
			if err != nil {
				t.Fatal(err)
			}
			ins, _ := lazyInputs(s.Reader, a.Frames, i-1)
			ref, err := codec.NewReferenceSums(ins, fileSums(a.Frames[i-1]))
			if err != nil {
				t.Fatal(err)
			}
			if err := rd.UseRef(ref); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
		}
		ff := newFrameFile(rd, 0, rd.Files()[0], frameLabel(a.Frames, i, 0))
		if len(ff.offs) < 4 {
			t.Fatalf("frame %d: %d blocks; the test wants several", i, len(ff.offs))
		}
		want := steps[i].data
		size := int64(len(want))
		for range 200 {
			off := r.Int64N(size + 1)
			n := r.Int64N(3000)
			p := make([]byte, n)
			got, err := ff.ReadAt(p, off)
			wantN := min(n, size-off)
			if int64(got) != wantN || !bytes.Equal(p[:got], want[off:off+wantN]) {
				t.Fatalf("frame %d: ReadAt(%d bytes at %d) = %d bytes (%v), want %d", i, n, off, got, err, wantN)
			}
			if (wantN < n) != errors.Is(err, io.EOF) || err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("frame %d: ReadAt(%d bytes at %d): %v", i, n, off, err)
			}
		}
		if _, err := ff.ReadAt(make([]byte, 1), size+1); err == nil {
			t.Fatalf("frame %d: a read beyond the end did not fail", i)
		}
		rd.Close()
	}
}

// TestStreamCorrupt flips bytes of a conditioned frame's reference frame:
// extracting through Stream fails with a checksum or corruption error,
// never a panic, and writes nothing that passes as the step.
func TestStreamCorrupt(t *testing.T) {
	steps := synthSteps(4)
	f := pack(t, steps, 100, RefPrevious, 1)
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	fr := a.Frames[1]
	r := rand.New(rand.NewPCG(5, 6))
	failed := 0
	for range 50 {
		g := &memFile{b: bytes.Clone(f.b)}
		g.b[fr.Offset+r.Int64N(fr.Length)] ^= byte(1 + r.IntN(255))
		b, err := Open(g, int64(len(g.b)))
		if err != nil {
			failed++
			continue
		}
		s, err := b.Stream(3)
		if err != nil {
			failed++
			continue
		}
		var out bytes.Buffer
		err = s.WriteFile(context.Background(), &out, 0, codec.DecodeOptions{Threads: 2})
		s.Close()
		// Verify, which decodes every frame, meets any damage that
		// stopped the stream too (and more: blocks of frame 1 that later
		// frames do not read)
		if verr := b.Verify(context.Background(), codec.DecodeOptions{Threads: 2}, nil); err != nil && verr == nil {
			t.Fatalf("stream: %v, but verify passed", err)
		} else if verr != nil && !errors.Is(verr, codec.ErrChecksum) && !errors.Is(verr, codec.ErrCorrupt) && !errors.Is(verr, ErrCorrupt) {
			t.Fatalf("verify of a damaged frame: %v", verr)
		}
		if err == nil {
			if !bytes.Equal(out.Bytes(), steps[3].data) {
				t.Fatal("a corrupted chain decoded to other bytes without an error")
			}
			continue // the flip hit bytes the decoder does not use
		}
		if !errors.Is(err, codec.ErrChecksum) && !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("corrupted reference frame: %v", err)
		}
		// the error names the damaged frame, not only the one streamed
		if !strings.Contains(err.Error(), "frame 1 (") {
			t.Fatalf("the error does not name the damaged frame 1: %v", err)
		}
		failed++
	}
	if failed < 40 {
		t.Fatalf("only %d of 50 corruptions were caught", failed)
	}
}

// TestStreamMixedChunks streams a run whose frames were appended with
// different chunk sizes, so that every block of a frame straddles two of
// the frame before: bit-exact, and each block of the chain decoded about
// once (a read covering part of a block keeps it: without that, the
// chain's blocks would be decoded up to 2^depth times).
func TestStreamMixedChunks(t *testing.T) {
	steps := synthSteps(12)
	f := &memFile{}
	w, err := Create(f, 100, RefPrevious)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		if _, err := w.Append(context.Background(), s.input(), codec.EncodeOptions{Threads: 1, ChunkValues: 256 + 128*(i%2)}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for j := range a.Frames {
		rd, err := a.FrameReader(j)
		if err != nil {
			t.Fatal(err)
		}
		blocks += len(rd.Files()[0].Blocks())
		rd.Close()
	}
	last := len(steps) - 1
	for _, threads := range []int{1, 3} {
		frameDecodes.Store(0)
		d, err := streamFrame(a, last, threads)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.Data, steps[last].data) {
			t.Fatalf("%d threads: the last step differs", threads)
		}
		if n := frameDecodes.Load(); n > int64(2*blocks) {
			t.Fatalf("%d threads: %d blocks decoded for a chain of %d blocks", threads, n, blocks)
		} else {
			t.Logf("%d threads: %d blocks decoded below the last frame; the chain has %d", threads, n, blocks)
		}
	}
	// Verify in lock-step, blocks straddling: about one decode a block
	frameDecodes.Store(0)
	if err := a.Verify(context.Background(), codec.DecodeOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if n := frameDecodes.Load(); n > int64(2*blocks) {
		t.Fatalf("verify: %d blocks decoded for %d", n, blocks)
	} else {
		t.Logf("verify: %d blocks decoded; the run has %d", n, blocks)
	}
}

// TestWholeReads: a chain or keyframe group whose blocks in flight could
// take more memory than its frames decoded whole (here with the threshold
// lowered to 0) is read whole instead — Stream against its reference frame
// decoded whole, Verify one frame after the other — with the same bytes
// and checks, in both modes.
func TestWholeReads(t *testing.T) {
	defer func(v int64) { wholeAbove = v }(wholeAbove)
	steps := synthSteps(7)
	for _, mode := range []RefMode{RefPrevious, RefKeyframe} {
		f := pack(t, steps, 100, mode, 1)
		a, err := Open(f, int64(len(f.b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, lim := range []int64{256 << 20, 0} {
			wholeAbove = lim
			wholeReads.Store(0)
			for i := range steps {
				d, err := streamFrame(a, i, 2)
				if err != nil || !bytes.Equal(d.Data, steps[i].data) {
					t.Fatalf("mode %d, limit %d: frame %d: %v", mode, lim, i, err)
				}
			}
			streamed := wholeReads.Load()
			seen := 0
			if err := a.Verify(context.Background(), codec.DecodeOptions{Threads: 2}, func(int) { seen++ }); err != nil || seen != len(steps) {
				t.Fatalf("mode %d, limit %d: verify: %v (%d frames)", mode, lim, err, seen)
			}
			verified := wholeReads.Load() - streamed
			// whole reads: a stream of a chain of 3 or more (prev mode),
			// and the one group
			if lim == 0 && (mode == RefPrevious && streamed != int64(len(steps)-2) || mode == RefKeyframe && streamed != 0 || verified != 1) {
				t.Fatalf("mode %d: %d streams and %d groups read whole", mode, streamed, verified)
			}
			if lim != 0 && streamed+verified != 0 {
				t.Fatalf("mode %d: %d reads whole with the default limit", mode, streamed+verified)
			}
		}
		// a damaged frame: the whole-read verify names it
		g := &memFile{b: bytes.Clone(f.b)}
		fr := a.Frames[2]
		for i := fr.Offset + 20; i < fr.Offset+fr.Length-40; i += 31 {
			g.b[i] ^= 0x5a
		}
		b, err := Open(g, int64(len(g.b)))
		if err != nil {
			t.Fatal(err)
		}
		wholeAbove = 0
		if err := b.Verify(context.Background(), codec.DecodeOptions{Threads: 1}, nil); err == nil || !strings.Contains(err.Error(), "frame 2 (") {
			t.Fatalf("mode %d: whole-read verify of a damaged frame: %v", mode, err)
		}
		wholeAbove = 256 << 20
	}
}

// TestStreamWithCancel: the whole decode of a reference frame that Stream
// falls back to takes StreamWith's context (cancelled: the stream is not
// made, and the error says why) and threads (the frame then streams
// bit-exact).
func TestStreamWithCancel(t *testing.T) {
	defer func(v int64) { wholeAbove = v }(wholeAbove)
	wholeAbove = 0 // every chain of 3 or more frames decodes its reference whole
	steps := synthSteps(5)
	f := pack(t, steps, 100, RefPrevious, 1)
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wholeReads.Store(0)
	if s, err := a.StreamWith(ctx, 4, codec.DecodeOptions{}); err == nil || !errors.Is(err, context.Canceled) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("cancelled: %v", err)
	}
	if wholeReads.Load() != 1 {
		t.Fatalf("%d whole reads: the fallback was not taken", wholeReads.Load())
	}
	s, err := a.StreamWith(context.Background(), 4, codec.DecodeOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out bytes.Buffer
	if err := s.WriteFile(context.Background(), &out, 0, codec.DecodeOptions{Threads: 1}); err != nil || !bytes.Equal(out.Bytes(), steps[4].data) {
		t.Fatalf("stream after the whole read: %v", err)
	}
}

// TestBudget: what Verify's groups hold at once never exceeds the budget,
// and a group asking for more than all of it gets all of it, alone.
func TestBudget(t *testing.T) {
	b := newBudget(100)
	if n := b.acquire(500); n != 100 {
		t.Fatalf("acquire(500) of 100: took %d", n)
	}
	b.release(100)
	var held, most atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 200 {
				n := b.acquire(int64(10 + (g*7+r)%60))
				if h := held.Add(n); h > most.Load() {
					most.Store(h) // racy maximum: enough to see a breach
				}
				if h := held.Load(); h > 100 {
					t.Errorf("%d bytes held of 100", h)
				}
				held.Add(-n)
				b.release(n)
			}
		}()
	}
	wg.Wait()
	if b.left != 100 {
		t.Fatalf("%d bytes left of 100", b.left)
	}
}
