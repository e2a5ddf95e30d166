package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"neuralzip/analysis"
	"neuralzip/codec"
	"neuralzip/dtype"
	"neuralzip/trajectory"
)

type tensorReport struct {
	Name       string  `json:"name"`
	DType      string  `json:"dtype"`
	Type       string  `json:"type,omitempty"`
	Shape      []int64 `json:"shape"`
	Offset     int64   `json:"offset"`
	Bytes      int64   `json:"bytes"`
	Values     int64   `json:"values,omitempty"`
	ExpEntropy float64 `json:"exp_entropy_bits,omitempty"`
	Bound      float64 `json:"bound_bytes,omitempty"`
	Compressed float64 `json:"compressed_bytes,omitempty"`
	// Sparsity is the fraction of exact zeros; Optimum the BitSparse
	// optimum in bytes: the zero mask at its entropy (per column of the
	// last dimension where the tensor has rows) plus the nonzero values at
	// their order-0 entropy (analysis.SparseStats.OptimumColumns)
	Sparsity float64 `json:"sparsity"`
	Optimum  float64 `json:"optimum_bytes,omitempty"`
	// Program (archives, -programs): how the tensor's blocks are coded
	// (programs.go); nil for a tensor coded in a block that starts in an
	// earlier one
	Program *programNode `json:"program,omitempty"`
	float   bool
	sparse  bool
}

type fileReport struct {
	Name         string         `json:"name"`
	Format       string         `json:"format"`
	Size         int64          `json:"size"`
	Digest       string         `json:"digest,omitempty"` // archives: the stored digest's kind, "BLAKE3" or "SHA-256" (versions before 7)
	BLAKE3       string         `json:"blake3,omitempty"` // its value, by kind
	SHA256       string         `json:"sha256,omitempty"`
	Compressed   int64          `json:"compressed_bytes,omitempty"`
	Tensors      []tensorReport `json:"tensors"`
	FloatValues  int64          `json:"float_values"`
	FloatBytes   int64          `json:"float_bytes"`
	ExpEntropy   float64        `json:"exp_entropy_bits"`        // value-weighted mean over float tensors
	Bound        float64        `json:"bound_bytes"`             // float tensors at their order-0 bound, all other bytes raw
	BoundRatio   float64        `json:"bound_ratio"`             // size / bound
	Optimum      float64        `json:"optimum_bytes"`           // tensors at their sparse optimum (Optimum), all other bytes raw
	OptimumRatio float64        `json:"optimum_ratio"`           // size / optimum
	Ratio        float64        `json:"ratio,omitempty"`         // size / compressed (archives)
	OtherProgram *programNode   `json:"other_program,omitempty"` // -programs: the blocks that start outside every tensor
	noStats      bool           // not decoded (external setup not given)
}

// archiveSetup is the setup an archive was written with.
type archiveSetup struct {
	ID      string `json:"id"`
	How     string `json:"how"`             // "embedded", "external" or "built-in" (the Gaussian setup)
	Bytes   int    `json:"bytes,omitempty"` // the setup's size, when known
	Path    string `json:"path,omitempty"`  // the -setup file given
	Missing bool   `json:"missing,omitempty"`
	// Missing: external and not given, so the tensors were not decoded
	// (no entropy or bound figures)
}

type inspectReport struct {
	Path         string        `json:"path"`
	Kind         string        `json:"kind"` // "checkpoint" or "archive"
	ArchiveBytes int64         `json:"archive_bytes,omitempty"`
	Setup        *archiveSetup `json:"setup,omitempty"`             // archives written with a setup
	Blocks       *codec.Census `json:"blocks,omitempty"`            // archives: how the blocks are coded
	Refs         []archiveRef  `json:"references,omitempty"`        // archives coded against a reference
	RefMissing   bool          `json:"reference_missing,omitempty"` // -ref not given: tensors not decoded
	Files        []fileReport  `json:"files"`
}

type archiveRef struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "[-json] [-programs] [-setup S.nzsetup] [-ref REF] FILE", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	programs := fs.Bool("programs", false, "archives: print each tensor's program, how its bytes are coded, with the bytes and bits per value of every node (docs/programs.md)")
	setupPath := fs.String("setup", "", "archives: the setup the archive references (without it, such an archive is listed but not decoded)")
	refPath := fs.String("ref", "", "archives: the reference the archive was coded against (without it, such an archive is listed but not decoded)")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	path := fs.Arg(0)
	if isLossy(path) {
		return inspectLossy(path, *asJSON, stdout)
	}
	rep, err := inspectPath(ctx, path, *setupPath, *refPath, *programs, stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(rep)
	}
	printInspect(stdout, rep, *programs)
	return nil
}

