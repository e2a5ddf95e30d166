package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"neuralzip/codec"
)

const setupUsage = `usage:
  nzip setup build   -o OUT.nzsetup [-f] [-k K] [-max-k N] [-min-gain X] [-cluster M] [-chunk N] [-sample F] [-pair-bias X] [-pairs=false] [-plane-min-gain X] [-q] FILE...
  nzip setup show    [-json] FILE.nzsetup
  nzip setup compare [-json] -setups S1,S2,... [-threads N] [-runs N] [-setup-external] FILE...
  nzip setup program -o OUT.nzsetup [-f] [-setup BASE] [-chunk N] TENSOR=PROGRAM...

A setup holds shared Huffman tables for the exponents of float tensors,
built once from sample checkpoints; "nzip compress -setup S.nzsetup" then
codes every block with the cheapest shared table instead of building its own.
It may also choose the program of named tensors (setup program; programs:
auto, fields, fields-own, sparse, planes, zstd-planes, zstd, raw, cm, records).
`

// runSetup dispatches the setup subcommands.
func runSetup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, "setup", setupUsage, map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"build": runSetupBuild, "show": runSetupShow, "compare": runSetupCompare, "program": runSetupProgram,
	}, args, stdout, stderr)
}

// runSubcommand runs the subcommand args[0] of command name with the rest
// of args; a missing or unknown one is a usage error, -h prints usage.
func runSubcommand(ctx context.Context, name, usage string, subs map[string]func(context.Context, []string, io.Writer, io.Writer) error, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "nzip %s: missing subcommand\n%s", name, usage)
		return errUsage
	}
	if run, ok := subs[args[0]]; ok {
		return run(ctx, args[1:], stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return flag.ErrHelp
	}
	fmt.Fprintf(stderr, "nzip %s: unknown subcommand %q\n%s", name, args[0], usage)
	return errUsage
}

