package infer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"
)

// GenerateOptions configure Generate. The zero value generates greedily
// until the context is full.
type GenerateOptions struct {
	// N is the number of tokens to generate after the prompt (0: until the
	// context is full); generation also stops at BOS, as run.c does.
	N int
	// Sampler picks the tokens; nil is greedy.
	Sampler *Sampler
	// OnToken, when set, is called with each generated token and its text
	// as it is produced; returning false stops generation.
	OnToken func(token int, piece string) bool
	// Logits, when set, is called with the logits of every position
	// (valid only during the call).
	Logits func(pos int, logits []float32)
}

// Result is a generation's record (the fields of nzip generate -json).
type Result struct {
	PromptTokens []int `json:"prompt_tokens"`
	// Tokens are the prompt's tokens followed by the generated ones.
	Tokens []int  `json:"tokens"`
	Text   string `json:"text"`
	// LogitsSHA256 is the SHA-256 of the float32 little-endian logits of
	// every position, in order.
	LogitsSHA256      string  `json:"logits_sha256"`
	WeightsBytes      int64   `json:"weights_bytes"`
	ResidentPeakBytes int64   `json:"resident_peak_bytes"`
	TokensPerS        float64 `json:"tokens_per_s"`
	// Forward passes and the time they took.
	Positions int           `json:"-"`
	Elapsed   time.Duration `json:"-"`
}

// Generate runs the model on the prompt's tokens and then on the tokens it
// generates, as run.c's generate loop does, except that the prompt's
// tokens run together (Model.Prefill: each weight tensor is decoded once
// for all of them; the logits are those of feeding them one at a time);
// each later token is sampled from the logits of the position before.
// Every token of Result.Tokens is run (the last one's logits are hashed
// but not sampled). The model starts a new sequence.
func Generate(m *Model, tok Tokenizer, prompt string, opt GenerateOptions) (*Result, error) {
	if tok.Vocab() != m.cfg.Vocab {
		return nil, fmt.Errorf("%w: the tokenizer has %d tokens, the model %d", ErrTokenizer, tok.Vocab(), m.cfg.Vocab)
	}
	pt, err := tok.Encode(prompt)
	if err != nil {
		return nil, err
	}
	if len(pt) == 0 {
		return nil, fmt.Errorf("%w: an empty prompt gives no token to start from (this model has no BOS)", ErrInput)
	}
	if len(pt) > m.cfg.SeqLen {
		return nil, fmt.Errorf("%w: the prompt is %d tokens, the context %d", ErrInput, len(pt), m.cfg.SeqLen)
	}
	if opt.N < 0 {
		return nil, fmt.Errorf("%w: %d tokens to generate", ErrInput, opt.N)
	}
	sampler := opt.Sampler
	if sampler == nil {
		sampler = &Sampler{}
	}
	res := &Result{PromptTokens: pt, Tokens: append([]int(nil), pt...)}
	h := sha256.New()
	var row []byte
	vocab := m.cfg.Vocab
	// record hashes the logits of position pos and hands them on
	record := func(pos int, logits []float32) {
		res.Positions++
		row = row[:0]
		for _, v := range logits {
			row = binary.LittleEndian.AppendUint32(row, math.Float32bits(v))
		}
		h.Write(row)
		if opt.Logits != nil {
			opt.Logits(pos, logits)
		}
	}
	start := time.Now()
	all, err := m.Prefill(pt, 0)
	if err != nil {
		return nil, err
	}
	for pos := range pt {
		record(pos, all[pos*vocab:(pos+1)*vocab])
	}
	logits := all[(len(pt)-1)*vocab:]
	token := pt[len(pt)-1]
	for pos := len(pt) - 1; ; {
		if (opt.N > 0 && len(res.Tokens)-len(pt) >= opt.N) || pos+1 >= m.cfg.SeqLen {
			break
		}
		next := sampler.Sample(logits)
		if next == tok.BOS() {
			break
		}
		res.Tokens = append(res.Tokens, next)
		if opt.OnToken != nil && !opt.OnToken(next, tok.Piece(token, next)) {
			break
		}
		token = next
		pos++
		if logits, err = m.Forward(token, pos); err != nil {
			return nil, err
		}
		record(pos, logits)
	}
	res.Elapsed = time.Since(start)
	gen := res.Tokens[len(pt):]
	res.Text = Text(tok, pt[len(pt)-1], gen)
	res.LogitsSHA256 = hex.EncodeToString(h.Sum(nil))
	mem := m.Memory()
	res.WeightsBytes, res.ResidentPeakBytes = mem.Weights, mem.Peak
	if s := res.Elapsed.Seconds(); s > 0 {
		res.TokensPerS = float64(res.Positions) / s
	}
	return res, nil
}
