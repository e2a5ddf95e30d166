package trajectory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// planCost is the saving lost by the keyframes of keys; ok reports whether
// every chain has at most k frames.
func planCost(saving []int64, keys []bool, k int) (cost int64, ok bool) {
	if len(keys) > 0 && !keys[0] {
		return 0, false
	}
	last := 0
	for i, key := range keys {
		if key {
			if i > 0 {
				cost += saving[i]
			}
			last = i
		}
		if i-last+1 > k {
			return 0, false
		}
	}
	return cost, true
}

// TestPlanKeyframes compares the plan with every placement of keyframes.
func TestPlanKeyframes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 400; iter++ {
		n := rng.IntN(13)
		k := 1 + rng.IntN(6)
		saving := make([]int64, n)
		for i := range saving {
			saving[i] = rng.Int64N(100) - 10 // sometimes a keyframe is smaller
			if rng.IntN(4) == 0 {
				saving[i] = 50 // ties
			}
		}
		keys := PlanKeyframes(saving, k)
		got, ok := planCost(saving, keys, k)
		if len(keys) != n || !ok {
			t.Fatalf("n=%d k=%d saving %v: invalid plan %v", n, k, saving, keys)
		}
		var best int64
		found := false
		for mask := 0; mask < 1<<n; mask++ {
			try := make([]bool, n)
			for i := range try {
				try[i] = mask&(1<<i) != 0
			}
			if c, ok := planCost(saving, try, k); ok && (!found || c < best) {
				best, found = c, true
			}
		}
		if n > 0 && got != best {
			t.Fatalf("n=%d k=%d saving %v: plan %v costs %d, best %d", n, k, saving, keys, got, best)
		}
	}
	// growing savings put each keyframe as early as the bound allows
	keys := PlanKeyframes([]int64{0, 1, 2, 3, 4, 5, 6}, 3)
	if want := []bool{true, true, false, false, true, false, false}; !slices.Equal(keys, want) {
		t.Fatalf("growing savings: %v, want %v", keys, want)
	}
}

