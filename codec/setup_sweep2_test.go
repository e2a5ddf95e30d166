package codec

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSetupSweep2(t *testing.T) {
	if os.Getenv("NZ_SWEEP") == "" {
		t.Skip()
	}
	d := needShared(t)
	in, _ := fileInput(t, filepath.Join(d, "models/bench/real-bf16.safetensors"))
	in2, _ := fileInput(t, filepath.Join(d, "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"))
	speed := func(data, arc []byte, opt Options) (float64, float64) {
		bc, bd := time.Hour, time.Hour
		for r := 0; r < 3; r++ {
			t0 := time.Now()
			CompressBytes(data, safetensorsSegments(data), opt)
			bc = min(bc, time.Since(t0))
			o := opt
			o.SkipHash = true
			t0 = time.Now()
			DecompressBytes(arc, o)
			bd = min(bd, time.Since(t0))
		}
		return float64(len(data)) / bc.Seconds() / 1e6, float64(len(data)) / bd.Seconds() / 1e6
	}
	for _, pb := range []float64{0.002, 0.01, 0.03} {
		for _, src := range []Input{in, in2} {
			s, _ := BuildSetup([]Input{src}, SetupOptions{PairBias: pb})
			np := 0
			for _, tb := range s.Sections[0].Tables {
				if tb.HasPairs() {
					np++
				}
			}
			for _, th := range []float64{1e9, 0.05} {
				_, data := fileInput(t, filepath.Join(d, map[string]string{"real-bf16.safetensors": "models/bench/real-bf16.safetensors", "step_001000.bf16.safetensors": "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"}[src.Name]))
				segs := safetensorsSegments(data)
				plain, _ := CompressBytes(data, segs, Options{})
				arc, _ := CompressBytes(data, segs, Options{Setup: s, SetupThreshold: th})
				c, dd := speed(data, arc, Options{Threads: 1, Setup: s, SetupThreshold: th})
				c0, d0 := speed(data, plain, Options{Threads: 1})
				t.Logf("%s pb %.3f (%d/%d pairs) th %g: %+.2f%%  c %4.0f (none %4.0f) d %4.0f (none %4.0f)", src.Name, pb, np, len(s.Sections[0].Tables), th, 100*(float64(len(plain))/float64(len(arc))-1), c, c0, dd, d0)
			}
		}
	}
}
