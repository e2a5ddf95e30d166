package core

import (
	"context"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"neuralzip/analysis"
	"neuralzip/dtype"
)

// TensorStats are the statistics of one tensor. OK is false for tensors
// that are not floats (their other fields are zero).
type TensorStats struct {
	OK       bool
	Float    analysis.FloatStats
	Moments  analysis.Moments
	Planes   *analysis.BitPlanes
	Sigma    float64 // RMS of the finite values: the Gaussian model's σ
	HuffBits float64 // bits per exponent with the tensor's own Huffman code
	// Sparse: exact zeros and the optimum of a zero mask (per column of
	// the last dimension) plus the nonzero values; SparseOK is false for
	// types it does not cover (over 4 bytes)
	Sparse   analysis.SparseStats
	SparseOK bool
}

// Stats are the statistics of every tensor of a model (index as in
// Model.Tensors).
type Stats []TensorStats

// readPiece is how much of a tensor is read at a time.
const readPiece = 1 << 20

// ComputeStats reads every float tensor of m once and computes its
// statistics on up to threads goroutines (0: 2). progress, when set, is
// called with the bytes done and the total, from the workers but never
// concurrently, with done increasing. Cancelling ctx stops the work and returns ctx's error.
func ComputeStats(ctx context.Context, m *Model, threads int, progress func(done, total int64)) (Stats, error) {
	return ComputeStatsOf(ctx, m, nil, threads, progress)
}

