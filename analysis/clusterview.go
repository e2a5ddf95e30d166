package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"neuralzip/dtype"
)

// Defaults of ClusterOptions.
const (
	DefaultClusterChunk     = 1 << 16 // values per chunk, the codec's default
	DefaultClusterMaxK      = 12
	DefaultClusterMaxValues = 1 << 24 // values analysed before sampling
	DefaultClusterMaxChunks = 1024    // chunks analysed before sampling
)

// ClusterOptions configures ChunkClusters. The zero value is ready to use
// with K = 1.
type ClusterOptions struct {
	ChunkValues int   // values per chunk (0: DefaultClusterChunk)
	K           int   // clusters of the view (0: 1)
	MaxK        int   // the elbow curve runs K = 1..MaxK (0: DefaultClusterMaxK)
	MaxValues   int64 // at most this many values are read (0: DefaultClusterMaxValues) ...
	MaxChunks   int   // ... in at most this many chunks (0: DefaultClusterMaxChunks)
	// Align shifts each chunk's histogram so that its most frequent
	// exponent lands on the type's bias, as a setup's aligned tables do
	// (zero/subnormal and Inf/NaN exponents stay in place): chunks of
	// tensors that differ only in scale then share a cluster.
	Align bool
}

// TensorData is one tensor of a cluster view: its values are Length bytes
// at Offset of R.
type TensorData struct {
	Name   string
	DType  dtype.DType
	R      io.ReaderAt
	Offset int64
	Length int64
}

// ClusterView is the chunk-level picture of a set of tensors of one dtype:
// each chunk's exponent histogram, the chunks grouped into K clusters (each
// coded with one Huffman table built from the cluster's summed histogram),
// a 2-D PCA projection of the chunk histograms, and the coded size as K
// changes.
type ClusterView struct {
	DType       dtype.DType
	ExpBits     int
	ChunkValues int
	TotalChunks int   // chunks of the input
	Chunks      int   // chunks analysed (all of them unless Sampled)
	Values      int64 // values analysed
	TotalValues int64 // values of the input
	Sampled     bool  // a deterministic, evenly spaced sample of the chunks was analysed
	Aligned     bool

	Hists     [][]uint64   // per analysed chunk, 2^ExpBits bins (aligned when Aligned)
	Points    [][2]float64 // PCA projection of the chunks' normalised histograms (weighted by values)
	Explained [2]float64   // weighted variance fraction of each component
	Assign    []int        // cluster of each analysed chunk
	Clusters  []Cluster    // K clusters, largest share first
	Elbow     []ElbowPoint // K = 1..MaxK (fewer when there are fewer chunks)

	// OwnBits is the mean bits per exponent when every chunk has its own
	// Huffman code (tables not counted), the floor that clustering
	// approaches as K grows; EntropyBits the chunks' mean order-0 entropy.
	OwnBits     float64
	EntropyBits float64
}

// Cluster is one group of chunks.
type Cluster struct {
	Hist    []uint64 // summed histogram of its chunks, 2^ExpBits bins
	Chunks  int
	Share   float64 // fraction of the analysed values
	Bits    float64 // bits per exponent of its chunks under its own table
	Lengths []uint8 // its Huffman code lengths, 2^ExpBits entries
}

// ElbowPoint is the coded size of the exponents with K tables.
type ElbowPoint struct {
	K        int
	Bits     float64 // bits per exponent, Huffman codes of at most DefaultMaxLen bits
	Entropy  float64 // bits per exponent at each cluster's ideal (cross-entropy) cost
	Clusters int     // non-empty clusters (≤ K)
}

// ErrNoFloats is returned by ChunkClusters when no tensor has a float type
// it understands.
var ErrNoFloats = errors.New("analysis: no float tensors")

// ChunkClusters cuts the tensors of tensors that have the most common float
// dtype into chunks of opt.ChunkValues values (a chunk never spans two
// tensors, as in the codec), reads a sample of at most opt.MaxChunks chunks
// and opt.MaxValues values, and clusters their exponent histograms.
// Clustering is k-means under the coding cost: a chunk joins the cluster
// whose (smoothed) summed histogram codes it in the fewest bits, starting
// from farthest-first seeds, so the result depends only on the input.
// Tensors of other dtypes are ignored (see ClusterView.DType).
func ChunkClusters(ctx context.Context, tensors []TensorData, opt ClusterOptions) (*ClusterView, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	opt.defaults()
	d, err := majorityFloat(tensors)
	if err != nil {
		return nil, err
	}
	l, _ := d.FloatLayout()
	v := &ClusterView{DType: d, ExpBits: l.Exp, ChunkValues: opt.ChunkValues, Aligned: opt.Align}
	if err := v.readHists(ctx, tensors, opt); err != nil {
		return nil, err
	}
	used, cnt := v.project()
	v.ownTables()
	r, k, err := v.elbow(ctx, cnt, opt)
	if err != nil {
		return nil, err
	}
	v.cluster(r, k, used)
	return v, nil
}

