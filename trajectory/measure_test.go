package trajectory

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"neuralzip/codec"
)

// TestMeasure prints the per-step table of the real trajectories
// (NZ_TRAJ_MEASURE=1; NZ_TRAJ_KIND=bf16,f32,optim): raw size, independent
// nzip size, the frame coded against the previous step and against the
// keyframe, totals for several K and both modes, and extract times.
func TestMeasure(t *testing.T) {
	if os.Getenv("NZ_TRAJ_MEASURE") == "" {
		t.Skip("set NZ_TRAJ_MEASURE=1 to print the trajectory tables")
	}
	kinds := os.Getenv("NZ_TRAJ_KIND")
	if kinds == "" {
		kinds = "bf16"
	}
	for _, kind := range strings.Split(kinds, ",") {
		steps := realSteps(t, kind)
		n := len(steps)
		ind := make([]int64, n)
		var sumInd, sumRaw int64
		for i, s := range steps {
			a, err := codec.CompressBytes(s.data, s.segs, codec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ind[i] = int64(len(a))
			sumInd += ind[i]
			sumRaw += int64(len(s.data))
		}
		frames := func(k int, mode RefMode) ([]Frame, int64) {
			f := pack(t, steps, k, mode, 0)
			a, err := Open(f, int64(len(f.b)))
			if err != nil {
				t.Fatal(err)
			}
			return a.Frames, a.End
		}
		prev, _ := frames(n, RefPrevious)
		key10, _ := frames(10, RefKeyframe)
		bestOne := packOpt(t, steps, n, RefPrevious, codec.Options{Best: true})
		ba, err := Open(bestOne, int64(len(bestOne.b)))
		if err != nil {
			t.Fatal(err)
		}
		prevBest := ba.Frames
		var b strings.Builder
		fmt.Fprintf(&b, "\n%s: %d steps\n\n| step | raw | independent | vs previous | of raw | ÷ indep. | vs previous, best | of raw | vs keyframe (K=10) | of raw |\n|---|---|---|---|---|---|---|---|---|---|\n", kind, n)
		for i, s := range steps {
			raw := float64(len(s.data))
			fmt.Fprintf(&b, "| %s | %d | %d (%.3f) | %d | %.3f | %.3f | %d | %.3f | %d | %.3f |\n", strings.TrimSuffix(s.name, ".safetensors"), len(s.data), ind[i], float64(ind[i])/raw,
				prev[i].Length, float64(prev[i].Length)/raw, float64(prev[i].Length)/float64(ind[i]), prevBest[i].Length, float64(prevBest[i].Length)/raw, key10[i].Length, float64(key10[i].Length)/raw)
		}
		fmt.Fprintf(&b, "\nsum raw %d, sum independent %d (%.3f of raw)\n\n| mode | K | archive bytes | ÷ sum independent | of raw |\n|---|---|---|---|---|\n", sumRaw, sumInd, float64(sumInd)/float64(sumRaw))
		for _, mode := range []RefMode{RefPrevious, RefKeyframe} {
			for _, k := range []int{1, 2, 5, 10, n} {
				_, end := frames(k, mode)
				fmt.Fprintf(&b, "| %s | %d | %d | %.4f | %.4f |\n", map[RefMode]string{RefPrevious: "prev", RefKeyframe: "key"}[mode], k, end, float64(end)/float64(sumInd), float64(end)/float64(sumRaw))
			}
		}
		// Options.Best (nzip trajectory pack -best): range-coded difference blocks
		bestArc := map[int]*memFile{}
		bestArc[n] = bestOne
		for _, k := range []int{10, n} {
			if bestArc[k] == nil {
				bestArc[k] = packOpt(t, steps, k, RefPrevious, codec.Options{Best: true})
			}
			end := int64(len(bestArc[k].b))
			fmt.Fprintf(&b, "| prev, best | %d | %d | %.4f | %.4f |\n", k, end, float64(end)/float64(sumInd), float64(end)/float64(sumRaw))
		}
		// keyframes placed by PlanKeyframes (nzip trajectory pack's default)
		pl := measure(t, steps)
		planned := map[int]*memFile{}
		for _, k := range []int{2, 5, 10} {
			keys := PlanKeyframes(pl.Saving(), k)
			planned[k] = packKeys(t, steps, k, keys)
			var at []int
			for i, key := range keys {
				if key {
					at = append(at, i)
				}
			}
			end := int64(len(planned[k].b))
			fmt.Fprintf(&b, "| planned (keyframes %v) | %d | %d | %.4f | %.4f |\n", at, k, end, float64(end)/float64(sumInd), float64(end)/float64(sumRaw))
		}
		// extract times: the last frame of a K-group vs an independent
		// decode of the last step, timed in turns (the VM's speed drifts):
		// the best of 15 runs of each, taken alternately
		indArc, _ := codec.CompressBytes(steps[n-1].data, steps[n-1].segs, codec.Options{})
		best := func(fn func()) (d, di time.Duration) {
			d, di = 1<<62, 1<<62
			for r := 0; r < 15; r++ {
				s := time.Now()
				fn()
				d = min(d, time.Since(s))
				s = time.Now()
				if _, err := codec.DecompressBytes(indArc, codec.Options{}); err != nil {
					t.Fatal(err)
				}
				di = min(di, time.Since(s))
			}
			return d, di
		}
		fmt.Fprintf(&b, "\nextract against an independent decode of %s, timed in turns\n\n| mode | K | frame | chain | extract ms | independent ms | ÷ independent | ≤ K? |\n|---|---|---|---|---|---|---|---|\n", steps[n-1].name)
		for _, c := range []struct {
			mode RefMode
			k    int
		}{{RefPrevious, 5}, {RefPrevious, 10}, {RefPrevious, n}, {RefKeyframe, 5}, {RefKeyframe, 10}, {RefKeyframe, n}} {
			f := pack(t, steps, c.k, c.mode, 0)
			a, _ := Open(f, int64(len(f.b)))
			i := min(c.k-1, n-1) // the longest chain
			chain, _ := a.Chain(i)
			d, di := best(func() {
				got, err := a.Extract(i, codec.Options{})
				if err != nil || !bytes.Equal(got.Data, steps[i].data) {
					t.Fatal("extract", err)
				}
			})
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %.2f | %.2f | %.2f | %v |\n", map[RefMode]string{RefPrevious: "prev", RefKeyframe: "key"}[c.mode], c.k, i, len(chain), d.Seconds()*1e3, di.Seconds()*1e3, d.Seconds()/di.Seconds(), d <= time.Duration(c.k)*di)
		}
		for _, k := range []int{10, n} {
			a, _ := Open(bestArc[k], int64(len(bestArc[k].b)))
			i := min(k-1, n-1)
			d, di := best(func() {
				got, err := a.Extract(i, codec.Options{})
				if err != nil || !bytes.Equal(got.Data, steps[i].data) {
					t.Fatal("extract", err)
				}
			})
			fmt.Fprintf(&b, "| prev, best | %d | %d | %d | %.2f | %.2f | %.1f | %v |\n", k, i, i+1, d.Seconds()*1e3, di.Seconds()*1e3, d.Seconds()/di.Seconds(), d <= time.Duration(k)*di)
		}
		for _, k := range []int{5, 10} {
			f := planned[k]
			a, _ := Open(f, int64(len(f.b)))
			i, chain := 0, []int(nil) // the frame with the longest chain
			for j := range a.Frames {
				if c, _ := a.Chain(j); len(c) > len(chain) {
					i, chain = j, c
				}
			}
			d, di := best(func() {
				got, err := a.Extract(i, codec.Options{})
				if err != nil || !bytes.Equal(got.Data, steps[i].data) {
					t.Fatal("extract", err)
				}
			})
			fmt.Fprintf(&b, "| planned | %d | %d | %d | %.2f | %.2f | %.2f | %v |\n", k, i, len(chain), d.Seconds()*1e3, di.Seconds()*1e3, d.Seconds()/di.Seconds(), d <= time.Duration(k)*di)
		}
		t.Log(b.String())
	}
}

// chain10 packs the first ten steps of the real bf16 trajectory with K =
// 10, each frame coded against the one before (mode RefPrevious) or
// against frame 0 (RefKeyframe), and returns the archive and the tenth
// step (frame 9: a chain of a keyframe and nine frames, or of two).
func chain10(tb testing.TB, mode RefMode) (*Archive, step) {
	steps := realSteps(tb, "bf16")
	if len(steps) < 10 {
		tb.Skip("fewer than 10 steps")
	}
	f := pack(tb, steps[:10], 10, mode, 0)
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		tb.Fatal(err)
	}
	return a, steps[9]
}

