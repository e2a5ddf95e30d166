package infer

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"neuralzip/codec"
)

// TestSpeedTable prints the table of docs/inference.md: resident weight
// bytes and tokens/s from the original file and from its archive (with and
// without prefetching; and coded with the Gaussian setup), each the best
// of interleaved runs (the shared machine's speed swings from run to run).
// Tokens per CPU-second (the process's user + system time) are steadier
// than wall time when other jobs share the cores; they would count a
// prefetching worker's time too, so they are given for the variants
// without it. Run it with
// NZ_INFER_SPEED=1 go test ./infer -run TestSpeedTable -v
// (NZ_INFER_RUNS sets the runs per variant, default 9).
func TestSpeedTable(t *testing.T) {
	if os.Getenv("NZ_INFER_SPEED") == "" {
		t.Skip("a measurement, not a test: set NZ_INFER_SPEED=1")
	}
	runs := 9
	fmt.Sscan(os.Getenv("NZ_INFER_RUNS"), &runs)
	var sb strings.Builder
	sb.WriteString("| model | weights | archive | resident peak | peak, prefetch | tokens/s original | archive | × | archive, prefetch | × | tokens per CPU-second original | archive | × | archive, Gaussian setup | × |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range benchModels(t) {
		orig := readFile(t, needFile(t, c.file))
		a := compress(t, orig, codec.Options{})
		models := []*Model{
			openBytes(t, orig, Options{Config: c.config}),
			openBytes(t, a, Options{Config: c.config}),
			openBytes(t, a, Options{Config: c.config, Prefetch: true}),
			openBytes(t, compress(t, orig, codec.Options{Setup: codec.GaussianSetup()}), Options{Config: c.config}),
		}
		best := make([]float64, len(models))
		bestCPU := make([]float64, len(models))
		for range runs {
			for i, m := range models {
				start, cpu := time.Now(), cpuTime()
				res, err := Generate(m, c.tok, c.prompt, GenerateOptions{N: 100})
				if err != nil {
					t.Fatal(err)
				}
				best[i] = max(best[i], float64(res.Positions)/time.Since(start).Seconds())
				if d := cpuTime() - cpu; d > 0 {
					bestCPU[i] = max(bestCPU[i], float64(res.Positions)/d.Seconds())
				}
			}
		}
		mem, memP := models[1].Memory(), models[2].Memory()
		name := c.file[strings.LastIndex(c.file, "/")+1:]
		fmt.Fprintf(&sb, "| %s | %d | %d | %d (%.1f %%) | %d (%.1f %%) | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.0f | %.2f | %.0f | %.2f |\n",
			name, mem.Weights, mem.Compressed, mem.Peak, 100*float64(mem.Peak)/float64(mem.Weights),
			memP.Peak, 100*float64(memP.Peak)/float64(memP.Weights),
			best[0], best[1], best[1]/best[0], best[2], best[2]/best[0],
			bestCPU[0], bestCPU[1], bestCPU[1]/max(bestCPU[0], 1e-9), bestCPU[3], bestCPU[3]/max(bestCPU[0], 1e-9))
	}
	t.Log("\n" + sb.String())
}
