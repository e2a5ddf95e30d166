package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/dtype"
	"neuralzip/lossy"
	"neuralzip/trajectory"
)

// runQuantize is nzip quantize: a lossy archive (package lossy) of a
// model. Nothing else in nzip writes one; it needs -method and -o.
func runQuantize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("quantize", "-method M [-bits B] -o OUT [-f] [-q] MODEL", stderr)
	method := fs.String("method", "", "the lossy method (required): "+strings.Join(lossy.ArchiveMethods, ", "))
	bits := fs.Float64("bits", 0, "target bits per parameter (required for e8; nf4 and int4 code 4, int8 and fp8* 8, plus their scales)")
	out := fs.String("o", "", "the lossy archive to write (required; - for stdout)")
	force := fs.Bool("f", false, "overwrite an existing output file")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	if *method == "" || *out == "" {
		fmt.Fprintln(stderr, "nzip quantize: -method and -o are required (nothing lossy is written by default)")
		fs.Usage()
		return errUsage
	}
	in := fs.Arg(0)
	switch {
	case isLossy(in):
		return fmt.Errorf("%s is already a lossy archive: quantize the original model", in)
	case isArchive(in):
		return fmt.Errorf("%s is a lossless .nzip archive: decompress it first (nzip decompress), then quantize the model", in)
	case startsWith(in, trajectory.Magic[:]):
		return fmt.Errorf("%s is a trajectory archive: extract a step first (nzip trajectory extract)", in)
	}
	src, err := readLimited(in)
	if err != nil {
		return err
	}
	l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ar, h, err := lossy.Quantize(src, l, *method, *bits)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := writeOutput(*out, *force, []string{in}, stdout, func(w io.Writer) error {
		_, err := w.Write(ar)
		return err
	}); err != nil {
		return err
	}
	if !*quiet {
		a, err := lossy.OpenArchive(ar)
		if err != nil {
			return err
		}
		worst, name := a.MaxTensorRelL2()
		fmt.Fprintf(stderr, "%s: %s -> %s: LOSSY archive (%s): %.3f bits per parameter measured, rel L2 %.4f overall (at most %.4f, %s); %d tensors coded, the rest kept as stored\n",
			in, humanBytes(int64(len(src))), *out, methodRate(h.Method, h.BitsTarget), h.BitsPerParam, h.RelL2, worst, shown(name), a.Tensors())
	}
	return nil
}

// methodRate names a lossy archive's method and rate ("nf4", "e8 at 3 bits").
func methodRate(method string, bits float64) string {
	if lossy.FixedBits(method) != 0 {
		return method
	}
	return fmt.Sprintf("%s at %g bits", method, bits)
}

// isLossy reports whether the file at path is a lossy archive.
func isLossy(path string) bool { return startsWith(path, codec.LossyMagic[:]) }

// openLossy reads a lossy archive into memory and opens it.
func openLossy(path string) (*lossy.Archive, error) {
	b, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	a, err := lossy.OpenArchive(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// lossySummary is one line on a lossy archive: what it is and its error.
func lossySummary(a *lossy.Archive) string {
	h := &a.Header
	worst, name := a.MaxTensorRelL2()
	return fmt.Sprintf("a LOSSY archive (nzip quantize, %s): %.3f bits per parameter, measured rel L2 %.4f overall, at most %.4f (%s); quantized from a %s file of %s, SHA-256 %s",
		methodRate(h.Method, h.BitsTarget), h.BitsPerParam, h.RelL2, worst, shown(name), h.Original.Format, humanBytes(h.Original.Size), h.Original.SHA256)
}

// decompressLossy is nzip decompress of a lossy archive: only with
// -lossy and -o, and with a warning.
func decompressLossy(in, out string, allowed, force bool, stdout, stderr io.Writer) error {
	a, err := openLossy(in)
	if err != nil {
		return err
	}
	if !allowed {
		return fmt.Errorf("%s is %s.\nIts weights are approximations, not the original bytes: nzip decompress -lossy -o OUT writes the dequantized model", in, lossySummary(a))
	}
	if out == "" {
		fmt.Fprintln(stderr, "nzip decompress: -lossy needs -o OUT (a dequantized model is not the original file; name it)")
		return errUsage
	}
	fmt.Fprintf(stderr, "nzip: warning: %s is %s.\nnzip: warning: %s gets the DEQUANTIZED model, not the original file (its SHA-256 will differ)\n", in, lossySummary(a), out)
	return writeOutput(out, force, []string{in}, stdout, func(w io.Writer) error {
		_, err := a.WriteTo(w)
		return err
	})
}

// verifyLossy is nzip verify of a lossy archive: its parts are checked
// and decoded, and it fails: a lossy archive is not bit-exact.
func verifyLossy(in string, stdout io.Writer) error {
	a, err := openLossy(in)
	if err != nil {
		return err
	}
	if err := a.Verify(); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	fmt.Fprintf(stdout, "%s: %s\n  %d parts intact (CRC-32C), %d tensors decode\n", in, lossySummary(a), len(a.Header.Parts), a.Tensors())
	return fmt.Errorf("%s: not bit-exact: a lossy archive restores approximations of the weights (rel L2 %.4f), never the original file", in, a.Header.RelL2)
}

// lossyReport is nzip inspect -json of a lossy archive.
type lossyReport struct {
	Path         string `json:"path"`
	Kind         string `json:"kind"` // "lossy-archive"
	ArchiveBytes int64  `json:"archive_bytes"`
	lossy.ArchiveHeader
}

// inspectLossy is nzip inspect of a lossy archive.
func inspectLossy(path string, asJSON bool, stdout io.Writer) error {
	a, err := openLossy(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(lossyReport{Path: path, Kind: "lossy-archive", ArchiveBytes: st.Size(), ArchiveHeader: a.Header})
	}
	fmt.Fprintf(stdout, "%s: %s\n\n", path, lossySummary(a))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENSOR\tDTYPE\tSHAPE\tBYTES\tCODED\tBITS/PARAM\tREL L2")
	for _, p := range a.Header.Parts {
		if !p.IsTensor() {
			continue
		}
		d, _ := dtype.Parse(p.DType)
		params := p.Length * 8 / int64(max(1, d.Bits()))
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\t%.3f\t%.4f\n", shown(p.Name), p.DType, p.Shape, p.Length, p.Stored, float64(p.Stored)*8/float64(max(params, 1)), *p.RelL2)
	}
	return tw.Flush()
}

// lossyHint adds to an archive reader's error on a lossy archive what
// reads one.
func lossyHint(err error) error {
	if errors.Is(err, codec.ErrLossy) {
		return fmt.Errorf("%w; nzip inspect shows it, nzip generate runs it, nzip decompress -lossy writes its dequantized model", err)
	}
	return err
}
