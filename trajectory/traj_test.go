package trajectory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// memFile is the tests' name for a trajectory in memory.
type memFile = Buffer

// step is one checkpoint: a safetensors file and its layout.
type step struct {
	name string
	data []byte
	segs []codec.Segment
}

func (s step) input() codec.Input {
	return codec.Input{Name: s.name, R: bytes.NewReader(s.data), Size: int64(len(s.data)), Format: "safetensors", Segments: s.segs}
}

// safetensorsLayout parses a safetensors header (enough for the tests).
func safetensorsLayout(b []byte) []codec.Segment {
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]json.RawMessage
	if json.Unmarshal(b[8:8+n], &hdr) != nil {
		return nil
	}
	segs := []codec.Segment{{Offset: 0, Length: int64(8 + n)}}
	for name, raw := range hdr {
		var t struct {
			Dtype string   `json:"dtype"`
			Shape []int64  `json:"shape"`
			Off   [2]int64 `json:"data_offsets"`
		}
		if name == "__metadata__" || json.Unmarshal(raw, &t) != nil {
			continue
		}
		d := dtype.Invalid
		switch t.Dtype {
		case "BF16":
			d = dtype.BF16
		case "F16":
			d = dtype.F16
		case "F32":
			d = dtype.F32
		}
		segs = append(segs, codec.Segment{Name: name, DType: d, Shape: t.Shape, Offset: int64(8+n) + t.Off[0], Length: t.Off[1] - t.Off[0]})
	}
	sort.Slice(segs, func(i, j int) bool {
		if segs[i].Offset != segs[j].Offset {
			return segs[i].Offset < segs[j].Offset
		}
		return segs[i].Length < segs[j].Length
	})
	return segs
}

