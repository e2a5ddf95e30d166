package core

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
	"neuralzip/trajectory"
)

// trajStep is a small BF16+F32 checkpoint of a "training run": the same
// weights moved a little more at each step.
func trajStep(step int) TrajSource {
	const n = 20000
	var bf, f32 []byte
	for i := 0; i < n; i++ {
		x := float32(math.Sin(float64(i)*0.7))*0.05*float32(1+i%7) + float32(step)*2e-4*float32(math.Cos(float64(i)))
		bf = binary.LittleEndian.AppendUint16(bf, uint16(math.Float32bits(x)>>16))
		f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(x*3))
	}
	hdr := fmt.Sprintf(`{"a":{"dtype":"BF16","shape":[%d],"data_offsets":[0,%d]},"b":{"dtype":"F32","shape":[%d],"data_offsets":[%d,%d]}}`,
		n, len(bf), n, len(bf), len(bf)+len(f32))
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	data := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	data = append(data, hdr...)
	h := int64(len(data))
	data = append(append(data, bf...), f32...)
	segs := []codec.Segment{
		{Offset: 0, Length: h},
		{Name: "a", DType: dtype.BF16, Shape: []int64{n}, Offset: h, Length: int64(len(bf))},
		{Name: "b", DType: dtype.F32, Shape: []int64{n}, Offset: h + int64(len(bf)), Length: int64(len(f32))},
	}
	return TrajSource{Name: fmt.Sprintf("step_%03d.safetensors", step), Data: data, Segs: segs}
}

func TestAnalyzeTrajectory(t *testing.T) {
	src := []TrajSource{trajStep(0), trajStep(1), trajStep(2)}
	var calls []int
	steps, err := AnalyzeTrajectory(context.Background(), src, func(done, total int) { calls = append(calls, done) })
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 || len(calls) != 3 || calls[2] != 3 {
		t.Fatalf("%d steps, progress %v", len(steps), calls)
	}
	for i, s := range steps {
		// every size is a real archive's: it decodes back (checked here for
		// the independent one) and is smaller than the raw bytes
		if s.Raw != int64(len(src[i].Data)) || s.Independent <= 0 || s.Independent >= s.Raw {
			t.Errorf("step %d: raw %d independent %d", i, s.Raw, s.Independent)
		}
		if s.SetupRatio <= 1 {
			t.Errorf("step %d: setup ratio %.3f", i, s.SetupRatio)
		}
		if i == 0 {
			if s.Conditioned != s.Independent || s.Changed != nil {
				t.Errorf("first step: conditioned %d independent %d changed %v", s.Conditioned, s.Independent, s.Changed)
			}
			continue
		}
		if s.Conditioned >= s.Independent {
			t.Errorf("step %d: conditioned %d not below independent %d", i, s.Conditioned, s.Independent)
		}
		// BF16 and F32 hold as many values each: the tie goes to 16 bits
		if len(s.Changed) != 16 {
			t.Fatalf("step %d: %d bit planes, want 16", i, len(s.Changed))
		}
		// the low mantissa bits change far more often than the sign and
		// the top exponent bits
		if s.Changed[0] <= 5*s.Changed[14] || s.Changed[15] > 0.01 || s.Changed[0] == 0 {
			t.Errorf("step %d: changed bits %v", i, s.Changed)
		}
	}
	// the independent size is the codec's
	arc, _ := codec.CompressBytes(context.Background(), src[1].Data, src[1].Segs, codec.EncodeOptions{})
	if int64(len(arc)) != steps[1].Independent {
		t.Errorf("independent %d, codec %d", steps[1].Independent, len(arc))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := AnalyzeTrajectory(ctx, src, nil); err != ErrCancelled {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := AnalyzeTrajectory(context.Background(), nil, nil); err == nil {
		t.Error("no steps: no error")
	}
}

// createTraj creates an empty trajectory file (default K, previous-frame
// references) for a test to append to.
func createTraj(t *testing.T) (string, *os.File, *trajectory.Writer) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "run.nztraj")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := trajectory.Create(f, trajectory.DefaultK, trajectory.RefPrevious)
	if err != nil {
		t.Fatal(err)
	}
	return p, f, w
}

