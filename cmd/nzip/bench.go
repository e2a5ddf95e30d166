package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"neuralzip/analysis"
	"neuralzip/codec"
	"neuralzip/codec/baseline"
	"neuralzip/gpu"
)

// benchRow is one element of `nzip bench -json`.
type benchRow struct {
	baseline.Measurement
	BoundRatio float64 `json:"bound_ratio"` // the file's order-0 bound (see inspect)
	*gpuFields `json:",omitempty"`
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "[-json] [-codecs LIST] [-threads N] [-runs N] [-chunk N] [-search N] [-setup S.nzsetup [-setup-external] [-setup-threshold X]] FILE...", stderr)
	asJSON := fs.Bool("json", false, "print one JSON array")
	codecs := fs.String("codecs", strings.Join(baseline.Names(), ","), "comma-separated codecs; "+setupCodecName+" (nzip with -setup) joins the default list when -setup is given; "+gaussianCodecName+" is nzip with the built-in Gaussian setup, "+bestCodecName+" nzip compress -best (codings by bytes alone)")
	threads := fs.Int("threads", 0, "threads per codec (default: all CPUs; zstd and gzip use one)")
	runs := fs.Int("runs", 3, "timed runs per codec; the best counts (fewer when a codec is slow)")
	setupPath := fs.String("setup", "", "setup file for the codec "+setupCodecName)
	setupExternal := fs.Bool("setup-external", false, setupCodecName+": reference the setup instead of embedding it (its bytes do not count)")
	setupThreshold := fs.Float64("setup-threshold", 0, fmt.Sprintf("%s: a block builds its own table when the best shared one costs more than this fraction above it (default %g)", setupCodecName, codec.DefaultSetupThreshold))
	backend := fs.String("backend", "", "also decode nzip's archive on this gpu backend (cpu, cuda, auto): codec nzip@BACKEND, rate of the device's kernels")
	gpuBytes := fs.Int64("gpu-bytes", 0, "with -backend: repeat the file's device work until it holds this many bytes (e.g. 1000000000)")
	chunk := fs.Int("chunk", 0, fmt.Sprintf("values per block for nzip and %s (default: %d for nzip, the setup's for %s)", setupCodecName, codec.DefaultChunkValues, setupCodecName))
	search := fs.Int("search", 0, "nzip and "+setupCodecName+": search each tensor's program with up to N candidates (nzip compress -search)")
	if err := parse(fs, args, 1, -1); err != nil {
		return err
	}
	if *gpuBytes < 0 || (*gpuBytes > 0 && *backend == "") {
		fmt.Fprintln(stderr, "nzip bench: -gpu-bytes needs -backend and must not be negative")
		return errUsage
	}
	if *threads < 0 || *runs < 1 || !(*setupThreshold >= 0) || (*chunk != 0 && (*chunk < codec.MinChunkValues || *chunk > codec.MaxChunkValues)) {
		fmt.Fprintf(stderr, "nzip bench: -threads must be >= 0, -runs >= 1, -setup-threshold >= 0, -chunk %d..%d\n", codec.MinChunkValues, codec.MaxChunkValues)
		return errUsage
	}
	names := strings.Split(*codecs, ",")
	if *setupPath != "" && !flagSet(fs, "codecs") {
		// nzip+setup right after nzip
		i := slices.Index(names, "nzip") + 1
		names = slices.Insert(names, i, setupCodecName)
	}
	for _, n := range names {
		if n == gaussianCodecName || n == bestCodecName {
			continue
		}
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
	if *setupPath == "" && (*setupExternal || flagSet(fs, "setup-threshold")) {
		fmt.Fprintln(stderr, "nzip bench: -setup-external and -setup-threshold need -setup")
		return errUsage
	}
	if *backend != "" {
		b, err := gpu.Open(*backend, *threads)
		if err != nil {
			return err
		}
		b.Close()
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
			switch {
			case name == gaussianCodecName:
				c := newSetupCodecNamed(gaussianCodecName, codec.GaussianSetup(), codec.EncodeOptions{Threads: *threads, SetupThreshold: *setupThreshold, ChunkValues: *chunk})
				m = baseline.MeasureCodec(c, gaussianCodecName, filepath.Base(path), src, segs, mopt)
			case name == setupCodecName:
				c := newSetupCodecOpt(setup, codec.EncodeOptions{Threads: *threads, SetupExternal: *setupExternal, SetupThreshold: *setupThreshold, ChunkValues: *chunk, Search: *search})
				m = baseline.MeasureCodec(c, setupCodecName, filepath.Base(path), src, segs, mopt)
			case name == bestCodecName:
				c := baseline.NewNZip(nil, bestCodecName, codec.EncodeOptions{Threads: *threads, ChunkValues: *chunk, Best: true})
				m = baseline.MeasureCodec(c, bestCodecName, filepath.Base(path), src, segs, mopt)
			case name == "nzip" && (*chunk != 0 || *search != 0):
				c := baseline.NewNZip(nil, "nzip", codec.EncodeOptions{Threads: *threads, ChunkValues: *chunk, Search: *search})
				m = baseline.MeasureCodec(c, "nzip", filepath.Base(path), src, segs, mopt)
			default:
				m = baseline.Measure(name, filepath.Base(path), src, segs, mopt)
			}
			rows = append(rows, benchRow{Measurement: m, BoundRatio: bound})
			if !*asJSON {
				fmt.Fprintf(stderr, "  %s %s: %.3fx\n", shown(filepath.Base(path)), name, m.Ratio)
			}
		}
		if *backend != "" {
			r := benchBackend(ctx, *backend, filepath.Base(path), src, segs, *threads, *runs, *chunk, *gpuBytes)
			r.BoundRatio = bound
			rows = append(rows, r)
			if !*asJSON && r.gpuFields != nil {
				fmt.Fprintf(stderr, "  %s nzip@%s: %.1f GB/s on %s (%.1f%% of the bytes on the device, %d copies, %d streams of up to %d symbols)\n",
					shown(filepath.Base(path)), *backend, r.KernelGBs, r.Device, 100*r.DeviceShare, r.Copies, r.Streams, r.MaxStreamSyms)
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
				fmt.Fprintf(tw, "%s\torder-0 bound\t%.4f\t\t\t\t\t\t\t\n", shown(r.File), r.BoundRatio)
				last = r.File
			}
			ok := "bit-exact"
			if !r.RoundtripOK {
				ok = "FAILED " + r.Error
			}
			// a device row measures decoding only, on the device's own threads
			fmt.Fprintf(tw, "%s\t%s\t%.4f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", shown(r.File), r.Codec, r.Ratio, orDash("%.0f", r.CompressMBs), orDash("%.0f", r.DecompressMBs), orDash("%d", r.Threads), ok, r.OriginalBytes, r.Compressed)
		}
		tw.Flush()
	}
	if failed > 0 {
		return fmt.Errorf("bench: %d roundtrip(s) failed", failed)
	}
	return nil
}

