package trajectory

import (
	"fmt"

	"neuralzip/codec"
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

// Planner measures the frames of a pack for PlanKeyframes: Add each
// checkpoint in order, then read Saving.
type Planner struct {
	// Independent and Conditioned are each frame's archive sizes coded on
	// its own and against the frame before (Conditioned[0] is 0).
	Independent, Conditioned []int64
	prev                     *codec.Reference
}

// Add measures in: its archive size on its own and, after the first frame,
// coded against the input added before it, which must still be readable.
// Nothing is written; opt.Ref is ignored.
func (p *Planner) Add(in codec.Input, opt codec.Options) error {
	opt.Ref = nil
	ind, err := encodedSize(in, opt)
	if err != nil {
		return err
	}
	var cond int64
	if p.prev != nil {
		opt.Ref = p.prev
		if cond, err = encodedSize(in, opt); err != nil {
			return err
		}
	}
	ref, err := codec.NewReference([]codec.Input{in})
	if err != nil {
		return fmt.Errorf("trajectory: planning: %w", err)
	}
	p.prev = ref
	p.Independent = append(p.Independent, ind)
	p.Conditioned = append(p.Conditioned, cond)
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
