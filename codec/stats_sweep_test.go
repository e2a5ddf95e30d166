package codec

import (
	"os"
	"testing"
	"time"
)

func TestBlockSizeStats(t *testing.T) {
	src, _ := os.ReadFile("../../shared/models/bench/real-bf16.safetensors")
	segs := safetensorsSegments(src)
	plans, _ := planBlocks(segs, int64(len(src)), DefaultChunkValues)
	hist := map[string]int{}
	for _, p := range plans {
		n := p.length / 2
		k := "generic"
		if p.float {
			switch {
			case n < 1024:
				k = "<1K"
			case n < 4096:
				k = "<4K"
			case n < 16384:
				k = "<16K"
			default:
				k = ">=16K"
			}
		}
		hist[k]++
	}
	t.Logf("%d blocks: %v", len(plans), hist)
}

func TestPairMinSweep(t *testing.T) {
	for _, f := range []string{"../../shared/models/bench/real-bf16.safetensors", "../../shared/trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"} {
		src, _ := os.ReadFile(f)
		segs := safetensorsSegments(src)
		for _, mp := range []int{1024, 4096, 16384} {
			minPairSymbolsVar = mp
			best := time.Hour
			var arc []byte
			for r := 0; r < 5; r++ {
				t0 := time.Now()
				arc, _ = CompressBytes(src, segs, Options{Threads: 1})
				best = min(best, time.Since(t0))
			}
			t.Logf("%s minPair %d: ratio %.4f  %.0f MB/s", f[len(f)-20:], mp, float64(len(src))/float64(len(arc)), float64(len(src))/best.Seconds()/1e6)
		}
		minPairSymbolsVar = 1024
	}
}