// loadSetup reads and parses a .nzsetup file; the name "gaussian" is the
// built-in Gaussian setup (a file of that name is ./gaussian).
func loadSetup(path string) (*codec.Setup, error) {
	if path == codec.GaussianSetupName {
		return codec.GaussianSetup(), nil
	}
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	s, err := codec.ParseSetup(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// useSetup gives an opened archive the setup named by -setup (path, may be
// empty) and checks that it is the one the archive was written with. An
// archive that references its setup externally needs it; one that uses no
// setup ignores it with a warning.
func useSetup(rd *codec.Reader, archive, path string, stderr io.Writer) error {
	id, how := rd.SetupID()
	if path == "" {
		if how == "external" {
			return fmt.Errorf("%s: %w %x: the archive references its setup instead of holding it; pass the setup file with -setup FILE.nzsetup", archive, codec.ErrSetupMissing, id)
		}
		return nil
	}
	s, err := loadSetup(path)
	if err != nil {
		return err
	}
	if how == "" {
		fmt.Fprintf(stderr, "nzip: warning: %s uses no setup; -setup %s is not needed\n", archive, path)
		return nil
	}
	if s.ID() != id {
		return fmt.Errorf("%s: %w: the archive was written with setup %x, but %s is setup %s", archive, codec.ErrSetupMismatch, id, path, s.IDString())
	}
	if err := rd.UseSetup(s); err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	return nil
}

// setupReport is `nzip setup show -json`.
type setupReport struct {
	Path        string          `json:"path"`
	ID          string          `json:"id"`
	Bytes       int             `json:"bytes"`
	Builder     string          `json:"builder"`
	ChunkValues int             `json:"chunk_values"`
	Sources     []sourceReport  `json:"sources"`
	Sections    []sectionReport `json:"sections"`
	Programs    []programReport `json:"programs,omitempty"` // tensors whose program the setup chooses
	Prior       []priorReport   `json:"prior,omitempty"`    // the search prior's counts
}

type priorReport struct {
	DType  string `json:"dtype"`
	Class  uint8  `json:"shape_class"`
	Parent string `json:"parent,omitempty"`
	Choice string `json:"program"`
	Count  uint32 `json:"count"`
}

type programReport struct {
	Tensor  string `json:"tensor"`
	Program string `json:"program"`
}

type sourceReport struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Format string `json:"format"`
}

type sectionReport struct {
	DType        string        `json:"dtype"`
	Join         uint          `json:"join"`        // residual bits joined into the symbol
	SymbolBits   uint          `json:"symbol_bits"` // exponent bits + join
	Shifts       bool          `json:"shifts"`      // blocks align their symbols to the tables
	PlaneCuts    []float64     `json:"plane_cuts"`  // per residual plane: stored packed, untried, from this entropy (fraction of its width); 0 = the default 0.985
	Tables       []tableReport `json:"tables"`
	PairTables   int           `json:"pair_tables"`   // tables that also code pairs
	ExpectedBits float64       `json:"expected_bits"` // mean over the sample, weighted by the clusters' symbols
}

type tableReport struct {
	Index            int     `json:"index"`
	Chunks           int     `json:"chunks"`   // sample chunks in the cluster
	Alphabet         int     `json:"alphabet"` // symbols with a code of their own
	Pairs            int     `json:"pairs"`    // k: pairs of the k most frequent symbols; 0 = singles only
	ExpectedBits     float64 `json:"expected_bits"`
	DescriptionBytes int     `json:"description_bytes"`
}

func newSetupReport(path string, s *codec.Setup) *setupReport {
	rep := &setupReport{Path: path, ID: s.IDString(), Bytes: len(s.Bytes()), Builder: s.Builder, ChunkValues: s.ChunkValues,
		Sources: []sourceReport{}, Sections: []sectionReport{}}
	for _, src := range s.Sources {
		rep.Sources = append(rep.Sources, sourceReport{Name: src.Name, Size: src.Size, SHA256: hex.EncodeToString(src.SHA256[:]), Format: src.Format})
	}
	for _, sec := range s.Sections {
		w := sec.SymbolBits()
		sr := sectionReport{DType: sec.DType.String(), Join: sec.Join, SymbolBits: w, Shifts: sec.Shifts(), PlaneCuts: []float64{}}
		for _, c := range sec.PlaneCuts {
			sr.PlaneCuts = append(sr.PlaneCuts, float64(c)/256)
		}
		var bits, syms float64
		for i, t := range sec.Tables {
			tr := tableReport{Index: i, Chunks: t.Chunks, Alphabet: len(t.Alphabet), Pairs: len(t.PairTop),
				ExpectedBits: t.ExpectedBits(w), DescriptionBytes: t.DescriptionBytes()}
			if t.HasPairs() {
				sr.PairTables++
			}
			var n float64
			for _, c := range t.Centroid {
				n += float64(c)
			}
			bits += tr.ExpectedBits * n
			syms += n
			sr.Tables = append(sr.Tables, tr)
		}
		if syms > 0 {
			sr.ExpectedBits = bits / syms
		}
		rep.Sections = append(rep.Sections, sr)
	}
	for _, c := range s.PriorCounts() {
		rep.Prior = append(rep.Prior, priorReport(c))
	}
	for _, p := range s.Programs {
		rep.Programs = append(rep.Programs, programReport{Tensor: p.Tensor, Program: p.Program.String()})
	}
	return rep
}

func runSetupShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("setup show", "[-json] FILE.nzsetup", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	s, err := loadSetup(fs.Arg(0))
	if err != nil {
		return err
	}
	rep := newSetupReport(fs.Arg(0), s)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(rep)
	}
	printSetup(stdout, rep)
	return nil
}

