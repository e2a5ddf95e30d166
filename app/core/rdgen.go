package core

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"

	"neuralzip/assets"
	"neuralzip/checkpoint"
	"neuralzip/infer"
	"neuralzip/lossy"
)

// RDGenTokens is how many greedy tokens the side-by-side generation
// continues each prompt with (lossy.NewLM).
const RDGenTokens = 48

// LossyGen compares a language model with its lossy codings (the
// rate-distortion screen's side-by-side generation): the original's
// greedy continuation of a fixed prompt and the coded model's, with the
// KL divergence and top-1 agreement of lossy's evaluation.
type LossyGen struct {
	Name    string
	src     []byte
	tensors []lossy.Tensor
	lm      *lossy.LM
	tok     infer.Tokenizer // nil: tokens shown as numbers
	mu      sync.Mutex
}

// LossyGenResult is one comparison.
type LossyGenResult struct {
	Method       string
	Bits         float64 // target (0: the method's own)
	BitsPerParam float64 // measured, the whole model
	RelL2        float64
	Prompt       string
	Original     string // the original's continuation
	Lossy        string // the coded model's
	KL           float64
	Top1         float64
	Tokens       int // positions compared
}

// NewLossyGen prepares the comparison for the model file src (one file
// nzip generate runs): it runs the original over the evaluation prompts.
// tokenizer is llama2.c's tokenizer.bin (nil: bytes for the byte-level
// GPT, else token numbers).
func NewLossyGen(name string, src, tokenizer []byte) (*LossyGen, error) {
	l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		return nil, err
	}
	g := &LossyGen{Name: name, src: src}
	for _, s := range l.Segments {
		if s.IsTensor() {
			g.tensors = append(g.tensors, lossy.Tensor{Name: s.Name, DType: s.DType, Shape: s.Shape, Offset: s.Offset, Data: src[s.Offset : s.Offset+s.Length]})
		}
	}
	m, err := infer.Open(bytes.NewReader(src), int64(len(src)), infer.Options{})
	if err != nil {
		return nil, err
	}
	cfg := m.Config()
	m.Close()
	switch {
	case cfg.Vocab == 256:
		g.tok = infer.ByteTokenizer{}
	case tokenizer != nil:
		if g.tok, err = infer.ParseLlama2cTokenizer(tokenizer, cfg.Vocab); err != nil {
			return nil, err
		}
	}
	if g.lm, err = lossy.NewLM(src, nil, RDGenTokens); err != nil {
		return nil, err
	}
	return g, nil
}

// DemoLossyGen is the comparison on the embedded stories260K.
func DemoLossyGen() (*LossyGen, error) {
	d := assets.Stories260K()
	src, err := fs.ReadFile(assets.FS, d.File)
	if err != nil {
		return nil, err
	}
	tok, err := fs.ReadFile(assets.FS, d.Tokenizer)
	if err != nil {
		return nil, err
	}
	return NewLossyGen(d.Name, src, tok)
}

// LossyGenFor is the comparison on m when nzip generate runs it (a model
// of one file); the embedded stories260K's tokenizer serves a Llama model
// of its 512 tokens. An error says why not.
func LossyGenFor(m *Model) (*LossyGen, error) {
	if len(m.Files) != 1 {
		return nil, fmt.Errorf("%s has %d files", m.Name, len(m.Files))
	}
	src, _, _, err := m.ReadAll()
	if err != nil {
		return nil, err
	}
	var tok []byte
	if im, err := infer.Open(bytes.NewReader(src), int64(len(src)), infer.Options{}); err != nil {
		return nil, err
	} else {
		if im.Config().Vocab == 512 {
			tok, _ = fs.ReadFile(assets.FS, assets.Stories260K().Tokenizer)
		}
		im.Close()
	}
	return NewLossyGen(m.Name, src, tok)
}

// Compare codes the model with method at bits (lossy.Run) and compares
// it with the original (lossy.LM.Compare).
func (g *LossyGen) Compare(ctx context.Context, method string, bits float64) (LossyGenResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms, err := lossy.ByName(method)
	if err != nil {
		return LossyGenResult{}, err
	}
	m := ms[0]
	if !m.Rated() {
		bits = 0
	}
	rows, out, err := lossy.Run(g.src, g.tensors, m, bits)
	if err != nil {
		return LossyGenResult{}, err
	}
	if ctx.Err() != nil {
		return LossyGenResult{}, ErrCancelled
	}
	ev, err := g.lm.Compare(out)
	if err != nil {
		return LossyGenResult{}, err
	}
	total := rows[len(rows)-1]
	ref := g.lm.Reference()
	n := len(ev.Prompt)
	return LossyGenResult{Method: m.Name(), Bits: bits, BitsPerParam: total.BitsPerParam, RelL2: total.RelL2,
		Prompt: g.text(-1, ev.Prompt), Original: g.text(ev.Prompt[n-1], ref[n:]), Lossy: g.text(ev.Prompt[n-1], ev.Text[n:]),
		KL: ev.KL, Top1: ev.Top1, Tokens: ev.Tokens}, nil
}

// text is tokens as text after the token prev (-1: none; a leading BOS
// is then left out), numbers without a tokenizer.
func (g *LossyGen) text(prev int, seq []int) string {
	if g.tok == nil {
		var b strings.Builder
		for i, t := range seq {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(t))
		}
		return b.String()
	}
	if bos := g.tok.BOS(); prev < 0 && bos >= 0 && len(seq) > 0 && seq[0] == bos {
		prev, seq = bos, seq[1:]
	}
	return infer.Text(g.tok, prev, seq)
}