// readForBench reads a model as compress sees it: every file it needs (a
// TF.js manifest and its weight shards, a sharded safetensors index and its
// shards, ONNX external data) concatenated in archive order, with the
// segments of each file moved to its place, so that every codec is measured
// on the whole model. A file that is not a checkpoint is measured as opaque
// bytes, with a warning (as compress would code it).
func readForBench(path string, stderr io.Writer) ([]byte, []codec.Segment, error) {
	files, err := openModel(path, stderr)
	if err != nil {
		return nil, nil, err
	}
	defer closeInputs(files)
	var total int64
	for _, f := range files {
		total += f.size
	}
	if total > math.MaxInt32*2 {
		return nil, nil, fmt.Errorf("%s: %d bytes is too large to benchmark in memory", path, total)
	}
	src := make([]byte, 0, total)
	var segs []codec.Segment
	for _, f := range files {
		base := int64(len(src))
		src = src[:base+f.size]
		if _, err := io.ReadFull(io.NewSectionReader(f.f, 0, f.size), src[base:]); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.path, err)
		}
		for _, s := range f.segs {
			s.Offset += base
			segs = append(segs, s)
		}
	}
	return src, segs, nil
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

// orDash formats v, or "–" for a quantity not measured (zero).
func orDash[T int | float64](format string, v T) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}
