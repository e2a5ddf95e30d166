package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"neuralzip/codec"
	"neuralzip/trajectory"
)

func runCompress(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compress", "[-o OUT] [-f] [-threads N] [-chunk N] [-level N] [-setup S.nzsetup [-setup-external] [-setup-threshold X]] [-ref REF] [-best] [-no-sparse] [-search N] [-q] IN", stderr)
	out := fs.String("o", "", "output archive (default IN.nzip; - for stdout)")
	force := fs.Bool("f", false, "overwrite OUT if it exists")
	threads := fs.Int("threads", 0, "blocks coded in parallel (default: all CPUs); the archive is the same for any value")
	chunk := fs.Int("chunk", 0, fmt.Sprintf("float values per block, %d..%d (default %d)", codec.MinChunkValues, codec.MaxChunkValues, codec.DefaultChunkValues))
	level := fs.Int("level", 0, "zstd level for non-float bytes, 1..22 (default 3); below 3 quantised bytes stay on zstd (no cm blocks: faster, a few % larger)")
	setupPath := fs.String("setup", "", "code float blocks with the shared tables of this setup, and tensors with the programs it chooses (-chunk defaults to the setup's)")
	setupExternal := fs.Bool("setup-external", false, "store only the setup's ID, not the setup; decompress then needs -setup")
	setupThreshold := fs.Float64("setup-threshold", 0, fmt.Sprintf("a block builds its own table when the best shared one costs more than this fraction above it (default %g)", codec.DefaultSetupThreshold))
	refPath := fs.String("ref", "", "code tensors as differences to this reference model (matched by name, dtype, shape); decompress then needs -ref")
	best := fs.Bool("best", false, "the smallest archive: every block's coding chosen by bytes alone, also the codings the default takes only where their saving pays for their slower decoding (column-context zero masks, context-modelled bytes; with -ref range-coded difference blocks, about 2 % smaller and 30× slower to decode)")
	noSparse := fs.Bool("no-sparse", false, "write no sparse blocks (exact zeros coded as other values), no zstd-coded byte planes (repeating values) and no cm blocks (quantised weights): the archive stays format version 7, which nzip builds from before sparse blocks read")
	search := fs.Int("search", 0, "search each tensor's program: code a sample of it with up to N candidate programs (the encoder's own choice first, then in the order the setup's prior ranks them) and keep the cheapest; 0: the encoder's own choice (docs/programs.md, \"Search\")")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	in := fs.Arg(0)
	opt := codec.EncodeOptions{Threads: *threads, ChunkValues: *chunk, ZstdLevel: *level, SetupExternal: *setupExternal, SetupThreshold: *setupThreshold}
	var bad string
	switch {
	case *threads < 0:
		bad = fmt.Sprintf("-threads %d: must be 0 (all CPUs) or more", *threads)
	case *search < 0:
		bad = fmt.Sprintf("-search %d: must be 0 (no search) or more", *search)
	case *chunk != 0 && (*chunk < codec.MinChunkValues || *chunk > codec.MaxChunkValues):
		bad = fmt.Sprintf("-chunk %d: must be %d..%d", *chunk, codec.MinChunkValues, codec.MaxChunkValues)
	case *level < 0 || *level > 22:
		bad = fmt.Sprintf("-level %d: must be 1..22 (0: the default)", *level)
	case !(*setupThreshold >= 0): // (NaN too)
		bad = fmt.Sprintf("-setup-threshold %g: must be a fraction of 0 or more", *setupThreshold)
	}
	if bad != "" {
		fmt.Fprintf(stderr, "nzip compress: %s\n", bad)
		fs.Usage()
		return errUsage
	}
	opt.Best = *best
	opt.NoSparse = *noSparse
	opt.Search = *search
	if *setupPath == "" && (*setupExternal || flagSet(fs, "setup-threshold")) {
		fmt.Fprintln(stderr, "nzip compress: -setup-external and -setup-threshold need -setup")
		return errUsage
	}
	var readToo []string // files read besides the input
	if *setupPath != "" {
		if *setupPath != codec.GaussianSetupName { // built in, not a file
			readToo = append(readToo, *setupPath)
		}
		s, err := loadSetup(*setupPath)
		if err != nil {
			return err
		}
		opt.Setup = s
		switch {
		case s.IsGaussian(): // its tables fit any chunk size
		case opt.ChunkValues == 0:
			opt.ChunkValues = s.ChunkValues
		case opt.ChunkValues != s.ChunkValues && !*quiet:
			fmt.Fprintf(stderr, "nzip: warning: -chunk %d differs from the chunk size the setup was built with (%d); its tables may fit less well\n", opt.ChunkValues, s.ChunkValues)
		}
	}
	if *refPath != "" {
		ref, paths, done, err := loadRef(*refPath, stderr)
		if err != nil {
			return err
		}
		defer done()
		opt.Ref = ref
		readToo = append(readToo, paths...)
	}
	dest := *out
	if dest == "" {
		dest = in + ".nzip"
	}
	files, err := openModel(in, stderr)
	if err != nil {
		return err
	}
	defer closeInputs(files)
	if !*quiet && (isArchive(in) || startsWith(in, trajectory.Magic[:])) {
		fmt.Fprintf(stderr, "nzip: warning: %s is already an nzip archive: it is compressed as opaque bytes, which gains next to nothing (compress the original instead)\n", in)
	}
	if len(files) > 1 {
		for _, f := range files {
			if err := safeName(f.name); err != nil {
				return fmt.Errorf("%s: %w; decompress would refuse it", in, err)
			}
		}
	}
	var inputs []codec.Input
	var paths []string
	var total int64
	for _, f := range files {
		inputs = append(inputs, codec.Input{Name: f.name, R: f.f, Size: f.size, Format: f.format, Segments: f.segs})
		paths = append(paths, f.path)
		total += f.size
	}
	paths = append(paths, readToo...) // never overwrite the reference or the setup either
	st, err := files[0].f.Stat()
	if err != nil {
		return err
	}
	// the archive goes to a temporary file that replaces dest only when
	// complete, or with -o - to stdout as it is written
	var sink io.Writer
	var commit func() error
	if dest == "-" {
		bw := bufio.NewWriterSize(stdout, 1<<20)
		sink, commit = bw, bw.Flush
	} else {
		w, err := createOutput(dest, *force, paths, st.Mode().Perm())
		if err != nil {
			return err
		}
		defer w.Abort()
		sink, commit = w, w.Commit
	}
	bar := newProgress(stderr, total, "compress", *quiet || dest == "-")
	opt.Progress = bar.update
	start := time.Now()
	res, err := codec.Encode(ctx, sink, inputs, opt)
	bar.finish()
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := commit(); err != nil {
		return err
	}
	if !*quiet {
		el := time.Since(start).Seconds()
		fmt.Fprintf(stderr, "%s: %s -> %s (%.3fx) in %.2fs, %.0f MB/s -> %s\n", in, humanBytes(res.Original), humanBytes(res.Compressed),
			ratio(res.Original, res.Compressed), el, float64(res.Original)/el/1e6, dest)
		if s := res.Search; s.Tensors > 0 {
			fmt.Fprintf(stderr, "search: %d tensors, %d candidates coded on samples, %d pruned; %d sampled winners checked on the whole tensor, %d of them kept the own choice; %d tensors given another program\n",
				s.Tensors, s.Expanded, s.Pruned, s.Verified, s.Rejected, s.Changed)
		}
		if opt.Setup != nil {
			how := "embedded"
			switch {
			case opt.Setup.IsGaussian():
				how = "built-in Gaussian setup: decompress needs nothing more"
			case opt.SetupExternal:
				how = "external: decompress needs -setup " + *setupPath
			}
			fmt.Fprintf(stderr, "%s: setup %s (%s)\n", dest, opt.Setup.IDString(), how)
		}
		if opt.Ref != nil {
			fmt.Fprintf(stderr, "%s: coded against %s (decompress needs -ref %s)\n", dest, *refPath, *refPath)
		}
	}
	return nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
