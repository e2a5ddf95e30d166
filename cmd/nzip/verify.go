package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"time"

	"neuralzip/codec"
	"neuralzip/gpu"
)

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "[-threads N] [-setup S.nzsetup] [-ref REF] [-backend B] [-sha256] IN.nzip", stderr)
	threads := fs.Int("threads", 0, "blocks decoded in parallel (default: all CPUs)")
	setupPath := fs.String("setup", "", "the setup the archive was written with (needed when it references it externally)")
	refPath := fs.String("ref", "", "the reference model the archive was coded against")
	backend := fs.String("backend", "", "decode the float blocks on this gpu backend (cuda, cpu: its Go twin, auto), the rest on the CPU")
	withSHA := fs.Bool("sha256", false, "also print the SHA-256 of each restored file (to compare with a published hash), computed while verifying")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	if isLossy(fs.Arg(0)) {
		return verifyLossy(fs.Arg(0), stdout)
	}
	var dev gpu.Backend
	if *backend != "" {
		var err error
		if dev, err = gpu.Open(*backend, *threads); err != nil {
			return err
		}
		defer dev.Close()
	}
	in := fs.Arg(0)
	rd, _, closeRd, err := openDecoder(in, *setupPath, *refPath, stderr)
	if err != nil {
		return err
	}
	defer closeRd()
	start := time.Now()
	var total, blocks int64
	for _, fi := range rd.Files() {
		total += fi.Size
		blocks += int64(len(fi.Blocks()))
	}
	bar := newProgress(stderr, total, "verify", false)
	var base int64
	opt := codec.DecodeOptions{Threads: *threads, Progress: func(done, _ int64) { bar.update(base+done, total) }}
	var devRes []gpu.Result
	shas := make([][]byte, len(rd.Files()))
	for i, fi := range rd.Files() {
		var err error
		out := io.Discard
		var h hash.Hash
		if *withSHA {
			h = sha256.New()
			out = h
		}
		if dev != nil {
			var r gpu.Result
			r, err = decompressBackend(ctx, dev, rd, in, i, *threads, out)
			devRes = append(devRes, r)
		} else {
			err = rd.WriteFile(ctx, out, i, opt)
		}
		if h != nil {
			shas[i] = h.Sum(nil)
		}
		if err != nil {
			bar.finish()
			return fmt.Errorf("%s: not bit-exact: %w", in, err)
		}
		base += fi.Size
	}
	bar.finish()
	defer reportBackend(stdout, devRes)
	note := ""
	if id, how := rd.SetupID(); how != "" {
		note = fmt.Sprintf("; setup %x (%s)", id, how)
	}
	if refs := rd.RefFiles(); len(refs) > 0 {
		note += fmt.Sprintf("; reference %s (SHA-256 %x) matches", refs[0].Name, refs[0].SHA256)
	}
	fmt.Fprintf(stdout, "%s: OK: %d file(s), %s in %d blocks; every block CRC-32C and file %s match (%.2fs)%s\n",
		in, len(rd.Files()), humanBytes(total), blocks, digestKind(rd.Files()), time.Since(start).Seconds(), note)
	for i, fi := range rd.Files() {
		fmt.Fprintf(stdout, "  %s: %v %x\n", fi.Name, fi.Digest, fi.Sum)
		if shas[i] != nil && fi.Digest != codec.DigestSHA256 {
			fmt.Fprintf(stdout, "  %s: SHA-256 %x\n", fi.Name, shas[i])
		}
	}
	return nil
}

// digestKind names the digest the files are checked by ("BLAKE3", or
// "SHA-256" in archives before version 7; "digest" if they differ).
func digestKind(files []*codec.FileInfo) string {
	if len(files) == 0 {
		return "digest"
	}
	for _, fi := range files[1:] {
		if fi.Digest != files[0].Digest {
			return "digest"
		}
	}
	return files[0].Digest.String()
}