// defaults fills in the zero fields.
func (opt *ClusterOptions) defaults() {
	if opt.ChunkValues <= 0 {
		opt.ChunkValues = DefaultClusterChunk
	}
	if opt.K <= 0 {
		opt.K = 1
	}
	if opt.MaxK <= 0 {
		opt.MaxK = DefaultClusterMaxK
	}
	if opt.MaxK < opt.K {
		opt.MaxK = opt.K
	}
	if opt.MaxValues <= 0 {
		opt.MaxValues = DefaultClusterMaxValues
	}
	if opt.MaxChunks <= 0 {
		opt.MaxChunks = DefaultClusterMaxChunks
	}
}

// majorityFloat is the float dtype with the most values.
func majorityFloat(tensors []TensorData) (dtype.DType, error) {
	count := map[dtype.DType]int64{}
	for _, t := range tensors {
		if _, ok := t.DType.FloatLayout(); ok && t.DType.Size() > 0 {
			count[t.DType] += t.Length / int64(t.DType.Size())
		}
	}
	var d dtype.DType
	var best int64
	for k, n := range count {
		if n > best || (n == best && k < d) {
			d, best = k, n
		}
	}
	if best == 0 {
		return dtype.Invalid, ErrNoFloats
	}
	return d, nil
}

// readHists reads an evenly spaced sample of the chunks of v.DType into
// v.Hists.
func (v *ClusterView) readHists(ctx context.Context, tensors []TensorData, opt ClusterOptions) error {
	d := v.DType
	size := int64(d.Size())
	type chunk struct {
		t        int
		off, len int64 // bytes
	}
	var all []chunk
	cb := int64(opt.ChunkValues) * size
	for i, t := range tensors {
		if t.DType != d {
			continue
		}
		n := t.Length / size * size
		for off := int64(0); off < n; off += cb {
			all = append(all, chunk{i, t.Offset + off, min(cb, n-off)})
		}
		v.TotalValues += n / size
	}
	v.TotalChunks = len(all)
	// evenly spaced sample
	take := len(all)
	if take > opt.MaxChunks {
		take = opt.MaxChunks
	}
	if per := int64(opt.ChunkValues); int64(take)*per > opt.MaxValues {
		take = int(max(1, opt.MaxValues/per))
	}
	picked := all
	if take < len(all) {
		v.Sampled = true
		picked = make([]chunk, take)
		for i := range picked {
			picked[i] = all[int(int64(i)*int64(len(all))/int64(take))]
		}
	}
	v.Chunks = len(picked)
	buf := make([]byte, cb)
	for _, c := range picked {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := buf[:c.len]
		if _, err := tensors[c.t].R.ReadAt(b, c.off); err != nil && !(err == io.EOF) {
			return fmt.Errorf("analysis: tensor %q: %w", tensors[c.t].Name, err)
		}
		st, _ := Float(d, b)
		h := st.Hist
		if opt.Align {
			h = alignHist(h)
		}
		v.Hists = append(v.Hists, h)
		v.Values += st.Values
	}
	if v.Values == 0 {
		return ErrNoFloats
	}
	return nil
}

// project compacts the bins any chunk uses and places the chunks by PCA
// (v.Points); it returns the bins used and each chunk's counts in them.
func (v *ClusterView) project() (used []int, cnt [][]float64) {
	bins := 1 << v.ExpBits
	for j := 0; j < bins; j++ {
		for _, h := range v.Hists {
			if h[j] != 0 {
				used = append(used, j)
				break
			}
		}
	}
	pts := make([][]float64, len(v.Hists))
	wts := make([]float64, len(v.Hists))
	cnt = make([][]float64, len(v.Hists))
	for i, h := range v.Hists {
		p := make([]float64, len(used))
		c := make([]float64, len(used))
		var n float64
		for j, b := range used {
			c[j] = float64(h[b])
			n += c[j]
		}
		for j := range p {
			if n > 0 {
				p[j] = c[j] / n
			}
		}
		pts[i], cnt[i], wts[i] = p, c, n
	}
	// weighted by values: the short tails of tensors do not set the axes
	v.Points, v.Explained = PCA2Weighted(pts, wts)
	return used, cnt
}

