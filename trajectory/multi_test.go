package trajectory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"neuralzip/codec"
)

// mstep is a step of several files (a sharded checkpoint).
type mstep struct {
	name  string
	files []step
}

func (m mstep) inputs() []codec.Input {
	ins := make([]codec.Input, len(m.files))
	for k, f := range m.files {
		ins[k] = f.input()
		if strings.HasSuffix(f.name, ".json") {
			ins[k].Format = "unknown"
		}
	}
	return ins
}

// single is a one-file step as an mstep.
func single(s step) mstep { return mstep{name: s.name, files: []step{s}} }

// safetensorsFile builds a safetensors file of the named tensors (BF16
// for 2-byte data, F32 for 4-byte data, as dt says).
func safetensorsFile(meta string, names []string, dts []string, data [][]byte) []byte {
	var hdr bytes.Buffer
	hdr.WriteString(`{"__metadata__":{"note":"` + meta + `"}`)
	var off int64
	for i, n := range names {
		size := int64(2)
		if dts[i] == "F32" {
			size = 4
		}
		fmt.Fprintf(&hdr, `,%q:{"dtype":%q,"shape":[%d],"data_offsets":[%d,%d]}`, n, dts[i], int64(len(data[i]))/size, off, off+int64(len(data[i])))
		off += int64(len(data[i]))
	}
	hdr.WriteString("}")
	var file []byte
	file = binary.LittleEndian.AppendUint64(file, uint64(hdr.Len()))
	file = append(file, hdr.Bytes()...)
	for _, d := range data {
		file = append(file, d...)
	}
	return file
}

// shardedSteps makes a synthetic training run of n sharded checkpoints:
// per step an index JSON file and `shards` safetensors shards, each with a
// BF16 weight and an F32 bias that drift by a little per step.
func shardedSteps(n, shards int) []mstep {
	r := rand.New(rand.NewPCG(7, uint64(shards)))
	ws := make([][]float32, shards)
	for k := range ws {
		ws[k] = make([]float32, 2500)
		for i := range ws[k] {
			ws[k][i] = float32(r.NormFloat64() * 0.02)
		}
	}
	ws[0][0], ws[0][1] = float32(math.Inf(1)), math.Float32frombits(0x7fc00001)
	var out []mstep
	for s := range n {
		m := mstep{name: fmt.Sprintf("checkpoint-%d", 100*(s+1))}
		weightMap := map[string]string{}
		var shardFiles []step
		for k := range shards {
			w := ws[k]
			for i := 2; i < len(w); i++ {
				w[i] += float32(r.NormFloat64() * 0.0004)
			}
			bf := make([]byte, 2*2000)
			for i := range 2000 {
				binary.LittleEndian.PutUint16(bf[2*i:], uint16(math.Float32bits(w[i])>>16))
			}
			f32 := make([]byte, 4*500)
			for i := range 500 {
				binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(w[2000+i]))
			}
			name := fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, shards)
			wn, bn := fmt.Sprintf("layers.%d.weight", k), fmt.Sprintf("layers.%d.bias", k)
			weightMap[wn], weightMap[bn] = name, name
			data := safetensorsFile(fmt.Sprint("step ", s), []string{wn, bn}, []string{"BF16", "F32"}, [][]byte{bf, f32})
			shardFiles = append(shardFiles, step{name: name, data: data, segs: safetensorsLayout(data)})
		}
		idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": shards * 6000}, "weight_map": weightMap})
		m.files = append([]step{{name: "model.safetensors.index.json", data: idx}}, shardFiles...)
		out = append(out, m)
	}
	return out
}

// packMulti writes a trajectory of the steps with AppendFiles.
func packMulti(t testing.TB, steps []mstep, k int) *memFile {
	t.Helper()
	return packMultiKeys(t, steps, k, nil)
}

