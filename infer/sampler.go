package infer

import (
	"fmt"
	"sort"
)

// Sampler picks the next token from logits as llama2.c's run.c does:
// greedy (the first maximum) at temperature 0; otherwise the logits are
// divided by the temperature, turned into probabilities by softmax and
// sampled with run.c's xorshift generator, from the whole distribution or
// (0 < TopP < 1) from the smallest set of most likely tokens whose
// probability exceeds TopP. The same seed gives the same tokens as run.c
// given the same logits.
type Sampler struct {
	Temperature float32
	TopP        float32
	state       uint64
	probs       []float32
	idx         []probIndex
}

type probIndex struct {
	p float32
	i int
}

// NewSampler returns a sampler; seed must not be 0 (xorshift's fixed
// point; run.c takes the time instead).
func NewSampler(temperature, topp float32, seed uint64) (*Sampler, error) {
	if !(temperature >= 0) {
		return nil, fmt.Errorf("%w: temperature %v", ErrInput, temperature)
	}
	if seed == 0 && temperature != 0 {
		return nil, fmt.Errorf("%w: seed 0", ErrInput)
	}
	return &Sampler{Temperature: temperature, TopP: topp, state: seed}, nil
}

func (s *Sampler) randomU32() uint32 {
	s.state ^= s.state >> 12
	s.state ^= s.state << 25
	s.state ^= s.state >> 27
	return uint32((s.state * 0x2545F4914F6CDD1D) >> 32)
}

func (s *Sampler) randomF32() float32 { return float32(s.randomU32()>>8) / 16777216.0 }

// Argmax returns the index of the first maximum.
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// Sample returns the next token; logits are not changed.
func (s *Sampler) Sample(logits []float32) int {
	if s.Temperature == 0 {
		return Argmax(logits)
	}
	p := append(s.probs[:0], logits...)
	s.probs = p
	for i := range p {
		p[i] /= s.Temperature
	}
	softmax(p)
	coin := s.randomF32()
	if s.TopP <= 0 || s.TopP >= 1 {
		var cdf float32
		for i, v := range p {
			cdf += v
			if coin < cdf {
				return i
			}
		}
		return len(p) - 1
	}
	cutoff := (1 - s.TopP) / float32(len(p)-1)
	idx := s.idx[:0]
	for i, v := range p {
		if v >= cutoff {
			idx = append(idx, probIndex{v, i})
		}
	}
	s.idx = idx
	if len(idx) == 0 { // a vocabulary of one token (the cutoff divides by zero)
		return Argmax(p)
	}
	sort.SliceStable(idx, func(a, b int) bool { return idx[a].p > idx[b].p })
	var cum float32
	last := len(idx) - 1
	for i, e := range idx {
		cum += e.p
		if cum > s.TopP {
			last = i
			break
		}
	}
	r := coin * cum
	var cdf float32
	for i := 0; i <= last; i++ {
		cdf += idx[i].p
		if r < cdf {
			return idx[i].i
		}
	}
	return idx[last].i
}
