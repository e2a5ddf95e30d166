package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"neuralzip/codec"
	"neuralzip/trajectory"
)

// The trajectory measurements of docs/trajectories.md on the real training
// run of ../shared (trajectories/tinygpt-fortunes): traj-measure prints
// the per-step and per-K tables, traj-ratio times extract against an
// independent decode, traj-floor (trajfloor.go) the floor of static
// per-block coding.

type step struct {
	name string
	data []byte
	segs []codec.Segment
}

func (s step) input() codec.Input {
	return codec.Input{Name: s.name, R: bytes.NewReader(s.data), Size: int64(len(s.data)), Format: "safetensors", Segments: s.segs}
}

// realSteps reads the steps of one kind (bf16, f32, optim) of the real run.
func realSteps(shared, kind string) ([]step, error) {
	dir := filepath.Join(shared, "trajectories", "tinygpt-fortunes")
	m, err := filepath.Glob(filepath.Join(dir, "step_*."+kind+".safetensors"))
	if err != nil || len(m) == 0 {
		return nil, fmt.Errorf("no %s steps in %s", kind, dir)
	}
	sort.Strings(m)
	var out []step
	for _, p := range m {
		data, in, err := readInput(p)
		if err != nil {
			return nil, err
		}
		out = append(out, step{name: filepath.Base(p), data: data, segs: in.Segments})
	}
	return out, nil
}