// synthSteps makes a small synthetic training run: BF16 and F32 weights
// that drift by a few ULPs per step, with special values and a tensor that
// appears only later.
func synthSteps(n int) []step {
	r := rand.New(rand.NewPCG(42, 1))
	w := make([]float32, 3000)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.02)
	}
	w[0], w[1], w[2], w[3] = float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00123), float32(math.Copysign(0, -1))
	w[4] = math.Float32frombits(1) // subnormal
	var out []step
	for s := 0; s < n; s++ {
		for i := 5; i < len(w); i++ {
			w[i] += float32(r.NormFloat64() * 0.0005)
		}
		bf := make([]byte, 2*2999) // odd count
		for i := range 2999 {
			binary.LittleEndian.PutUint16(bf[2*i:], uint16(math.Float32bits(w[i])>>16))
		}
		f32 := make([]byte, 4*1000)
		for i := range 1000 {
			binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(w[i]))
		}
		type ten struct {
			name  string
			d     string
			shape []int64
			data  []byte
		}
		ts := []ten{{"a.bf16", "BF16", []int64{2999}, bf}, {"b.f32", "F32", []int64{10, 100}, f32}, {"empty", "BF16", []int64{0}, nil}}
		if s >= 2 {
			ts = append(ts, ten{"late", "BF16", []int64{50}, bf[:100]})
		}
		var hdr bytes.Buffer
		hdr.WriteString(`{"__metadata__":{"step":"` + fmt.Sprint(s) + `"}`)
		var off int64
		for _, t := range ts {
			sh, _ := json.Marshal(t.shape)
			fmt.Fprintf(&hdr, `,%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.name, t.d, sh, off, off+int64(len(t.data)))
			off += int64(len(t.data))
		}
		hdr.WriteString("}")
		var file []byte
		file = binary.LittleEndian.AppendUint64(file, uint64(hdr.Len()))
		file = append(file, hdr.Bytes()...)
		for _, t := range ts {
			file = append(file, t.data...)
		}
		out = append(out, step{name: fmt.Sprintf("step_%d.safetensors", s), data: file, segs: safetensorsLayout(file)})
	}
	return out
}

// realSteps loads the real bf16 trajectory, or skips.
func realSteps(t testing.TB, kind string) []step {
	var dir string
	for _, d := range []string{"../../shared", "../shared"} {
		if _, err := os.Stat(filepath.Join(d, "trajectories", "tinygpt-fortunes")); err == nil {
			dir = filepath.Join(d, "trajectories", "tinygpt-fortunes")
		}
	}
	if dir == "" {
		t.Skip("../shared/trajectories/tinygpt-fortunes not present; skipping real-trajectory test")
	}
	m, _ := filepath.Glob(filepath.Join(dir, "step_*."+kind+".safetensors"))
	sort.Strings(m)
	var out []step
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, step{name: filepath.Base(p), data: b, segs: safetensorsLayout(b)})
	}
	return out
}

// pack writes a trajectory of the steps.
func pack(t testing.TB, steps []step, k int, mode RefMode, threads int) *memFile {
	t.Helper()
	return packOpt(t, steps, k, mode, codec.EncodeOptions{Threads: threads})
}

// packOpt is pack with the given coding options.
func packOpt(t testing.TB, steps []step, k int, mode RefMode, opt codec.EncodeOptions) *memFile {
	t.Helper()
	f := &memFile{}
	w, err := Create(f, k, mode)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if _, err := w.Append(context.Background(), s.input(), opt); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// checkAll decodes every frame (Walk) and a few by Extract.
func checkAll(t *testing.T, f *memFile, steps []step) *Archive {
	t.Helper()
	same := func(fr Frame, d *Decoded) error {
		if sha256.Sum256(d.Data) != sha256.Sum256(steps[d.Frame].data) {
			return fmt.Errorf("frame %d differs", d.Frame)
		}
		return nil
	}
	return checkFrames(t, f, len(steps), []int{0, len(steps) / 2, len(steps) - 1}, same)
}

// checkFrames opens f, which must hold n frames and no tail, decodes every
// frame by Walk and the frames extract by Extract, and checks each with
// same.
func checkFrames(t *testing.T, f *memFile, n int, extract []int, same func(Frame, *Decoded) error) *Archive {
	t.Helper()
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Frames) != n || a.Tail != 0 {
		t.Fatalf("%d frames (tail %d), want %d", len(a.Frames), a.Tail, n)
	}
	walked := 0
	err = a.Walk(context.Background(), codec.DecodeOptions{Threads: 2}, func(d *Decoded) error {
		walked++
		return same(a.Frames[d.Frame], d)
	})
	if err != nil || walked != n {
		t.Fatalf("walk: %v (%d frames)", err, walked)
	}
	// WalkFiles: the same frames from temporary files, the frame before
	// still readable and unchanged, nothing left behind
	dir := t.TempDir()
	var prev []codec.Input
	var prevSum [][32]byte
	walked = 0
	err = a.WalkFiles(context.Background(), codec.DecodeOptions{Threads: 2}, dir, func(i int, ins []codec.Input) error {
		if i != walked {
			return fmt.Errorf("WalkFiles gave frame %d as the %dth", i, walked)
		}
		walked++
		for k, in := range prev {
			if b, err := io.ReadAll(io.NewSectionReader(in.R, 0, in.Size)); err != nil || sha256.Sum256(b) != prevSum[k] {
				return fmt.Errorf("frame %d: the frame before no longer readable as it was (%v)", i, err)
			}
		}
		d := &Decoded{Frame: i}
		prev, prevSum = ins, nil
		for _, in := range ins {
			b, err := io.ReadAll(io.NewSectionReader(in.R, 0, in.Size))
			if err != nil {
				return err
			}
			d.Files = append(d.Files, DecodedFile{Name: in.Name, Data: b, Segs: in.Segments, Format: in.Format})
			prevSum = append(prevSum, sha256.Sum256(b))
		}
		d.Data, d.Segs, d.Format = d.Files[0].Data, d.Files[0].Segs, d.Files[0].Format
		return same(a.Frames[i], d)
	})
	if err != nil || walked != n {
		t.Fatalf("WalkFiles: %v (%d frames)", err, walked)
	}
	checkEmptyDir(t, dir)
	// Verify: every frame checked once, each block decoded once
	var mu sync.Mutex
	seen := map[int]int{}
	blocks := 0
	for j := range a.Frames {
		rd, err := a.FrameReader(j)
		if err != nil {
			t.Fatal(err)
		}
		for _, fi := range rd.Files() {
			blocks += len(fi.Blocks())
		}
		rd.Close()
	}
	frameDecodes.Store(0)
	if err := a.Verify(context.Background(), codec.DecodeOptions{Threads: 2}, func(j int) { mu.Lock(); seen[j]++; mu.Unlock() }); err != nil {
		t.Fatalf("verify: %v", err)
	}
	for j := range a.Frames {
		if seen[j] != 1 {
			t.Fatalf("verify reported frame %d %d times", j, seen[j])
		}
	}
	if d := frameDecodes.Load(); d > int64(blocks)+int64(blocks)/4 {
		t.Fatalf("verify decoded %d blocks; the frames have %d", d, blocks)
	}
	for _, i := range extract {
		d, err := a.Extract(context.Background(), i, codec.DecodeOptions{Threads: 1})
		if err != nil {
			t.Fatalf("extract %d: %v", i, err)
		}
		if err := same(a.Frames[i], d); err != nil {
			t.Fatalf("extract: %v", err)
		}
		for _, threads := range []int{1, 3} {
			d, err := streamFrame(a, i, threads)
			if err != nil {
				t.Fatalf("stream %d, %d threads: %v", i, threads, err)
			}
			if err := same(a.Frames[i], d); err != nil {
				t.Fatalf("stream, %d threads: %v", threads, err)
			}
		}
	}
	return a
}

// streamFrame decodes frame i through Archive.Stream, each file with
// WriteFile (its SHA-256 checked).
func streamFrame(a *Archive, i, threads int) (*Decoded, error) {
	s, err := a.Stream(i)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	d := &Decoded{Frame: i}
	for k, ff := range a.Frames[i].files() {
		var b bytes.Buffer
		if err := s.WriteFile(context.Background(), &b, k, codec.DecodeOptions{Threads: threads}); err != nil {
			return nil, err
		}
		for _, ff := range s.files {
			if ff.bytes != 0 || len(ff.cache) != 0 {
				return nil, fmt.Errorf("frame %d: %s keeps %d bytes of blocks after WriteFile", i, ff.label, ff.bytes)
			}
		}
		d.Files = append(d.Files, DecodedFile{Name: ff.Name, Data: b.Bytes()})
	}
	d.Data = d.Files[0].Data
	return d, nil
}

func TestTrajectorySynthetic(t *testing.T) {
	steps := synthSteps(7)
	for _, mode := range []RefMode{RefPrevious, RefKeyframe} {
		for _, k := range []int{1, 3, 100} {
			f := pack(t, steps, k, mode, 1)
			a := checkAll(t, f, steps)
			for i, fr := range a.Frames {
				want := -1 // every K-th frame is a keyframe
				if i%k != 0 {
					want = i - 1
					if mode == RefKeyframe {
						want = i - i%k
					}
				}
				if fr.Ref != want || a.RefFor(i) != want {
					t.Fatalf("frame %d refers to %d (RefFor %d), want %d", i, fr.Ref, a.RefFor(i), want)
				}
			}
			if g := pack(t, steps, k, mode, 3); !bytes.Equal(g.b, f.b) {
				t.Fatalf("mode %d K=%d: archive differs between 1 and 3 threads", mode, k)
			}
		}
	}
}

func TestTrajectoryReal(t *testing.T) {
	steps := realSteps(t, "bf16")
	for _, c := range []struct {
		k       int
		mode    RefMode
		threads int
	}{{21, RefPrevious, 2}, {5, RefPrevious, 1}, {4, RefKeyframe, 2}} {
		f := pack(t, steps, c.k, c.mode, c.threads)
		checkAll(t, f, steps)
		t.Logf("K=%d mode=%d: %d bytes", c.k, c.mode, len(f.b))
	}
}

func TestTrajectoryOptimizer(t *testing.T) {
	steps := realSteps(t, "optim")
	f := pack(t, steps, 10, RefPrevious, 2)
	checkAll(t, f, steps)
}

// TestAppendCrash cuts an append short at every point (and adds garbage):
// the archive must open with the frames before it, and a new append must
// cut off the remains and succeed.
func TestAppendCrash(t *testing.T) {
	steps := synthSteps(4)
	base := pack(t, steps[:3], 2, RefPrevious, 1)
	full := pack(t, steps, 2, RefPrevious, 1)
	if !bytes.HasPrefix(full.b, base.b) {
		t.Fatal("an append rewrote earlier bytes")
	}
	step := max(1, (len(full.b)-len(base.b))/97)
	for cut := len(base.b); cut < len(full.b); cut += step {
		for _, garbage := range [][]byte{nil, []byte("junk NZTREND\x00 not a trailer"), bytes.Repeat([]byte{0xff}, 40)} {
			f := &memFile{b: append(bytes.Clone(full.b[:cut]), garbage...)}
			a, err := Open(f, int64(len(f.b)))
			if err != nil {
				t.Fatalf("cut at %d: %v", cut, err)
			}
			if len(a.Frames) != 3 || a.End != int64(len(base.b)) || a.Tail != int64(len(f.b)-len(base.b)) {
				t.Fatalf("cut at %d: %d frames, end %d, tail %d", cut, len(a.Frames), a.End, a.Tail)
			}
			if a.TailTrailer {
				t.Fatalf("cut at %d: an interrupted append taken for a damaged index", cut)
			}
			w, err := OpenWriter(f, int64(len(f.b)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Append(context.Background(), steps[3].input(), codec.EncodeOptions{}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f.b, full.b) {
				t.Fatalf("cut at %d: the recovered append differs from an uninterrupted one", cut)
			}
		}
	}
	checkAll(t, full, steps)
	// a whole append whose index is damaged: it ends like a complete
	// append, which Open reports (TailTrailer) instead of calling it an
	// interrupted one; so does a whole append whose trailer's magic alone
	// is damaged (its index and CRC check)
	for _, at := range []int{len(full.b) - 40, len(full.b) - trailerLen - 3, len(full.b) - 1, len(full.b) - 8} {
		f := &memFile{b: bytes.Clone(full.b)}
		f.b[at] ^= 0x10
		a, err := Open(f, int64(len(f.b)))
		if err != nil || len(a.Frames) != 3 || !a.TailTrailer || a.Tail != int64(len(full.b)-len(base.b)) {
			t.Fatalf("damaged last index at %d: %v, %d frames, tail %d, damaged %v", at, err, len(a.Frames), a.Tail, a.TailTrailer)
		}
	}
	// an interrupted first append: only the header and the empty index
	empty := pack(t, nil, 2, RefPrevious, 1)
	f := &memFile{b: append(bytes.Clone(empty.b), 1, 2, 3)}
	a, err := Open(f, int64(len(f.b)))
	if err != nil || len(a.Frames) != 0 || a.Tail != 3 {
		t.Fatalf("empty trajectory with a tail: %v %+v", err, a)
	}
	// a header and nothing else
	f = &memFile{b: bytes.Clone(empty.b[:headerLen+5])}
	if a, err = Open(f, int64(len(f.b))); err != nil || len(a.Frames) != 0 {
		t.Fatalf("bare header: %v", err)
	}
}

// TestAppendDecodesReference: appending to an archive opened afresh
// decodes the reference frame from the archive.
func TestAppendDecodesReference(t *testing.T) {
	steps := synthSteps(5)
	want := pack(t, steps, 100, RefPrevious, 1)
	f := pack(t, steps[:2], 100, RefPrevious, 1)
	for _, s := range steps[2:] {
		w, err := OpenWriter(f, int64(len(f.b)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Append(context.Background(), s.input(), codec.EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(f.b, want.b) {
		t.Fatal("appending one by one differs from packing")
	}
	checkAll(t, f, steps)
}

func TestTrajectoryErrors(t *testing.T) {
	steps := synthSteps(3)
	f := pack(t, steps, 10, RefPrevious, 1)
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Find("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("find: %v", err)
	}
	if i, err := a.Find("step_1.safetensors"); err != nil || i != 1 {
		t.Fatalf("find by name: %d %v", i, err)
	}
	if i, err := a.Find("2"); err != nil || i != 2 {
		t.Fatalf("find by index: %d %v", i, err)
	}
	if _, err := Open(bytes.NewReader([]byte("not a trajectory at all")), 23); !errors.Is(err, ErrNotTrajectory) {
		t.Fatalf("open junk: %v", err)
	}
	// a damaged frame payload: extraction fails with a codec error
	bad := &memFile{b: bytes.Clone(f.b)}
	fr := a.Frames[1]
	bad.b[fr.Offset+fr.Length/2] ^= 0x55
	b, _ := Open(bad, int64(len(bad.b)))
	if _, err := b.Extract(context.Background(), 2, codec.DecodeOptions{}); err == nil {
		t.Fatal("damaged frame extracts")
	}
}

// FuzzParseIndex feeds arbitrary bytes to the index parser, seeded with the
// indexes of real (small) trajectories.
func FuzzParseIndex(f *testing.F) {
	for _, s := range fuzzTrajSeeds(f) {
		a, err := Open(bytes.NewReader(s), int64(len(s)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a.Index.Marshal(), a.End, uint8(a.Version))
	}
	f.Fuzz(func(t *testing.T, b []byte, end int64, v uint8) {
		x, err := ParseIndex(b, end, int(v))
		if err != nil {
			return
		}
		if x.Version != int(v) {
			t.Fatalf("version %d parsed as %d", v, x.Version)
		}
		y, err := ParseIndex(x.Marshal(), end, int(v))
		if err != nil || fmt.Sprint(x) != fmt.Sprint(y) {
			t.Fatalf("index does not roundtrip: %v", err)
		}
	})
}

// FuzzOpen feeds arbitrary files to Open and decodes what it finds.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzTrajSeeds(f) {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) { fuzzOpen(t, dir, b) })
}

// fuzzOpen is FuzzOpen's check of one input; WalkFiles spills into dir.
func fuzzOpen(t *testing.T, dir string, b []byte) {
	a, err := Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return
	}
	// At most 64 KiB + 8 bytes per input byte of steps, decoded
	// four ways below: a few bytes of index can describe megabytes of
	// zeros, and decoding them slowed the fuzzer to a crawl (issue
	// 28). Larger trajectories only have their frames' archives
	// opened (their indexes checked against the trajectory's).
	var total int64
	for _, fr := range a.Frames {
		total += min(fr.Size, 1<<40)
	}
	if total > 64<<10+8*int64(len(b)) {
		for i := range a.Frames {
			if rd, err := a.FrameReader(i); err == nil {
				rd.Close()
			}
		}
		return
	}
	werr := a.Walk(context.Background(), codec.DecodeOptions{Threads: 1}, func(*Decoded) error { return nil })
	// WalkFiles decodes the same frames another way (block by block
	// into files): the same verdict, and nothing left behind
	ferr := a.WalkFiles(context.Background(), codec.DecodeOptions{Threads: 2}, dir, func(int, []codec.Input) error { return nil })
	if (werr == nil) != (ferr == nil) {
		t.Fatalf("Walk: %v; WalkFiles: %v", werr, ferr)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("WalkFiles left %d files", len(es))
	}
	_ = a.Verify(context.Background(), codec.DecodeOptions{Threads: 2}, nil)
	// the last frame streamed down its chain, every file: an error or
	// the checked bytes, never a panic
	if n := len(a.Frames); n > 0 {
		if s, err := a.Stream(n - 1); err == nil {
			for k := range a.Frames[n-1].files() {
				if s.WriteFile(context.Background(), io.Discard, k, codec.DecodeOptions{Threads: 2}) != nil {
					break
				}
			}
			s.Close()
		}
	}
}

// fuzzTrajSeeds are small trajectories: synthetic steps and, when the corpus
// is there, the first tensors of three real steps.
func fuzzTrajSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	seeds = append(seeds, pack(tb, synthSteps(3), 2, RefPrevious, 1).b)
	seeds = append(seeds, packMulti(tb, shardedSteps(3, 2), 2).b) // version 2, steps of 3 files
	seeds = append(seeds, v1Archive(tb, synthSteps(2)).b)         // version 1
	for _, d := range []string{"../../shared", "../shared"} {
		dir := filepath.Join(d, "trajectories", "tinygpt-fortunes")
		var steps []step
		for _, s := range []int{900, 950, 1000} {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("step_%06d.bf16.safetensors", s)))
			if err != nil {
				break
			}
			// the header and the tensors in the first 24 KiB
			var keep []codec.Segment
			for _, sg := range safetensorsLayout(b) {
				if sg.Offset+sg.Length <= 24<<10 {
					keep = append(keep, sg)
				}
			}
			steps = append(steps, step{name: fmt.Sprintf("step_%d", s), data: b[:24<<10], segs: keep})
		}
		if len(steps) == 3 {
			seeds = append(seeds, pack(tb, steps, 3, RefPrevious, 1).b)
			break
		}
	}
	return seeds
}

// TestAppendRollsBack: an append that fails after writing part of its
// frame (its writer's BeforeCommit refuses, as when an input changed while
// it was read; or the encoder is cancelled) leaves the archive as it was,
// with no tail, and the next append goes on.
func TestAppendRollsBack(t *testing.T) {
	steps := synthSteps(4)
	f := pack(t, steps[:3], 10, RefPrevious, 1)
	before := bytes.Clone(f.b)
	w, err := OpenWriter(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	w.BeforeCommit = func() error { return errors.New("an input changed") }
	if _, err := w.Append(context.Background(), steps[3].input(), codec.EncodeOptions{Threads: 1}); err == nil || !strings.Contains(err.Error(), "an input changed") {
		t.Fatalf("append with a refusing check: %v", err)
	}
	if !bytes.Equal(f.b, before) || w.Archive().Tail != 0 {
		t.Fatalf("a refused append left %d bytes (tail %d), the archive had %d", len(f.b), w.Archive().Tail, len(before))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.BeforeCommit = nil
	if _, err := w.Append(ctx, steps[3].input(), codec.EncodeOptions{Threads: 1}); err == nil || !bytes.Equal(f.b, before) {
		t.Fatalf("a cancelled append: %v, %d bytes of %d", err, len(f.b), len(before))
	}
	if _, err := w.Append(context.Background(), steps[3].input(), codec.EncodeOptions{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	if want := pack(t, steps, 10, RefPrevious, 1); !bytes.Equal(f.b, want.b) {
		t.Fatal("the append after the failed ones differs from a pack")
	}
}

// TestFindAmbiguous: a name several frames share is refused, naming them.
func TestFindAmbiguous(t *testing.T) {
	a := &Archive{Index: Index{Frames: []Frame{{Name: "dup"}, {Name: "dup"}, {Name: "1"}, {Name: "x"}}}}
	if _, err := a.Find("dup"); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "frames 0 1") {
		t.Fatalf("Find(dup): %v", err)
	}
	for name, want := range map[string]int{"x": 3, "1": 2, "0": 0, "3": 3} {
		if i, err := a.Find(name); err != nil || i != want {
			t.Fatalf("Find(%s) = %d, %v; want %d", name, i, err, want)
		}
	}
	if _, err := a.Find("9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find(9): %v", err)
	}
}

// TestFindStem: a name without its extensions finds the one frame it
// names; one that names several, or none, says which frames come close.
func TestFindStem(t *testing.T) {
	names := []string{"step_000500.bf16.safetensors", "step_000500.f32.safetensors", "step_000550.bf16.safetensors", "7.safetensors", "run", "run.x"}
	a := &Archive{}
	for _, n := range names {
		a.Frames = append(a.Frames, Frame{Name: n})
	}
	for name, want := range map[string]int{
		"step_000550":      2, // the one frame it extends
		"step_000550.bf16": 2,
		"step_000500.f32":  1,
		"run":              4, // an exact name before a stem
		"3":                3, // an index before a stem
		"7":                3, // no frame 7: the stem of 7.safetensors
	} {
		if i, err := a.Find(name); err != nil || i != want {
			t.Errorf("Find(%q) = %d, %v; want %d", name, i, err, want)
		}
	}
	if _, err := a.Find("step_000500"); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "0 (step_000500.bf16.safetensors), 1 (step_000500.f32.safetensors)") {
		t.Errorf("Find(step_000500): %v", err)
	}
	if _, err := a.Find("000550"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "2 (step_000550.bf16.safetensors)") {
		t.Errorf("Find(000550): %v", err)
	}
	for _, name := range []string{"", ".", "step_0005", "nope"} {
		if _, err := a.Find(name); err == nil {
			t.Errorf("Find(%q) found a frame", name)
		}
	}
}

// opLog is a File that records its writes and syncs.
type opLog struct {
	memFile
	ops []string
}

func (o *opLog) WriteAt(p []byte, off int64) (int, error) {
	op := "write"
	if bytes.HasSuffix(p, TrailerMagic[:]) {
		op = "trailer"
	}
	o.ops = append(o.ops, op)
	return o.memFile.WriteAt(p, off)
}

func (o *opLog) Sync() error { o.ops = append(o.ops, "sync"); return nil }

// TestIndexSyncedBeforeTrailer: an append syncs the new index before it
// writes the trailer, so that a trailer's magic on disk means its index
// was there whole: a tail that ends in one but does not check is damage
// (TailTrailer), not a crash between the two writes.
func TestIndexSyncedBeforeTrailer(t *testing.T) {
	steps := synthSteps(2)
	f := &opLog{}
	w, err := Create(f, 10, RefPrevious)
	if err != nil {
		t.Fatal(err)
	}
	f.ops = nil
	if _, err := w.Append(context.Background(), steps[0].input(), codec.EncodeOptions{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	n := len(f.ops)
	if n < 4 || strings.Join(f.ops[n-4:], " ") != "write sync trailer sync" {
		t.Fatalf("an append's last writes and syncs: %v", f.ops)
	}
}
