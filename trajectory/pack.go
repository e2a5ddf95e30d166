package trajectory

import (
	"context"
	"fmt"

	"neuralzip/codec"
)

// Pass is one of Packer.Pack's walks over the steps.
type Pass int

const (
	PassMeasure Pass = iota // each step coded on its own and against the step before; nothing written (Planner)
	PassWrite               // each step appended to the trajectory
)

// StepFunc codes one step: the frame's name and the step's files. It
// returns the frame appended (the zero Frame in PassMeasure).
type StepFunc func(name string, ins []codec.Input) (Frame, error)

// Steps walks the steps of a pack in order and calls fn with each; an
// error of fn ends the walk with it. Pack walks once (PassWrite) or, when
// it plans the keyframes, twice (PassMeasure, then PassWrite): the steps
// must read the same both times. The step before a step must stay
// readable until fn returns (it is the step's reference).
type Steps func(pass Pass, fn StepFunc) error

// Packer packs training steps into a new trajectory as nzip trajectory
// pack does: when Plan is set, the writer is in RefPrevious mode, its K > 1
// and there are more than K steps, it first measures every step (Planner)
// and places the keyframes where they cost least (PlanKeyframes); otherwise
// the writer places them (every K-th frame). The CLI's pack and the
// workbench's Save .nztraj use it; Repack places keyframes by the same
// measurements.
type Packer struct {
	Options codec.EncodeOptions
	Plan    bool
	// Planner holds the measurements of PassMeasure (a Steps function may
	// read the step's entries after fn returns), Keys the planned
	// keyframes (nil when Pack did not plan), set before PassWrite.
	Planner Planner
	Keys    []bool
}

// Pack writes the n steps that steps walks into w, a new trajectory.
func (pk *Packer) Pack(ctx context.Context, w *Writer, n int, steps Steps) error {
	pk.Keys = nil
	x := &w.a.Index
	if len(x.Frames) != 0 {
		return fmt.Errorf("trajectory: pack into a trajectory of %d frames", len(x.Frames))
	}
	if pk.Plan && x.Mode == RefPrevious && x.K > 1 && n > x.K {
		if err := pk.measure(ctx, x.K, n, steps); err != nil {
			return err
		}
	}
	i := 0
	err := steps(PassWrite, func(name string, ins []codec.Input) (Frame, error) {
		if i >= n {
			return Frame{}, fmt.Errorf("trajectory: pack of %d steps given more", n)
		}
		key := pk.Keys != nil && pk.Keys[i]
		i++
		if key {
			return w.AppendKeyframeFiles(ctx, name, ins, pk.Options)
		}
		return w.AppendFiles(ctx, name, ins, pk.Options)
	})
	if err == nil && i != n {
		err = fmt.Errorf("trajectory: pack of %d steps given %d", n, i)
	}
	return err
}

// measure is PassMeasure: it measures the n steps and plans the
// keyframes of interval k into Keys.
func (pk *Packer) measure(ctx context.Context, k, n int, steps Steps) error {
	pk.Planner = Planner{}
	seen := 0
	err := steps(PassMeasure, func(name string, ins []codec.Input) (Frame, error) {
		seen++
		return Frame{}, pk.Planner.AddFiles(ctx, ins, pk.Options)
	})
	pk.Planner.prev = nil // the steps' files may be gone
	if err != nil {
		return err
	}
	if seen != n {
		return fmt.Errorf("trajectory: pack of %d steps measured %d", n, seen)
	}
	pk.Keys = PlanKeyframes(pk.Planner.Saving(), k)
	return nil
}