// pack writes a trajectory of the steps with interval k (keyframes every
// K-th frame; with keys, those).
func pack(steps []step, k int, mode trajectory.RefMode, keys []bool, opt codec.EncodeOptions) (*trajectory.Archive, error) {
	f := &trajectory.Buffer{}
	w, err := trajectory.Create(f, k, mode)
	if err != nil {
		return nil, err
	}
	for i, s := range steps {
		if keys != nil && keys[i] {
			_, err = w.AppendKeyframe(context.Background(), s.input(), opt)
		} else {
			_, err = w.Append(context.Background(), s.input(), opt)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return trajectory.Open(f, int64(len(f.Bytes())))
}

var modeName = map[trajectory.RefMode]string{trajectory.RefPrevious: "prev", trajectory.RefKeyframe: "key"}

// runTrajMeasure prints the per-step table of the real trajectories: raw
// size, independent nzip size, the frame coded against the previous step
// and against the keyframe, totals for several K and both modes, and
// extract times.
func runTrajMeasure(args []string) error {
	fs := flag.NewFlagSet("traj-measure", flag.ExitOnError)
	shared := fs.String("shared", "../shared", "the corpus directory")
	kinds := fs.String("kind", "bf16", "comma-separated kinds: bf16, f32, optim")
	fs.Parse(args)
	for _, kind := range strings.Split(*kinds, ",") {
		steps, err := realSteps(*shared, kind)
		if err != nil {
			return err
		}
		if err := measureKind(kind, steps); err != nil {
			return err
		}
	}
	return nil
}

func measureKind(kind string, steps []step) error {
	n := len(steps)
	ind := make([]int64, n)
	var sumInd, sumRaw int64
	for i, s := range steps {
		a, err := codec.CompressBytes(context.Background(), s.data, s.segs, codec.EncodeOptions{})
		if err != nil {
			return err
		}
		ind[i] = int64(len(a))
		sumInd += ind[i]
		sumRaw += int64(len(s.data))
	}
	packs := map[string]*trajectory.Archive{}
	packed := func(k int, mode trajectory.RefMode, best bool) (*trajectory.Archive, error) {
		key := fmt.Sprint(k, mode, best)
		if a := packs[key]; a != nil {
			return a, nil
		}
		a, err := pack(steps, k, mode, nil, codec.EncodeOptions{Best: best})
		packs[key] = a
		return a, err
	}
	prev, err := packed(n, trajectory.RefPrevious, false)
	if err != nil {
		return err
	}
	key10, err := packed(10, trajectory.RefKeyframe, false)
	if err != nil {
		return err
	}
	prevBest, err := packed(n, trajectory.RefPrevious, true)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s: %d steps\n\n| step | raw | independent | vs previous | of raw | ÷ indep. | vs previous, best | of raw | vs keyframe (K=10) | of raw |\n|---|---|---|---|---|---|---|---|---|---|\n", kind, n)
	for i, s := range steps {
		raw := float64(len(s.data))
		p, pb, k := prev.Frames[i].Length, prevBest.Frames[i].Length, key10.Frames[i].Length
		fmt.Fprintf(&b, "| %s | %d | %d (%.3f) | %d | %.3f | %.3f | %d | %.3f | %d | %.3f |\n", strings.TrimSuffix(s.name, ".safetensors"), len(s.data), ind[i], float64(ind[i])/raw,
			p, float64(p)/raw, float64(p)/float64(ind[i]), pb, float64(pb)/raw, k, float64(k)/raw)
	}
	fmt.Fprintf(&b, "\nsum raw %d, sum independent %d (%.3f of raw)\n\n| mode | K | archive bytes | ÷ sum independent | of raw |\n|---|---|---|---|---|\n", sumRaw, sumInd, float64(sumInd)/float64(sumRaw))
	for _, mode := range []trajectory.RefMode{trajectory.RefPrevious, trajectory.RefKeyframe} {
		for _, k := range []int{1, 2, 5, 10, n} {
			a, err := packed(k, mode, false)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %.4f | %.4f |\n", modeName[mode], k, a.End, float64(a.End)/float64(sumInd), float64(a.End)/float64(sumRaw))
		}
	}
	for _, k := range []int{10, n} {
		a, err := packed(k, trajectory.RefPrevious, true)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "| prev, best | %d | %d | %.4f | %.4f |\n", k, a.End, float64(a.End)/float64(sumInd), float64(a.End)/float64(sumRaw))
	}
	// keyframes placed by PlanKeyframes (nzip trajectory pack's default)
	var pl trajectory.Planner
	for _, s := range steps {
		if err := pl.Add(context.Background(), s.input(), codec.EncodeOptions{}); err != nil {
			return err
		}
	}
	planned := map[int]*trajectory.Archive{}
	for _, k := range []int{2, 5, 10} {
		keys := trajectory.PlanKeyframes(pl.Saving(), k)
		if planned[k], err = pack(steps, k, trajectory.RefPrevious, keys, codec.EncodeOptions{}); err != nil {
			return err
		}
		var at []int
		for i, key := range keys {
			if key {
				at = append(at, i)
			}
		}
		end := planned[k].End
		fmt.Fprintf(&b, "| planned (keyframes %v) | %d | %d | %.4f | %.4f |\n", at, k, end, float64(end)/float64(sumInd), float64(end)/float64(sumRaw))
	}
	// extract times: the frame with the longest chain vs an independent
	// decode of the last step, timed in turns (the VM's speed drifts): the
	// best of 15 runs of each, taken alternately
	indArc, err := codec.CompressBytes(context.Background(), steps[n-1].data, steps[n-1].segs, codec.EncodeOptions{})
	if err != nil {
		return err
	}
	timed := func(a *trajectory.Archive, i int) (d, di time.Duration, err error) {
		d, di = 1<<62, 1<<62
		for range 15 {
			s := time.Now()
			got, err := a.Extract(context.Background(), i, codec.DecodeOptions{})
			d = min(d, time.Since(s))
			if err != nil || !bytes.Equal(got.Data, steps[i].data) {
				return 0, 0, fmt.Errorf("extract of frame %d: %v", i, err)
			}
			s = time.Now()
			if _, err := codec.DecompressBytes(context.Background(), indArc, codec.DecodeOptions{}); err != nil {
				return 0, 0, err
			}
			di = min(di, time.Since(s))
		}
		return d, di, nil
	}
	fmt.Fprintf(&b, "\nextract against an independent decode of %s, timed in turns\n\n| mode | K | frame | chain | extract ms | independent ms | ÷ independent | ≤ K? |\n|---|---|---|---|---|---|---|---|\n", steps[n-1].name)
	row := func(label string, k int, a *trajectory.Archive, i int) error {
		chain, err := a.Chain(i)
		if err != nil {
			return err
		}
		d, di, err := timed(a, i)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.2f | %.2f | %.2f | %v |\n", label, k, i, len(chain), d.Seconds()*1e3, di.Seconds()*1e3, d.Seconds()/di.Seconds(), d <= time.Duration(k)*di)
		return nil
	}
	for _, c := range []struct {
		mode trajectory.RefMode
		k    int
	}{{trajectory.RefPrevious, 5}, {trajectory.RefPrevious, 10}, {trajectory.RefPrevious, n}, {trajectory.RefKeyframe, 5}, {trajectory.RefKeyframe, 10}, {trajectory.RefKeyframe, n}} {
		a, err := packed(c.k, c.mode, false)
		if err != nil {
			return err
		}
		if err := row(modeName[c.mode], c.k, a, min(c.k-1, n-1)); err != nil { // the longest chain
			return err
		}
	}
	for _, k := range []int{10, n} {
		a, err := packed(k, trajectory.RefPrevious, true)
		if err != nil {
			return err
		}
		if err := row("prev, best", k, a, min(k-1, n-1)); err != nil {
			return err
		}
	}
	for _, k := range []int{5, 10} {
		a := planned[k]
		i, longest := 0, 0 // the frame with the longest chain
		for j := range a.Frames {
			if c, _ := a.Chain(j); len(c) > longest {
				i, longest = j, len(c)
			}
		}
		if err := row("planned", k, a, i); err != nil {
			return err
		}
	}
	fmt.Print(b.String())
	return nil
}

// runTrajRatio prints the time of extracting the last frame of the first
// K = 10 group of the real bf16 run (a keyframe and nine frames, each coded
// against the one before; -mode key: the frame coded against the
// keyframe) against decoding that step's own archive: the best of -runs
// runs of each, taken in turns (the VM's speed drifts). It is how
// docs/trajectories.md compares builds (-tags noasm, GOOS=js).
func runTrajRatio(args []string) error {
	fs := flag.NewFlagSet("traj-ratio", flag.ExitOnError)
	shared := fs.String("shared", "../shared", "the corpus directory")
	runs := fs.Int("runs", 15, "runs of each, best taken")
	modeFlag := fs.String("mode", "prev", "prev or key")
	fs.Parse(args)
	mode := trajectory.RefPrevious
	switch *modeFlag {
	case "prev":
	case "key":
		mode = trajectory.RefKeyframe
	default:
		return errors.New("traj-ratio: -mode prev or key")
	}
	steps, err := realSteps(*shared, "bf16")
	if err != nil {
		return err
	}
	if len(steps) < 10 {
		return errors.New("traj-ratio: fewer than 10 steps")
	}
	a, err := pack(steps[:10], 10, mode, nil, codec.EncodeOptions{})
	if err != nil {
		return err
	}
	chain, err := a.Chain(9)
	if err != nil {
		return err
	}
	last := steps[9]
	ind, err := codec.CompressBytes(context.Background(), last.data, last.segs, codec.EncodeOptions{})
	if err != nil {
		return err
	}
	d, di := time.Duration(1<<62), time.Duration(1<<62)
	for range *runs {
		s := time.Now()
		got, err := a.Extract(context.Background(), 9, codec.DecodeOptions{})
		d = min(d, time.Since(s))
		if err != nil || !bytes.Equal(got.Data, last.data) {
			return fmt.Errorf("extract: %v", err)
		}
		s = time.Now()
		if _, err := codec.DecompressBytes(context.Background(), ind, codec.DecodeOptions{}); err != nil {
			return err
		}
		di = min(di, time.Since(s))
	}
	fmt.Printf("frame 9 (a chain of %d frames) %.2f ms, independent %.2f ms: %.2f×\n", len(chain), d.Seconds()*1e3, di.Seconds()*1e3, d.Seconds()/di.Seconds())
	return nil
}
