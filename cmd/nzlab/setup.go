package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"neuralzip/codec"
)

// runSetup builds a setup from one file with the builder's knobs that
// nzip setup build does not offer (-pair-bias).
func runSetup(args []string) error {
	fs := flag.NewFlagSet("setup", flag.ExitOnError)
	out := fs.String("o", "", "output .nzsetup (required)")
	chunk := fs.Int("chunk", 0, "float values per block (0: the default)")
	k := fs.Int("k", 0, "tables (0: chosen by the builder)")
	pairBias := fs.Float64("pair-bias", 0, "SetupOptions.PairBias (0: the default)")
	fs.Parse(args)
	if fs.NArg() != 1 || *out == "" {
		return errors.New("setup: -o OUT and one FILE")
	}
	_, in, err := readInput(fs.Arg(0))
	if err != nil {
		return err
	}
	opt := codec.SetupOptions{ChunkValues: *chunk, PairBias: *pairBias}
	if *k > 0 {
		opt.K, opt.MaxK = *k, max(*k, 16)
	}
	s, err := codec.BuildSetup(context.Background(), []codec.Input{in}, opt)
	if err != nil {
		return err
	}
	tmp := *out + ".tmp"
	if err := os.WriteFile(tmp, s.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, *out)
}

// runSetupSweep measures clustering methods and table counts on the real
// corpus (docs/setups.md's table): for each file and chunk size it builds
// the file's own setup under each configuration and prints the ratio
// change against per-chunk tables with the setup external (its bytes not
// counted) at the default threshold, and with the setup forced on every
// block.
func runSetupSweep(args []string) error {
	fs := flag.NewFlagSet("setup-sweep", flag.ExitOnError)
	shared := fs.String("shared", "../shared", "the corpus directory (models/, trajectories/)")
	fs.Parse(args)
	files := []string{"models/bench/real-bf16.safetensors", "models/bench/real-f16.safetensors", "models/bench/real-f32.safetensors", "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"}
	configs := []struct {
		name string
		opt  codec.SetupOptions
	}{
		{"kmeans, auto K (min-gain 0.1 %, max 16)", codec.SetupOptions{Cluster: codec.ClusterKMeans, MinGain: 0.001, MaxK: 16}},
		{"kmeans, K=16", codec.SetupOptions{Cluster: codec.ClusterKMeans, K: 16}},
		{"kmeans, auto K (defaults)", codec.SetupOptions{Cluster: codec.ClusterKMeans}},
		{"agglomerative, auto K (min-gain 0.1 %, max 16)", codec.SetupOptions{Cluster: codec.ClusterAgglomerative, MinGain: 0.001, MaxK: 16}},
		{"agglomerative, K=16", codec.SetupOptions{Cluster: codec.ClusterAgglomerative, K: 16}},
		{"agglomerative, K=64", codec.SetupOptions{Cluster: codec.ClusterAgglomerative, K: 64}},
		{"agglomerative, auto K (defaults)", codec.SetupOptions{}},
	}
	fmt.Println("| file | chunk | clustering | tables | setup bytes | build s | Δ ratio (threshold 3 %) | Δ ratio (forced) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, chunk := range []int{65536, 4096} {
		for _, f := range files {
			data, in, err := readInput(filepath.Join(*shared, f))
			if err != nil {
				return err
			}
			segs := in.Segments
			plain, err := codec.CompressBytes(context.Background(), data, segs, codec.EncodeOptions{ChunkValues: chunk})
			if err != nil {
				return err
			}
			for _, c := range configs {
				opt := c.opt
				opt.ChunkValues = chunk
				t0 := time.Now()
				s, err := codec.BuildSetup(context.Background(), []codec.Input{in}, opt)
				if err != nil {
					return err
				}
				bt := time.Since(t0)
				var d [2]float64
				for i, th := range []float64{0, 1e9} {
					arc, err := codec.CompressBytes(context.Background(), data, segs, codec.EncodeOptions{ChunkValues: chunk, Setup: s, SetupExternal: true, SetupThreshold: th})
					if err != nil {
						return err
					}
					d[i] = 100 * (float64(len(plain))/float64(len(arc)) - 1)
				}
				fmt.Printf("| %s | %d | %s | %d | %d | %.2f | %+.3f %% | %+.3f %% |\n", filepath.Base(f), chunk, c.name,
					len(s.Sections[0].Tables), len(s.Bytes()), bt.Seconds(), d[0], d[1])
			}
		}
	}
	return nil
}
