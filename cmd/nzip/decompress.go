package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"neuralzip/codec"
	"neuralzip/gpu"
)

func runDecompress(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("decompress", "[-o OUT] [-f] [-threads N] [-tensor NAME] [-setup S.nzsetup] [-ref REF] [-lossy] [-q] IN.nzip", stderr)
	out := fs.String("o", "", "output file, - for stdout (default IN without .nzip); a directory for multi-file archives (default beside IN)")
	force := fs.Bool("f", false, "overwrite existing output files")
	threads := fs.Int("threads", 0, "blocks decoded in parallel (default: all CPUs)")
	tensor := fs.String("tensor", "", "write only this tensor's raw bytes (decodes only the blocks that hold it); needs -o")
	setupPath := fs.String("setup", "", "the setup the archive was written with (needed when it references it externally)")
	refPath := fs.String("ref", "", "the reference model the archive was coded against (compress -ref)")
	quiet := fs.Bool("q", false, "print nothing on success")
	backend := fs.String("backend", "", "decode the float blocks on this gpu backend (cuda, cpu: its Go twin, auto) and the rest on the CPU")
	allowLossy := fs.Bool("lossy", false, "a lossy archive (nzip quantize): write its dequantized model to -o (with a warning); without it such an archive is refused")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	if in := fs.Arg(0); isLossy(in) {
		if *tensor != "" || *backend != "" || *setupPath != "" || *refPath != "" {
			fmt.Fprintln(stderr, "nzip decompress: a lossy archive takes -lossy, -o, -f and -q only")
			return errUsage
		}
		return decompressLossy(in, *out, *allowLossy, *force, stdout, stderr)
	}
	if *threads < 0 {
		fmt.Fprintln(stderr, "nzip decompress: -threads must not be negative")
		return errUsage
	}
	in := fs.Arg(0)
	rd, inputs, closeRd, err := openDecoder(in, *setupPath, *refPath, stderr)
	if err != nil {
		return err
	}
	defer closeRd()
	opt := codec.DecodeOptions{Threads: *threads}
	var dev gpu.Backend
	if *backend != "" {
		if *tensor != "" {
			fmt.Fprintln(stderr, "nzip decompress: -backend decodes whole files, not -tensor")
			return errUsage
		}
		if dev, err = gpu.Open(*backend, *threads); err != nil {
			return err
		}
		defer dev.Close()
	}
	var devRes []gpu.Result
	writeFile := func(w io.Writer, fi int) error {
		if dev == nil {
			return rd.WriteFile(ctx, w, fi, opt)
		}
		res, err := decompressBackend(ctx, dev, rd, in, fi, *threads, w)
		devRes = append(devRes, res)
		return err
	}

	if *tensor != "" {
		if *out == "" {
			fmt.Fprintln(stderr, "nzip decompress: -tensor needs -o FILE (or -o - for stdout)")
			return errUsage
		}
		var info codec.TensorInfo
		if err := writeOutput(*out, *force, inputs, stdout, func(w io.Writer) (err error) {
			info, err = rd.WriteTensor(ctx, w, *tensor, opt)
			return err
		}); err != nil {
			return err
		}
		if !*quiet && *out != "-" {
			fmt.Fprintf(stderr, "%s: tensor %s (%v %v, %s) -> %s\n", in, shown(info.Name), info.DType, info.Shape, humanBytes(info.Length), *out)
		}
		return nil
	}

	files := rd.Files()
	start := time.Now()
	var total int64
	for _, fi := range files {
		total += fi.Size
	}
	bar := newProgress(stderr, total, "decompress", *quiet || *out == "-")
	var base int64
	opt.Progress = func(done, _ int64) { bar.update(base+done, total) }
	defer bar.finish()

	if len(files) == 1 {
		dest := *out
		if dest == "" {
			if !strings.HasSuffix(in, ".nzip") || len(in) == len(".nzip") {
				fmt.Fprintf(stderr, "nzip decompress: %s does not end in .nzip; name the output with -o\n", in)
				return errUsage
			}
			dest = strings.TrimSuffix(in, ".nzip")
		}
		err := writeOutput(dest, *force, inputs, stdout, func(w io.Writer) error { return writeFile(w, 0) })
		if err != nil {
			return err
		}
		if !*quiet && dest != "-" {
			el := time.Since(start).Seconds()
			fmt.Fprintf(stderr, "%s: %s in %.2fs, %.0f MB/s -> %s (%s verified)\n", in, humanBytes(total), el, float64(total)/el/1e6, dest, digestKind(files))
			reportBackend(stderr, devRes)
		}
		return nil
	}

	// several files: into a directory
	dir := *out
	if dir == "-" {
		return fmt.Errorf("%s: holds %d files; cannot write them to stdout", in, len(files))
	}
	if dir == "" {
		dir = filepath.Dir(in)
	}
	if err := restoreFiles(in, dir, files, *force, inputs, writeFile, &base); err != nil {
		return err
	}
	if !*quiet {
		el := time.Since(start).Seconds()
		fmt.Fprintf(stderr, "%s: %d files, %s in %.2fs -> %s (%s verified)\n", in, len(files), humanBytes(total), el, dir, digestKind(files))
		reportBackend(stderr, devRes)
	}
	return nil
}

// restoreFiles writes the files of an archive (in) into dir, each into a
// temporary file and checked; they take their names only when all have,
// all or none (commitAll), so a damaged archive leaves no part of the model
// (nor, with force, a mix with the files it would replace). base counts
// the bytes of the files done, for the progress bar.
func restoreFiles(in, dir string, files []*codec.FileInfo, force bool, inputs []string, writeFile func(io.Writer, int) error, base *int64) error {
	names := make([]string, len(files))
	for i, fi := range files {
		names[i] = fi.Name
	}
	if err := checkOutputNames(in, dir, names, force); err != nil {
		return err
	}
	var outs []*atomicFile
	var made []string // directories made here, removed again on failure
	committed := false
	defer func() {
		for _, w := range outs {
			w.Abort()
		}
		if !committed {
			removeMade(made) // only those left empty
		}
	}()
	if err := mkdirAll(dir, &made); err != nil {
		return err
	}
	for i, fi := range files {
		dest := filepath.Join(dir, filepath.FromSlash(fi.Name))
		if err := subdirs(dir, fi.Name, &made); err != nil {
			return err
		}
		w, err := createOutput(dest, force, inputs, 0o644)
		if err != nil {
			return err
		}
		outs = append(outs, w)
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := writeFile(bw, i); err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := w.finish(); err != nil {
			return err
		}
		*base += fi.Size
	}
	if err := commitAll(outs); err != nil {
		return err
	}
	committed = true
	return nil
}

// writeOutput writes through fill to dest ("-" is stdout) via a temporary
// file that replaces dest only when everything succeeded.
// inputs are the files read for it, the first one named in errors; dest
// is never one of them.
func writeOutput(dest string, force bool, inputs []string, stdout io.Writer, fill func(io.Writer) error) error {
	input := inputs[0]
	if dest == "-" {
		bw := bufio.NewWriterSize(stdout, 1<<20)
		if err := fill(bw); err != nil {
			return fmt.Errorf("%s: %w", input, err)
		}
		return bw.Flush()
	}
	w, err := createOutput(dest, force, inputs, 0o644)
	if err != nil {
		return err
	}
	defer w.Abort()
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := fill(bw); err != nil {
		return fmt.Errorf("%s: %w", input, err)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}
