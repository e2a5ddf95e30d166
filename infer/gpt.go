package infer

import (
	"fmt"
	"math"
)

// gpt is the byte-level GPT of train_tiny_gpt.py: token + learned position
// embeddings, pre-LayerNorm blocks (fused QKV linear, causal attention,
// projection; GELU MLP of 4×), a final LayerNorm and an untied head
// without bias. Its schedule: tok, pos, 12 tensors per block, lnf.weight,
// lnf.bias, head.weight.
type gpt struct {
	cfg                  Config
	sched                []*tensor
	x, h, qkv, y, f, tmp []float32
	w, b                 []float32 // a LayerNorm's weight and bias as float32
	att, logits          []float32
	cache                *kvCache
	sqrtHead             float32
}

var gptParts = [12]string{"ln1.weight", "ln1.bias", "attn.weight", "attn.bias", "proj.weight", "proj.bias",
	"ln2.weight", "ln2.bias", "fc.weight", "fc.bias", "fc2.weight", "fc2.bias"}

func buildGPT(ts tensors, p *params) (*Model, error) {
	tok, pos := ts["tok.weight"], ts["pos.weight"]
	if len(tok.shape) != 2 || len(pos.shape) != 2 || tok.shape[1] != pos.shape[1] {
		return nil, fmt.Errorf("%w: tok.weight %v and pos.weight %v must be [vocab, dim] and [ctx, dim]", ErrConfig, tok.shape, pos.shape)
	}
	vocab, dim, ctx := int(tok.shape[0]), int(tok.shape[1]), int(pos.shape[0])
	layers := 0
	for ts[fmt.Sprintf("blocks.%d.attn.weight", layers)] != nil {
		layers++
	}
	for _, c := range []struct {
		keys []string
		have int
	}{{[]string{"dim", "n_embd"}, dim}, {[]string{"layers", "n_layer"}, layers}, {[]string{"ctx", "block_size"}, ctx}} {
		if v, ok, err := p.int(c.keys...); err != nil {
			return nil, err
		} else if ok && v != c.have {
			return nil, fmt.Errorf("%w: %s = %d, but the tensors say %d", ErrConfig, c.keys[0], v, c.have)
		}
	}
	heads, ok, err := p.int("heads", "n_head", "num_attention_heads")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the number of heads of the byte-level GPT is not in the file; give the run's config.json (\"heads\")", ErrConfig)
	}
	if dim%heads != 0 {
		return nil, fmt.Errorf("%w: dim %d is not a multiple of %d heads", ErrConfig, dim, heads)
	}
	fc := ts["blocks.0.fc.weight"]
	if fc == nil || len(fc.shape) != 2 {
		return nil, fmt.Errorf("%w: blocks.0.fc.weight missing or not a matrix", ErrArchitecture)
	}
	hidden := int(fc.shape[0])
	cfg := Config{Arch: "gpt", Dim: dim, Hidden: hidden, Layers: layers, Heads: heads, KVHeads: heads, Vocab: vocab, SeqLen: ctx, Eps: 1e-5}
	var sched []*tensor
	for _, s := range []struct {
		name  string
		shape []int
	}{{"tok.weight", []int{vocab, dim}}, {"pos.weight", []int{ctx, dim}}} {
		t, err := ts.need(s.name, s.shape...)
		if err != nil {
			return nil, err
		}
		sched = append(sched, t)
	}
	shapes := [12][]int{{dim}, {dim}, {3 * dim, dim}, {3 * dim}, {dim, dim}, {dim}, {dim}, {dim}, {hidden, dim}, {hidden}, {dim, hidden}, {dim}}
	for l := range layers {
		for k, part := range gptParts {
			t, err := ts.need(fmt.Sprintf("blocks.%d.%s", l, part), shapes[k]...)
			if err != nil {
				return nil, err
			}
			sched = append(sched, t)
		}
	}
	for _, s := range []struct {
		name  string
		shape []int
	}{{"lnf.weight", []int{dim}}, {"lnf.bias", []int{dim}}, {"head.weight", []int{vocab, dim}}} {
		t, err := ts.need(s.name, s.shape...)
		if err != nil {
			return nil, err
		}
		sched = append(sched, t)
	}
	n := &gpt{cfg: cfg, sched: sched, sqrtHead: float32(math.Sqrt(float64(dim / heads)))}
	n.x = make([]float32, dim)
	n.h = make([]float32, dim)
	n.qkv = make([]float32, 3*dim)
	n.y = make([]float32, dim)
	n.f = make([]float32, hidden)
	n.tmp = make([]float32, max(hidden, 3*dim))
	n.w = make([]float32, dim)
	n.b = make([]float32, max(hidden, 3*dim))
	n.logits = make([]float32, vocab)
	n.cache = newKVCache(layers, dim)
	return &Model{cfg: cfg, sched: sched, net: n, vecBytes: 4 * int64(dim+max(hidden, 3*dim))}, nil
}

// layerNorm is torch's LayerNorm (biased variance, eps inside the root),
// its statistics in float64.
func layerNorm(o, x, w, b []float32, eps float32) {
	var mean float64
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	var variance float64
	for _, v := range x {
		d := float64(v) - mean
		variance += d * d
	}
	variance /= float64(len(x))
	inv := 1 / math.Sqrt(variance+float64(eps))
	for i, v := range x {
		o[i] = float32((float64(v)-mean)*inv*float64(w[i]) + float64(b[i]))
	}
}

