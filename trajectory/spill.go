package trajectory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"neuralzip/codec"
)

// lastUses returns, for each frame, the last frame coded against it (-1
// for none), and refuses an index whose frames refer forward.
func lastUses(frames []Frame) ([]int, error) {
	last := make([]int, len(frames))
	for i := range last {
		last[i] = -1
	}
	for i, f := range frames {
		if f.Ref >= i {
			return nil, fmt.Errorf("%w: frame %d refers forward", ErrCorrupt, i)
		}
		if f.Ref >= 0 {
			last[f.Ref] = i
		}
	}
	return last, nil
}

// spilledStep is a decoded step held in temporary files.
type spilledStep struct {
	files []*os.File
	ins   []codec.Input
}

// remove closes and deletes the step's files.
func (s *spilledStep) remove() error {
	var err error
	for _, f := range s.files {
		err = errors.Join(err, f.Close(), os.Remove(f.Name()))
	}
	s.files, s.ins = nil, nil
	return err
}

// WalkFiles is Walk with memory bounded whatever the steps' size: each
// frame is decoded block by block (StreamFrom) into temporary files in dir
// (os.TempDir() when empty), against its reference frame's files as
// decoded before, so each frame is decoded once and checked (every block's
// CRC-32C, every file's SHA-256) before fn sees it. fn gets frame i's
// files as inputs to code (frame i's names, formats and tensor layouts);
// they stay readable until fn has returned for frame i+1 (so that frame
// i+1 can be coded against them) and for as long as a later frame is
// coded against frame i, and are deleted then, or when WalkFiles returns.
// The disk holds two or three decoded steps at a time.
func (a *Archive) WalkFiles(ctx context.Context, opt codec.DecodeOptions, dir string, fn func(i int, ins []codec.Input) error) (err error) {
	last, err := lastUses(a.Frames)
	if err != nil {
		return err
	}
	held := map[int]*spilledStep{}
	defer func() {
		for _, s := range held {
			err = errors.Join(err, s.remove())
		}
	}()
	drop := func(j int) error {
		if s, ok := held[j]; ok {
			delete(held, j)
			return s.remove()
		}
		return nil
	}
	for i, f := range a.Frames {
		if ctx != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		var ref []io.ReaderAt
		if f.Ref >= 0 {
			rs, ok := held[f.Ref]
			if !ok {
				return fmt.Errorf("trajectory: internal error: frame %d's reference %d no longer held", i, f.Ref)
			}
			for _, rf := range rs.files {
				ref = append(ref, rf)
			}
		}
		s, err := a.spill(ctx, i, ref, opt, dir)
		if err != nil {
			return err
		}
		held[i] = s
		if err := fn(i, s.ins); err != nil {
			return err
		}
		// what no later frame needs: the frame before this one (unless a
		// later frame is coded against it), and this frame's reference
		// after its last use (Writer and Planner hold the frame before
		// the next as their reference, so it stays one more round)
		if i > 0 && last[i-1] <= i {
			if err := drop(i - 1); err != nil {
				return err
			}
		}
		if f.Ref >= 0 && f.Ref != i-1 && last[f.Ref] == i {
			if err := drop(f.Ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// spill decodes frame i, coded against the files ref (none for a
// keyframe), into new temporary files in dir.
func (a *Archive) spill(ctx context.Context, i int, ref []io.ReaderAt, opt codec.DecodeOptions, dir string) (*spilledStep, error) {
	st, err := a.StreamFrom(i, ref)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	f := a.Frames[i]
	s := &spilledStep{}
	for k, ff := range f.files() {
		tf, err := os.CreateTemp(dir, ".nzip-step-*")
		if err != nil {
			s.remove()
			return nil, fmt.Errorf("trajectory: a temporary file for frame %d: %w", i, err)
		}
		s.files = append(s.files, tf)
		if err := st.WriteFile(ctx, tf, k, opt); err != nil {
			s.remove()
			if len(f.files()) > 1 {
				return nil, fmt.Errorf("frame %d (%s), file %s: %w", i, f.Name, ff.Name, err)
			}
			return nil, fmt.Errorf("frame %d (%s): %w", i, f.Name, err)
		}
		fi := st.Files()[k]
		s.ins = append(s.ins, codec.Input{Name: ff.Name, R: tf, Size: fi.Size, Format: fi.Format, Segments: tensorSegments(fi)})
	}
	return s, nil
}
