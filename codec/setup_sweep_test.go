package codec

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSetupSweep(t *testing.T) {
	if os.Getenv("NZ_SWEEP") == "" {
		t.Skip()
	}
	d := needShared(t)
	in, _ := fileInput(t, filepath.Join(d, "models/bench/real-bf16.safetensors"))
	files := []string{"models/bench/real-bf16.safetensors", "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"}
	measure := func(data []byte, segs []Segment, opt Options) (float64, float64, float64) {
		var arc []byte
		best := time.Hour
		for r := 0; r < 3; r++ {
			t0 := time.Now()
			arc, _ = CompressBytes(data, segs, opt)
			best = min(best, time.Since(t0))
		}
		bestD := time.Hour
		o2 := opt
		o2.SkipHash = true
		for r := 0; r < 3; r++ {
			t0 := time.Now()
			DecompressBytes(arc, o2)
			bestD = min(bestD, time.Since(t0))
		}
		return float64(len(data)) / float64(len(arc)), float64(len(data)) / best.Seconds() / 1e6, float64(len(data)) / bestD.Seconds() / 1e6
	}
	for _, k := range []int{16, 32} {
		s, err := BuildSetup([]Input{in}, SetupOptions{MaxK: k})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			_, data := fileInput(t, filepath.Join(d, f))
			segs := safetensorsSegments(data)
			r0, c0, d0 := measure(data, segs, Options{Threads: 1})
			t.Logf("%s no setup: %.4f %4.0f %4.0f", filepath.Base(f), r0, c0, d0)
			for _, th := range []float64{0.01, 0.03, 0.1} {
				r, c, dd := measure(data, segs, Options{Threads: 1, Setup: s, SetupThreshold: th})
				t.Logf("%s K<=%d (%d tables) th %.2f: %.4f (%.2f%%) %4.0f %4.0f", filepath.Base(f), k, len(s.Sections[0].Tables), th, r, 100*(r/r0-1), c, dd)
			}
		}
	}
}