func isArchive(path string) bool { return startsWith(path, codec.Magic[:]) }

func inspectPath(ctx context.Context, path, setupPath, refPath string, programs bool, stderr io.Writer) (*inspectReport, error) {
	if isArchive(path) {
		return inspectArchive(ctx, path, setupPath, refPath, programs, stderr)
	}
	if programs {
		return nil, fmt.Errorf("%s is not an archive: -programs shows how an archive codes its tensors (compress it first: nzip compress)", path)
	}
	if startsWith(path, trajectory.Magic[:]) {
		return nil, fmt.Errorf("%s is a trajectory archive (.nztraj): list its steps with nzip trajectory ls", path)
	}
	files, err := openModel(path, stderr)
	if err != nil {
		return nil, err
	}
	defer closeInputs(files)
	rep := &inspectReport{Path: path, Kind: "checkpoint"}
	for _, f := range files {
		fr := fileReport{Name: f.name, Format: f.format, Size: f.size}
		for _, s := range f.segs {
			if !s.IsTensor() {
				continue
			}
			tr := newTensorReport(s.Name, s.DType, s.Type, s.Shape, s.Offset, s.Length)
			if acc, ok := analysis.NewAccumulator(s.DType); ok {
				sacc, sok := analysis.NewSparseAccumulator(s.DType, rowOf(s.Shape))
				var w io.Writer = acc
				if sok {
					w = io.MultiWriter(acc, sacc)
				}
				if err := copyRange(w, f.f, s.Offset, s.Length); err != nil {
					return nil, fmt.Errorf("%s: %w", f.path, err)
				}
				tr.setStats(acc.Stats())
				if sok {
					tr.setSparse(sacc.Stats())
				}
			}
			fr.Tensors = append(fr.Tensors, tr)
		}
		fr.finish()
		rep.Files = append(rep.Files, fr)
	}
	return rep, nil
}

func newTensorReport(name string, d dtype.DType, typ string, shape []int64, off, length int64) tensorReport {
	ds := d.String()
	if d == dtype.Invalid {
		ds = "-"
	}
	if shape == nil {
		shape = []int64{}
	}
	return tensorReport{Name: name, DType: ds, Type: typ, Shape: shape, Offset: off, Bytes: length}
}

func (t *tensorReport) setStats(st analysis.FloatStats) {
	t.float = true
	t.Values = st.Values
	t.ExpEntropy = st.ExpEntropy
	t.Bound = st.Bound()
}

// setSparse records a tensor's zeros and sparse optimum.
func (t *tensorReport) setSparse(st analysis.SparseStats) {
	t.sparse = true
	t.Sparsity = st.Sparsity()
	t.Optimum = st.OptimumColumns()
}

// rowOf is the row length of a tensor's shape: its last dimension (0 for
// fewer than two dimensions).
func rowOf(shape []int64) int {
	if len(shape) < 2 || shape[len(shape)-1] > 1<<30 {
		return 0
	}
	return int(shape[len(shape)-1])
}

// finish computes a file's totals.
func (fr *fileReport) finish() {
	var hsum float64
	fr.Optimum = float64(fr.Size)
	for _, t := range fr.Tensors {
		if t.sparse {
			fr.Optimum += t.Optimum - float64(t.Bytes)
		}
		if !t.float {
			continue
		}
		fr.FloatValues += t.Values
		fr.FloatBytes += t.Bytes
		fr.Bound += t.Bound
		hsum += t.ExpEntropy * float64(t.Values)
	}
	if !fr.noStats && fr.Optimum > 0 {
		fr.OptimumRatio = float64(fr.Size) / fr.Optimum
	} else {
		fr.Optimum = 0
	}
	if fr.FloatValues > 0 {
		fr.ExpEntropy = hsum / float64(fr.FloatValues)
	}
	if !fr.noStats {
		fr.Bound += float64(fr.Size - fr.FloatBytes)
		if fr.Bound > 0 {
			fr.BoundRatio = float64(fr.Size) / fr.Bound
		}
	}
	if fr.Compressed > 0 {
		fr.Ratio = float64(fr.Size) / float64(fr.Compressed)
	}
}

func copyRange(w io.Writer, r io.ReaderAt, off, n int64) error {
	_, err := io.Copy(w, io.NewSectionReader(r, off, n))
	return err
}

// tensorTee receives a file's bytes in order and feeds each float tensor's
// accumulator.
type tensorTee struct {
	pos     int64
	tensors []codec.TensorInfo
	accs    []*analysis.Accumulator
	saccs   []*analysis.SparseAccumulator
	next    int
}

