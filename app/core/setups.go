package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"neuralzip/codec"
	"neuralzip/codec/baseline"
)

// NamedSetup is a setup with the name it is shown under (its file's base
// name, or the name it was built under).
type NamedSetup struct {
	Name  string
	Setup *codec.Setup
}

// BuildSetup builds a setup from the models, or from the tensors marked in
// keep of the one model (keep nil: all tensors), with K clusters per dtype
// (0: chosen by the codec). A cancelled ctx stops the build (ErrCancelled).
func BuildSetup(ctx context.Context, models []*Model, keep map[int]bool, k, chunk int) (*codec.Setup, error) {
	var in []codec.Input
	for _, m := range models {
		in = append(in, m.Inputs(keep)...)
	}
	s, err := codec.BuildSetup(ctx, in, codec.SetupOptions{K: k, ChunkValues: chunk, Builder: "nzip workbench"})
	if ctx.Err() != nil {
		return nil, ErrCancelled
	}
	return s, err
}

// Gaussian is the built-in Gaussian setup under its name: it needs no
// file and is always there (archives reference it by ID).
func Gaussian() NamedSetup {
	return NamedSetup{Name: codec.GaussianSetupName, Setup: codec.GaussianSetup()}
}

// ChunkChoices are the chunk sizes (values per block) the workbench
// offers for comparing setups, from 4 Ki to the format's largest.
var ChunkChoices = []int{4096, 16384, codec.DefaultChunkValues, codec.MaxChunkValues}

// ChunkLabel names a chunk size for the UI ("4 Ki", "64 Ki", "262143").
func ChunkLabel(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d Ki", n/1024)
	}
	return fmt.Sprint(n)
}

// LoadSetup reads a .nzsetup file.
func LoadSetup(path string) (NamedSetup, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return NamedSetup{}, err
	}
	s, err := codec.ParseSetup(b)
	if err != nil {
		return NamedSetup{}, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return NamedSetup{Name: strings.TrimSuffix(filepath.Base(path), ".nzsetup"), Setup: s}, nil
}

// SetupSummary is a line per section: dtype, tables, expected bits.
func SetupSummary(s *codec.Setup) []string {
	out := []string{fmt.Sprintf("id %s, %d bytes, chunk %d values, %d source file(s)", s.IDString(), len(s.Bytes()), s.ChunkValues, len(s.Sources))}
	for _, sec := range s.Sections {
		w := sec.SymbolBits()
		var bits, syms float64
		pairs := 0
		for _, t := range sec.Tables {
			var n float64
			for _, c := range t.Centroid {
				n += float64(c)
			}
			bits += t.ExpectedBits(w) * n
			syms += n
			if t.HasPairs() {
				pairs++
			}
		}
		exp := 0.0
		if syms > 0 {
			exp = bits / syms
		}
		out = append(out, fmt.Sprintf("%s: %d tables (%d with pair codes), %.3f bits/symbol expected", sec.DType, len(sec.Tables), pairs, exp))
	}
	return out
}

// CompareRow is one model coded with one setup (or "none": per-block
// tables), as `nzip setup compare -json` reports it.
type CompareRow struct {
	Model           string  `json:"file"`
	Setup           string  `json:"setup"`
	SetupID         string  `json:"setup_id,omitempty"`
	OriginalBytes   int64   `json:"original_bytes"`
	CompressedBytes int64   `json:"compressed_bytes"`
	Ratio           float64 `json:"ratio"`
	RatioVsNone     float64 `json:"ratio_vs_none"`
	CompressMBs     float64 `json:"compress_mb_s"`
	DecompressMBs   float64 `json:"decompress_mb_s"`
	RoundtripOK     bool    `json:"roundtrip_ok"`
	Error           string  `json:"error,omitempty"`
}

// CompareSetups measures every model with nzip without a setup ("none")
// and with each setup (embedded in the archive, so its bytes count; the
// built-in Gaussian setup is referenced), one timed run each, through the
// same harness as `nzip bench`, all at chunk values per block (0: each
// setup's own, the default for none). progress gets the measurements done
// and their total.
func CompareSetups(ctx context.Context, setups []NamedSetup, models []*Model, threads, chunk int, progress func(done, total int)) ([]CompareRow, error) {
	var rows []CompareRow
	total := len(models) * (len(setups) + 1)
	done := 0
	mopt := baseline.MeasureOptions{Threads: threads, Runs: 1, MaxTime: time.Second}
	for _, m := range models {
		src, segs, _, err := m.ReadAll()
		if err != nil {
			return nil, err
		}
		base := len(rows)
		for i := -1; i < len(setups); i++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			var meas baseline.Measurement
			row := CompareRow{Model: m.Name, Setup: "none"}
			if i < 0 {
				meas = baseline.MeasureCodec(baseline.NewNZip(ctx, CodecNZip, codec.EncodeOptions{Threads: threads, ChunkValues: chunk}), CodecNZip, m.Name, src, segs, mopt)
			} else {
				s := setups[i]
				row.Setup, row.SetupID = s.Name, s.Setup.IDString()
				c := baseline.NewNZip(ctx, CodecNZipSetup, SetupOptions(s.Setup, codec.EncodeOptions{Threads: threads, ChunkValues: chunk}))
				meas = baseline.MeasureCodec(c, CodecNZipSetup, m.Name, src, segs, mopt)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			row.OriginalBytes, row.CompressedBytes, row.Ratio = meas.OriginalBytes, meas.Compressed, meas.Ratio
			row.CompressMBs, row.DecompressMBs, row.RoundtripOK, row.Error = meas.CompressMBs, meas.DecompressMBs, meas.RoundtripOK, meas.Error
			rows = append(rows, row)
			done++
			if progress != nil {
				progress(done, total)
			}
		}
		if none := rows[base].Ratio; none > 0 {
			for j := base; j < len(rows); j++ {
				rows[j].RatioVsNone = rows[j].Ratio / none
			}
		}
	}
	return rows, nil
}

// SetupOptions sets opt to code with setup s, at the setup's chunk size
// when opt has none.
func SetupOptions(s *codec.Setup, opt codec.EncodeOptions) codec.EncodeOptions {
	opt.Setup = s
	if opt.ChunkValues == 0 {
		opt.ChunkValues = s.ChunkValues
	}
	return opt
}

// CompareTable lays the rows out as text, a block per model: for each
// setup (none first) its ratio, the change against none, and compress and
// decompress MB/s.
func CompareTable(rows []CompareRow) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	last := ""
	for _, r := range rows {
		if r.Model != last {
			if last != "" {
				fmt.Fprintln(tw)
			}
			fmt.Fprintf(tw, "%s\tratio\tvs none\tcompress MB/s\tdecompress MB/s\t\n", r.Model)
			last = r.Model
		}
		vs := "-"
		if r.Setup != "none" && r.RatioVsNone > 0 {
			vs = fmt.Sprintf("%+.2f%%", (r.RatioVsNone-1)*100)
		}
		ok := ""
		if !r.RoundtripOK {
			ok = "FAILED " + r.Error
		}
		fmt.Fprintf(tw, "  %s\t%.4f\t%s\t%.0f\t%.0f\t%s\n", r.Setup, r.Ratio, vs, r.CompressMBs, r.DecompressMBs, ok)
	}
	tw.Flush()
	return b.String()
}
