package core

import (
	"context"
	"fmt"
	"math/bits"
	"os"

	"neuralzip/codec"
	"neuralzip/trajectory"
)

// A TrajStep is one checkpoint of a training run as the Trajectory screen
// shows it: its size coded on its own and coded against the step before,
// how many values changed each bit since that step, and the ratio a setup
// built from the first step gives on it.
type TrajStep struct {
	Name        string
	Raw         int64 // original bytes
	Independent int64 // archive bytes coded on its own (nzip defaults)
	Conditioned int64 // archive bytes coded against the previous step (the first: = Independent)
	// Changed[b] is the fraction of the float values (of the run's most
	// common float width, matched with the previous step by tensor name and
	// shape) whose bit b differs from the previous step; b = 0 is the
	// least significant bit. Nil for the first step.
	Changed []float64
	// SetupRatio is the step's ratio with the first step's setup (external:
	// the setup's bytes do not count).
	SetupRatio float64
}

// TrajSource is a step to analyse: its name and its bytes and layout.
type TrajSource struct {
	Name   string
	Data   []byte
	Segs   []codec.Segment
	Format string // the loader's format name
	// Single: Data is one original file. A model of several files (a
	// sharded checkpoint) is read as their concatenation, which is what
	// the analysis sees; Files then says where each file lies in Data,
	// and a packed trajectory stores the step as its files.
	Single bool
	Files  []TrajFile
}

// joinFiles is a step of several files (a sharded checkpoint) as the
// analysis sees it: their concatenation, as for a model of several files,
// with Files saying where each lies.
func joinFiles(name string, files []trajectory.DecodedFile) TrajSource {
	src := TrajSource{Name: name, Format: files[0].Format}
	for _, f := range files {
		base := int64(len(src.Data))
		for _, sg := range f.Segs {
			sg.Offset += base
			src.Segs = append(src.Segs, sg)
		}
		src.Data = append(src.Data, f.Data...)
		src.Files = append(src.Files, TrajFile{Name: f.Name, Start: base, Size: int64(len(f.Data)), Format: f.Format})
	}
	return src
}

// TrajFile is one file of a step of several files: Data[Start:Start+Size].
type TrajFile struct {
	Name        string
	Start, Size int64
	Format      string
}

// inputs is the step as the files to code: Data as one file, or each of
// Files with the segments that lie in it.
func (s TrajSource) inputs() []codec.Input {
	if len(s.Files) == 0 {
		return []codec.Input{{Name: s.Name, R: codec.Bytes(s.Data), Size: int64(len(s.Data)), Format: s.Format, Segments: s.Segs}}
	}
	ins := make([]codec.Input, len(s.Files))
	for k, f := range s.Files {
		ins[k] = codec.Input{Name: f.Name, R: codec.Bytes(s.Data[f.Start : f.Start+f.Size]), Size: f.Size, Format: f.Format}
	}
	// each segment to the last file that starts at or before it (files
	// are contiguous and in order; an empty one at a boundary goes to the
	// file after it)
	for _, sg := range s.Segs {
		k := len(s.Files) - 1
		for k > 0 && s.Files[k].Start > sg.Offset {
			k--
		}
		sg.Offset -= s.Files[k].Start
		ins[k].Segments = append(ins[k].Segments, sg)
	}
	return ins
}

