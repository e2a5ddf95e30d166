package infer

import (
	"fmt"
	"math"
)

// llamaNames are a naming convention of Llama tensors.
type llamaNames struct {
	emb, final, cls string
	layer           string // fmt pattern with the layer number, then the part
	parts           [9]string
}

// The parts in forward order: attention norm, q, k, v, o, FFN norm, w1
// (gate), w3 (up), w2 (down).
var (
	hfNames = &llamaNames{
		emb: "model.embed_tokens.weight", final: "model.norm.weight", cls: "lm_head.weight",
		layer: "model.layers.%d.%s",
		parts: [9]string{"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
			"self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
			"mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"},
	}
	ggufNames = &llamaNames{
		emb: "token_embd.weight", final: "output_norm.weight", cls: "output.weight",
		layer: "blk.%d.%s",
		parts: [9]string{"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
			"attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"},
	}
)

// llama is llama2.c's transformer (run.c's forward), reading its weights
// from a store in schedule order: the embedding, 9 tensors per layer, the
// final norm and the classifier.
type llama struct {
	cfg                    Config
	sched                  []*tensor
	x, xb, xb2, hb, hb2, q []float32
	att, logits, vec       []float32
	cache                  *kvCache
	kvDim, kvMul, headSize int
	ropeFreq               []float32
	sqrtHead               float32
}

func buildLlama(ts tensors, p *params, nm *llamaNames) (*Model, error) {
	emb, ok := ts[nm.emb]
	if !ok || len(emb.shape) != 2 {
		return nil, fmt.Errorf("%w: %s must be [vocab, dim]", ErrConfig, nm.emb)
	}
	vocab, dim := int(emb.shape[0]), int(emb.shape[1])
	layers := 0
	for ts[fmt.Sprintf(nm.layer, layers, nm.parts[1])] != nil {
		layers++
	}
	if layers == 0 {
		return nil, fmt.Errorf("%w: no layers (%s)", ErrArchitecture, fmt.Sprintf(nm.layer, 0, nm.parts[1]))
	}
	cfg := Config{Arch: "llama", Dim: dim, Vocab: vocab, Layers: layers}
	if v, ok, err := p.int("dim", "llama.embedding_length", "hidden_size"); err != nil {
		return nil, err
	} else if ok && v != dim {
		return nil, fmt.Errorf("%w: dim %d, but %s is %v", ErrConfig, v, nm.emb, emb.shape)
	}
	if v, ok, err := p.int("n_layers", "llama.block_count", "num_hidden_layers"); err != nil {
		return nil, err
	} else if ok && v != layers {
		return nil, fmt.Errorf("%w: %d layers in the metadata, %d in the tensors", ErrConfig, v, layers)
	}
	if v, ok, err := p.int("vocab_size", "llama.vocab_size"); err != nil {
		return nil, err
	} else if ok && v != vocab {
		return nil, fmt.Errorf("%w: vocab_size %d, but %s is %v", ErrConfig, v, nm.emb, emb.shape)
	}
	heads, ok, err := p.int("n_heads", "llama.attention.head_count", "num_attention_heads", "heads")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the number of attention heads is not in the file's metadata (n_heads, llama.attention.head_count) and no config.json gives it (num_attention_heads)", ErrConfig)
	}
	if dim%heads != 0 {
		return nil, fmt.Errorf("%w: dim %d is not a multiple of %d heads", ErrConfig, dim, heads)
	}
	headSize := dim / heads
	if headSize%2 != 0 {
		return nil, fmt.Errorf("%w: head size %d is odd (RoPE rotates pairs)", ErrConfig, headSize)
	}
	wk := ts[fmt.Sprintf(nm.layer, 0, nm.parts[2])]
	if wk == nil || len(wk.shape) != 2 || wk.shape[0]%int64(headSize) != 0 || wk.shape[0] > int64(dim) {
		return nil, fmt.Errorf("%w: %s must be [kv_heads × %d, %d]", ErrConfig, fmt.Sprintf(nm.layer, 0, nm.parts[2]), headSize, dim)
	}
	kvHeads := int(wk.shape[0]) / headSize
	if v, ok, err := p.int("n_kv_heads", "llama.attention.head_count_kv", "num_key_value_heads"); err != nil {
		return nil, err
	} else if ok && v != kvHeads {
		return nil, fmt.Errorf("%w: %d key/value heads in the metadata, %d in the shape of the keys", ErrConfig, v, kvHeads)
	}
	if heads%kvHeads != 0 {
		return nil, fmt.Errorf("%w: %d heads are not a multiple of %d key/value heads", ErrConfig, heads, kvHeads)
	}
	w1 := ts[fmt.Sprintf(nm.layer, 0, nm.parts[6])]
	if w1 == nil || len(w1.shape) != 2 {
		return nil, fmt.Errorf("%w: %s missing or not a matrix", ErrArchitecture, fmt.Sprintf(nm.layer, 0, nm.parts[6]))
	}
	hidden := int(w1.shape[0])
	seqLen, ok, err := p.int("seq_len", "llama.context_length", "max_position_embeddings")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the context length is not in the file's metadata (seq_len, llama.context_length) and no config.json gives it (max_position_embeddings)", ErrConfig)
	}
	eps, ok, err := p.float("llama.attention.layer_norm_rms_epsilon", "rms_norm_eps", "norm_eps")
	if err != nil {
		return nil, err
	}
	if !ok {
		eps = 1e-5 // run.c's constant
	}
	cfg.Heads, cfg.KVHeads, cfg.Hidden, cfg.SeqLen, cfg.Eps = heads, kvHeads, hidden, seqLen, eps
	kvDim := dim * kvHeads / heads

	// the schedule, with every shape checked
	sched := []*tensor{emb}
	shapes := [9][]int{{dim}, {dim, dim}, {kvDim, dim}, {kvDim, dim}, {dim, dim}, {dim}, {hidden, dim}, {hidden, dim}, {dim, hidden}}
	for l := range layers {
		for k, part := range nm.parts {
			t, err := ts.need(fmt.Sprintf(nm.layer, l, part), shapes[k]...)
			if err != nil {
				return nil, err
			}
			sched = append(sched, t)
		}
	}
	if _, err := ts.need(nm.emb, vocab, dim); err != nil {
		return nil, err
	}
	final, err := ts.need(nm.final, dim)
	if err != nil {
		return nil, err
	}
	cls := emb // tied
	if _, ok := ts[nm.cls]; ok {
		if cls, err = ts.need(nm.cls, vocab, dim); err != nil {
			return nil, err
		}
	}
	sched = append(sched, final, cls)

	n := &llama{cfg: cfg, sched: sched, kvDim: kvDim, kvMul: heads / kvHeads, headSize: headSize}
	n.x = make([]float32, dim)
	n.xb = make([]float32, dim)
	n.xb2 = make([]float32, dim)
	n.hb = make([]float32, hidden)
	n.hb2 = make([]float32, hidden)
	n.q = make([]float32, dim)
	n.vec = make([]float32, dim)
	n.logits = make([]float32, vocab)
	n.cache = newKVCache(layers, kvDim)
	n.ropeFreq = make([]float32, dim/2)
	for i := 0; i < dim; i += 2 {
		headDim := i % headSize
		n.ropeFreq[i/2] = 1 / powf(10000, float32(headDim)/float32(headSize))
	}
	n.sqrtHead = float32(math.Sqrt(float64(headSize)))
	m := &Model{cfg: cfg, sched: sched, net: n, vecBytes: 4 * int64(dim)}
	return m, nil
}

