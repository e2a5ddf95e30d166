// Command jsbench runs nzip (compress, decompress, roundtrip check) on the
// embedded demo models, as the browser workbench's Run screen does, and
// prints the speeds. Built for GOOS=js it measures the codec in V8 without
// a browser:
//
//	GOOS=js GOARCH=wasm go run -exec="$(go env GOROOT)/lib/wasm/go_js_wasm_exec" ./wasm/cmd/jsbench
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"

	"neuralzip/app/core"
	"neuralzip/assets"
)

func main() {
	reps := flag.Int("n", 5, "runs per model (the best is printed)")
	flag.Parse()
	fmt.Printf("%s/%s, GOMAXPROCS %d\n", runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	for _, d := range assets.Models() {
		m, err := core.OpenAsset(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		src, segs, starts, err := m.ReadAll()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var best core.RunResult
		for i := 0; i < *reps; i++ {
			r := core.Run(context.Background(), m, src, segs, starts, core.RunSpec{Codec: core.CodecNZip, Threads: 1}, nil)
			if r.Error != "" || !r.RoundtripOK {
				fmt.Fprintf(os.Stderr, "%s: roundtrip failed: %s\n", d.Name, r.Error)
				os.Exit(1)
			}
			best.Ratio = r.Ratio
			best.CompressMBs = max(best.CompressMBs, r.CompressMBs)
			best.DecompressMBs = max(best.DecompressMBs, r.DecompressMBs)
		}
		fmt.Printf("%-20s %8d bytes  ratio %.4f  compress %6.1f MB/s  decompress %6.1f MB/s  (1 thread, best of %d)\n",
			d.Name, len(src), best.Ratio, best.CompressMBs, best.DecompressMBs, *reps)
		m.Close()
	}
}