// gelu is the exact GELU (torch's default): x·Φ(x).
func gelu(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + math.Erf(v/math.Sqrt2)))
}

// forward runs tokens at positions pos0, pos0+1, ... (see llama.forward:
// each tensor is fetched once for all of them, each position's arithmetic
// is its own) and returns the logits of every position, Vocab each.
func (n *gpt) forward(st store, tokens []int, pos0 int) ([]float32, error) {
	c := n.cfg
	dim, hidden := c.Dim, c.Hidden
	hs := dim / c.Heads
	nb := len(tokens)
	n.x = grow(n.x, nb*dim)
	n.h = grow(n.h, nb*dim)
	n.qkv = grow(n.qkv, nb*3*dim)
	n.y = grow(n.y, nb*dim)
	n.f = grow(n.f, nb*hidden)
	n.tmp = grow(n.tmp, nb*dim)
	n.logits = grow(n.logits, nb*c.Vocab)
	step := 0
	get := func() ([]byte, *tensor, error) {
		t := n.sched[step]
		b, err := st.get(step)
		step++
		return b, t, err
	}
	// vector reads the next scheduled vector into dst as float32
	vector := func(dst []float32) error {
		b, t, err := get()
		if err != nil {
			return err
		}
		toF32(dst[:t.numel()], b, t.dt)
		return nil
	}
	// linear computes out = W in + bias from the next two tensors, for
	// each position's row of in (nIn wide) and of out (dOut wide)
	// mat computes out = W in with the next tensor, as its rows arrive
	mat := func(out, in []float32, nIn, dOut int) error {
		t := n.sched[step]
		b, err := st.stream(step)
		step++
		if err != nil {
			return err
		}
		return matmulStream(st, out, in, b, t.dt, nIn, dOut, nb)
	}
	linear := func(out, in []float32, nIn, dOut int) error {
		if err := mat(out, in, nIn, dOut); err != nil {
			return err
		}
		if err := vector(n.b[:dOut]); err != nil {
			return err
		}
		for p := range nb {
			o := out[p*dOut : (p+1)*dOut]
			for i := range dOut {
				o[i] += n.b[i]
			}
		}
		return nil
	}
	norm := func(o, x []float32) error {
		if err := vector(n.w[:dim]); err != nil {
			return err
		}
		if err := vector(n.b[:dim]); err != nil {
			return err
		}
		for p := range nb {
			layerNorm(o[p*dim:(p+1)*dim], x[p*dim:(p+1)*dim], n.w[:dim], n.b[:dim], c.Eps)
		}
		return nil
	}

	b, t, err := get()
	if err != nil {
		return nil, err
	}
	sz := t.dt.Size()
	for p, token := range tokens {
		toF32(n.x[p*dim:(p+1)*dim], b[token*dim*sz:(token+1)*dim*sz], t.dt)
	}
	if b, t, err = get(); err != nil {
		return nil, err
	}
	sz = t.dt.Size()
	for p := range nb {
		pos := pos0 + p
		toF32(n.tmp[p*dim:(p+1)*dim], b[pos*dim*sz:(pos+1)*dim*sz], t.dt)
	}
	for i := range nb * dim {
		n.x[i] += n.tmp[i]
	}
	for l := range c.Layers {
		if err := norm(n.h, n.x); err != nil {
			return nil, err
		}
		if err := linear(n.qkv, n.h, dim, 3*dim); err != nil {
			return nil, err
		}
		keys, values := n.cache.layer(l, pos0+nb-1)
		for p := range nb {
			pos, qkv := pos0+p, n.qkv[p*3*dim:(p+1)*3*dim]
			copy(keys[pos*dim:(pos+1)*dim], qkv[dim:2*dim])
			copy(values[pos*dim:(pos+1)*dim], qkv[2*dim:3*dim])
		}
		for p := range nb {
			pos := pos0 + p
			n.att = grow(n.att, pos+1)
			for h := range c.Heads {
				q := n.qkv[p*3*dim+h*hs : p*3*dim+(h+1)*hs]
				att := n.att[:pos+1]
				for t := 0; t <= pos; t++ {
					k := keys[t*dim+h*hs : t*dim+(h+1)*hs]
					var s float32
					for i := range hs {
						s += float32(q[i] * k[i])
					}
					att[t] = s / n.sqrtHead
				}
				softmax(att)
				y := n.y[p*dim+h*hs : p*dim+(h+1)*hs]
				clear(y)
				for t := 0; t <= pos; t++ {
					v := values[t*dim+h*hs : t*dim+(h+1)*hs]
					a := att[t]
					for i := range hs {
						y[i] += float32(a * v[i])
					}
				}
			}
		}
		if err := linear(n.tmp, n.y, dim, dim); err != nil {
			return nil, err
		}
		for i := range nb * dim {
			n.x[i] += n.tmp[i]
		}
		if err := norm(n.h, n.x); err != nil {
			return nil, err
		}
		if err := linear(n.f, n.h, dim, hidden); err != nil {
			return nil, err
		}
		for i := range nb * hidden {
			n.f[i] = gelu(n.f[i])
		}
		if err := linear(n.tmp, n.f, hidden, dim); err != nil {
			return nil, err
		}
		for i := range nb * dim {
			n.x[i] += n.tmp[i]
		}
	}
	if err := norm(n.h, n.x); err != nil {
		return nil, err
	}
	if err := mat(n.logits, n.h, dim, c.Vocab); err != nil {
		return nil, err
	}
	return n.logits, nil
}
