package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"neuralzip/codec"
)

// runICount compresses (and decompresses) a file once, one thread, for
// instruction counts under callgrind (scripts/icount.sh): -ops none is the
// baseline (read the file and SHA-256 it, which compress always does, so
// that differences count the coding alone), enc compresses, encdec
// compresses and decompresses; the ratio goes to /tmp/icount.ratio.
// -repeat N prints MB/s from the process's CPU time instead (cputime.go).
func runICount(args []string) error {
	fs := flag.NewFlagSet("icount", flag.ExitOnError)
	chunk := fs.Int("chunk", 0, "float values per block (0: the default)")
	setup := fs.String("setup", "", "a .nzsetup file or gaussian: blocks use it as nzip compress -setup does")
	th := fs.String("th", "", "with -setup: the setup threshold, or default (empty: every block takes a shared table)")
	ops := fs.String("ops", "encdec", "none, enc or encdec")
	repeat := fs.Int("repeat", 0, "time N compressions and N decompressions by CPU time instead")
	noSparse := fs.Bool("no-sparse", false, "as nzip compress -no-sparse")
	search := fs.Int("search", 0, "as nzip compress -search N: the decode counts of the programs it picks (docs/programs.md, \"Search\")")
	user := fs.Bool("user", false, "the user's path: the archive's default digest (BLAKE3), checked when decoding; the baseline only reads the files")
	fs.Parse(args)
	if fs.NArg() == 0 {
		return errors.New("icount: FILE... (one model: a file, or the files of a multi-file model)")
	}
	if fs.NArg() > 1 && *repeat > 0 {
		return errors.New("icount: -repeat takes one FILE")
	}
	var srcs [][]byte
	var ins []codec.Input
	for _, a := range fs.Args() {
		src, in, err := readInput(a)
		if err != nil {
			return err
		}
		srcs, ins = append(srcs, src), append(ins, in)
	}
	src, segs := srcs[0], ins[0].Segments
	// SHA-256 digests: the baseline (ops "none") computes the same, so the
	// differences count the coding alone
	opt := codec.EncodeOptions{Threads: 1, Digest: codec.DigestSHA256, ChunkValues: *chunk}
	opt.NoSparse, opt.Search = *noSparse, *search
	dec := skipHash
	if *user {
		opt.Digest = 0 // the default (BLAKE3)
		dec = func(o codec.DecodeOptions) codec.DecodeOptions { return o }
	}
	if *setup != "" {
		s := codec.GaussianSetup()
		if *setup != codec.GaussianSetupName {
			b, err := os.ReadFile(*setup)
			if err != nil {
				return err
			}
			if s, err = codec.ParseSetup(b); err != nil {
				return err
			}
		}
		opt.Setup, opt.SetupExternal = s, s.IsGaussian()
		opt.SetupThreshold = 1e9
		if *th == "default" {
			opt.SetupThreshold = 0
		} else if *th != "" {
			v, err := strconv.ParseFloat(*th, 64)
			if err != nil {
				return err
			}
			opt.SetupThreshold = v
		}
	}
	if *ops == "none" {
		for _, b := range srcs {
			if !*user {
				sha256.Sum256(b)
			}
		}
		return nil
	}
	if *repeat > 0 {
		return cpuTimes(src, segs, opt, *repeat)
	}
	if len(srcs) > 1 {
		return icountModel(srcs, ins, opt, dec(opt.Decoding()), *ops)
	}
	arc, err := codec.CompressBytes(context.Background(), src, segs, opt)
	if err != nil || *ops == "enc" {
		return err
	}
	out, err := codec.DecompressBytes(context.Background(), arc, dec(opt.Decoding()))
	if err != nil {
		return err
	}
	return os.WriteFile("/tmp/icount.ratio", []byte(fmt.Sprintf("%.4f %v", float64(len(src))/float64(len(arc)), len(out) == len(src))), 0o644)
}

// skipHash is o without the whole-file digest check (the baseline of the
// instruction counts computes none).
func skipHash(o codec.DecodeOptions) codec.DecodeOptions {
	o.SkipHash = true
	return o
}

// icountModel is runICount's compress (and decompress) of the files of a
// multi-file model as one archive, as nzip compress codes a directory.
func icountModel(srcs [][]byte, ins []codec.Input, opt codec.EncodeOptions, dopt codec.DecodeOptions, ops string) error {
	ctx := context.Background()
	var arc bytes.Buffer
	if _, err := codec.Encode(ctx, &arc, ins, opt); err != nil || ops == "enc" {
		return err
	}
	rd, err := codec.NewMemReader(arc.Bytes())
	if err != nil {
		return err
	}
	total := 0
	for i, b := range srcs {
		var out bytes.Buffer
		if err := rd.WriteFile(ctx, &out, i, dopt); err != nil {
			return err
		}
		if !bytes.Equal(out.Bytes(), b) {
			return fmt.Errorf("icount: file %d does not decode to its bytes", i)
		}
		total += len(b)
	}
	return os.WriteFile("/tmp/icount.ratio", []byte(fmt.Sprintf("%.4f true", float64(total)/float64(arc.Len()))), 0o644)
}
