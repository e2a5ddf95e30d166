package lossy

import (
	"bytes"
	"fmt"
	"math"

	"neuralzip/infer"
)

// Eval is the end-to-end effect of a lossy coding on a language model:
// over the original model's own greedy continuations of fixed prompts,
// the mean KL divergence of the coded model's next-token distribution from
// the original's (nats) and how often their most likely tokens agree; and
// the coded model's own greedy continuation of the first prompt.
type Eval struct {
	KL, Top1 float64
	Tokens   int   // positions compared
	Text     []int // the coded model's continuation of the first prompt
	Prompt   []int // the first prompt
}

// LM is a model nzip generate runs, with the evaluation text of the
// original (EvalLM compares coded versions against it).
type LM struct {
	opt     infer.Options
	prompts [][]int
	seqs    [][]int       // prompt + greedy continuation
	logits  [][][]float32 // the original's logits at each position of each seq
	n       int
}

// NewLM runs the original model file src: prompts of two tokens (the
// first token, then each of the four the model finds most likely after it)
// — for a byte-level model, four fixed texts — continued greedily for n
// tokens, and their logits kept.
func NewLM(src []byte, cfg []byte, n int) (*LM, error) {
	opt := infer.Options{Config: cfg}
	m, err := infer.Open(bytes.NewReader(src), int64(len(src)), opt)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	c := m.Config()
	lm := &LM{opt: opt, n: n}
	if c.Vocab == 256 {
		for _, s := range []string{"Once upon a time", "The ", "In the beginning", "A wise man"} {
			p := []int{}
			for _, b := range []byte(s) {
				p = append(p, int(b))
			}
			lm.prompts = append(lm.prompts, p)
		}
	} else {
		first, err := m.Forward(1, 0)
		if err != nil {
			return nil, err
		}
		for _, t := range topK(first, 4) {
			lm.prompts = append(lm.prompts, []int{1, t})
		}
	}
	for _, p := range lm.prompts {
		if len(p)+n > c.SeqLen {
			return nil, fmt.Errorf("lossy: %d tokens exceed the model's %d positions", len(p)+n, c.SeqLen)
		}
		seq, logits, err := greedy(m, p, n)
		if err != nil {
			return nil, err
		}
		lm.seqs, lm.logits = append(lm.seqs, seq), append(lm.logits, logits)
	}
	return lm, nil
}

// greedy runs prompt p and n greedy tokens after it; it returns the
// sequence and the logits at each of its positions but the last.
func greedy(m *infer.Model, p []int, n int) ([]int, [][]float32, error) {
	seq := append([]int(nil), p...)
	var all [][]float32
	for pos := 0; pos < len(p)+n-1; pos++ {
		l, err := m.Forward(seq[pos], pos)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, append([]float32(nil), l...))
		if pos+1 >= len(seq) {
			seq = append(seq, infer.Argmax(l))
		}
	}
	return seq, all, nil
}

// Reference is the original's continuation of the first prompt (the
// prompt included).
func (lm *LM) Reference() []int { return lm.seqs[0] }

// Compare runs the coded model file coded over the original's sequences
// (teacher forcing) and measures it against the original's logits.
func (lm *LM) Compare(coded []byte) (Eval, error) {
	m, err := infer.Open(bytes.NewReader(coded), int64(len(coded)), lm.opt)
	if err != nil {
		return Eval{}, err
	}
	defer m.Close()
	var ev Eval
	var kl float64
	agree := 0
	for i, seq := range lm.seqs {
		start := len(lm.prompts[i]) - 1 // from the first predicted token on
		for pos := 0; pos < len(seq)-1; pos++ {
			l, err := m.Forward(seq[pos], pos)
			if err != nil {
				return Eval{}, err
			}
			if pos < start {
				continue
			}
			o := lm.logits[i][pos]
			kl += klDiv(o, l)
			if infer.Argmax(o) == infer.Argmax(l) {
				agree++
			}
			ev.Tokens++
		}
	}
	if ev.Tokens > 0 {
		ev.KL, ev.Top1 = kl/float64(ev.Tokens), float64(agree)/float64(ev.Tokens)
	}
	ev.Prompt = lm.prompts[0]
	seq, _, err := greedy(m, lm.prompts[0], lm.n)
	if err != nil {
		return Eval{}, err
	}
	ev.Text = seq
	return ev, nil
}

// klDiv is KL(softmax(p) ‖ softmax(q)) in nats.
func klDiv(p, q []float32) float64 {
	lp, lq := logSoftmax(p), logSoftmax(q)
	var d float64
	for i := range lp {
		d += math.Exp(lp[i]) * (lp[i] - lq[i])
	}
	return max(d, 0)
}

func logSoftmax(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	ls := m + math.Log(s)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) - ls
	}
	return out
}

// topK returns the indices of the k largest values (ties by index).
func topK(x []float32, k int) []int {
	var out []int
	used := make([]bool, len(x))
	for range min(k, len(x)) {
		best := -1
		for i, v := range x {
			if !used[i] && (best < 0 || v > x[best]) {
				best = i
			}
		}
		used[best] = true
		out = append(out, best)
	}
	return out
}
