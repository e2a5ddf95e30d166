package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	s, err := codec.BuildSetup(in, codec.SetupOptions{K: k, ChunkValues: chunk, Builder: "nzip workbench", Context: ctx})
	if ctx.Err() != nil {
		return nil, ErrCancelled
	}
	return s, err
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
// and with each setup (embedded in the archive, so its bytes count), one
// timed run each, through the same harness as `nzip bench`. progress gets
// the measurements done and their total.
func CompareSetups(ctx context.Context, setups []NamedSetup, models []*Model, threads int, progress func(done, total int)) ([]CompareRow, error) {
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
				meas = baseline.MeasureCodec(baseline.NewNZip(CodecNZip, codec.Options{Threads: threads, Context: ctx}), CodecNZip, m.Name, src, segs, mopt)
			} else {
				s := setups[i]
				row.Setup, row.SetupID = s.Name, s.Setup.IDString()
				c := baseline.NewNZip(CodecNZipSetup, codec.Options{Threads: threads, Setup: s.Setup, ChunkValues: s.Setup.ChunkValues, Context: ctx})
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