// TrajSourcesFromModels reads open models (in the order given) as steps.
func TrajSourcesFromModels(models []*Model) ([]TrajSource, error) {
	var out []TrajSource
	for _, m := range models {
		src, segs, starts, err := m.ReadAll()
		if err != nil {
			return nil, err
		}
		s := TrajSource{Name: m.Name, Data: src, Segs: segs, Format: m.Format, Single: len(m.Files) == 1}
		if !s.Single {
			for k, f := range m.Files {
				s.Files = append(s.Files, TrajFile{Name: f.Name, Start: starts[k], Size: f.Size, Format: f.Format})
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// The workbench opens a .nztraj whose steps restore to at most
// trajMemoryFactor × its size, or trajMemoryFloor bytes (variables for
// tests). Real runs restore to ~1.4× their archive.
var (
	trajMemoryFactor int64 = 64
	trajMemoryFloor  int64 = 1 << 30
)

// TrajSourcesFromArchive decodes every frame of a .nztraj archive.
func TrajSourcesFromArchive(ctx context.Context, path string) ([]TrajSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	a, err := trajectory.Open(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Every step is kept in memory. Frames coded against each other can
	// be far smaller than the steps they restore, so the total the index
	// claims is checked first (a 66 KB archive of 48 zero-filled 64 MiB
	// steps would otherwise hold 3 GB).
	var total int64
	for _, fr := range a.Frames {
		total += fr.Size
	}
	if limit := max(trajMemoryFactor*st.Size(), trajMemoryFloor); total > limit {
		return nil, fmt.Errorf("%s: its %d steps restore to %d bytes, more than the workbench holds for an archive of %d bytes (%d); use nzip trajectory extract", path, len(a.Frames), total, st.Size(), limit)
	}
	var out []TrajSource
	err = a.Walk(ctx, codec.DecodeOptions{}, func(d *trajectory.Decoded) error {
		src := TrajSource{Name: a.Frames[d.Frame].Name, Data: d.Data, Segs: d.Segs, Format: d.Format, Single: true}
		if len(d.Files) > 1 {
			src = joinFiles(src.Name, d.Files)
		}
		out = append(out, src)
		return ctx.Err()
	})
	return out, err
}

// AnalyzeTrajectory measures every step: coded on its own, against the
// step before (codec reference conditioning), with a setup built from the
// first step, and the bits that changed. progress(i, n) is called after
// each step; a cancelled ctx stops between steps.
func AnalyzeTrajectory(ctx context.Context, steps []TrajSource, progress func(done, total int)) ([]TrajStep, error) {
	if len(steps) == 0 {
		return nil, fmt.Errorf("no checkpoints")
	}
	input := func(s TrajSource) codec.Input {
		return codec.Input{Name: s.Name, R: codec.Bytes(s.Data), Size: int64(len(s.Data)), Segments: s.Segs}
	}
	setup, err := codec.BuildSetup(ctx, []codec.Input{input(steps[0])}, codec.SetupOptions{Builder: "nzip workbench, trajectory"})
	if err != nil {
		setup = nil // a run without float tensors: no setup column
	}
	width := commonFloatBits(steps[0].Segs)
	var out []TrajStep
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return out, ErrCancelled
		}
		st := TrajStep{Name: s.Name, Raw: int64(len(s.Data))}
		arc, err := codec.CompressBytes(ctx, s.Data, s.Segs, codec.EncodeOptions{})
		if err != nil {
			return out, fmt.Errorf("%s: %w", s.Name, err)
		}
		st.Independent, st.Conditioned = int64(len(arc)), int64(len(arc))
		if i > 0 {
			prev := steps[i-1]
			ref, err := codec.NewReference([]codec.Input{input(prev)})
			if err != nil {
				return out, fmt.Errorf("%s: %w", prev.Name, err)
			}
			arc, err := codec.CompressBytes(ctx, s.Data, s.Segs, codec.EncodeOptions{Ref: ref})
			if err != nil {
				return out, fmt.Errorf("%s: %w", s.Name, err)
			}
			st.Conditioned = int64(len(arc))
			st.Changed = changedBits(prev, s, width)
		}
		if setup != nil {
			arc, err := codec.CompressBytes(ctx, s.Data, s.Segs, codec.EncodeOptions{Setup: setup, SetupExternal: true})
			if err != nil {
				return out, fmt.Errorf("%s: %w", s.Name, err)
			}
			st.SetupRatio = float64(len(s.Data)) / float64(len(arc))
		}
		out = append(out, st)
		if progress != nil {
			progress(i+1, len(steps))
		}
	}
	return out, nil
}

// commonFloatBits is the bit width (16 or 32) of most float values of the
// layout; 0 when it has none of either.
func commonFloatBits(segs []codec.Segment) int {
	var n16, n32 int64
	for _, s := range segs {
		if !s.IsTensor() || !s.DType.IsFloat() {
			continue
		}
		switch s.DType.Size() {
		case 2:
			n16 += s.Length / 2
		case 4:
			n32 += s.Length / 4
		}
	}
	switch {
	case n16 == 0 && n32 == 0:
		return 0
	case n16 >= n32:
		return 16
	}
	return 32
}

// changedBits compares the float tensors of width w (bits) of cur with the
// tensors of prev of the same name, dtype and length.
func changedBits(prev, cur TrajSource, w int) []float64 {
	if w == 0 {
		return nil
	}
	byName := map[string]codec.Segment{}
	for _, s := range prev.Segs {
		if s.IsTensor() {
			byName[s.Name] = s
		}
	}
	counts := make([]int64, w)
	var values int64
	for _, s := range cur.Segs {
		if !s.IsTensor() || !s.DType.IsFloat() || s.DType.Size()*8 != w {
			continue
		}
		p, ok := byName[s.Name]
		if !ok || p.DType != s.DType || p.Length != s.Length {
			continue
		}
		a := prev.Data[p.Offset : p.Offset+p.Length]
		b := cur.Data[s.Offset : s.Offset+s.Length]
		size := w / 8
		for i := 0; i+size <= len(b); i += size {
			var x uint32
			for k := 0; k < size; k++ {
				x |= uint32(a[i+k]^b[i+k]) << (8 * k)
			}
			values++
			for x != 0 {
				bit := bits.TrailingZeros32(x)
				counts[bit]++
				x &= x - 1
			}
		}
	}
	if values == 0 {
		return nil
	}
	out := make([]float64, w)
	for b, c := range counts {
		out[b] = float64(c) / float64(values)
	}
	return out
}

// TrajPack is how a .nztraj of analysed steps (coded against the step
// before) would be laid out with keyframe interval K.
type TrajPack struct {
	K        int
	Keys     []bool // the keyframes nzip trajectory pack places
	Planned  int64  // bytes of the frames with those keyframes
	EveryK   int64  // bytes of the frames with every K-th step a keyframe (appends)
	Combined int64  // bytes of the frames with one keyframe (the first step)
}

// PlanTrajPack sums the steps' archive sizes as the frames of a trajectory
// with interval k: keyframes coded on their own, the other steps against
// the step before (frame indexes and headers not counted).
func PlanTrajPack(steps []TrajStep, k int) TrajPack {
	p := TrajPack{K: k}
	saving := make([]int64, len(steps))
	for i, st := range steps {
		if i > 0 {
			saving[i] = st.Independent - st.Conditioned
		}
	}
	p.Keys = trajectory.PlanKeyframes(saving, k)
	for i, st := range steps {
		size := func(key bool) int64 {
			if key {
				return st.Independent
			}
			return st.Conditioned
		}
		p.Planned += size(p.Keys[i])
		p.EveryK += size(i%max(k, 1) == 0)
		p.Combined += size(i == 0)
	}
	return p
}

// PackTrajectory codes the steps as a .nztraj with keyframe interval k,
// the keyframes placed as nzip trajectory pack places them (measured with
// trajectory.Planner when there are more than k steps), and returns the
// archive. progress(done, total) follows the measuring and coding passes.
func PackTrajectory(ctx context.Context, steps []TrajSource, k int, progress func(done, total int)) ([]byte, error) {
	for _, s := range steps {
		if !s.Single && len(s.Files) == 0 {
			return nil, fmt.Errorf("%s: a model of several files whose file boundaries are not known", s.Name)
		}
	}
	total := len(steps)
	if k > 1 && len(steps) > k {
		total *= 2 // measured, then written
	}
	f := &trajectory.Buffer{}
	w, err := trajectory.Create(f, k, trajectory.RefPrevious)
	if err != nil {
		return nil, err
	}
	pk := trajectory.Packer{Plan: true}
	done := 0
	err = pk.Pack(ctx, w, len(steps), func(_ trajectory.Pass, fn trajectory.StepFunc) error {
		for _, s := range steps {
			if _, err := fn(s.Name, s.inputs()); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			done++
			if progress != nil {
				progress(done, total)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f.Bytes(), nil
}
