package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"neuralzip/assets"
	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/infer"
)

// Generator runs a language model from its archive, compressed in memory,
// and checks the logits against a run on the original weights (the
// workbench's Generate screen).
type Generator struct {
	Name     string
	original []byte // the checkpoint as stored
	archive  []byte // its archive (default options)
	tok      infer.Tokenizer
	config   []byte
	mu       sync.Mutex // one run at a time
}

// GenerateRequest is one generation.
type GenerateRequest struct {
	Prompt      string
	N           int     // tokens to generate after the prompt
	Temperature float32 // 0: greedy
	TopP        float32
	Seed        uint64 // 0 is taken as 1
	// Check runs the original weights afterwards and compares the logits.
	Check bool
}

// GenerateResult is a generation from the archive.
type GenerateResult struct {
	infer.Result
	Memory infer.Memory
	// Checked is true when the original weights ran too; Identical then
	// says whether their logits (SHA-256 of every position's) and tokens
	// equal the archive's, bit for bit.
	Checked, Identical bool
	OriginalTokensPerS float64
}

// DemoGenerator is the embedded demo: stories260K BF16 with its tokenizer.
func DemoGenerator() (*Generator, error) {
	m := assets.Stories260K()
	model, err := fs.ReadFile(assets.FS, m.File)
	if err != nil {
		return nil, err
	}
	tb, err := fs.ReadFile(assets.FS, m.Tokenizer)
	if err != nil {
		return nil, err
	}
	return NewGenerator(m.Name, model, tb, nil)
}

// NewGenerator compresses a checkpoint (as made for running:
// infer.ArchiveOptions) and prepares it to run, prefetching where there
// are several processors. tokenizer is llama2.c's tokenizer.bin for a Llama model (nil for
// the byte-level GPT); config is an optional config.json.
func NewGenerator(name string, model, tokenizer, config []byte) (*Generator, error) {
	l, err := checkpoint.Open(bytes.NewReader(model), int64(len(model)))
	if err != nil {
		return nil, err
	}
	a, err := codec.CompressBytes(context.Background(), model, l.Segments, infer.ArchiveOptions())
	if err != nil {
		return nil, err
	}
	g := &Generator{Name: name, original: model, archive: a, config: config}
	m, err := infer.OpenArchive(a, infer.Options{Config: config})
	if err != nil {
		return nil, err
	}
	cfg := m.Config()
	m.Close()
	switch {
	case cfg.Arch == "gpt":
		g.tok = infer.ByteTokenizer{}
	case tokenizer == nil:
		return nil, fmt.Errorf("core: %s needs a tokenizer", name)
	default:
		t, err := infer.ParseLlama2cTokenizer(tokenizer, cfg.Vocab)
		if err != nil {
			return nil, err
		}
		g.tok = t
	}
	return g, nil
}

// Sizes returns the weights' size as stored and the archive's.
func (g *Generator) Sizes() (weights, archive int64) {
	m, err := infer.OpenArchive(g.archive, infer.Options{Config: g.config})
	if err != nil {
		return 0, int64(len(g.archive))
	}
	defer m.Close()
	return m.Memory().Weights, int64(len(g.archive))
}

// Generate runs the request from the archive, calling onToken (when not
// nil) with each generated piece as it comes; with req.Check it then runs
// the original weights and compares. Cancelling ctx stops it.
func (g *Generator) Generate(ctx context.Context, req GenerateRequest, onToken func(piece string)) (GenerateResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	seed := req.Seed
	if seed == 0 {
		seed = 1
	}
	run := func(src []byte, stream bool) (*infer.Result, infer.Memory, error) {
		m, err := infer.Open(bytes.NewReader(src), int64(len(src)), infer.Options{Config: g.config, Prefetch: true})
		if err != nil {
			return nil, infer.Memory{}, err
		}
		defer m.Close()
		s, err := infer.NewSampler(req.Temperature, req.TopP, seed)
		if err != nil {
			return nil, infer.Memory{}, err
		}
		opt := infer.GenerateOptions{N: req.N, Sampler: s, OnToken: func(_ int, piece string) bool {
			if stream && onToken != nil {
				onToken(piece)
			}
			return ctx.Err() == nil
		}}
		res, err := infer.Generate(m, g.tok, req.Prompt, opt)
		if err == nil {
			err = ctx.Err()
		}
		return res, m.Memory(), err
	}
	res, mem, err := run(g.archive, true)
	if err != nil {
		return GenerateResult{}, err
	}
	out := GenerateResult{Result: *res, Memory: mem}
	if req.Check {
		orig, _, err := run(g.original, false)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return out, nil
			}
			return GenerateResult{}, err
		}
		out.Checked = true
		out.Identical = orig.LogitsSHA256 == res.LogitsSHA256 && slices.Equal(orig.Tokens, res.Tokens)
		out.OriginalTokensPerS = orig.TokensPerS
	}
	return out, nil
}
