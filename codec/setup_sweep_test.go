package codec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSetupClusterSweep measures clustering methods and table counts on
// the real corpus (the README's "Setups" table comes from it):
//
//	NZ_SETUP_SWEEP=1 go test ./codec -run TestSetupClusterSweep -v -timeout 30m
//
// For each file and chunk size it builds the file's own setup under each
// configuration and reports the ratio change against per-chunk tables with
// the setup external (its bytes not counted) at the default threshold, and
// with the setup forced on every block.
func TestSetupClusterSweep(t *testing.T) {
	if os.Getenv("NZ_SETUP_SWEEP") == "" {
		t.Skip("measurement, not a test: set NZ_SETUP_SWEEP=1 to run it")
	}
	d := needShared(t)
	files := []string{"models/bench/real-bf16.safetensors", "models/bench/real-f16.safetensors", "models/bench/real-f32.safetensors", "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"}
	configs := []struct {
		name string
		opt  SetupOptions
	}{
		{"kmeans, auto K (min-gain 0.1 %, max 16)", SetupOptions{Cluster: ClusterKMeans, MinGain: 0.001, MaxK: 16}},
		{"kmeans, K=16", SetupOptions{Cluster: ClusterKMeans, K: 16}},
		{"kmeans, auto K (defaults)", SetupOptions{Cluster: ClusterKMeans}},
		{"agglomerative, auto K (min-gain 0.1 %, max 16)", SetupOptions{Cluster: ClusterAgglomerative, MinGain: 0.001, MaxK: 16}},
		{"agglomerative, K=16", SetupOptions{Cluster: ClusterAgglomerative, K: 16}},
		{"agglomerative, K=64", SetupOptions{Cluster: ClusterAgglomerative, K: 64}},
		{"agglomerative, auto K (defaults)", SetupOptions{}},
	}
	fmt.Println("| file | chunk | clustering | tables | setup bytes | build s | Δ ratio (threshold 3 %) | Δ ratio (forced) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, chunk := range []int{65536, 4096} {
		for _, f := range files {
			in, data := fileInput(t, filepath.Join(d, f))
			segs := safetensorsSegments(data)
			plain, err := CompressBytes(data, segs, Options{ChunkValues: chunk})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range configs {
				opt := c.opt
				opt.ChunkValues = chunk
				t0 := time.Now()
				s, err := BuildSetup([]Input{in}, opt)
				if err != nil {
					t.Fatal(err)
				}
				bt := time.Since(t0)
				delta := func(th float64) float64 {
					arc, err := CompressBytes(data, segs, Options{ChunkValues: chunk, Setup: s, SetupExternal: true, SetupThreshold: th})
					if err != nil {
						t.Fatal(err)
					}
					return 100 * (float64(len(plain))/float64(len(arc)) - 1)
				}
				fmt.Printf("| %s | %d | %s | %d | %d | %.2f | %+.3f %% | %+.3f %% |\n", filepath.Base(f), chunk, c.name,
					len(s.Sections[0].Tables), len(s.Bytes()), bt.Seconds(), delta(0), delta(1e9))
			}
		}
	}
}