// packMultiKeys packs steps with the given keyframes (nil: appends' rule).
func packMultiKeys(t testing.TB, steps []mstep, k int, keys []bool) *memFile {
	t.Helper()
	f := &memFile{}
	w, err := Create(f, k, RefPrevious)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		if keys != nil && keys[i] {
			_, err = w.AppendKeyframeFiles(context.Background(), s.name, s.inputs(), codec.EncodeOptions{Threads: 2})
		} else {
			_, err = w.AppendFiles(context.Background(), s.name, s.inputs(), codec.EncodeOptions{Threads: 2})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// sameStep checks a decoded frame against its step: every file's name,
// bytes and SHA-256, and the index's description of the step.
func sameStep(fr Frame, d *Decoded, s mstep) error {
	if fr.Name != s.name || len(d.Files) != len(s.files) || len(fr.Files) != len(s.files) {
		return fmt.Errorf("frame %d (%q): %d files decoded, %d listed, step %q has %d", d.Frame, fr.Name, len(d.Files), len(fr.Files), s.name, len(s.files))
	}
	var size int64
	var sums []byte
	for k, f := range s.files {
		sum := sha256.Sum256(f.data)
		if d.Files[k].Name != f.name || !bytes.Equal(d.Files[k].Data, f.data) || sha256.Sum256(d.Files[k].Data) != sum {
			return fmt.Errorf("frame %d file %d (%s): decoded bytes differ", d.Frame, k, f.name)
		}
		if fr.Files[k] != (FrameFile{Name: f.name, Size: int64(len(f.data)), SHA256: sum}) {
			return fmt.Errorf("frame %d file %d: index lists %+v", d.Frame, k, fr.Files[k])
		}
		size += int64(len(f.data))
		sums = append(sums, sum[:]...)
	}
	want := sha256.Sum256(sums)
	if len(s.files) == 1 {
		want = sha256.Sum256(s.files[0].data)
	}
	if fr.Size != size || fr.SHA256 != want {
		return fmt.Errorf("frame %d: size %d SHA-256 %x, want %d %x", d.Frame, fr.Size, fr.SHA256, size, want)
	}
	if !bytes.Equal(d.Data, s.files[0].data) {
		return fmt.Errorf("frame %d: Data is not the first file", d.Frame)
	}
	return nil
}

// checkMulti decodes every frame by Walk and by Extract.
func checkMulti(t *testing.T, f *memFile, steps []mstep) *Archive {
	t.Helper()
	all := make([]int, len(steps))
	for i := range all {
		all[i] = i
	}
	return checkFrames(t, f, len(steps), all, func(fr Frame, d *Decoded) error { return sameStep(fr, d, steps[d.Frame]) })
}

// TestMultiFileSteps packs a run of sharded checkpoints (an index file and
// two shards per step) with K = 2 and with a single keyframe: every file
// of every step decodes bit-exact, frames coded against the step before
// are smaller than on their own, and appends to an archive opened afresh
// (which decode the reference frame's files) give the same archive.
func TestMultiFileSteps(t *testing.T) {
	steps := shardedSteps(5, 2)
	indep := packMulti(t, steps, 1)
	ai := checkMulti(t, indep, steps)
	for _, k := range []int{2, 100} {
		f := packMulti(t, steps, k)
		a := checkMulti(t, f, steps)
		if a.Version != 2 || binary.LittleEndian.Uint16(f.b[8:]) != 2 {
			t.Fatalf("index version %d, header %d", a.Version, binary.LittleEndian.Uint16(f.b[8:]))
		}
		for i, fr := range a.Frames {
			want := -1
			if i%k != 0 {
				want = i - 1
			}
			if fr.Ref != want {
				t.Fatalf("K=%d: frame %d refers to %d, want %d", k, i, fr.Ref, want)
			}
			if fr.Ref >= 0 && fr.Length*10 > ai.Frames[i].Length*9 {
				t.Fatalf("K=%d: frame %d coded against the step before is %d bytes, on its own %d", k, i, fr.Length, ai.Frames[i].Length)
			}
			// the frame's archive names the reference frame's files
			if fr.Ref >= 0 {
				rd, err := a.FrameReader(i)
				if err != nil {
					t.Fatal(err)
				}
				refs := rd.RefFiles()
				rd.Close()
				if len(refs) != len(a.Frames[fr.Ref].Files) {
					t.Fatalf("frame %d coded against %d files", i, len(refs))
				}
				for j, r := range refs {
					if rf := a.Frames[fr.Ref].Files[j]; r.Size != rf.Size || r.SHA256 != rf.SHA256 {
						t.Fatalf("frame %d reference file %d is not frame %d's", i, j, fr.Ref)
					}
				}
			}
		}
		t.Logf("K=%d: %d bytes, independent %d", k, len(f.b), len(indep.b))
		if k == 2 {
			// one append at a time, each decoding its reference
			g := packMulti(t, steps[:1], k)
			for _, s := range steps[1:] {
				w, err := OpenWriter(g, int64(len(g.b)))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.AppendFiles(context.Background(), s.name, s.inputs(), codec.EncodeOptions{Threads: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(g.b, f.b) {
				t.Fatal("appending one by one differs from packing")
			}
		}
	}
	// a step of two files named alike is refused before anything is written
	f := packMulti(t, steps[:1], 2)
	w, _ := OpenWriter(f, int64(len(f.b)))
	before := bytes.Clone(f.b)
	dup := steps[1].inputs()
	dup[2].Name = dup[1].Name
	if _, err := w.AppendFiles(context.Background(), "dup", dup, codec.EncodeOptions{}); err == nil || !bytes.Equal(f.b, before) {
		t.Fatalf("duplicate file names: %v", err)
	}
	if _, err := w.AppendFiles(context.Background(), "none", nil, codec.EncodeOptions{}); err == nil {
		t.Fatal("a step of no files was appended")
	}
}

// TestMixedSteps mixes single-file and sharded steps in one run.
func TestMixedSteps(t *testing.T) {
	sh := shardedSteps(3, 2)
	one := synthSteps(3)
	steps := []mstep{single(one[0]), sh[0], sh[1], single(one[1]), single(one[2]), sh[2]}
	for _, k := range []int{3, 100} {
		f := packMulti(t, steps, k)
		a := checkMulti(t, f, steps)
		if a.Frames[0].SHA256 != sha256.Sum256(one[0].data) || a.Frames[0].Name != one[0].name {
			t.Fatal("a single-file step is not described by its file")
		}
		// Append (single file) goes on after a multi-file frame
		w, err := OpenWriter(f, int64(len(f.b)))
		if err != nil {
			t.Fatal(err)
		}
		extra := synthSteps(4)[3]
		if _, err := w.Append(context.Background(), extra.input(), codec.EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
		checkMulti(t, f, append(steps[:len(steps):len(steps)], single(extra)))
	}
}

// marshalV1 is the version 1 index, written independently of Marshal.
func marshalV1(x Index) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(x.K))
	b = append(b, byte(x.Mode))
	b = binary.AppendUvarint(b, uint64(len(x.Frames)))
	for _, f := range x.Frames {
		b = binary.AppendUvarint(b, uint64(len(f.Name)))
		b = append(b, f.Name...)
		b = binary.AppendUvarint(b, uint64(f.Size))
		b = append(b, f.SHA256[:]...)
		b = binary.AppendUvarint(b, uint64(f.Offset))
		b = binary.AppendUvarint(b, uint64(f.Length))
		b = binary.AppendUvarint(b, uint64(f.Ref+1))
	}
	return b
}

// v1Archive builds a version 1 trajectory as the version 1 writer did (K =
// 2, each frame against the one before, an index after each frame), with
// frames coded by package codec directly.
func v1Archive(t testing.TB, steps []step) *memFile {
	t.Helper()
	x := Index{K: 2, Mode: RefPrevious}
	b := appendTrailer(headerVersion(1), marshalV1(x), headerLen, 0)
	for i, s := range steps {
		opt := codec.EncodeOptions{Threads: 1, Digest: codec.DigestSHA256} // as frames hold
		ref := -1
		if i%2 == 1 {
			ref = i - 1
			r, err := codec.NewReference([]codec.Input{steps[i-1].input()})
			if err != nil {
				t.Fatal(err)
			}
			opt.Ref = r
		}
		var a bytes.Buffer
		if _, err := codec.Encode(context.Background(), &a, []codec.Input{s.input()}, opt); err != nil {
			t.Fatal(err)
		}
		x.Frames = append(x.Frames, Frame{Name: s.name, Size: int64(len(s.data)), SHA256: sha256.Sum256(s.data), Offset: int64(len(b)), Length: int64(a.Len()), Ref: ref})
		b = append(b, a.Bytes()...)
		b = appendTrailer(b, marshalV1(x), x.Frames[i].Offset+x.Frames[i].Length, len(x.Frames))
	}
	return &memFile{b: b}
}

// TestVersion1 opens and extracts a version 1 archive, appends single-file
// steps to it in version 1, refuses a multi-file step, and repacks it to
// version 2.
func TestVersion1(t *testing.T) {
	steps := synthSteps(5)
	f := v1Archive(t, steps[:3])
	a := checkAll(t, f, steps[:3])
	if a.Version != 1 || len(a.Frames[1].Files) != 1 || a.Frames[1].Files[0] != (FrameFile{Name: steps[1].name, Size: int64(len(steps[1].data)), SHA256: sha256.Sum256(steps[1].data)}) {
		t.Fatalf("version %d, frame 1 files %+v", a.Version, a.Frames[1].Files)
	}
	// appends stay version 1: the archive is the one the version 1 writer made
	w, err := OpenWriter(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(context.Background(), steps[3].input(), codec.EncodeOptions{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	if want := v1Archive(t, steps[:4]); !bytes.Equal(f.b, want.b) {
		t.Fatal("an append to a version 1 archive differs from the version 1 writer's")
	}
	// a step of several files is refused, and nothing is written
	before := bytes.Clone(f.b)
	sh := shardedSteps(1, 2)[0]
	if _, err := w.AppendFiles(context.Background(), sh.name, sh.inputs(), codec.EncodeOptions{}); err == nil || !strings.Contains(err.Error(), "repack") {
		t.Fatalf("multi-file append to version 1: %v", err)
	}
	// so is a single file under another name (version 1 names frames by their file)
	if _, err := w.AppendFiles(context.Background(), "renamed", []codec.Input{steps[4].input()}, codec.EncodeOptions{}); err == nil {
		t.Fatal("a renamed single-file step was appended to a version 1 archive")
	}
	if !bytes.Equal(f.b, before) {
		t.Fatal("a refused append changed the archive")
	}
	checkAll(t, f, steps[:4])
	// repack writes version 2, which takes the sharded step
	a, err = Open(f, int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	g := &memFile{}
	w2, err := Repack(context.Background(), a, g, 2, codec.EncodeOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint16(g.b[8:]) != 2 {
		t.Fatal("repack did not write version 2")
	}
	if _, err := w2.AppendFiles(context.Background(), sh.name, sh.inputs(), codec.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	var all []mstep
	for _, s := range steps[:4] {
		all = append(all, single(s))
	}
	checkMulti(t, g, append(all, sh))
	// an unknown version is refused
	bad := &memFile{b: bytes.Clone(f.b)}
	binary.LittleEndian.PutUint16(bad.b[8:], 3)
	if _, err := Open(bad, int64(len(bad.b))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version 3: %v", err)
	}
}

// TestRepackMultiFile: repacking a run of sharded steps built by appends
// gives exactly the archive a planned pack of the same steps gives.
func TestRepackMultiFile(t *testing.T) {
	steps := shardedSteps(7, 2)
	const k = 3
	var p Planner
	for _, s := range steps {
		if err := p.AddFiles(context.Background(), s.inputs(), codec.EncodeOptions{Threads: 2}); err != nil {
			t.Fatal(err)
		}
	}
	keys := PlanKeyframes(p.Saving(), k)
	want := packMultiKeys(t, steps, k, keys)
	// the planner measured the frames that were written
	wa := checkMulti(t, want, steps)
	for i, fr := range wa.Frames {
		m := p.Conditioned[i]
		if fr.Keyframe() {
			m = p.Independent[i]
		}
		if fr.Length != m {
			t.Fatalf("frame %d: %d bytes, planner measured %d", i, fr.Length, m)
		}
	}
	regular := packMulti(t, steps, k)
	a, err := Open(regular, int64(len(regular.b)))
	if err != nil {
		t.Fatal(err)
	}
	got := &memFile{}
	repackBoth(t, a, got, k, codec.EncodeOptions{Threads: 2})
	if !bytes.Equal(got.b, want.b) {
		t.Fatalf("repacked: %d bytes, planned pack: %d bytes, not the same archive (keys %v)", len(got.b), len(want.b), keys)
	}
	checkMulti(t, got, steps)
	// sampling covers the step: files that are each small but together
	// above the threshold are sampled
	withSampling(t, int64(len(steps[0].files[1].data))+10, 2, 256)
	var q Planner
	if err := q.AddFiles(context.Background(), steps[0].inputs(), codec.EncodeOptions{}); err != nil || !q.Sampled[0] {
		t.Fatalf("a step above the threshold was not sampled (%v)", err)
	}
	if err := q.Add(context.Background(), steps[1].files[1].input(), codec.EncodeOptions{}); err != nil || q.Sampled[1] {
		t.Fatalf("a file below the threshold was sampled (%v)", err)
	}
}

// TestAppendCrashMulti cuts the append of a sharded step short at many
// points: the archive opens with the frames before it, and the append
// done again gives the archive an uninterrupted one gives.
func TestAppendCrashMulti(t *testing.T) {
	steps := shardedSteps(4, 2)
	base := packMulti(t, steps[:3], 2)
	full := packMulti(t, steps, 2)
	if !bytes.HasPrefix(full.b, base.b) {
		t.Fatal("an append rewrote earlier bytes")
	}
	stride := max(1, (len(full.b)-len(base.b))/41)
	for cut := len(base.b); cut < len(full.b); cut += stride {
		f := &memFile{b: append(bytes.Clone(full.b[:cut]), "junk NZTREND\x00"...)}
		a, err := Open(f, int64(len(f.b)))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(a.Frames) != 3 || a.End != int64(len(base.b)) {
			t.Fatalf("cut at %d: %d frames, end %d", cut, len(a.Frames), a.End)
		}
		w, err := OpenWriter(f, int64(len(f.b)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.AppendFiles(context.Background(), steps[3].name, steps[3].inputs(), codec.EncodeOptions{Threads: 1}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.b, full.b) {
			t.Fatalf("cut at %d: the recovered append differs from an uninterrupted one", cut)
		}
	}
	checkMulti(t, full, steps)
}

// TestHostileIndexV2: a version 2 index that claims a huge number of files
// (or none) is an error, found before anything is allocated for them.
func TestHostileIndexV2(t *testing.T) {
	idx := func(files uint64, tail int) []byte {
		var b []byte
		b = binary.AppendUvarint(b, 2) // K
		b = append(b, 0)               // mode
		b = binary.AppendUvarint(b, 1) // frames
		b = append(b, 1, 'x')          // name
		b = binary.AppendUvarint(b, files)
		return append(b, make([]byte, tail)...)
	}
	for _, c := range []struct {
		files uint64
		tail  int
	}{{1 << 62, 64}, {math.MaxUint64, 64}, {1 << 20, 1 << 10}, {30, 34 * 30}, {0, 40}} {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		_, err := ParseIndex(idx(c.files, c.tail), 1<<40, 2)
		runtime.ReadMemStats(&m1)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d files in %d bytes: %v", c.files, c.tail, err)
		}
		if n := m1.TotalAlloc - m0.TotalAlloc; n > 64<<10 {
			t.Fatalf("%d files in %d bytes: allocated %d bytes", c.files, c.tail, n)
		}
	}
	// a version 2 index read as version 1 (and the other way) fails or
	// differs, never panics; an unknown version is refused
	good := packMulti(t, shardedSteps(2, 2), 2)
	a, err := Open(good, int64(len(good.b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseIndex(a.Marshal(), a.End, 1); err == nil {
		t.Fatal("a version 2 index of multi-file frames parsed as version 1")
	}
	for _, v := range []int{0, 3} {
		if _, err := ParseIndex(a.Marshal(), a.End, v); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("version %d: %v", v, err)
		}
	}
	// file sizes that overflow the step's size
	var b []byte
	b = binary.AppendUvarint(b, 2)
	b = append(b, 0)
	b = binary.AppendUvarint(b, 1)
	b = append(b, 1, 'x')
	b = binary.AppendUvarint(b, 2)
	for range 2 {
		b = append(b, 1, 'f')
		b = binary.AppendUvarint(b, math.MaxInt64)
		b = append(b, make([]byte, 32)...)
	}
	b = append(b, 16, 0, 0)
	if _, err := ParseIndex(b, 1<<40, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("overflowing sizes: %v", err)
	}
}