func printSetup(w io.Writer, rep *setupReport) {
	fmt.Fprintf(w, "setup %s\n", rep.Path)
	fmt.Fprintf(w, "id:      %s\n", rep.ID)
	fmt.Fprintf(w, "size:    %d bytes\n", rep.Bytes)
	fmt.Fprintf(w, "builder: %s\n", shown(rep.Builder))
	fmt.Fprintf(w, "chunk:   %d values\n", rep.ChunkValues)
	fmt.Fprintf(w, "sources: %d\n", len(rep.Sources))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tSIZE\tSHA-256\tFORMAT\t")
	for _, src := range rep.Sources {
		fmt.Fprintf(tw, "  %s\t%d\t%s…\t%s\t\n", shown(src.Name), src.Size, src.SHA256[:12], shown(src.Format))
	}
	tw.Flush()
	for _, sec := range rep.Sections {
		fmt.Fprintf(w, "\n%s: join %d, %d-bit symbols, %d tables (%d with code pairs), %.3f bits/symbol expected\n",
			sec.DType, sec.Join, sec.SymbolBits, len(sec.Tables), sec.PairTables, sec.ExpectedBits)
		if len(sec.PlaneCuts) > 0 {
			var cuts []string
			for p, c := range sec.PlaneCuts {
				if c == 0 {
					cuts = append(cuts, fmt.Sprintf("plane %d: default", p))
				} else {
					cuts = append(cuts, fmt.Sprintf("plane %d: %.3f", p, c))
				}
			}
			fmt.Fprintf(w, "  residual planes stored packed, untried, from an entropy of (fraction of their width): %s\n", strings.Join(cuts, ", "))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TABLE\tCHUNKS\tALPHABET\tPAIRS\tBITS/SYMBOL\tDESCRIPTION BYTES\t")
		for _, t := range sec.Tables {
			pairs := "-"
			if t.Pairs > 0 {
				pairs = fmt.Sprint(t.Pairs)
			}
			fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\t%.3f\t%d\t\n", t.Index, t.Chunks, t.Alphabet, pairs, t.ExpectedBits, t.DescriptionBytes)
		}
		tw.Flush()
	}
	if len(rep.Programs) > 0 {
		fmt.Fprintf(w, "\nprograms: %d tensors coded with a chosen program\n", len(rep.Programs))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TENSOR\tPROGRAM\t")
		for _, p := range rep.Programs {
			fmt.Fprintf(tw, "  %s\t%s\t\n", shown(p.Tensor), p.Program)
		}
		tw.Flush()
	}
	if len(rep.Prior) > 0 {
		fmt.Fprintf(w, "\nsearch prior: each program's wins, a win counting 1 + the per mille it saved (nzip compress -search), by dtype and shape class\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  DTYPE\tCLASS\tUNDER\tPROGRAM\tSCORE\t")
		for _, p := range rep.Prior {
			under := p.Parent
			if under == "" {
				under = "-"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%d\t\n", p.DType, p.Class, under, p.Choice, p.Count)
		}
		tw.Flush()
	}
}

func runSetupBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("setup build", "-o OUT.nzsetup [-f] [-k K] [-max-k N] [-min-gain X] [-cluster M] [-chunk N] [-sample F] [-pair-bias X] [-pairs=false] [-plane-min-gain X] [-prior N] [-q] FILE...", stderr)
	out := fs.String("o", "", "output setup file (required)")
	force := fs.Bool("f", false, "overwrite OUT if it exists")
	k := fs.Int("k", 0, "tables per dtype (default: chosen by -min-gain, up to -max-k)")
	maxK := fs.Int("max-k", 0, fmt.Sprintf("most tables per dtype when -k is not given (default %d)", codec.DefaultSetupMaxK))
	minGain := fs.Float64("min-gain", 0, fmt.Sprintf("keep one more table while it saves at least this fraction of the sample's coded size (default %g)", codec.DefaultSetupMinGain))
	cluster := fs.String("cluster", codec.ClusterAgglomerative, "clustering: "+codec.ClusterAgglomerative+" or "+codec.ClusterKMeans)
	chunk := fs.Int("chunk", 0, fmt.Sprintf("float values per chunk, %d..%d (default %d); compress with the same", codec.MinChunkValues, codec.MaxChunkValues, codec.DefaultChunkValues))
	sample := fs.Float64("sample", 0, "fraction of chunks sampled, 0..1 (default 0: all)")
	pairBias := fs.Float64("pair-bias", 0, fmt.Sprintf("a table codes exponent pairs when they cost at most 1+X times the singles (default %g)", codec.DefaultSetupPairBias))
	pairs := fs.Bool("pairs", true, "allow pair (tuple) codes; -pairs=false: singles only")
	planeMinGain := fs.Float64("plane-min-gain", codec.DefaultSetupPlaneMinGain, "sign/mantissa byte planes: learn the entropy above which they are stored packed without trying a code, as long as coding those saved less than this fraction on the sample (0: keep the default test)")
	prior := fs.Int("prior", 32, "learn the search prior (nzip compress -search) from up to this many tensors, each searched with every candidate; 0: none (the setup file stays version 2)")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 1, -1); err != nil {
		return err
	}
	if *out == "" {
		fmt.Fprintln(stderr, "nzip setup build: -o OUT.nzsetup is required")
		fs.Usage()
		return errUsage
	}
	if *k < 0 || *maxK < 0 || *minGain < 0 || *pairBias < 0 || *sample < 0 || *sample > 1 || *planeMinGain < 0 || *planeMinGain > 1 || *prior < 0 ||
		(*chunk != 0 && (*chunk < codec.MinChunkValues || *chunk > codec.MaxChunkValues)) {
		fmt.Fprintln(stderr, "nzip setup build: -k, -max-k, -min-gain, -chunk, -sample, -pair-bias, -plane-min-gain or -prior out of range")
		fs.Usage()
		return errUsage
	}
	if *cluster != codec.ClusterAgglomerative && *cluster != codec.ClusterKMeans {
		fmt.Fprintf(stderr, "nzip setup build: -cluster must be %s or %s\n", codec.ClusterAgglomerative, codec.ClusterKMeans)
		return errUsage
	}
	var inputs []codec.Input
	var paths []string
	floats := 0
	for _, path := range fs.Args() {
		files, err := openModel(path, stderr)
		if err != nil {
			return err
		}
		defer closeInputs(files)
		for _, f := range files {
			inputs = append(inputs, codec.Input{Name: f.name, R: f.f, Size: f.size, Format: f.format, Segments: f.segs})
			paths = append(paths, f.path)
			for _, s := range f.segs {
				if s.IsTensor() && s.DType.IsFloat() && s.Length > 0 {
					floats++
				}
			}
		}
	}
	if floats == 0 {
		return errors.New("setup build: no float tensors in the given files; a setup is built from the float tensors of checkpoints")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	bias := *pairBias
	if !*pairs {
		bias = -1 // codec: negative turns pairs off
	}
	pmg := *planeMinGain
	if pmg == 0 {
		pmg = -1 // codec: negative keeps every plane adaptive
	}
	s, err := codec.BuildSetup(ctx, inputs, codec.SetupOptions{K: *k, MaxK: *maxK, MinGain: *minGain, Cluster: *cluster, ChunkValues: *chunk,
		Sample: *sample, PairBias: bias, PlaneMinGain: pmg, Prior: *prior, Builder: "nzip setup build"})
	if err != nil {
		return fmt.Errorf("setup build: %w", err)
	}
	if err := writeSetup(*out, *force, paths, s); err != nil {
		return err
	}
	if !*quiet {
		rep := newSetupReport(*out, s)
		fmt.Fprintf(stderr, "%s: setup %s, %d bytes, chunk %d, from %d file(s)\n", *out, rep.ID, rep.Bytes, rep.ChunkValues, len(rep.Sources))
		for _, sec := range rep.Sections {
			fmt.Fprintf(stderr, "  %s: %d tables (%d with code pairs), %.3f bits/exponent expected\n", sec.DType, len(sec.Tables), sec.PairTables, sec.ExpectedBits)
		}
	}
	return nil
}

// runSetupProgram writes a setup that chooses the program of the named
// tensors: BASE's tables and programs (none without -setup) with
// TENSOR=PROGRAM set (auto removes a tensor's).
func runSetupProgram(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("setup program", "-o OUT.nzsetup [-f] [-setup BASE] [-chunk N] TENSOR=PROGRAM...", stderr)
	out := fs.String("o", "", "output setup file (required)")
	force := fs.Bool("f", false, "overwrite OUT if it exists")
	base := fs.String("setup", "", "start from this setup's tables and programs (a file, or gaussian)")
	chunk := fs.Int("chunk", 0, fmt.Sprintf("values per block of a setup without -setup (default %d)", codec.DefaultChunkValues))
	if err := parse(fs, args, 1, -1); err != nil {
		return err
	}
	if *out == "" || *chunk != 0 && (*chunk < codec.MinChunkValues || *chunk > codec.MaxChunkValues) {
		fmt.Fprintf(stderr, "nzip setup program: -o is required; -chunk must be %d..%d\n", codec.MinChunkValues, codec.MaxChunkValues)
		return errUsage
	}
	var set []codec.SetupProgram
	for _, a := range fs.Args() {
		name, prog, ok := strings.Cut(a, "=")
		if i := strings.LastIndexByte(a, '='); i >= 0 {
			name, prog = a[:i], a[i+1:] // names may hold '='; programs do not
		}
		p, err := codec.ParseProgram(prog)
		if !ok || name == "" || err != nil {
			fmt.Fprintf(stderr, "nzip setup program: %q: want TENSOR=PROGRAM (%v)\n", a, err)
			return errUsage
		}
		set = append(set, codec.SetupProgram{Tensor: name, Program: p})
	}
	var b *codec.Setup
	var inputs []string
	if *base != "" {
		var err error
		if b, err = loadSetup(*base); err != nil {
			return err
		}
		if *base != codec.GaussianSetupName {
			inputs = append(inputs, *base)
		}
	}
	s, err := b.WithPrograms(*chunk, set)
	if err != nil {
		return fmt.Errorf("setup program: %w", err)
	}
	if err := writeSetup(*out, *force, inputs, s); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: setup %s, %d bytes, %d chosen program(s)\n", *out, s.IDString(), len(s.Bytes()), len(s.Programs))
	return nil
}

// writeSetup writes setup s to out (a temporary file renamed when
// complete; never over one of inputs, nor over a file without force).
func writeSetup(out string, force bool, inputs []string, s *codec.Setup) error {
	w, err := createOutput(out, force, inputs, 0o644)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write(s.Bytes()); err != nil {
		return err
	}
	return w.Commit()
}
