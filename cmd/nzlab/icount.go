package main

import (
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
	fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("icount: one FILE")
	}
	src, in, err := readInput(fs.Arg(0))
	if err != nil {
		return err
	}
	segs := in.Segments
	// SHA-256 digests: the baseline (ops "none") computes the same, so the
	// differences count the coding alone
	opt := codec.EncodeOptions{Threads: 1, Digest: codec.DigestSHA256, ChunkValues: *chunk}
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
			if opt.SetupThreshold, err = strconv.ParseFloat(*th, 64); err != nil {
				return err
			}
		}
	}
	if *ops == "none" {
		sha256.Sum256(src)
		return nil
	}
	if *repeat > 0 {
		return cpuTimes(src, segs, opt, *repeat)
	}
	arc, err := codec.CompressBytes(context.Background(), src, segs, opt)
	if err != nil || *ops == "enc" {
		return err
	}
	out, err := codec.DecompressBytes(context.Background(), arc, skipHash(opt.Decoding()))
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