func (t *tensorTee) Write(p []byte) (int, error) {
	end := t.pos + int64(len(p))
	for t.next < len(t.tensors) && t.tensors[t.next].Offset+t.tensors[t.next].Length <= t.pos {
		t.next++
	}
	for j := t.next; j < len(t.tensors) && t.tensors[j].Offset < end; j++ {
		tn := t.tensors[j]
		if t.accs[j] == nil {
			continue
		}
		a := max(tn.Offset, t.pos)
		b := min(tn.Offset+tn.Length, end)
		if a < b {
			t.accs[j].Write(p[a-t.pos : b-t.pos])
			if t.saccs[j] != nil {
				t.saccs[j].Write(p[a-t.pos : b-t.pos])
			}
		}
	}
	t.pos = end
	return len(p), nil
}

func inspectArchive(ctx context.Context, path, setupPath, refPath string, programs bool, stderr io.Writer) (*inspectReport, error) {
	rd, f, err := openArchive(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer rd.Close()
	st, _ := f.Stat()
	rep := &inspectReport{Path: path, Kind: "archive", ArchiveBytes: st.Size()}
	census, err := rd.Census()
	if err != nil {
		return nil, err
	}
	rep.Blocks = &census
	decode := true
	if id, how := rd.SetupID(); how != "" {
		rep.Setup = &archiveSetup{ID: hex.EncodeToString(id[:]), How: how, Path: setupPath}
		if how == "external" && setupPath == "" {
			rep.Setup.Missing = true
			decode = false
		}
	}
	if rd.UsesRef() {
		for _, r := range rd.RefFiles() {
			rep.Refs = append(rep.Refs, archiveRef{Name: r.Name, Size: r.Size, SHA256: hex.EncodeToString(r.SHA256[:])})
		}
		if refPath == "" {
			rep.RefMissing = true
			decode = false
		}
	}
	if decode {
		if err := useSetup(rd, path, setupPath, stderr); err != nil {
			return nil, err
		}
		_, done, err := useRef(rd, path, refPath, stderr)
		if err != nil {
			return nil, err
		}
		defer done()
		if s := rd.Setup(); s != nil && rep.Setup != nil {
			rep.Setup.Bytes = len(s.Bytes())
		}
	}
	for i, fi := range rd.Files() {
		fr := fileReport{Name: fi.Name, Format: fi.Format, Size: fi.Size, Digest: fi.Digest.String(), Compressed: fi.Compressed, noStats: !decode}
		if fi.Digest == codec.DigestSHA256 {
			fr.SHA256 = hex.EncodeToString(fi.Sum[:])
		} else {
			fr.BLAKE3 = hex.EncodeToString(fi.Sum[:])
		}
		tee := &tensorTee{tensors: fi.Tensors, accs: make([]*analysis.Accumulator, len(fi.Tensors)), saccs: make([]*analysis.SparseAccumulator, len(fi.Tensors))}
		if decode {
			for j, tn := range fi.Tensors {
				tee.accs[j], _ = analysis.NewAccumulator(tn.DType)
				if tee.accs[j] != nil {
					tee.saccs[j], _ = analysis.NewSparseAccumulator(tn.DType, rowOf(tn.Shape))
				}
			}
			if err := rd.WriteFile(ctx, tee, i, codec.DecodeOptions{}); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		blocks := fi.Blocks()
		var progs []*programNode
		if programs {
			if progs, fr.OtherProgram, err = filePrograms(rd, i); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		for j, tn := range fi.Tensors {
			tr := newTensorReport(tn.Name, tn.DType, tn.Type, tn.Shape, tn.Offset, tn.Length)
			if tee.accs[j] != nil {
				tr.setStats(tee.accs[j].Stats())
			}
			if tee.saccs[j] != nil {
				tr.setSparse(tee.saccs[j].Stats())
			}
			tr.Compressed = compressedShare(blocks, tn.Offset, tn.Length)
			if progs != nil {
				tr.Program = progs[j]
			}
			fr.Tensors = append(fr.Tensors, tr)
		}
		fr.finish()
		rep.Files = append(rep.Files, fr)
	}
	return rep, nil
}

// compressedShare is the archive bytes attributable to [off, off+n): each
// overlapping block contributes its compressed size in proportion to the
// overlap (blocks that hold several small tensors are shared).
func compressedShare(blocks []codec.BlockInfo, off, n int64) float64 {
	var s float64
	for _, b := range blocks {
		a := max(b.Offset, off)
		e := min(b.Offset+b.Length, off+n)
		if a < e && b.Length > 0 {
			s += float64(b.Compressed) * float64(e-a) / float64(b.Length)
		}
	}
	return s
}

func printInspect(w io.Writer, rep *inspectReport, programs bool) {
	for _, fr := range rep.Files {
		fmt.Fprintf(w, "%s  (%s, %s, %d tensors)\n", shown(fr.Name), shown(fr.Format), humanBytes(fr.Size), len(fr.Tensors))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		hdr := "NAME\tDTYPE\tSHAPE\tBYTES\tH(EXP)\tBOUND\tZEROS\tOPTIMUM\t"
		if rep.Kind == "archive" {
			hdr += "ARCHIVE\tRATIO\t"
		}
		fmt.Fprintln(tw, hdr)
		for _, t := range fr.Tensors {
			dt := t.DType
			if dt == "-" {
				dt = t.Type
			}
			line := fmt.Sprintf("%s\t%s\t%s\t%d\t", shown(t.Name), shown(dt), shapeString(t.Shape), t.Bytes)
			if t.float {
				line += fmt.Sprintf("%.3f\t%.0f\t", t.ExpEntropy, t.Bound)
			} else {
				line += "-\t-\t"
			}
			if t.sparse {
				line += fmt.Sprintf("%.1f%%\t%.0f\t", 100*t.Sparsity, t.Optimum)
			} else {
				line += "-\t-\t"
			}
			if rep.Kind == "archive" {
				r := "-"
				if t.Compressed > 0 {
					r = fmt.Sprintf("%.3f", float64(t.Bytes)/t.Compressed)
				}
				line += fmt.Sprintf("%.0f\t%s\t", t.Compressed, r)
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
		if programs && rep.Kind == "archive" {
			fmt.Fprintln(w)
			printPrograms(w, fr)
			fmt.Fprintln(w)
		}
		if !fr.noStats {
			fmt.Fprintf(w, "float tensors: %d values, %s, mean exponent entropy %.3f bits\n", fr.FloatValues, humanBytes(fr.FloatBytes), fr.ExpEntropy)
			fmt.Fprintf(w, "order-0 bound (exponents at their per-tensor entropy, other bits raw): %s, ratio %.4f\n", humanBytes(int64(fr.Bound)), fr.BoundRatio)
			if fr.Optimum > 0 {
				fmt.Fprintf(w, "sparse optimum (zero mask per column + nonzero values at their entropy): %s, ratio %.4f\n", humanBytes(int64(fr.Optimum)), fr.OptimumRatio)
			}
		}
		if rep.Kind == "archive" {
			if fr.noStats {
				fmt.Fprintf(w, "archive: %s for this file, ratio %.4f\n", humanBytes(fr.Compressed), fr.Ratio)
			} else {
				fmt.Fprintf(w, "archive: %s for this file, ratio %.4f (%.4f of the bound ratio, %.4f of the sparse optimum's)\n", humanBytes(fr.Compressed), fr.Ratio, fr.Ratio/fr.BoundRatio, fr.Ratio/fr.OptimumRatio)
			}
			fmt.Fprintf(w, "digest: %s %s%s\n", fr.Digest, fr.BLAKE3, fr.SHA256)
		}
		fmt.Fprintln(w)
	}
	if rep.Kind == "archive" {
		fmt.Fprintf(w, "archive %s: %s\n", rep.Path, humanBytes(rep.ArchiveBytes))
		if s := rep.Setup; s != nil {
			switch {
			case s.Missing:
				fmt.Fprintf(w, "setup: %s (external, not given: tensors not decoded; pass -setup FILE.nzsetup)\n", s.ID)
			case s.How == "built-in":
				fmt.Fprintf(w, "setup: %s (the built-in Gaussian setup, referenced)\n", s.ID)
			case s.How == "external":
				fmt.Fprintf(w, "setup: %s (external, %d bytes, from %s)\n", s.ID, s.Bytes, s.Path)
			default:
				fmt.Fprintf(w, "setup: %s (embedded, %d bytes)\n", s.ID, s.Bytes)
			}
		} else {
			fmt.Fprintln(w, "setup: none (per-block tables)")
		}
		for _, r := range rep.Refs {
			fmt.Fprintf(w, "reference: %s (%d bytes, SHA-256 %s…)\n", shown(r.Name), r.Size, r.SHA256[:16])
		}
		if rep.RefMissing {
			fmt.Fprintln(w, "reference not given: tensors not decoded; pass -ref FILE")
		}
		if c := rep.Blocks; c != nil {
			fmt.Fprintf(w, "blocks: %d, %d of floats: exponents with a shared table %d, own table %d, packed/constant/byte planes %d, sparse %d\n",
				c.Blocks, c.FloatBlocks, c.SharedTables, c.OwnTables, c.OtherFloat, c.Sparse)
			for _, l := range c.Notes(shown, humanBytes) {
				fmt.Fprintf(w, "        %s\n", l)
			}
		}
	}
}

func shapeString(s []int64) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return strings.TrimSpace(b.String())
}
