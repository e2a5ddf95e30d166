package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"neuralzip/codec"
	"neuralzip/codec/baseline"
)

// compareRow is one element of `nzip setup compare -json`: one file coded
// with one setup (or none: per-chunk tables).
type compareRow struct {
	File            string  `json:"file"`
	Setup           string  `json:"setup"`              // base name of the setup file, "none" or "gaussian" (the built-in setup)
	SetupID         string  `json:"setup_id,omitempty"` // hex ID; empty for "none"
	SetupBytes      int     `json:"setup_bytes,omitempty"`
	SetupEmbedded   bool    `json:"setup_embedded"` // the archives hold the setup (counted in the ratio); false with -setup-external
	Own             bool    `json:"own"`            // the setup was built from this file (SHA-256 among its sources)
	OriginalBytes   int64   `json:"original_bytes"`
	CompressedBytes int64   `json:"compressed_bytes"`
	Ratio           float64 `json:"ratio"`         // original / compressed
	RatioVsNone     float64 `json:"ratio_vs_none"` // ratio / ratio of "none" (1 for "none")
	CompressMBs     float64 `json:"compress_mb_s"`
	DecompressMBs   float64 `json:"decompress_mb_s"`
	RoundtripOK     bool    `json:"roundtrip_ok"`
	Threads         int     `json:"threads"`
	Runs            int     `json:"runs"`
	Error           string  `json:"error,omitempty"`
}

func runSetupCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("setup compare", "[-json] -setups S1,S2,... [-threads N] [-runs N] [-setup-external] FILE...", stderr)
	asJSON := fs.Bool("json", false, "print one JSON array")
	setupList := fs.String("setups", "", "comma-separated setup files to compare (required)")
	threads := fs.Int("threads", 0, "threads per run (default: all CPUs)")
	runs := fs.Int("runs", 3, "timed runs per setup; the best counts (fewer when slow)")
	external := fs.Bool("setup-external", false, "reference the setups instead of embedding them (their bytes do not count in the ratio)")
	if err := parse(fs, args, 1, -1); err != nil {
		return err
	}
	if *threads < 0 || *runs < 1 {
		fmt.Fprintln(stderr, "nzip setup compare: -threads must be >= 0 and -runs >= 1")
		return errUsage
	}
	if *setupList == "" {
		fmt.Fprintln(stderr, "nzip setup compare: -setups S1.nzsetup,S2.nzsetup,... is required")
		fs.Usage()
		return errUsage
	}
	type namedSetup struct {
		name string
		s    *codec.Setup
		srcs map[[32]byte]bool
	}
	var setups []namedSetup
	list := strings.Split(*setupList, ",")
	if slices.Contains(list, "") {
		fmt.Fprintln(stderr, "nzip setup compare: empty name in -setups")
		return errUsage
	}
	for _, p := range list {
		s, err := loadSetup(p)
		if err != nil {
			return err
		}
		ns := namedSetup{name: filepath.Base(p), s: s, srcs: map[[32]byte]bool{}}
		for _, src := range s.Sources {
			ns.srcs[src.SHA256] = true
		}
		setups = append(setups, ns)
	}
	mopt := baseline.MeasureOptions{Threads: *threads, Runs: *runs, MaxTime: 10 * time.Second}
	var rows []compareRow
	failed := 0
	for _, path := range fs.Args() {
		src, segs, err := readForBench(path, stderr)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(src)
		file := filepath.Base(path)
		add := func(m baseline.Measurement, r compareRow) {
			r.File, r.OriginalBytes, r.CompressedBytes = file, m.OriginalBytes, m.Compressed
			r.Ratio, r.CompressMBs, r.DecompressMBs = m.Ratio, m.CompressMBs, m.DecompressMBs
			r.RoundtripOK, r.Threads, r.Runs, r.Error = m.RoundtripOK, m.Threads, m.Runs, m.Error
			if !r.RoundtripOK {
				failed++
			}
			rows = append(rows, r)
			if !*asJSON {
				fmt.Fprintf(stderr, "  %s %s: %.4fx\n", shown(file), shown(r.Setup), r.Ratio)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		base := len(rows)
		add(baseline.Measure("nzip", file, src, segs, mopt), compareRow{Setup: "none"})
		gs := codec.GaussianSetup()
		if !slices.ContainsFunc(setups, func(ns namedSetup) bool { return ns.s.IsGaussian() }) {
			m := baseline.MeasureCodec(newSetupCodecNamed(setupCodecName, gs, codec.EncodeOptions{Threads: *threads}), setupCodecName, file, src, segs, mopt)
			add(m, compareRow{Setup: codec.GaussianSetupName, SetupID: gs.IDString()})
		}
		for _, ns := range setups {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m := baseline.MeasureCodec(newSetupCodec(ns.s, *external, *threads), setupCodecName, file, src, segs, mopt)
			add(m, compareRow{Setup: ns.name, SetupID: ns.s.IDString(), SetupBytes: len(ns.s.Bytes()), SetupEmbedded: !*external && !ns.s.IsGaussian(), Own: ns.srcs[sum]})
		}
		none := rows[base].Ratio
		for i := base; i < len(rows); i++ {
			if none > 0 {
				rows[i].RatioVsNone = rows[i].Ratio / none
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		if rows == nil {
			rows = []compareRow{}
		}
		if err := enc.Encode(rows); err != nil {
			return err
		}
	} else {
		printCompare(stdout, rows)
	}
	if failed > 0 {
		return fmt.Errorf("setup compare: %d roundtrip(s) failed", failed)
	}
	return nil
}

// printCompare prints a table per file.
func printCompare(w io.Writer, rows []compareRow) {
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].File == rows[i].File {
			j++
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  (%s)\n", shown(rows[i].File), humanBytes(rows[i].OriginalBytes))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SETUP\tRATIO\tΔ VS NONE\tCOMPRESS MB/s\tDECOMPRESS MB/s\tOWN\tROUNDTRIP\t")
		for _, r := range rows[i:j] {
			delta := "-"
			if r.Setup != "none" && r.RatioVsNone > 0 {
				delta = fmt.Sprintf("%+.2f%%", (r.RatioVsNone-1)*100)
			}
			own := ""
			if r.Own {
				own = "yes"
			}
			ok := "bit-exact"
			if !r.RoundtripOK {
				ok = "FAILED " + r.Error
			}
			fmt.Fprintf(tw, "%s\t%.4f\t%s\t%.0f\t%.0f\t%s\t%s\t\n", shown(r.Setup), r.Ratio, delta, r.CompressMBs, r.DecompressMBs, own, ok)
		}
		tw.Flush()
		i = j
	}
}