// ownTables sets OwnBits and EntropyBits: each chunk with a table of its own.
func (v *ClusterView) ownTables() {
	var ownBits, entBits float64
	for _, h := range v.Hists {
		ownBits += huffBits(h, HuffmanLengths(u64f(h), 0))
		entBits += Entropy(h) * float64(sum64(h))
	}
	v.OwnBits = ownBits / float64(v.Values)
	v.EntropyBits = entBits / float64(v.Values)
}

// elbow clusters the chunks for K = 1..MaxK, two at a time (v.Elbow), and
// returns the clustering for opt.K and that K.
func (v *ClusterView) elbow(ctx context.Context, cnt [][]float64, opt ClusterOptions) (kmeansResult, int, error) {
	maxK := min(opt.MaxK, len(v.Hists))
	results := make([]kmeansResult, maxK+1)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for k := 1; k <= maxK; k++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(k int) {
			defer wg.Done()
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			results[k] = kmeansCost(ctx, cnt, k)
		}(k)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return kmeansResult{}, 0, err
	}
	for k := 1; k <= maxK; k++ {
		r := results[k]
		v.Elbow = append(v.Elbow, ElbowPoint{K: k, Bits: r.huffBits / float64(v.Values), Entropy: r.xentBits / float64(v.Values), Clusters: r.nonEmpty})
	}
	k := min(opt.K, len(v.Hists))
	r := results[k]
	if k > maxK || r.assign == nil {
		r = kmeansCost(ctx, cnt, k)
	}
	return r, k, nil
}

