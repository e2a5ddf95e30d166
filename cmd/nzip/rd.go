package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"neuralzip/checkpoint"
	"neuralzip/infer"
	"neuralzip/lossy"
)

// runRD is nzip rd: the rate and distortion of the lossy lab's methods on
// a model (package lossy); for models nzip generate runs, their effect on
// the next-token distributions too.
func runRD(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rd", "[-json] [-methods LIST] [-bits LIST] [-per-tensor] [-tokens N] [-config FILE] [-tokenizer FILE] MODEL", stderr)
	asJSON := fs.Bool("json", false, "print one JSON array of rows (whole-model rows have tensor \"\")")
	methods := fs.String("methods", "all", "comma-separated: nf4, int8, int4, fp8 (E4M3, one scale per tensor), fp8row (per row), fp8e5, fp8e5row (E5M2, per tensor and per row), fp8h (Hadamard-rotated rows), fp8hd (fp8h with a second scale per 32 values), e8 (E8 lattice, entropy coded), lowrank, kron (sums of Kronecker products)")
	bitsList := fs.String("bits", "2,3,4", "target bits per parameter of the methods that take one (e8, lowrank, kron)")
	perTensor := fs.Bool("per-tensor", false, "also print a row per tensor (always in -json)")
	tokens := fs.Int("tokens", 48, "language models: tokens of greedy continuation compared per prompt (0: no comparison)")
	cfgPath := fs.String("config", "", "language models: a config.json with what the file does not hold (as nzip generate)")
	tokPath := fs.String("tokenizer", "", "Llama models: llama2.c's tokenizer.bin, to print the continuation as text")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	ms, err := lossy.ByName(*methods)
	if err != nil {
		return err
	}
	var rates []float64
	for _, s := range strings.Split(*bitsList, ",") {
		b, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || b <= 0 || b > 32 {
			return fmt.Errorf("rd: -bits %q: rates are numbers in (0, 32]", *bitsList)
		}
		rates = append(rates, b)
	}
	path := fs.Arg(0)
	src, err := readLimited(path)
	if err != nil {
		return err
	}
	l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		return fmt.Errorf("rd: %s: %w", path, err)
	}
	var tensors []lossy.Tensor
	for _, s := range l.Segments {
		if s.IsTensor() {
			tensors = append(tensors, lossy.Tensor{Name: s.Name, DType: s.DType, Shape: s.Shape, Offset: s.Offset, Data: src[s.Offset : s.Offset+s.Length]})
		}
	}
	coded := 0
	for _, t := range tensors {
		if t.Coded() {
			coded++
		}
	}
	if coded == 0 {
		return fmt.Errorf("rd: %s has no float matrix (F32, F16 or BF16, two or more dimensions) to code", path)
	}
	var cfg []byte
	if *cfgPath != "" {
		if cfg, err = os.ReadFile(*cfgPath); err != nil {
			return err
		}
	}
	var lm *lossy.LM
	var tok infer.Tokenizer
	if *tokens > 0 {
		if lm, err = lossy.NewLM(src, cfg, *tokens); err != nil {
			lm = nil // not a model nzip generate runs: rate and distortion only
		} else if tok, err = rdTokenizer(src, cfg, *tokPath); err != nil {
			return err
		}
	}
	var rows []lossy.Row
	for _, m := range ms {
		rs := []float64{0}
		if m.Rated() {
			rs = rates
		}
		for _, b := range rs {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, out, err := lossy.Run(src, tensors, m, b)
			if err != nil {
				return err
			}
			if lm != nil {
				ev, err := lm.Compare(out)
				if err != nil {
					return fmt.Errorf("rd: %s: %w", m.Name(), err)
				}
				total := &r[len(r)-1]
				total.KL, total.Top1 = &ev.KL, &ev.Top1
				if tok != nil {
					total.Text = seqText(tok, ev.Text)
				}
			}
			rows = append(rows, r...)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METHOD\tBITS TARGET\tBITS/PARAM\tREL L2\tKL (nats)\tTOP-1\tSECONDS\tTENSOR")
	for _, r := range rows {
		if r.Tensor != "" && !*perTensor {
			continue
		}
		target, kl, top1, name := "-", "", "", r.Tensor
		if r.BitsTarget > 0 {
			target = strconv.FormatFloat(r.BitsTarget, 'g', -1, 64)
		}
		if r.KL != nil {
			kl, top1 = fmt.Sprintf("%.4f", *r.KL), fmt.Sprintf("%.3f", *r.Top1)
		}
		if name == "" {
			name = "(model)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.4f\t%s\t%s\t%.2f\t%s\n", r.Method, target, r.BitsPerParam, r.RelL2, kl, top1, r.Seconds, name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if lm != nil && tok != nil {
		fmt.Fprintf(stdout, "\noriginal: %s\n", seqText(tok, lm.Reference()))
	}
	for _, r := range rows {
		if r.Tensor == "" && r.Text != "" {
			fmt.Fprintf(stdout, "%s: %s\n", strings.TrimSpace(r.Method+" "+rateName(r.BitsTarget)), r.Text)
		}
	}
	if lm == nil && *tokens > 0 {
		fmt.Fprintln(stderr, "rd: not a model nzip generate runs: no next-token comparison")
	}
	return nil
}

// seqText is a token sequence as text: after the BOS token where the
// tokenizer has one (it starts every prompt then), else all of it.
func seqText(tok infer.Tokenizer, seq []int) string {
	if bos := tok.BOS(); bos >= 0 && len(seq) > 0 && seq[0] == bos {
		return infer.Text(tok, bos, seq[1:])
	}
	return infer.Text(tok, -1, seq)
}

func rateName(b float64) string {
	if b == 0 {
		return ""
	}
	return strconv.FormatFloat(b, 'g', -1, 64) + " bits"
}

// rdTokenizer is the tokenizer that prints a continuation: bytes for a
// byte-level model, llama2.c's file when given, else none.
func rdTokenizer(src, cfg []byte, path string) (infer.Tokenizer, error) {
	m, err := infer.Open(bytes.NewReader(src), int64(len(src)), infer.Options{Config: cfg})
	if err != nil {
		return nil, nil
	}
	defer m.Close()
	c := m.Config()
	if c.Vocab == 256 {
		return infer.ByteTokenizer{}, nil
	}
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return infer.ParseLlama2cTokenizer(b, c.Vocab)
}

// readLimited reads a model file into memory (the lab decodes and
// rewrites whole tensors).
func readLimited(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("rd: " + path + " is not a regular file")
	}
	return os.ReadFile(path)
}
