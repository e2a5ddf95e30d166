package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"neuralzip/analysis"
	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/codec/baseline"
)

// benchRow is one element of `nzip bench -json`.
type benchRow struct {
	baseline.Measurement
	BoundRatio float64 `json:"bound_ratio"` // the file's order-0 bound (see inspect)
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "[-json] [-codecs LIST] [-threads N] [-runs N] [-setup S.nzsetup [-setup-external]] FILE...", stderr)
	asJSON := fs.Bool("json", false, "print one JSON array")
	codecs := fs.String("codecs", strings.Join(baseline.Names(), ","), "comma-separated codecs; "+setupCodecName+" (nzip with -setup) is added when -setup is given")
	threads := fs.Int("threads", 0, "threads per codec (default: all CPUs; zstd and gzip use one)")
	runs := fs.Int("runs", 3, "timed runs per codec; the best counts (fewer when a codec is slow)")
	setupPath := fs.String("setup", "", "setup file for the codec "+setupCodecName)
	setupExternal := fs.Bool("setup-external", false, setupCodecName+": reference the setup instead of embedding it (its bytes do not count)")
	if err := parse(fs, args, 1, -1); err != nil {
		return err
	}
	if *threads < 0 || *runs < 1 {
		fmt.Fprintln(stderr, "nzip bench: -threads must be >= 0 and -runs >= 1")
		return errUsage
	}
	names := strings.Split(*codecs, ",")
	if *setupPath != "" && !flagSet(fs, "codecs") {
		// nzip+setup right after nzip
		i := slices.Index(names, "nzip") + 1
		names = slices.Insert(names, i, setupCodecName)
	}
	for _, n := range names {
		if n == setupCodecName {
			if *setupPath == "" {
				fmt.Fprintf(stderr, "nzip bench: codec %s needs -setup FILE.nzsetup\n", setupCodecName)
				return errUsage
			}
			continue
		}
		if _, err := baseline.New(n, baseline.Options{}); err != nil {
			fmt.Fprintf(stderr, "nzip bench: %v\n", err)
			return errUsage
		}
	}
	if *setupExternal && *setupPath == "" {
		fmt.Fprintln(stderr, "nzip bench: -setup-external needs -setup")
		return errUsage
	}
	var setup *codec.Setup
	if *setupPath != "" {
		s, err := loadSetup(*setupPath)
		if err != nil {
			return err
		}
		setup = s
	}
	var rows []benchRow
	for _, path := range fs.Args() {
		src, segs, err := readForBench(path, stderr)
		if err != nil {
			return err
		}
		bound := fileBoundRatio(src, segs)
		for _, name := range names {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			mopt := baseline.MeasureOptions{Threads: *threads, Runs: *runs, MaxTime: 10 * time.Second}
			var m baseline.Measurement
			if name == setupCodecName {
				m = baseline.MeasureCodec(newSetupCodec(setup, *setupExternal, *threads), setupCodecName, filepath.Base(path), src, segs, mopt)
			} else {
				m = baseline.Measure(name, filepath.Base(path), src, segs, mopt)
			}
			rows = append(rows, benchRow{m, bound})
			if !*asJSON {
				fmt.Fprintf(stderr, "  %s %s: %.3fx\n", filepath.Base(path), name, m.Ratio)
			}
		}
	}
	failed := 0
	for _, r := range rows {
		if !r.RoundtripOK {
			failed++
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		if err := enc.Encode(rows); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tCODEC\tRATIO\tCOMPRESS MB/s\tDECOMPRESS MB/s\tTHREADS\tROUNDTRIP\tORIGINAL\tCOMPRESSED\t")
		last := ""
		for _, r := range rows {
			if r.File != last {
				fmt.Fprintf(tw, "%s\torder-0 bound\t%.4f\t\t\t\t\t\t\t\n", r.File, r.BoundRatio)
				last = r.File
			}
			ok := "bit-exact"
			if !r.RoundtripOK {
				ok = "FAILED " + r.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.0f\t%.0f\t%d\t%s\t%d\t%d\t\n", r.File, r.Codec, r.Ratio, r.CompressMBs, r.DecompressMBs, r.Threads, ok, r.OriginalBytes, r.Compressed)
		}
		tw.Flush()
	}
	if failed > 0 {
		return fmt.Errorf("bench: %d roundtrip(s) failed", failed)
	}
	return nil
}

// readForBench reads a whole file and its layout (nil, with a warning, when
// it is not a checkpoint: it is then measured as opaque bytes).
func readForBench(path string, stderr io.Writer) ([]byte, []codec.Segment, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	lay, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		fmt.Fprintf(stderr, "nzip: warning: %s: %v; benchmarking it as opaque bytes\n", path, err)
		return src, nil, nil
	}
	return src, toCodecSegments(lay.Segments), nil
}

// flagSet reports whether the flag called name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// fileBoundRatio is size / (float tensors at their order-0 bound + all
// other bytes raw), as inspect reports it.
func fileBoundRatio(src []byte, segs []codec.Segment) float64 {
	var bound float64
	var floatBytes int64
	for _, s := range segs {
		if !s.IsTensor() {
			continue
		}
		if st, ok := analysis.Float(s.DType, src[s.Offset:s.Offset+s.Length]); ok {
			bound += st.Bound()
			floatBytes += s.Length
		}
	}
	bound += float64(int64(len(src)) - floatBytes)
	if bound == 0 {
		return 0
	}
	return float64(len(src)) / bound
}