// TestExtractRatio prints the time of extracting the last frame of the
// first K = 10 group of the real bf16 trajectory (a keyframe and nine
// frames, each coded against the one before; NZ_TRAJ_RATIO_MODE=key: the
// frame coded against the keyframe) against decoding that step's own
// archive: the best of NZ_TRAJ_RATIO runs of each, taken in turns (the
// VM's speed drifts). It is how the README compares builds (e.g. -tags
// noasm, -cpu 1); it asserts nothing about time.
func TestExtractRatio(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("NZ_TRAJ_RATIO"))
	if rounds <= 0 {
		t.Skip("set NZ_TRAJ_RATIO=runs to time extract against an independent decode")
	}
	mode := RefPrevious
	if os.Getenv("NZ_TRAJ_RATIO_MODE") == "key" {
		mode = RefKeyframe
	}
	a, last := chain10(t, mode)
	chain, err := a.Chain(9)
	if err != nil {
		t.Fatal(err)
	}
	want := last.data
	ind, err := codec.CompressBytes(want, last.segs, codec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, di := time.Duration(1<<62), time.Duration(1<<62)
	for range rounds {
		s := time.Now()
		got, err := a.Extract(9, codec.Options{})
		d = min(d, time.Since(s))
		if err != nil || !bytes.Equal(got.Data, want) {
			t.Fatal("extract", err)
		}
		s = time.Now()
		if _, err := codec.DecompressBytes(ind, codec.Options{}); err != nil {
			t.Fatal(err)
		}
		di = min(di, time.Since(s))
	}
	t.Logf("frame 9 (a chain of %d frames) %.2f ms, independent %.2f ms: %.2f×", len(chain), d.Seconds()*1e3, di.Seconds()*1e3, d.Seconds()/di.Seconds())
}