// cluster sets v.Clusters (in full bins, largest share first) and
// v.Assign from the clustering r into k clusters.
func (v *ClusterView) cluster(r kmeansResult, k int, used []int) {
	bins := 1 << v.ExpBits
	cl := make([]Cluster, k)
	for i := range cl {
		cl[i].Hist = make([]uint64, bins)
	}
	for i, a := range r.assign {
		cl[a].Chunks++
		for j, x := range v.Hists[i] {
			cl[a].Hist[j] += x
		}
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	for i := range cl {
		n := sum64(cl[i].Hist)
		cl[i].Share = float64(n) / float64(v.Values)
		cl[i].Lengths = make([]uint8, bins)
		if n == 0 {
			continue
		}
		// the table codes every bin any chunk uses, as in the k-means cost
		sm := make([]float64, bins)
		for _, b := range used {
			sm[b] = float64(cl[i].Hist[b]) + smoothing
		}
		cl[i].Lengths = HuffmanLengths(sm, 0)
		cl[i].Bits = huffBits(cl[i].Hist, cl[i].Lengths) / float64(n)
	}
	// stable sort by share, descending
	for i := 1; i < k; i++ {
		for j := i; j > 0 && cl[order[j]].Share > cl[order[j-1]].Share; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	rank := make([]int, k)
	for newIdx, old := range order {
		rank[old] = newIdx
		v.Clusters = append(v.Clusters, cl[old])
	}
	v.Assign = make([]int, len(r.assign))
	for i, a := range r.assign {
		v.Assign[i] = rank[a]
	}
}

// smoothing is added to every used bin of a cluster's histogram before its
// code is built, so that every chunk is codable with every table.
const smoothing = 0.5

// alignHist rotates bins 1..len-2 so that the most frequent of them lands
// on the bias (len/2-1); bins shifted past either end pile up at the end.
func alignHist(h []uint64) []uint64 {
	n := len(h)
	out := make([]uint64, n)
	if n < 4 {
		copy(out, h)
		return out
	}
	mode := 1
	for j := 1; j < n-1; j++ {
		if h[j] > h[mode] {
			mode = j
		}
	}
	shift := n/2 - 1 - mode
	out[0], out[n-1] = h[0], h[n-1]
	for j := 1; j < n-1; j++ {
		t := min(max(j+shift, 1), n-2)
		out[t] += h[j]
	}
	return out
}

type kmeansResult struct {
	assign   []int
	huffBits float64 // total bits with each cluster's Huffman code
	xentBits float64 // total bits at each cluster's smoothed probabilities
	nonEmpty int
}

// kmeansCost clusters the chunks (counts over the compact bins) into k
// groups under the coding cost.
func kmeansCost(ctx context.Context, cnt [][]float64, k int) kmeansResult {
	n := len(cnt)
	d := len(cnt[0])
	logp := make([][]float64, k)
	for i := range logp {
		logp[i] = make([]float64, d)
	}
	setCentre := func(c int, sum []float64) {
		var tot float64
		for _, x := range sum {
			tot += x + smoothing
		}
		for j, x := range sum {
			logp[c][j] = -math.Log2((x + smoothing) / tot)
		}
	}
	cost := func(i, c int) float64 {
		var s float64
		lp := logp[c]
		for j, x := range cnt[i] {
			if x != 0 {
				s += x * lp[j]
			}
		}
		return s
	}
	// farthest-first seeds: the largest chunk, then the chunk worst coded
	// by the seeds so far
	first := 0
	var big float64
	for i, c := range cnt {
		var s float64
		for _, x := range c {
			s += x
		}
		if s > big {
			first, big = i, s
		}
	}
	setCentre(0, cnt[first])
	best := make([]float64, n)
	assign := make([]int, n)
	for i := range cnt {
		best[i] = cost(i, 0)
	}
	for c := 1; c < k; c++ {
		// the chunk that costs the most bits under the seeds so far (in
		// total, so that large, badly served chunks seed clusters rather
		// than the odd tiny tail of a tensor)
		worst := 0
		for i := range cnt {
			if best[i]-ownCost(cnt[i]) > best[worst]-ownCost(cnt[worst]) {
				worst = i
			}
		}
		setCentre(c, cnt[worst])
		for i := range cnt {
			if x := cost(i, c); x < best[i] {
				best[i], assign[i] = x, c
			}
		}
	}
	sums := make([][]float64, k)
	for i := range sums {
		sums[i] = make([]float64, d)
	}
	for it := 0; it < 25; it++ {
		if ctx.Err() != nil {
			break
		}
		members := sumClusters(sums, assign, cnt)
		for c := 0; c < k; c++ {
			if members[c] > 0 {
				setCentre(c, sums[c])
			}
		}
		changed := 0
		for i := range cnt {
			b, bc := math.Inf(1), assign[i]
			for c := 0; c < k; c++ {
				if members[c] == 0 {
					continue
				}
				if x := cost(i, c); x < b {
					b, bc = x, c
				}
			}
			if bc != assign[i] {
				assign[i] = bc
				changed++
			}
		}
		if changed == 0 {
			break
		}
	}
	// final cost with Huffman codes of the summed histograms
	members := sumClusters(sums, assign, cnt)
	r := kmeansResult{assign: assign}
	lens := make([][]uint8, k)
	for c := 0; c < k; c++ {
		if members[c] == 0 {
			continue
		}
		r.nonEmpty++
		setCentre(c, sums[c])
		sm := make([]float64, d)
		for j, x := range sums[c] {
			sm[j] = x + smoothing
		}
		lens[c] = HuffmanLengths(sm, 0)
	}
	for i, a := range assign {
		r.xentBits += cost(i, a)
		for j, x := range cnt[i] {
			r.huffBits += x * float64(lens[a][j])
		}
	}
	return r
}

// ownCost is the chunk's size at its own entropy: what the best possible
// table would cost, so best-ownCost is what the seeds lose on it.
func ownCost(c []float64) float64 {
	var n float64
	for _, x := range c {
		n += x
	}
	var bits float64
	for _, x := range c {
		if x > 0 {
			bits -= x * math.Log2(x/n)
		}
	}
	return bits
}

func u64f(h []uint64) []float64 {
	f := make([]float64, len(h))
	for i, x := range h {
		f[i] = float64(x)
	}
	return f
}

func sum64(h []uint64) uint64 {
	var s uint64
	for _, x := range h {
		s += x
	}
	return s
}

// huffBits is Σ h[i]·lengths[i].
func huffBits(h []uint64, lengths []uint8) float64 {
	var s float64
	for i, x := range h {
		if i < len(lengths) {
			s += float64(x) * float64(lengths[i])
		}
	}
	return s
}

// HuffmanBits is the mean code length in bits per symbol of an optimal
// length-limited (DefaultMaxLen) prefix code built for hist itself: the
// cost of coding a histogram with its own Huffman table, table not counted.
func HuffmanBits(hist []uint64) float64 {
	n := sum64(hist)
	if n == 0 {
		return 0
	}
	return huffBits(hist, HuffmanLengths(u64f(hist), 0)) / float64(n)
}

// sumClusters sets sums[c] to the sum of the histograms cnt[i] assigned to
// cluster c and returns each cluster's member count.
func sumClusters(sums [][]float64, assign []int, cnt [][]float64) []int {
	for c := range sums {
		clear(sums[c])
	}
	members := make([]int, len(sums))
	for i, a := range assign {
		members[a]++
		for j, x := range cnt[i] {
			sums[a][j] += x
		}
	}
	return members
}
