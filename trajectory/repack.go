package trajectory

import (
	"context"
	"fmt"
	"io"

	"neuralzip/codec"
)

// Repack writes the frames of a into f (which must be empty) as a new
// trajectory of interval k in RefPrevious mode, with the keyframes placed
// by PlanKeyframes: the archive that pack would have made of the same
// checkpoints, from the archive alone. A run built by appends (a keyframe
// every K-th frame) usually gets smaller. Frames that keep their
// reference (a keyframe that stays one, a frame coded against the frame
// before that stays so) are copied as they are; the others are coded
// again (with opt.Best, every frame with a reference is). Each frame is
// decoded twice and measured as by Planner (coded twice more, or a sample
// of it); opt.Ref is ignored. Repack holds two or three decoded steps in
// memory (Archive.Walk); RepackFiles keeps them in temporary files. On an
// error (a damaged frame names itself) f holds a partial trajectory:
// write to a temporary file and rename it on success. The new archive is
// of format Version (a version 1 archive is converted), its steps of one
// file or several as in a.
func Repack(ctx context.Context, a *Archive, f File, k int, opt codec.EncodeOptions) (*Writer, error) {
	return repack(ctx, a, f, k, opt, func(fn func(int, []codec.Input) error) error {
		return a.Walk(ctx, codec.DecodeOptions{Threads: opt.Threads}, func(d *Decoded) error { return fn(d.Frame, d.inputs(a.Frames[d.Frame])) })
	})
}

// RepackFiles is Repack with memory bounded whatever the steps' size: the
// decoded steps go to temporary files in dir (os.TempDir() when empty;
// Archive.WalkFiles), two or three steps at a time, deleted as they are
// done with. The archive is the same as Repack's.
func RepackFiles(ctx context.Context, a *Archive, f File, k int, opt codec.EncodeOptions, dir string) (*Writer, error) {
	w, err := repack(ctx, a, f, k, opt, func(fn func(int, []codec.Input) error) error {
		return a.WalkFiles(ctx, codec.DecodeOptions{Threads: opt.Threads}, dir, fn)
	})
	if w != nil {
		w.forget() // the last step's temporary files are gone: a later append decodes it
	}
	return w, err
}

// repack is Repack, decoding the frames of a in order through walk (twice).
func repack(ctx context.Context, a *Archive, f File, k int, opt codec.EncodeOptions, walk func(fn func(i int, ins []codec.Input) error) error) (*Writer, error) {
	w, err := Create(f, k, RefPrevious)
	if err != nil {
		return nil, err
	}
	opt.Ref = nil
	// pass 1: measure every frame as pack does (Packer), so that repack
	// places the keyframes where a pack of the same checkpoints would
	pk := Packer{Options: opt}
	err = pk.measure(ctx, k, len(a.Frames), func(_ Pass, fn StepFunc) error {
		return walk(func(i int, ins []codec.Input) error {
			if _, err := fn(a.Frames[i].Name, ins); err != nil {
				return fmt.Errorf("frame %d (%s): %w", i, a.Frames[i].Name, err)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	keys := pk.Keys
	// pass 2: write
	err = walk(func(i int, ins []codec.Input) error {
		old := a.Frames[i]
		var fr Frame
		var err error
		switch {
		case keys[i] && old.Ref < 0, !keys[i] && old.Ref == i-1 && !opt.Best:
			nf := old
			nf.Ref = -1
			if !keys[i] {
				nf.Ref = i - 1
			}
			fr, err = w.commit(nf, ins, func(dst io.Writer) (int64, error) {
				return io.Copy(dst, io.NewSectionReader(a.r, old.Offset, old.Length))
			})
		case keys[i]:
			fr, err = w.AppendKeyframeFiles(ctx, old.Name, ins, opt)
		default:
			fr, err = w.AppendFiles(ctx, old.Name, ins, opt)
		}
		if err != nil {
			return fmt.Errorf("frame %d (%s): %w", i, old.Name, err)
		}
		if fr.Keyframe() != keys[i] || !keys[i] && fr.Ref != i-1 {
			return fmt.Errorf("trajectory: internal error: frame %d coded against %d, planned keyframe %v", i, fr.Ref, keys[i])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}