// powf is float32 pow (rounded from float64).
func powf(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }

// forward is run.c's forward(token, pos) for tokens at positions pos0,
// pos0+1, ...: each tensor is fetched once for all of them, and each
// position's arithmetic is run.c's for that position alone, in the same
// order (a position's attention reads the keys and values of the
// positions before it, computed earlier in the same layer), so the logits
// are those of running the tokens one at a time. It returns the logits of
// every position, Vocab each, valid until the next call.
func (n *llama) forward(st store, tokens []int, pos0 int) ([]float32, error) {
	c := n.cfg
	dim, kvDim, hidden, hs := c.Dim, n.kvDim, c.Hidden, n.headSize
	nb := len(tokens)
	n.x = grow(n.x, nb*dim)
	n.xb = grow(n.xb, nb*dim)
	n.xb2 = grow(n.xb2, nb*dim)
	n.q = grow(n.q, nb*dim)
	n.hb = grow(n.hb, nb*hidden)
	n.hb2 = grow(n.hb2, nb*hidden)
	n.logits = grow(n.logits, nb*c.Vocab)
	x := n.x
	step := 0
	// get returns the next scheduled tensor and its type.
	get := func() ([]byte, *tensor, error) {
		t := n.sched[step]
		b, err := st.get(step)
		step++
		return b, t, err
	}
	// vector fetches the next scheduled tensor, a vector, as float32
	vector := func() ([]float32, error) {
		b, t, err := get()
		if err != nil {
			return nil, err
		}
		v := n.vec[:t.numel()]
		toF32(v, b, t.dt)
		return v, nil
	}
	// mat computes out = W in for each position's row of in (nIn wide)
	// and of out (dOut wide)
	mat := func(out, in []float32, nIn, dOut int) error {
		t := n.sched[step]
		b, err := st.stream(step)
		step++
		if err != nil {
			return err
		}
		return matmulStream(st, out, in, b, t.dt, nIn, dOut, nb)
	}

	// each token's embedding row
	b, t, err := get()
	if err != nil {
		return nil, err
	}
	sz := int(t.dt.Size())
	for p, token := range tokens {
		toF32(x[p*dim:(p+1)*dim], b[token*dim*sz:(token+1)*dim*sz], t.dt)
	}

	for l := range c.Layers {
		w, err := vector()
		if err != nil {
			return nil, err
		}
		for p := range nb {
			rmsnorm(n.xb[p*dim:(p+1)*dim], x[p*dim:(p+1)*dim], w, c.Eps)
		}
		keys, values := n.cache.layer(l, pos0+nb-1)
		k := keys[pos0*kvDim : (pos0+nb)*kvDim]
		v := values[pos0*kvDim : (pos0+nb)*kvDim]
		if err := mat(n.q, n.xb, dim, dim); err != nil {
			return nil, err
		}
		if err := mat(k, n.xb, dim, kvDim); err != nil {
			return nil, err
		}
		if err := mat(v, n.xb, dim, kvDim); err != nil {
			return nil, err
		}
		for p := range nb {
			// RoPE: rotate adjacent pairs of q and k in each head
			q, kp := n.q[p*dim:(p+1)*dim], k[p*kvDim:(p+1)*kvDim]
			fpos := float32(pos0 + p)
			for i := 0; i < dim; i += 2 {
				val := fpos * n.ropeFreq[i/2]
				fcr := float32(math.Cos(float64(val)))
				fci := float32(math.Sin(float64(val)))
				rotate(q, i, fcr, fci)
				if i < kvDim {
					rotate(kp, i, fcr, fci)
				}
			}
		}
		// multi-head attention, each position over the positions up to it
		for p := range nb {
			pos := pos0 + p
			for h := range c.Heads {
				q := n.q[p*dim+h*hs : p*dim+(h+1)*hs]
				n.att = grow(n.att, pos+1)
				att := n.att
				kvh := (h / n.kvMul) * hs
				for t := 0; t <= pos; t++ {
					kt := keys[t*kvDim+kvh : t*kvDim+kvh+hs]
					var score float32
					for i := range hs {
						score += float32(q[i] * kt[i])
					}
					score /= n.sqrtHead
					att[t] = score
				}
				softmax(att)
				xb := n.xb[p*dim+h*hs : p*dim+(h+1)*hs]
				clear(xb)
				for t := 0; t <= pos; t++ {
					vt := values[t*kvDim+kvh : t*kvDim+kvh+hs]
					a := att[t]
					for i := range hs {
						xb[i] += float32(a * vt[i])
					}
				}
			}
		}
		if err := mat(n.xb2, n.xb, dim, dim); err != nil {
			return nil, err
		}
		for i := range nb * dim {
			x[i] += n.xb2[i]
		}
		if w, err = vector(); err != nil {
			return nil, err
		}
		for p := range nb {
			rmsnorm(n.xb[p*dim:(p+1)*dim], x[p*dim:(p+1)*dim], w, c.Eps)
		}
		if err := mat(n.hb, n.xb, dim, hidden); err != nil {
			return nil, err
		}
		if err := mat(n.hb2, n.xb, dim, hidden); err != nil {
			return nil, err
		}
		for i := range nb * hidden {
			val := n.hb[i]
			val *= 1 / (1 + expf(-val))
			val *= n.hb2[i]
			n.hb[i] = val
		}
		if err := mat(n.xb, n.hb, hidden, dim); err != nil {
			return nil, err
		}
		for i := range nb * dim {
			x[i] += n.xb[i]
		}
	}
	w, err := vector()
	if err != nil {
		return nil, err
	}
	for p := range nb {
		rmsnorm(x[p*dim:(p+1)*dim], x[p*dim:(p+1)*dim], w, c.Eps)
	}
	if err := mat(n.logits, x, dim, c.Vocab); err != nil {
		return nil, err
	}
	return n.logits, nil
}

// rotate turns the pair vec[i], vec[i+1] by the angle whose cosine and
// sine are fcr, fci.
func rotate(vec []float32, i int, fcr, fci float32) {
	v0, v1 := vec[i], vec[i+1]
	vec[i] = float32(v0*fcr) - float32(v1*fci)
	vec[i+1] = float32(v0*fci) + float32(v1*fcr)
}
