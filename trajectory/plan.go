package trajectory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// PlanKeyframes chooses the keyframes of a pack of n = len(saving) frames,
// each coded against the one before it (RefPrevious), so that every frame's
// chain (its keyframe and the frames after it, up to itself) has at most k
// frames and the archive is as small as possible. saving[i] is what frame
// i saves when coded against frame i-1 instead of on its own (saving[0] is
// not used: frame 0 is always a keyframe). keys[i] reports whether frame i
// is a keyframe.
//
// Every K-th frame is one such placement, but rarely the best: early in a
// training run consecutive checkpoints differ a lot and a keyframe there
// costs little, while late in the run a frame coded against the previous
// step is a fraction of its independent size. Ties go to the earlier
// keyframe; the result depends only on its arguments.
func PlanKeyframes(saving []int64, k int) []bool {
	n := len(saving)
	keys := make([]bool, n)
	if n == 0 {
		return keys
	}
	k = max(k, 1)
	// best[i]: the least total saving lost by the keyframes up to and
	// including frame i when frame i is a keyframe; from[i] the keyframe
	// before it
	best := make([]int64, n)
	from := make([]int, n)
	from[0] = -1
	for i := 1; i < n; i++ {
		j0 := max(0, i-k)
		bj := j0
		for j := j0 + 1; j < i; j++ {
			if best[j] < best[bj] {
				bj = j
			}
		}
		best[i] = best[bj] + saving[i]
		from[i] = bj
	}
	last := max(0, n-k)
	for j := last + 1; j < n; j++ {
		if best[j] < best[last] {
			last = j
		}
	}
	for j := last; j >= 0; j = from[j] {
		keys[j] = true
	}
	return keys
}

// Planning measures large checkpoints on a sample: a checkpoint of more
// than planSampleMin bytes is coded as the virtual file of every
// planSampleEvery-th piece of planPiece bytes of its tensors (in file
// order), so that planning a run of multi-GB checkpoints costs a fraction
// of packing it instead of more than the pack. Variables for the tests.
var (
	planSampleMin   int64 = 64 << 20
	planSampleEvery       = 8
	planPiece       int64 = 1 << 20
)

// sampleInputs returns the files of a step themselves when they total at
// most planSampleMin bytes, else each as the virtual file of its sampled
// tensor pieces (samplePieces), so that a step of many shards is sampled
// like one file of their size.
func sampleInputs(ins []codec.Input) ([]codec.Input, bool) {
	var total int64
	for _, in := range ins {
		total += in.Size
	}
	if total <= planSampleMin {
		return ins, false
	}
	out := make([]codec.Input, len(ins))
	for k, in := range ins {
		out[k] = samplePieces(in)
	}
	return out, true
}

// samplePieces is the virtual file of in's sampled tensor pieces: one
// tensor per piece, named after the tensor and the piece's offset in it,
// so that the same pieces of two steps match as reference and value.
func samplePieces(in codec.Input) codec.Input {
	segs := append([]codec.Segment(nil), in.Segments...)
	slices.SortStableFunc(segs, func(a, b codec.Segment) int { return cmp.Compare(a.Offset, b.Offset) })
	v := &pieceReader{r: in.R}
	var out []codec.Segment
	k := 0
	for _, s := range segs {
		if !s.IsTensor() || s.Length <= 0 {
			continue
		}
		size := int64(s.DType.Size())
		d := s.DType
		if size == 0 || s.Length%size != 0 {
			size, d = 1, dtype.Invalid
		}
		step := max(planPiece/size*size, size)
		for off := int64(0); off < s.Length; off += step {
			l := min(step, s.Length-off)
			if k%planSampleEvery == 0 {
				out = append(out, codec.Segment{Name: s.Name + "@" + strconv.FormatInt(off, 10), DType: d, Type: s.Type, Shape: []int64{l / size}, Offset: v.size, Length: l})
				v.parts = append(v.parts, piece{at: v.size, off: s.Offset + off, n: l})
				v.size += l
			}
			k++
		}
	}
	return codec.Input{Name: in.Name, R: v, Size: v.size, Format: in.Format, Segments: out}
}

// pieceReader reads the concatenation of pieces of r.
type pieceReader struct {
	r     io.ReaderAt
	parts []piece
	size  int64
}

// piece: n bytes at off of the underlying file, at at in the virtual one.
type piece struct{ at, off, n int64 }

func (v *pieceReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("trajectory: negative offset")
	}
	done := 0
	i := sort.Search(len(v.parts), func(i int) bool { return v.parts[i].at+v.parts[i].n > off })
	for ; done < len(p) && i < len(v.parts); i++ {
		pc := v.parts[i]
		rel := off + int64(done) - pc.at
		n := int(min(int64(len(p)-done), pc.n-rel))
		m, err := v.r.ReadAt(p[done:done+n], pc.off+rel)
		done += m
		if m < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
	}
	if done < len(p) {
		return done, io.EOF
	}
	return done, nil
}

// Planner measures the frames of a pack for PlanKeyframes: Add each
// checkpoint in order, then read Saving.
type Planner struct {
	// Independent and Conditioned are each frame's archive sizes (of its
	// sample, for large checkpoints) coded on its own and against the
	// frame before (Conditioned[0] is 0).
	Independent, Conditioned []int64
	// Sampled says which frames were measured on a sample.
	Sampled []bool
	prev    *codec.Reference
}

// Add measures in: its archive size on its own and, after the first frame,
// coded against the step added before it, which must still be readable.
// Checkpoints above 64 MB are measured on a sample of their tensors (an
// eighth), all others in full. Nothing is written; opt.Ref is ignored.
func (p *Planner) Add(ctx context.Context, in codec.Input, opt codec.EncodeOptions) error {
	return p.AddFiles(ctx, []codec.Input{in}, opt)
}

// AddFiles is Add for a step of several files (Writer.AppendFiles): they
// are measured together, as one frame, and sampled when they total more
// than 64 MB.
func (p *Planner) AddFiles(ctx context.Context, ins []codec.Input, opt codec.EncodeOptions) error {
	ins, sampled := sampleInputs(ins)
	opt.Ref = nil
	ind, err := encodedSize(ctx, ins, opt)
	if err != nil {
		return err
	}
	var cond int64
	if p.prev != nil {
		opt.Ref = p.prev
		if cond, err = encodedSize(ctx, ins, opt); err != nil {
			return err
		}
	}
	ref, err := codec.NewReference(ins)
	if err != nil {
		return fmt.Errorf("trajectory: planning: %w", err)
	}
	p.prev = ref
	p.Independent = append(p.Independent, ind)
	p.Conditioned = append(p.Conditioned, cond)
	p.Sampled = append(p.Sampled, sampled)
	return nil
}

// Saving returns, per frame, what coding it against the frame before saves
// over coding it on its own: PlanKeyframes' argument.
func (p *Planner) Saving() []int64 {
	s := make([]int64, len(p.Independent))
	for i := 1; i < len(s); i++ {
		s[i] = p.Independent[i] - p.Conditioned[i]
	}
	return s
}

// encodedSize is the size of the archive of ins under opt, with the
// SHA-256 digests a frame holds (the index compresses differently with
// other digests: a file that repeats its reference repeats its SHA-256).
func encodedSize(ctx context.Context, ins []codec.Input, opt codec.EncodeOptions) (int64, error) {
	opt.Digest = codec.DigestSHA256
	res, err := codec.Encode(ctx, io.Discard, ins, opt)
	return res.Compressed, err
}