// BenchmarkExtract extracts the last frame of the first K = 10 group of the
// real bf16 trajectory (a chain of a keyframe and nine frames, each coded
// against the one before); .../independent decodes that step's own archive.
func BenchmarkExtract(b *testing.B) {
	a, last := chain10(b, RefPrevious)
	want := last.data
	b.Run("chain10", func(b *testing.B) {
		b.SetBytes(int64(len(want)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			got, err := a.Extract(9, codec.Options{})
			if err != nil || !bytes.Equal(got.Data, want) {
				b.Fatal("extract", err)
			}
		}
	})
	// the same frame through Stream (bounded memory: what nzip trajectory
	// extract writes), into a buffer of the frame's size
	out := bytes.NewBuffer(make([]byte, 0, len(want)))
	b.Run("stream10", func(b *testing.B) {
		b.SetBytes(int64(len(want)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			out.Reset()
			s, err := a.Stream(9)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.WriteFile(out, 0, codec.Options{}); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
		if !bytes.Equal(out.Bytes(), want) {
			b.Fatal("stream")
		}
	})
	ind, _ := codec.CompressBytes(want, last.segs, codec.Options{})
	b.Run("independent", func(b *testing.B) {
		b.SetBytes(int64(len(want)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := codec.DecompressBytes(ind, codec.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