// ComputeStatsOf is ComputeStats of the tensors idx only (nil: all): the
// other entries of the result are zero (OK false). A model read from a
// server computes only what a screen shows (the workbench's lazy
// statistics).
func ComputeStatsOf(ctx context.Context, m *Model, idx []int, threads int, progress func(done, total int64)) (Stats, error) {
	if threads <= 0 {
		threads = 2
	}
	st := make(Stats, len(m.Tensors))
	if idx == nil {
		idx = make([]int, len(m.Tensors))
		for i := range idx {
			idx[i] = i
		}
	}
	var total int64
	for _, i := range idx {
		if m.Tensors[i].IsFloat() {
			total += m.Tensors[i].Bytes
		}
	}
	var done int64
	var mu sync.Mutex
	next := atomic.Int64{}
	var wg sync.WaitGroup
	errs := make([]error, threads)
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := make([]byte, readPiece)
			for {
				k := int(next.Add(1) - 1)
				if k >= len(idx) {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				i := idx[k]
				t := &m.Tensors[i]
				if !t.IsFloat() {
					continue
				}
				s, err := tensorStats(ctx, m.Files[t.File].R, t, buf, func(n int64) {
					mu.Lock()
					done += n
					if progress != nil {
						progress(done, total)
					}
					mu.Unlock()
				})
				if err != nil {
					errs[w] = err
					return
				}
				st[i] = s
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return st, nil
}

func tensorStats(ctx context.Context, r io.ReaderAt, t *Tensor, buf []byte, step func(int64)) (TensorStats, error) {
	acc, ok1 := analysis.NewAccumulator(t.DType)
	mom, ok2 := analysis.NewMomentAccumulator(t.DType)
	pl, ok3 := analysis.NewBitPlanes(t.DType)
	if !ok1 || !ok2 || !ok3 {
		return TensorStats{}, nil
	}
	sp, spOK := analysis.NewSparseAccumulator(t.DType, t.Row())
	for off := int64(0); off < t.Bytes; off += readPiece {
		if err := ctx.Err(); err != nil {
			return TensorStats{}, err
		}
		b := buf[:min(readPiece, t.Bytes-off)]
		if _, err := r.ReadAt(b, t.Offset+off); err != nil && err != io.EOF {
			return TensorStats{}, err
		}
		acc.Write(b)
		mom.Write(b)
		pl.Write(b)
		if spOK {
			sp.Write(b)
		}
		step(int64(len(b)))
	}
	pl.Compact() // the per-bit counts are all a tensor keeps (16 KiB less each)
	s := TensorStats{OK: true, Float: acc.Stats(), Moments: mom.Moments(), Planes: pl}
	s.Sigma = s.Moments.RMS()
	s.HuffBits = analysis.HuffmanBits(s.Float.Hist)
	if spOK {
		s.Sparse, s.SparseOK = sp.Stats(), true
	}
	return s, nil
}

// Aggregate is the statistics of a set of tensors of one dtype: their
// exponent histograms and bit planes summed, and the Gaussian model's
// prediction as the mixture of each tensor's prediction at its own σ,
// weighted by its values.
type Aggregate struct {
	DType      dtype.DType
	Tensors    int // tensors included
	Skipped    int // float tensors of other dtypes left out
	Float      analysis.FloatStats
	Planes     *analysis.BitPlanes
	Model      []float64 // predicted probability of each exponent value; nil when undefined
	HuffBits   float64   // bits per exponent with one Huffman code for the whole set
	ModelBits  float64   // bits per exponent coding each tensor with its Gaussian table (tables not stored)
	Sigma      float64   // σ of the one tensor (0 for several)
	Bias       int
	BoundBytes float64 // order-0 bound of the set: Σ per-tensor bound
	// Zeros, SparseValues: exact zeros among the values the sparse
	// statistics cover; OptimumBytes their Σ per-tensor sparse optimum
	// (zero mask per column + nonzero values at their entropy)
	Zeros, SparseValues int64
	OptimumBytes        float64
}

// Aggregate sums the statistics of the tensors idx (those with the most
// common float dtype among them; see Aggregate.Skipped).
func (s Stats) Aggregate(idx []int) (Aggregate, bool) {
	count := map[dtype.DType]int64{}
	for _, i := range idx {
		if i < len(s) && s[i].OK {
			count[s[i].Float.DType] += s[i].Float.Values
		}
	}
	var d dtype.DType
	var best int64 = -1
	for k, n := range count {
		if n > best || (n == best && k < d) {
			d, best = k, n
		}
	}
	if best <= 0 {
		return Aggregate{}, false
	}
	a := Aggregate{DType: d}
	l, _ := d.FloatLayout()
	if d == dtype.C64 {
		l, _ = dtype.F32.FloatLayout()
	}
	a.Bias = 1<<(l.Exp-1) - 1
	model := make([]float64, 1<<l.Exp)
	modelOK := true
	var modelBits float64
	for _, i := range idx {
		t := &s[i]
		if !t.OK {
			continue
		}
		if t.Float.DType != d {
			a.Skipped++
			continue
		}
		if a.Tensors == 0 {
			a.Float = analysis.FloatStats{DType: d, ExpBits: t.Float.ExpBits, OtherBits: t.Float.OtherBits, Hist: make([]uint64, len(t.Float.Hist))}
			a.Planes, _ = analysis.NewBitPlanes(d)
			a.Sigma = t.Sigma
		} else {
			a.Sigma = 0
		}
		a.Tensors++
		a.Float.Merge(t.Float)
		a.Planes.Merge(t.Planes)
		a.BoundBytes += t.Float.Bound()
		if t.SparseOK {
			a.Zeros += t.Sparse.Zeros
			a.SparseValues += t.Sparse.Values
			a.OptimumBytes += t.Sparse.OptimumColumns()
		}
		if t.Float.Values == 0 {
			continue
		}
		if t.Sigma == 0 {
			// all zeros: every exponent is 0, at one bit each
			model[0] += float64(t.Float.Values)
			modelBits += float64(t.Float.Values)
			continue
		}
		p, ok := analysis.GaussianExpProbs(d, t.Sigma)
		g, ok2 := analysis.NewGaussianTable(d, t.Sigma)
		if !ok || !ok2 {
			modelOK = false
			continue
		}
		for e := range model {
			model[e] += p[e] * float64(t.Float.Values)
		}
		modelBits += g.Cost(t.Float.Hist)
	}
	a.Float.ExpEntropy = analysis.Entropy(a.Float.Hist)
	a.Planes.Count()
	a.HuffBits = analysis.HuffmanBits(a.Float.Hist)
	if modelOK && a.Float.Values > 0 {
		for e := range model {
			model[e] /= float64(a.Float.Values)
		}
		a.Model = model
		a.ModelBits = modelBits / float64(a.Float.Values)
	}
	return a, true
}

// FileBound is the model's order-0 bound ratio: size / (float tensors at
// their bound + every other byte raw), as `nzip inspect` reports it.
func (s Stats) FileBound(m *Model) float64 {
	var bound float64
	var floatBytes int64
	for i := range s {
		if s[i].OK {
			bound += s[i].Float.Bound()
			floatBytes += m.Tensors[i].Bytes
		}
	}
	bound += float64(m.Size - floatBytes)
	if bound <= 0 {
		return 0
	}
	return float64(m.Size) / bound
}

// finite replaces NaN and infinities by 0, for display.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