// measure runs the planner over the steps, as pack does.
func measure(t testing.TB, steps []step) *Planner {
	t.Helper()
	p := &Planner{}
	for _, s := range steps {
		if err := p.Add(context.Background(), s.input(), codec.EncodeOptions{Threads: 2}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestPlannedPack packs the real trajectory with planned keyframes: chains
// stay within K, the archive is smaller than with every K-th frame, every
// step decodes, and later appends follow the chain rule from the last
// planned keyframe.
func TestPlannedPack(t *testing.T) {
	steps := realSteps(t, "bf16")
	const k = 10
	p := measure(t, steps)
	keys := PlanKeyframes(p.Saving(), k)
	planned := packKeys(t, steps[:len(steps)-1], k, keys)
	w, err := OpenWriter(planned, int64(len(planned.b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(context.Background(), steps[len(steps)-1].input(), codec.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	a := checkAll(t, planned, steps)
	regular := pack(t, steps, k, RefPrevious, 2)
	var raw int64
	for _, s := range steps {
		raw += int64(len(s.data))
	}
	t.Logf("keyframes %v: %d bytes, every %d-th frame: %d bytes (%.4f)", keys, len(planned.b), k, len(regular.b), float64(len(planned.b))/float64(len(regular.b)))
	if len(planned.b) >= len(regular.b) {
		t.Fatalf("planned %d bytes, not below every K-th frame's %d", len(planned.b), len(regular.b))
	}
	for i, fr := range a.Frames {
		chain, err := a.Chain(i)
		if err != nil || len(chain) > k {
			t.Fatalf("frame %d: chain %v (%v), longer than %d", i, chain, err, k)
		}
		// the last frame was appended by the chain rule, which agrees
		if fr.Keyframe() != keys[i] {
			t.Fatalf("frame %d: keyframe %v, planned %v", i, fr.Keyframe(), keys[i])
		}
	}
	// the planner's own sizes are those of the frames written
	for i, fr := range a.Frames[:len(a.Frames)-1] {
		want := p.Conditioned[i]
		if fr.Keyframe() {
			want = p.Independent[i]
		}
		if fr.Length != want {
			t.Fatalf("frame %d: %d bytes, planner measured %d", i, fr.Length, want)
		}
	}
	// the append left the packed frames, index and trailer as they were
	if g := packKeys(t, steps[:len(steps)-1], k, keys); !bytes.HasPrefix(planned.b, g.b) {
		t.Fatal("the append changed the packed part, or packing is not deterministic")
	}
}

// packKeys packs steps with the given keyframes.
func packKeys(t *testing.T, steps []step, k int, keys []bool) *memFile {
	t.Helper()
	f := &memFile{}
	w, err := Create(f, k, RefPrevious)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		if keys[i] {
			_, err = w.AppendKeyframe(context.Background(), s.input(), codec.EncodeOptions{Threads: 2})
		} else {
			_, err = w.Append(context.Background(), s.input(), codec.EncodeOptions{Threads: 2})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestRepack repacks a run built by appends (every K-th frame a keyframe)
// and gets exactly the archive a planned pack of the same checkpoints
// gives; frames that keep their reference are copied.
func TestRepack(t *testing.T) {
	steps := realSteps(t, "bf16")
	const k = 10
	p := measure(t, steps)
	want := packKeys(t, steps, k, PlanKeyframes(p.Saving(), k))
	regular := pack(t, steps, k, RefPrevious, 2)
	a, err := Open(regular, int64(len(regular.b)))
	if err != nil {
		t.Fatal(err)
	}
	got := &memFile{}
	repackBoth(t, a, got, k, codec.EncodeOptions{Threads: 2})
	if !bytes.Equal(got.b, want.b) {
		t.Fatalf("repacked: %d bytes, planned pack: %d bytes, not the same archive", len(got.b), len(want.b))
	}
	checkAll(t, got, steps)
}

// repackBoth repacks a into f with Repack, and again with RepackFiles into
// a temporary directory, which must give the same archive, leave the
// directory empty and leave a writer that appends as Repack's does (the
// last step decoded from the archive, not read from a deleted file).
func repackBoth(t *testing.T, a *Archive, f *memFile, k int, opt codec.EncodeOptions) (*Writer, *memFile, *Writer) {
	t.Helper()
	w, err := Repack(context.Background(), a, f, k, opt)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	g := &memFile{}
	wf, err := RepackFiles(context.Background(), a, g, k, opt, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.b, g.b) {
		t.Fatalf("RepackFiles: %d bytes, Repack: %d bytes, not the same archive", len(g.b), len(f.b))
	}
	checkEmptyDir(t, dir)
	return w, g, wf
}

// checkEmptyDir fails unless dir holds nothing.
func checkEmptyDir(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		t.Errorf("left behind in the temporary directory: %s", e.Name())
	}
}

// TestRepackModes repacks synthetic runs from either mode and interval into
// other intervals: every frame decodes, chains stay within K, appends go on.
func TestRepackModes(t *testing.T) {
	steps := synthSteps(9)
	for _, mode := range []RefMode{RefPrevious, RefKeyframe} {
		for _, from := range []int{1, 3, 100} {
			src := pack(t, steps[:8], from, mode, 1)
			a, err := Open(src, int64(len(src.b)))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{1, 2, 4, 100} {
				f := &memFile{}
				w, g, wf := repackBoth(t, a, f, k, codec.EncodeOptions{Threads: 1})
				if _, err := w.Append(context.Background(), steps[8].input(), codec.EncodeOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := wf.Append(context.Background(), steps[8].input(), codec.EncodeOptions{}); err != nil {
					t.Fatalf("append after RepackFiles: %v", err)
				}
				if !bytes.Equal(f.b, g.b) {
					t.Fatalf("mode %d K %d -> %d: appends after Repack and RepackFiles differ", mode, from, k)
				}
				b := checkAll(t, f, steps)
				for i := range b.Frames {
					if c, err := b.Chain(i); err != nil || len(c) > k {
						t.Fatalf("mode %d K %d -> %d: frame %d chain %v (%v)", mode, from, k, i, c, err)
					}
				}
				if b.K != k || b.Mode != RefPrevious {
					t.Fatalf("repacked index K %d mode %d", b.K, b.Mode)
				}
			}
		}
	}
}

// withSampling sets the planner's sampling for a test.
func withSampling(t *testing.T, min int64, every int, piece int64) {
	m, e, p := planSampleMin, planSampleEvery, planPiece
	planSampleMin, planSampleEvery, planPiece = min, every, piece
	t.Cleanup(func() { planSampleMin, planSampleEvery, planPiece = m, e, p })
}

// TestSampleInput checks the virtual file of sampled pieces against the
// pieces cut from the file directly, through reads of every alignment.
func TestSampleInput(t *testing.T) {
	withSampling(t, 0, 3, 40)
	rng := rand.New(rand.NewPCG(3, 4))
	file := make([]byte, 1000)
	for i := range file {
		file[i] = byte(rng.Uint32())
	}
	segs := []codec.Segment{ // out of order on purpose; a gap at 0..10
		{Name: "b", DType: dtype.F32, Shape: []int64{25}, Offset: 300, Length: 100},
		{Name: "a", DType: dtype.BF16, Shape: []int64{145}, Offset: 10, Length: 290},
		{Name: "q", DType: dtype.Invalid, Type: "Q4_K", Shape: []int64{7}, Offset: 400, Length: 7},
		{Name: "c", DType: dtype.F64, Shape: []int64{3}, Offset: 407, Length: 24},
		{Offset: 431, Length: 569}, // opaque: not sampled
	}
	ins, sampled := sampleInputs([]codec.Input{{Name: "x", R: bytes.NewReader(file), Size: int64(len(file)), Segments: segs}})
	if !sampled {
		t.Fatal("an input above the threshold was not sampled")
	}
	in := ins[0]
	// the pieces: a in 40-byte pieces (7.25 of them), b in 40, q in 40 (one, 7 bytes),
	// c in 40 (one, 24 bytes); every third piece in file order
	type pc struct {
		name     string
		off, len int64
	}
	var all []pc
	for _, s := range []struct {
		name          string
		off, len, elt int64
	}{{"a", 10, 290, 2}, {"b", 300, 100, 4}, {"q", 400, 7, 1}, {"c", 407, 24, 8}} {
		step := 40 / s.elt * s.elt
		for o := int64(0); o < s.len; o += step {
			all = append(all, pc{fmt.Sprintf("%s@%d", s.name, o), s.off + o, min(step, s.len-o)})
		}
	}
	var want []byte
	var names []string
	for i, p := range all {
		if i%3 == 0 {
			want = append(want, file[p.off:p.off+p.len]...)
			names = append(names, p.name)
		}
	}
	if in.Size != int64(len(want)) || len(in.Segments) != len(names) {
		t.Fatalf("virtual file of %d bytes, %d segments; want %d, %d", in.Size, len(in.Segments), len(want), len(names))
	}
	var at int64
	for i, s := range in.Segments {
		wantType := map[byte]dtype.DType{'a': dtype.BF16, 'b': dtype.F32, 'q': dtype.Invalid, 'c': dtype.F64}[names[i][0]]
		if s.Name != names[i] || s.Offset != at || s.DType != wantType {
			t.Fatalf("segment %d: %+v, want %s (%v) at %d", i, s, names[i], wantType, at)
		}
		if n := s.Shape[0] * int64(max(s.DType.Size(), 1)); n != s.Length {
			t.Fatalf("segment %d: shape %v for %d bytes of %v", i, s.Shape, s.Length, s.DType)
		}
		at += s.Length
	}
	for off := 0; off <= len(want); off++ {
		for _, n := range []int{0, 1, 7, 39, 40, 41, 100, len(want)} {
			buf := make([]byte, n)
			m, err := in.R.ReadAt(buf, int64(off))
			end := min(off+n, len(want))
			if m != end-off || !bytes.Equal(buf[:m], want[off:end]) {
				t.Fatalf("ReadAt(%d, %d): %d bytes, %v", off, n, m, err)
			}
			if (m < n) != (err != nil) {
				t.Fatalf("ReadAt(%d, %d): %d bytes, error %v", off, n, m, err)
			}
		}
	}
	// small inputs are measured whole
	withSampling(t, 1000, 3, 40)
	if s, sampled := sampleInputs([]codec.Input{{R: bytes.NewReader(file), Size: 1000, Segments: segs}}); sampled || s[0].Size != 1000 || len(s[0].Segments) != len(segs) {
		t.Fatal("an input at the threshold was sampled")
	}
}

// TestPlannedPackSampled plans the real trajectory from a quarter of each
// step: the plan keeps every chain within K and the archive within 0.5 %
// of the one planned from full measurements.
func TestPlannedPackSampled(t *testing.T) {
	steps := realSteps(t, "bf16")
	const k = 10
	full := PlanKeyframes(measure(t, steps).Saving(), k)
	withSampling(t, 0, 4, 16<<10)
	sampled := PlanKeyframes(measure(t, steps).Saving(), k)
	var p Planner
	if err := p.Add(context.Background(), steps[0].input(), codec.EncodeOptions{}); err != nil || !p.Sampled[0] {
		t.Fatalf("a step above the threshold was not sampled (%v)", err)
	}
	a, b := packKeys(t, steps, k, full), packKeys(t, steps, k, sampled)
	t.Logf("keyframes from full measurements %v: %d bytes; from a quarter %v: %d bytes", full, len(a.b), sampled, len(b.b))
	if _, ok := planCost(make([]int64, len(sampled)), sampled, k); !ok {
		t.Fatalf("sampled plan %v breaks K = %d", sampled, k)
	}
	if float64(len(b.b)) > 1.005*float64(len(a.b)) {
		t.Fatalf("sampled plan: %d bytes, full plan %d", len(b.b), len(a.b))
	}
	checkAll(t, b, steps)
}

// TestProvide: Writer.Provide takes a frame's original only when size and
// SHA-256 match, and the next append then codes the same frame as when it
// decodes the reference from the archive.
func TestProvide(t *testing.T) {
	steps := synthSteps(4)
	want := pack(t, steps, 10, RefPrevious, 1)
	f := &memFile{b: nil}
	part := pack(t, steps[:3], 10, RefPrevious, 1)
	f.b = append(f.b, part.b...)
	w, err := OpenWriter(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	other := steps[1].input()
	short := steps[2].input()
	short.Size--
	bad := append([]byte(nil), steps[2].data...)
	bad[len(bad)-1] ^= 1
	badIn := step{name: steps[2].name, data: bad, segs: steps[2].segs}.input()
	for _, c := range []struct {
		j  int
		in codec.Input
	}{{2, other}, {2, short}, {2, badIn}, {3, steps[2].input()}, {-1, steps[2].input()}} {
		if ok, err := w.Provide(c.j, c.in); ok || err != nil {
			t.Fatalf("Provide(%d, %s, %d bytes) = %v, %v", c.j, c.in.Name, c.in.Size, ok, err)
		}
	}
	in := steps[2].input()
	if ok, err := w.Provide(2, in); !ok || err != nil || !w.Retains(in.R) {
		t.Fatalf("Provide of frame 2's file: %v, %v", ok, err)
	}
	if _, err := w.Append(context.Background(), steps[3].input(), codec.EncodeOptions{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.b, want.b) {
		t.Fatal("append with a provided reference differs from pack")
	}
}

// TestRepackDamaged: a damaged frame makes Repack fail with the frame named.
func TestRepackDamaged(t *testing.T) {
	steps := synthSteps(4)
	src := pack(t, steps, 2, RefPrevious, 1)
	a, err := Open(src, int64(len(src.b)))
	if err != nil {
		t.Fatal(err)
	}
	fr := a.Frames[2]
	bad := &memFile{b: append([]byte(nil), src.b...)}
	for i := fr.Offset + 20; i < fr.Offset+fr.Length-200; i += 97 {
		bad.b[i] ^= 0x55
	}
	b, err := Open(bad, int64(len(bad.b)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Repack(context.Background(), b, &memFile{}, 2, codec.EncodeOptions{Threads: 1})
	if err == nil || !strings.Contains(err.Error(), "frame 2") {
		t.Fatalf("repack of a damaged archive: %v", err)
	}
	dir := t.TempDir()
	_, err = RepackFiles(context.Background(), b, &memFile{}, 2, codec.EncodeOptions{Threads: 1}, dir)
	if err == nil || !strings.Contains(err.Error(), "frame 2") {
		t.Fatalf("RepackFiles of a damaged archive: %v", err)
	}
	checkEmptyDir(t, dir)
}

// TestExtractDamagedChain: damage in a frame before the one extracted fails
// the extract, naming that frame and its block.
func TestExtractDamagedChain(t *testing.T) {
	steps := synthSteps(5)
	f := pack(t, steps, 10, RefPrevious, 1)
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	// the extra bits at the end of a reference block of frame 2
	rd, err := a.FrameReader(2)
	if err != nil {
		t.Fatal(err)
	}
	var blk codec.BlockInfo
	for _, b := range rd.Files()[0].Blocks() {
		if b.Kind == codec.KindRef && b.Compressed > 64 {
			blk = b
		}
	}
	rd.Close()
	if blk.Kind != codec.KindRef {
		t.Fatal("frame 2 has no reference block")
	}
	bad := &memFile{b: append([]byte(nil), f.b...)}
	bad.b[a.Frames[2].Offset+blk.Payload+blk.Compressed-3] ^= 0xff
	b, err := Open(bad, int64(len(bad.b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []codec.DecodeOptions{{}, {SkipHash: true}} {
		_, err := b.Extract(context.Background(), 4, o)
		if err == nil || !strings.Contains(err.Error(), "frame 2") || !strings.Contains(err.Error(), "CRC-32C") {
			t.Fatalf("%+v: extract through a damaged frame: %v", o, err)
		}
		// the offset is the block's in the .nztraj file, not in the frame
		var ce *codec.CorruptError
		if at := a.Frames[2].Offset + blk.Payload; !errors.As(err, &ce) || ce.Offset != at {
			t.Fatalf("%+v: the damaged block starts at %d of the file: %v", o, at, err)
		}
	}
	// the undamaged chain decodes
	if d, err := a.Extract(context.Background(), 4, codec.DecodeOptions{}); err != nil || !bytes.Equal(d.Data, steps[4].data) {
		t.Fatalf("extract: %v", err)
	}
}

// TestBest packs runs with codec.EncodeOptions.Best (range-coded difference
// blocks): every frame decodes bit-exact, the archive is no larger than
// the default one, and repack with Best codes every referencing frame
// again (a default archive repacked with Best is the Best pack).
func TestBest(t *testing.T) {
	t.Run("synthetic", func(t *testing.T) { testBest(t, synthSteps(7)) })
	t.Run("real", func(t *testing.T) {
		steps := realSteps(t, "bf16")
		testBest(t, steps[len(steps)-6:]) // the late steps, where Best gains most
	})
}

func testBest(t *testing.T, steps []step) {
	for _, k := range []int{3, 100} {
		def := pack(t, steps, k, RefPrevious, 2)
		best := packOpt(t, steps, k, RefPrevious, codec.EncodeOptions{Threads: 2, Best: true})
		if len(best.b) > len(def.b) {
			t.Fatalf("K %d: Best %d bytes, default %d", k, len(best.b), len(def.b))
		}
		checkAll(t, best, steps)
		t.Logf("K %d: default %d bytes, Best %d (%.2f %% smaller)", k, len(def.b), len(best.b), 100*(1-float64(len(best.b))/float64(len(def.b))))
	}
	// repack of a one-keyframe default archive with Best = Best pack
	def := pack(t, steps, 100, RefPrevious, 2)
	a, err := Open(def, int64(len(def.b)))
	if err != nil {
		t.Fatal(err)
	}
	got := &memFile{}
	if _, err := Repack(context.Background(), a, got, 100, codec.EncodeOptions{Threads: 2, Best: true}); err != nil {
		t.Fatal(err)
	}
	want := packOpt(t, steps, 100, RefPrevious, codec.EncodeOptions{Threads: 1, Best: true})
	if !bytes.Equal(got.b, want.b) {
		t.Fatalf("repack with Best: %d bytes, Best pack %d", len(got.b), len(want.b))
	}
}
