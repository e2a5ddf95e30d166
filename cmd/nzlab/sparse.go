package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"neuralzip/analysis"
	"neuralzip/codec"
)

// runSparse prints docs/sparse.md's table: per file, the archive without
// and with sparse blocks (EncodeOptions.NoSparse), both checked bit-exact, the
// optimum of a zero mask plus nonzero values (order-0 and with the mask
// per column, from package analysis), and, where the file's directory has
// a stats.json (../shared/activations), its order-0 bound and its xz -6
// and zstd -3 sizes.
//
//	nzlab sparse FILE...
func runSparse(args []string) error {
	fs := flag.NewFlagSet("sparse", flag.ExitOnError)
	fs.Parse(args)
	if fs.NArg() == 0 {
		return errors.New("usage: nzlab sparse FILE...")
	}
	fmt.Println("| file | bytes | nzip before | nzip after | after − before (bytes) | xz -6 | zstd -3 | order-0 bound | optimum, per-column mask | after / bound |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, path := range fs.Args() {
		src, in, err := readInput(path)
		if err != nil {
			return err
		}
		var sizes [2]int
		for k, noSparse := range []bool{true, false} {
			var buf bytes.Buffer
			if _, err := codec.Encode(context.Background(), &buf, []codec.Input{in}, codec.EncodeOptions{NoSparse: noSparse}); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			out, err := codec.DecompressBytes(context.Background(), buf.Bytes(), codec.DecodeOptions{})
			if err != nil || !bytes.Equal(out, src) {
				return fmt.Errorf("%s: roundtrip failed: %v", path, err)
			}
			sizes[k] = buf.Len()
		}
		// the optimum: header and other bytes raw, float tensors at their
		// mask + nonzero-value entropy
		opt := float64(len(src))
		for _, s := range in.Segments {
			row := 0
			if len(s.Shape) >= 2 {
				row = int(s.Shape[len(s.Shape)-1])
			}
			a, ok := analysis.NewSparseAccumulator(s.DType, row)
			if !ok || s.Length == 0 {
				continue
			}
			a.Write(src[s.Offset : s.Offset+s.Length])
			opt += a.Stats().OptimumColumns() - float64(s.Length)
		}
		st := fileStats(path)
		ratio := func(b float64) string {
			if b <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f×", float64(len(src))/b)
		}
		vs := "-"
		if st.Bound > 0 {
			vs = fmt.Sprintf("%.3f", st.Bound/float64(sizes[1]))
		}
		fmt.Printf("| `%s` | %d | %s | %s | %+d | %s | %s | %s | %s | %s |\n", filepath.Base(path), len(src),
			ratio(float64(sizes[0])), ratio(float64(sizes[1])), sizes[1]-sizes[0], ratio(st.Xz), ratio(st.Zstd), ratio(st.Bound), ratio(opt), vs)
	}
	return nil
}

// statsJSON is the part of ../shared/activations/stats.json a file's row
// uses.
type statsJSON struct {
	Bound float64 `json:"bound_bytes"`
	Xz    float64 `json:"xz6_bytes"`
	Zstd  float64 `json:"zstd3_bytes"`
}

// fileStats reads path's entry of the stats.json beside it (zero when
// there is none).
func fileStats(path string) statsJSON {
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(path), "stats.json"))
	if err != nil {
		return statsJSON{}
	}
	var all struct {
		Files map[string]statsJSON `json:"files"`
	}
	if json.Unmarshal(raw, &all) != nil {
		return statsJSON{}
	}
	return all.Files[filepath.Base(path)]
}