// A .nztraj archive gives back its steps.
func TestTrajSourcesFromArchive(t *testing.T) {
	p, f, w := createTraj(t)
	src := []TrajSource{trajStep(0), trajStep(1), trajStep(2)}
	for _, s := range src {
		if _, err := w.Append(context.Background(), codec.Input{Name: s.Name, R: bytes.NewReader(s.Data), Size: int64(len(s.Data)), Segments: s.Segs}, codec.EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	got, err := TrajSourcesFromArchive(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(src) {
		t.Fatalf("%d steps, want %d", len(got), len(src))
	}
	for i := range src {
		if got[i].Name != src[i].Name || !bytes.Equal(got[i].Data, src[i].Data) {
			t.Errorf("step %d differs", i)
		}
	}
	// Steps restoring to more than the workbench holds for the archive's
	// size are refused before any is decoded.
	defer func(f, fl int64) { trajMemoryFactor, trajMemoryFloor = f, fl }(trajMemoryFactor, trajMemoryFloor)
	st, _ := os.Stat(p)
	var total int64
	for _, s := range src {
		total += int64(len(s.Data))
	}
	trajMemoryFactor, trajMemoryFloor = 1, total-1
	if st.Size() >= total {
		t.Fatalf("archive %d bytes for %d of steps: the limit test needs a smaller archive", st.Size(), total)
	}
	if _, err := TrajSourcesFromArchive(context.Background(), p); err == nil || !strings.Contains(err.Error(), "more than the workbench holds") {
		t.Fatalf("want the memory limit, got %v", err)
	}
	trajMemoryFloor = total
	if _, err := TrajSourcesFromArchive(context.Background(), p); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
}

// PlanTrajPack lays the analysed steps out as trajectory frames.
func TestPlanTrajPack(t *testing.T) {
	// savings grow along the run, as in training: independent 100 each,
	// conditioned 95, 90, ...
	var steps []TrajStep
	for i := 0; i < 7; i++ {
		steps = append(steps, TrajStep{Independent: 100, Conditioned: int64(100 - 5*i)})
	}
	p := PlanTrajPack(steps, 3)
	// keyframes as early as K = 3 allows: 0, 1, 4 (savings 5 + 20)
	want := []bool{true, true, false, false, true, false, false}
	for i := range want {
		if p.Keys[i] != want[i] {
			t.Fatalf("keys %v, want %v", p.Keys, want)
		}
	}
	if p.Planned != 100+100+90+85+100+75+70 || p.EveryK != 100+95+90+100+80+75+100 || p.Combined != 100+95+90+85+80+75+70 {
		t.Fatalf("planned %d, every K %d, one keyframe %d", p.Planned, p.EveryK, p.Combined)
	}
}

// PackTrajectory writes the steps as the .nztraj nzip trajectory pack
// makes: planned keyframes, every step decodes bit-exact.
func TestPackTrajectory(t *testing.T) {
	var src []TrajSource
	for i := 0; i < 9; i++ {
		s := trajStep(i)
		s.Format, s.Single = "safetensors", true
		src = append(src, s)
	}
	var calls []int
	b, err := PackTrajectory(context.Background(), src, 4, func(done, total int) { calls = append(calls, done*100+total) })
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 18 || calls[17] != 1818 {
		t.Fatalf("progress %v", calls)
	}
	a, err := trajectory.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	// the keyframes are the planner's
	var p trajectory.Planner
	for _, s := range src {
		if err := p.AddFiles(context.Background(), s.inputs(), codec.EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	keys := trajectory.PlanKeyframes(p.Saving(), 4)
	n := 0
	err = a.Walk(context.Background(), codec.DecodeOptions{}, func(d *trajectory.Decoded) error {
		if !bytes.Equal(d.Data, src[d.Frame].Data) || a.Frames[d.Frame].Keyframe() != keys[d.Frame] || d.Format != "safetensors" {
			return fmt.Errorf("frame %d: differs or keyframe %v, planned %v", d.Frame, a.Frames[d.Frame].Keyframe(), keys[d.Frame])
		}
		n++
		return nil
	})
	if err != nil || n != len(src) {
		t.Fatalf("walk: %v (%d frames)", err, n)
	}
	// a concatenation without its file boundaries cannot be a frame
	src[3].Single = false
	if _, err := PackTrajectory(context.Background(), src, 4, nil); err == nil {
		t.Fatal("packed a concatenation of files as a frame")
	}
}

// Steps of several files (sharded checkpoints, as the workbench reads
// them: the concatenation and where each file lies) are packed as frames
// of their files, which come back byte for byte.
func TestPackTrajectoryMultiFile(t *testing.T) {
	var steps []TrajSource
	for i := range 4 {
		a, b := trajStep(2*i), trajStep(2*i+1)
		steps = append(steps, joinFiles(fmt.Sprintf("checkpoint-%d", i), []trajectory.DecodedFile{
			{Name: "x.safetensors", Data: a.Data, Segs: a.Segs, Format: "safetensors"},
			{Name: "y.safetensors", Data: b.Data, Segs: b.Segs, Format: "safetensors"},
		}))
	}
	arc, err := PackTrajectory(context.Background(), steps, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := trajectory.Open(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	err = a.Walk(context.Background(), codec.DecodeOptions{}, func(d *trajectory.Decoded) error {
		s := steps[d.Frame]
		if a.Frames[d.Frame].Name != s.Name || len(d.Files) != 2 {
			return fmt.Errorf("frame %d: %q of %d files", d.Frame, a.Frames[d.Frame].Name, len(d.Files))
		}
		for k, f := range s.Files {
			if d.Files[k].Name != f.Name || !bytes.Equal(d.Files[k].Data, s.Data[f.Start:f.Start+f.Size]) || len(d.Files[k].Segs) == 0 {
				return fmt.Errorf("frame %d file %d differs", d.Frame, k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if a.Frames[1].Keyframe() && a.Frames[2].Keyframe() && a.Frames[3].Keyframe() {
		t.Fatal("no frame is coded against another")
	}
}

// A step of several files (a sharded checkpoint) in a .nztraj comes back
// as the concatenation of its files, like a model of several files, and
// with its files' boundaries, so that it can be packed again.
func TestTrajSourcesFromArchiveMultiFile(t *testing.T) {
	p, f, w := createTraj(t)
	a, b := trajStep(0), trajStep(1)
	in := func(name string, s TrajSource) codec.Input {
		return codec.Input{Name: name, R: bytes.NewReader(s.Data), Size: int64(len(s.Data)), Segments: s.Segs}
	}
	if _, err := w.AppendFiles(context.Background(), "checkpoint-1", []codec.Input{in("x.safetensors", a), in("y.safetensors", b)}, codec.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := TrajSourcesFromArchive(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Single || got[0].Name != "checkpoint-1" || !bytes.Equal(got[0].Data, append(bytes.Clone(a.Data), b.Data...)) {
		t.Fatalf("got %d steps, first single %v", len(got), len(got) > 0 && got[0].Single)
	}
	last := got[0].Segs[len(got[0].Segs)-1]
	if want := b.Segs[len(b.Segs)-1]; last.Name != want.Name || last.Offset != want.Offset+int64(len(a.Data)) {
		t.Fatalf("the second file's tensors are not shifted: %+v", last)
	}
	// and it knows its files: it packs again as a frame of two files
	if fs := got[0].Files; len(fs) != 2 || fs[1].Name != "y.safetensors" || fs[1].Start != int64(len(a.Data)) {
		t.Fatalf("files %+v", fs)
	}
	arc, err := PackTrajectory(context.Background(), got, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := trajectory.Open(bytes.NewReader(arc), int64(len(arc)))
	if err != nil || len(ar.Frames) != 1 || len(ar.Frames[0].Files) != 2 {
		t.Fatalf("repacked: %v", err)
	}
}
