package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"neuralzip/infer"
)

// maxSideFile bounds the tokenizer and config files generate reads.
const maxSideFile = 64 << 20

func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", "[-n N] [-temp T] [-topp P] [-seed S] [-tokenizer FILE] [-config FILE] [-setup S.nzsetup] [-prefetch] [-json] MODEL PROMPT", stderr)
	n := fs.Int("n", 128, "tokens to generate after the prompt (0: until the context is full)")
	temp := fs.Float64("temp", 1.0, "temperature (0: greedy)")
	topp := fs.Float64("topp", 0.9, "top-p (nucleus) sampling threshold, 0..1 (0 or 1: off)")
	seed := fs.Uint64("seed", 0, "random seed (0: from the clock, as llama2.c)")
	tokPath := fs.String("tokenizer", "", "llama2.c tokenizer.bin of a Llama model (default: tok<VOCAB>.bin or tokenizer.bin beside MODEL)")
	confPath := fs.String("config", "", "config.json with hyper-parameters the file lacks (default: config.json beside MODEL, when present)")
	setupPath := fs.String("setup", "", "the setup the archive was written with (needed when it references it externally)")
	prefetch := fs.Bool("prefetch", false, "decode the next tensors on another goroutine while the current one computes, its rows as their blocks arrive")
	asJSON := fs.Bool("json", false, "print one JSON object (prompt_tokens, tokens, text, logits_sha256, weights_bytes, resident_peak_bytes, tokens_per_s)")
	if err := parse(fs, args, 2, 2); err != nil {
		return err
	}
	if *n < 0 || !(*temp >= 0) || !(*topp >= 0 && *topp <= 1) {
		fmt.Fprintln(stderr, "nzip generate: -n must be ≥ 0, -temp ≥ 0 and -topp within 0..1")
		return errUsage
	}
	path, prompt := fs.Arg(0), fs.Arg(1)
	opt := infer.Options{Prefetch: *prefetch}
	if *setupPath != "" {
		s, err := loadSetup(*setupPath)
		if err != nil {
			return err
		}
		opt.Setup = s
	}
	dir := filepath.Dir(path)
	if *confPath == "" {
		if c := filepath.Join(dir, "config.json"); fileExists(c) {
			*confPath = c
		}
	}
	if *confPath != "" {
		b, err := readSmall(*confPath)
		if err != nil {
			return err
		}
		opt.Config = b
	}
	var m *infer.Model
	var lossyNote string
	if isLossy(path) {
		// weights kept coded; each tensor decoded tile by tile when the
		// forward pass reaches it (lossy.Archive is an infer.Tiled reader;
		// with -prefetch a worker decodes the tiles ahead)
		a, err := openLossy(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "nzip: warning: %s is %s; its output is not the original model's\n", path, lossySummary(a))
		opt.ReadEach = true
		if m, err = infer.Open(a, a.Size(), opt); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		lossyNote = "LOSSY archive (" + methodRate(a.Header.Method, a.Header.BitsTarget) + ")"
	} else {
		f, st, err := openRegular(path, os.O_RDONLY)
		if err != nil {
			return err
		}
		m, err = infer.Open(f, st.Size(), opt)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	defer m.Close()
	cfg := m.Config()
	var tok infer.Tokenizer = infer.ByteTokenizer{}
	if cfg.Arch == "llama" {
		if *tokPath == "" {
			for _, c := range []string{"tok" + strconv.Itoa(cfg.Vocab) + ".bin", "tokenizer.bin"} {
				if p := filepath.Join(dir, c); fileExists(p) {
					*tokPath = p
					break
				}
			}
			if *tokPath == "" {
				return fmt.Errorf("%s: a Llama model needs its tokenizer: -tokenizer FILE (llama2.c's tokenizer.bin format)", path)
			}
		}
		b, err := readSmall(*tokPath)
		if err != nil {
			return err
		}
		if tok, err = infer.ParseLlama2cTokenizer(b, cfg.Vocab); err != nil {
			return fmt.Errorf("%s: %w", *tokPath, err)
		}
	} else if *tokPath != "" {
		return fmt.Errorf("%s: the byte-level GPT takes bytes; -tokenizer does not apply", path)
	}
	if *seed == 0 {
		*seed = uint64(time.Now().Unix())
	}
	sampler, err := infer.NewSampler(float32(*temp), float32(*topp), *seed)
	if err != nil {
		return err
	}
	gopt := infer.GenerateOptions{N: *n, Sampler: sampler, OnToken: func(int, string) bool { return ctx.Err() == nil }}
	if !*asJSON {
		// the prompt as the tokenizer sees it, then each piece as it comes
		if tok.BOS() < 0 {
			fmt.Fprint(stdout, prompt)
		} else if pt, err := tok.Encode(prompt); err == nil && len(pt) > 0 {
			fmt.Fprint(stdout, infer.Text(tok, pt[0], pt[1:]))
		}
		gopt.OnToken = func(_ int, piece string) bool {
			fmt.Fprint(stdout, piece)
			return ctx.Err() == nil
		}
	}
	res, err := infer.Generate(m, tok, prompt, gopt)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	fmt.Fprintln(stdout)
	src := "original file"
	if m.FromArchive() {
		src = "archive"
	}
	if lossyNote != "" {
		src = lossyNote
	}
	fmt.Fprintf(stderr, "%s, %s: %d positions, %.1f tokens/s; weights %d bytes, resident peak %d bytes (%.1f %%); seed %d; logits sha256 %s\n",
		cfg.Arch, src, res.Positions, res.TokensPerS, res.WeightsBytes, res.ResidentPeakBytes,
		100*float64(res.ResidentPeakBytes)/float64(max(res.WeightsBytes, 1)), *seed, res.LogitsSHA256)
	if m.FromArchive() && (m.ArchiveSetup() == "" || !*prefetch && runtime.GOMAXPROCS(0) >= 2) {
		fmt.Fprintln(stderr, "nzip: an archive made with `nzip compress -setup gaussian -chunk 8192` and run with -prefetch runs fastest (docs/inference.md)")
	}
	return nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// readSmall reads a tokenizer or config file.
func readSmall(path string) ([]byte, error) {
	f, st, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > maxSideFile {
		return nil, fmt.Errorf("%s: %d bytes is too large for a tokenizer or config file", path, st.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSideFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSideFile {
		return nil, errors.New(path + ": too large")
	}
	return b, nil
}
