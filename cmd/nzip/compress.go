package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"neuralzip/codec"
)

func runCompress(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compress", "[-o OUT] [-f] [-threads N] [-chunk N] [-level N] [-q] IN", stderr)
	out := fs.String("o", "", "output archive (default IN.nzip)")
	force := fs.Bool("f", false, "overwrite OUT if it exists")
	threads := fs.Int("threads", 0, "blocks coded in parallel (default: all CPUs); the archive is the same for any value")
	chunk := fs.Int("chunk", 0, fmt.Sprintf("float values per block, %d..%d (default %d)", codec.MinChunkValues, codec.MaxChunkValues, codec.DefaultChunkValues))
	level := fs.Int("level", 0, "zstd level for non-float bytes, 1..22 (default 3)")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	in := fs.Arg(0)
	opt := codec.Options{Threads: *threads, ChunkValues: *chunk, ZstdLevel: *level, Context: ctx}
	if *threads < 0 || (*chunk != 0 && (*chunk < codec.MinChunkValues || *chunk > codec.MaxChunkValues)) || *level < 0 || *level > 22 {
		fmt.Fprintln(stderr, "nzip compress: -threads, -chunk or -level out of range")
		fs.Usage()
		return errUsage
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
	var inputs []codec.Input
	var paths []string
	var total int64
	for _, f := range files {
		inputs = append(inputs, codec.Input{Name: f.name, R: f.f, Size: f.size, Format: f.format, Segments: f.segs})
		paths = append(paths, f.path)
		total += f.size
	}
	st, err := files[0].f.Stat()
	if err != nil {
		return err
	}
	w, err := createOutput(dest, *force, paths, st.Mode().Perm())
	if err != nil {
		return err
	}
	defer w.Abort()
	bar := newProgress(stderr, total, "compress", *quiet)
	opt.Progress = bar.update
	start := time.Now()
	res, err := codec.Encode(w, inputs, opt)
	bar.finish()
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := w.Commit(); err != nil {
		return err
	}
	if !*quiet {
		el := time.Since(start).Seconds()
		fmt.Fprintf(stderr, "%s: %s -> %s (%.3fx) in %.2fs, %.0f MB/s -> %s\n", in, humanBytes(res.Original), humanBytes(res.Compressed),
			ratio(res.Original, res.Compressed), el, float64(res.Original)/el/1e6, dest)
	}
	return nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
