package codec

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"

	"neuralzip/codec/huff"
	"neuralzip/codec/search"
	"neuralzip/dtype"
)

// SetupOptions configures BuildSetup. The zero value is ready to use.
type SetupOptions struct {
	// K is the number of clusters (tables) per dtype; 0 chooses it: the
	// smallest count, up to MaxK, from which one more cluster would gain
	// less than MinGain of the sample's coded size.
	K       int
	MaxK    int     // 0 means DefaultSetupMaxK
	MinGain float64 // 0 means DefaultSetupMinGain
	// ChunkValues is the chunk size the sample is cut into (0 means
	// DefaultChunkValues); encode with the same chunk size for best results.
	ChunkValues int
	// Sample is the fraction of chunks sampled (0 means all, up to
	// MaxSampleValues values per dtype).
	Sample          float64
	MaxSampleValues int // 0 means 1<<25
	// PairBias: a cluster codes pairs when their cost on the sample is at
	// most (1+PairBias) times the singles cost (pairs decode faster).
	// 0 means DefaultSetupPairBias; negative values turn pairs off.
	PairBias float64
	// Cluster is the clustering method: ClusterAgglomerative (the
	// default) or ClusterKMeans.
	Cluster string
	// PlaneMinGain: a residual plane is stored packed, without trying an
	// entropy code, when coding it saved less than this fraction of its
	// packed size on the sample. 0 means DefaultSetupPlaneMinGain;
	// negative values keep every plane adaptive.
	PlaneMinGain float64
	Builder      string // recorded in the setup
	// Prior, when above 0, learns the setup's search prior (Setup.Prior)
	// from up to this many of the inputs' searchable tensors, an even
	// spread in file order: each is searched with every candidate and
	// under the new tables, and the winner is counted: 1 plus the per
	// mille of the tensor's bytes it saved against the encoder's own
	// choice. 0 learns none (the setup file stays version 2).
	Prior int

	ctx context.Context // BuildSetup's: cancels the build
}

// Defaults of SetupOptions, chosen by measurement on ../shared (README,
// "Setups"): agglomerative clustering codes the corpus better than k-means
// for every K tried, and the gain keeps growing up to some 40 tables, each
// adding well under 0.1 % on the sample.
const (
	DefaultSetupMaxK    = 64
	DefaultSetupMinGain = 0.0001
	// DefaultSetupPairBias: pairs decode faster, so a cluster takes them
	// when they cost at most 1 % more than singles on the sample.
	DefaultSetupPairBias = 0.01
	// DefaultSetupPlaneMinGain: a plane whose entropy code saved less than
	// 0.2 % of its bytes on the sample is stored packed (at most 0.1 % of
	// a BF16 file, whose planes are half of it; skipping the code trials
	// makes compression faster).
	DefaultSetupPlaneMinGain = 0.002
)

// Clustering methods of SetupOptions.Cluster.
const (
	// ClusterKMeans grows the clusters one at a time: the chunk its
	// table fits worst seeds a new cluster, then k-means with coding cost
	// as the distance settles the assignment.
	ClusterKMeans = "kmeans"
	// ClusterAgglomerative starts with one cluster per chunk (at most
	// maxAggloChunks, an even spread) and merges the pair whose merge
	// raises the ideal coded size least, until K remain; k-means then
	// polishes the result on all chunks.
	ClusterAgglomerative = "agglomerative"
)

func (o *SetupOptions) defaults() {
	if o.MaxK == 0 {
		o.MaxK = DefaultSetupMaxK
	}
	if o.MinGain == 0 {
		o.MinGain = DefaultSetupMinGain
	}
	if o.ChunkValues == 0 {
		o.ChunkValues = DefaultChunkValues
	}
	if o.MaxSampleValues == 0 {
		o.MaxSampleValues = 1 << 25
	}
	if o.PairBias == 0 {
		o.PairBias = DefaultSetupPairBias
	}
	if o.PlaneMinGain == 0 {
		o.PlaneMinGain = DefaultSetupPlaneMinGain
	}
	if o.Builder == "" {
		o.Builder = "neuralzip codec"
	}
	if o.Cluster == "" {
		o.Cluster = ClusterAgglomerative
	}
}

// cancelled reports whether the build's context is done.
func (o *SetupOptions) cancelled() bool { return o.ctx != nil && o.ctx.Err() != nil }

// sampleChunk is one sampled chunk's aligned symbols and histogram.
type sampleChunk struct {
	syms []byte
	hist [256]uint32
}

// BuildSetup samples the float tensors of the inputs and builds a setup:
// per dtype, the chunks are clustered by coding cost and each cluster gets a
// Huffman table over single symbols or symbol pairs. Cancelling ctx (nil:
// it runs to the end) stops the build with the context's error.
func BuildSetup(ctx context.Context, inputs []Input, opt SetupOptions) (*Setup, error) {
	opt.defaults()
	opt.ctx = ctx
	if opt.ChunkValues < MinChunkValues || opt.ChunkValues > MaxChunkValues {
		return nil, fmt.Errorf("codec: setup chunk size %d outside %d..%d", opt.ChunkValues, MinChunkValues, MaxChunkValues)
	}
	if opt.K < 0 || opt.K > maxSetupTables || opt.MaxK < 1 || opt.MaxK > maxSetupTables || opt.Sample < 0 || opt.Sample > 1 {
		return nil, errors.New("codec: setup options out of range")
	}
	if opt.Cluster != ClusterKMeans && opt.Cluster != ClusterAgglomerative {
		return nil, fmt.Errorf("codec: unknown clustering method %q (want %q or %q)", opt.Cluster, ClusterKMeans, ClusterAgglomerative)
	}
	type block struct {
		in   int
		plan blockPlan
	}
	byType := map[dtype.DType][]block{}
	s := &Setup{ChunkValues: opt.ChunkValues, Builder: opt.Builder}
	for i, in := range inputs {
		plans, err := planBlocks(in.Segments, in.Size, opt.ChunkValues, nil)
		if err != nil {
			return nil, fmt.Errorf("codec: input %q: %w", in.Name, err)
		}
		for _, p := range plans {
			if _, ok := specFor(p.dtype); p.float && ok {
				byType[p.dtype] = append(byType[p.dtype], block{i, p})
			}
		}
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(in.R, 0, in.Size)); err != nil {
			return nil, fmt.Errorf("codec: input %q: %w", in.Name, err)
		}
		src := SetupSource{Name: in.Name, Size: in.Size, Format: in.Format}
		copy(src.SHA256[:], h.Sum(nil))
		s.Sources = append(s.Sources, src)
	}
	types := make([]dtype.DType, 0, len(byType))
	for d := range byType {
		types = append(types, d)
	}
	slices.Sort(types)
	for _, d := range types {
		blocks := byType[d]
		f, _ := specFor(d)
		// deterministic sample: every block when Sample is 0, else an even
		// spread; then at most MaxSampleValues values
		var total int64
		var picked []block
		for i, b := range blocks {
			if opt.Sample > 0 && int(float64(i+1)*opt.Sample) == int(float64(i)*opt.Sample) {
				continue
			}
			picked = append(picked, b)
			total += b.plan.length / int64(f.size)
		}
		if limit := int64(opt.MaxSampleValues); total > limit {
			step := float64(total) / float64(limit)
			var keep []block
			for i, b := range picked {
				if int(float64(i+1)/step) != int(float64(i)/step) {
					keep = append(keep, b)
				}
			}
			picked = keep
		}
		// read the sample; the join width is chosen on all of it
		raws := make([][]byte, len(picked))
		var st fieldStats
		var n int
		for i, b := range picked {
			if opt.cancelled() {
				return nil, opt.ctx.Err()
			}
			buf := make([]byte, b.plan.length)
			if err := readFull(inputs[b.in].R, buf, b.plan.off); err != nil {
				return nil, err
			}
			raws[i] = buf
			if f.maxJoin() > 0 {
				var bst fieldStats
				statsGeneric(buf, len(buf)/f.size, f, &bst)
				st.jmax = bst.jmax
				st.orR |= bst.orR
				for k, c := range bst.top {
					st.top[k] += c
				}
			}
			n += len(buf) / f.size
		}
		if f.maxJoin() > 0 {
			f.j, _ = chooseJoin(&st, f, n)
		}
		chunks := make([]sampleChunk, len(raws))
		// per residual plane and sample chunk: the sampled entropy as a
		// fraction of the width, and the bytes coding saved
		var obs [8][]planeObs
		var pe blockEncoder
		var pbuf []byte
		for i, raw := range raws {
			cn := len(raw) / f.size
			c := &chunks[i]
			c.syms = make([]byte, cn)
			planes := make([][]byte, f.planes())
			for p := range planes {
				planes[p] = make([]byte, cn)
			}
			splitGeneric(raw, cn, f, c.syms, planes, &c.hist)
			for p, pl := range planes {
				w := f.planeW(p)
				packed := int64(packedLen(cn, w)) + 1
				pbuf = pe.appendPlane(pbuf[:0], pl, w)
				bits, n, _, _ := pe.planeEntropy(pl, true)
				obs[p] = append(obs[p], planeObs{q: bits / (float64(n) * float64(w)), packed: packed, saved: packed - int64(len(pbuf))})
			}
			if f.j == 0 && f.symW() >= 3 {
				// align: the chunk's most frequent symbol goes to the middle
				w := f.symW()
				fwd, _ := rotation(modeOf(&c.hist, w)-(1<<(w-1)-1), w)
				for k, x := range c.syms {
					c.syms[k] = fwd[x]
				}
				var h [256]uint32
				for sym, n := range c.hist {
					h[fwd[sym]] += n
				}
				c.hist = h
			}
		}
		if len(chunks) == 0 {
			continue
		}
		if opt.cancelled() {
			return nil, opt.ctx.Err()
		}
		tables := clusterChunks(chunks, f.symW(), opt)
		if opt.cancelled() {
			return nil, opt.ctx.Err()
		}
		sec := &SetupSection{DType: d, Join: f.j, Tables: tables}
		if opt.PlaneMinGain >= 0 {
			cuts := make([]uint8, f.planes())
			any := false
			for p := range cuts {
				cuts[p] = planeCut(obs[p], opt.PlaneMinGain)
				any = any || cuts[p] != 0
			}
			if any {
				sec.PlaneCuts = cuts
			}
		}
		s.Sections = append(s.Sections, sec)
	}
	if len(s.Sections) == 0 {
		return nil, errors.New("codec: no float tensors to build a setup from")
	}
	if err := s.finish(); err != nil {
		return nil, err
	}
	if opt.Prior > 0 {
		pr, err := learnPrior(inputs, s, opt)
		if err != nil {
			return nil, err
		}
		if pr.Len() > 0 {
			s.Prior = pr
			if err := s.finish(); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// learnPrior searches up to opt.Prior of the inputs' searchable tensors
// (an even spread) with every candidate, under setup s, and counts each
// winner with its parents, weighted by what it saved.
func learnPrior(inputs []Input, s *Setup, opt SetupOptions) (*search.Prior, error) {
	type tensor struct {
		in int
		g  Segment
	}
	eopt := EncodeOptions{Setup: s, ChunkValues: opt.ChunkValues}
	var all []tensor
	for i, in := range inputs {
		for _, g := range in.Segments {
			if searchable(g, &eopt) && g.Offset >= 0 && g.Offset+g.Length <= in.Size {
				all = append(all, tensor{i, g})
			}
		}
	}
	picked := all
	if len(all) > opt.Prior {
		picked = picked[:0:0]
		for j := range opt.Prior {
			picked = append(picked, all[j*len(all)/opt.Prior])
		}
	}
	pr := &search.Prior{}
	for _, t := range picked {
		if opt.cancelled() {
			return nil, opt.ctx.Err()
		}
		o := eopt
		var err error
		if o.arch, err = archProbeOf(inputs[t.in], &o); err != nil {
			return nil, err
		}
		rep, err := searchTensor(inputs[t.in].R, t.g, o, nil, 1<<16)
		if err != nil {
			return nil, fmt.Errorf("codec: learning the prior on %q: %w", t.g.Name, err)
		}
		pr.AddPathN(rep.Key, rep.Candidates, choiceOf(rep.Best), rep.Weight())
	}
	return pr, nil
}

// planeObs is one sample chunk's residual plane: its sampled entropy as a
// fraction of the plane's width, its packed size and what coding saved.
type planeObs struct {
	q             float64
	packed, saved int64
}

// planeCut is the lowest cut c (in 1/256 of the width, at most 252) such
// that the chunks it would store packed (q >= c/256) saved together less
// than gain of all chunks' packed bytes when coded, and none of them saved
// planeChunkPays of its own bytes; it stays at or above the lowest q of the
// sample and planeCutMin. A model with compressible planes must not lose
// them to a setup built where there were none: planes that paid anywhere on
// the sample, planes more skewed than any seen and planes below 0.75 of
// their width are always tried. 0 when even the default cut (0.985, about
// 252) fails that.
func planeCut(obs []planeObs, gain float64) uint8 {
	var total int64
	lowest := 252
	for _, o := range obs {
		total += o.packed
		lowest = min(lowest, int(o.q*256))
	}
	budget := int64(gain * 1e6) // integer comparison: saved*1e6 < budget*total
	cut := uint8(0)
	var saved int64
	for c := 252; c >= max(lowest, planeCutMin); c-- {
		saved = 0
		for _, o := range obs {
			if o.q >= float64(c)/256 {
				if o.saved*planeChunkPays >= o.packed {
					return cut
				}
				saved += o.saved
			}
		}
		if saved*1_000_000 >= budget*total {
			break
		}
		cut = uint8(c)
	}
	return cut
}

// planeChunkPays: a sample chunk whose plane coding saved 1/planeChunkPays
// of the plane (1 %) shows that planes like it pay. planeCutMin: the lowest
// cut (0.75 of the width; planes with less entropy are always tried).
const (
	planeChunkPays = 100
	planeCutMin    = 192
)

// escCount is the pseudo-count of the escape code in a table built from a
// sample of total symbols: rare enough to cost little, present so that any
// symbol can be coded.
func escCount(total uint64, escapes uint64) uint32 {
	return uint32(min(escapes+1+total>>16, 1<<31))
}

// singlesTable builds a table with a singles code for an aligned histogram.
func singlesTable(h *[256]uint64) *SetupTable {
	t := &SetupTable{}
	var total uint64
	for s, c := range h {
		if c != 0 {
			t.Alphabet = append(t.Alphabet, byte(s))
			total += c
		}
	}
	if len(t.Alphabet) > 255 { // keep room for the escape
		t.Alphabet = t.Alphabet[:255]
	}
	var codes [256]uint32
	for i, s := range t.Alphabet {
		codes[i] = uint32(min(h[s], 1<<31))
	}
	codes[len(t.Alphabet)] = escCount(total, 0)
	t.Lengths = codeLengths(&codes, len(t.Alphabet)+1)
	t.Centroid = *h
	return t
}

// codeLengths returns Huffman code lengths for the first n counts (all of
// which get a code).
func codeLengths(counts *[256]uint32, n int) []uint8 {
	var h [256]uint32
	for i := 0; i < n; i++ {
		h[i] = max(counts[i], 1)
	}
	var ht huff.Table
	out := make([]uint8, n)
	if n < 2 {
		return nil // a complete code needs two codes
	}
	if err := ht.Build(&h); err != nil {
		return nil
	}
	copy(out, ht.Lens[:n])
	return out
}

// clusterChunks groups chunks by coding cost (k-means with the cost of a
// chunk under a table as the distance) and returns one table per cluster.
func clusterChunks(chunks []sampleChunk, symW uint, opt SetupOptions) []*SetupTable {
	// cost of every chunk under a table
	assign := make([]int, len(chunks))
	tableFor := func(members []int) *SetupTable {
		var h [256]uint64
		for _, i := range members {
			for s, c := range chunks[i].hist {
				h[s] += uint64(c)
			}
		}
		t := singlesTable(&h)
		t.Chunks = len(members)
		if t.prepare(symW) != nil {
			return nil
		}
		return t
	}
	members := func(k int) [][]int {
		m := make([][]int, k)
		for i, a := range assign {
			m[a] = append(m[a], i)
		}
		return m
	}
	totalCost := func(tables []*SetupTable) (uint64, []uint64) {
		var tot uint64
		per := make([]uint64, len(chunks))
		for i := range chunks {
			best := ^uint64(0)
			for j, t := range tables {
				if c := t.costShifted(&chunks[i].hist, 0, symW); c < best {
					best, assign[i] = c, j
				}
			}
			per[i] = best
			tot += best
		}
		return tot, per
	}
	// k-means from the given tables until the assignment settles
	refine := func(tables []*SetupTable) ([]*SetupTable, uint64) {
		cost, _ := totalCost(tables)
		for it := 0; it < 20 && !opt.cancelled(); it++ {
			var next []*SetupTable
			for _, m := range members(len(tables)) {
				if len(m) == 0 {
					continue
				}
				if t := tableFor(m); t != nil {
					next = append(next, t)
				}
			}
			c, _ := totalCost(next)
			if c >= cost {
				break
			}
			tables, cost = next, c
		}
		totalCost(tables) // leave assign consistent with tables
		return tables, cost
	}
	all := make([]int, len(chunks))
	for i := range all {
		all[i] = i
	}
	var tables []*SetupTable
	var cost uint64
	target := opt.K
	if opt.Cluster == ClusterAgglomerative {
		for _, g := range agglomerate(chunks, opt) {
			if t := tableFor(g); t != nil {
				tables = append(tables, t)
			}
		}
		tables, cost = refine(tables)
		target = len(tables) // no growing below
	} else {
		tables, cost = refine([]*SetupTable{tableFor(all)})
	}
	for ((target == 0 && len(tables) < opt.MaxK) || len(tables) < target) && !opt.cancelled() {
		// seed a new cluster with the chunk that its current table fits
		// worst relative to its own entropy
		_, per := totalCost(tables)
		worst, worstExcess := -1, -1.0
		for i := range chunks {
			n := 0
			for _, c := range chunks[i].hist {
				n += int(c)
			}
			hb, _ := entropyBits(&chunks[i].hist, n)
			if ex := float64(per[i]) - hb; ex > worstExcess {
				worst, worstExcess = i, ex
			}
		}
		seed := tableFor([]int{worst})
		if seed == nil {
			break
		}
		cand, c := refine(append(slices.Clone(tables), seed))
		if target == 0 && float64(cost-min(c, cost)) < opt.MinGain*float64(cost) {
			break
		}
		if len(cand) <= len(tables) {
			break // the seed did not survive
		}
		tables, cost = cand, c
	}
	// the final tables, with the pair decision per cluster
	totalCost(tables)
	var out []*SetupTable
	for j, m := range members(len(tables)) {
		if len(m) == 0 {
			continue
		}
		t := tables[j]
		t.Chunks = len(m) // the final assignment (the table may be from an earlier one)
		pairTableFor(chunks, m, t, symW, opt.PairBias)
		out = append(out, t)
	}
	return out
}

// pairTableFor adds a pairs code to a cluster's table when it codes the
// cluster's sample within the bias of the singles code; it reports whether
// it did.
func pairTableFor(chunks []sampleChunk, members []int, t *SetupTable, symW uint, bias float64) bool {
	var h [256]uint32
	for s, c := range t.Centroid {
		h[s] = uint32(min(c, 1<<31))
	}
	top := topSymbols(&h, nil)
	k := len(top)
	if k < 2 {
		return false
	}
	pc := new([65536]byte)
	for a, x := range top {
		for b, y := range top {
			pc[uint16(x)|uint16(y)<<8] = byte(a*k+b) + 1
		}
	}
	esc := byte(k * k)
	var codeHist [256]uint32
	var excSyms, singlesBits uint64
	var codes, exc []byte
	for _, i := range members {
		c := &chunks[i]
		m := len(c.syms) / 2
		if cap(codes) < m {
			codes = make([]byte, m)
		}
		codes = codes[:m]
		exc = pairize(codes, c.syms, pc, esc, exc[:0])
		for _, x := range codes {
			codeHist[x]++
		}
		excSyms += uint64(len(exc))
		singlesBits += t.costShifted(&c.hist, 0, symW)
	}
	var total uint64
	for _, c := range codeHist {
		total += uint64(c)
	}
	// pair codes seen in the sample get a code, the others escape; the
	// escape itself always has one
	n := k*k + 1
	var counts [256]uint32
	copy(counts[:], codeHist[:k*k])
	counts[k*k] = escCount(total, uint64(codeHist[esc]))
	var h2 [256]uint32
	idx := make([]int, 0, n)
	for c := 0; c < n; c++ {
		if counts[c] != 0 {
			h2[len(idx)] = counts[c]
			idx = append(idx, c)
		}
	}
	lens := codeLengths(&h2, len(idx))
	if lens == nil {
		return false
	}
	pl := make([]uint8, n)
	for i, c := range idx {
		pl[c] = lens[i]
	}
	var pairBits uint64
	for c, cnt := range codeHist {
		if cnt != 0 && c < n {
			pairBits += uint64(cnt) * uint64(pl[c])
		}
	}
	pairBits += excSyms * uint64(symW)
	if float64(pairBits) > float64(singlesBits)*(1+bias) {
		return false
	}
	t.PairTop, t.PairLengths = top, pl
	return true
}

// maxAggloChunks bounds the chunks agglomerative clustering starts from
// (its cost grows with their square).
const maxAggloChunks = 1024

// agglomerate clusters chunks bottom-up: starting from one cluster per
// chunk (an even spread of at most maxAggloChunks), it repeatedly merges
// the two clusters whose merge raises the sum of their ideal (entropy)
// coded sizes least. With opt.K = 0 it stops at the smallest count K ≤
// opt.MaxK at which one more cluster would gain less than opt.MinGain of
// the coded size; otherwise at opt.K. It returns the clusters as lists of
// chunk indices into chunks (chunks left out of the spread join none: the
// k-means that follows assigns them).
func agglomerate(chunks []sampleChunk, opt SetupOptions) [][]int {
	idx := make([]int, 0, min(len(chunks), maxAggloChunks))
	if len(chunks) <= maxAggloChunks {
		for i := range chunks {
			idx = append(idx, i)
		}
	} else {
		for i := 0; i < maxAggloChunks; i++ {
			idx = append(idx, i*len(chunks)/maxAggloChunks)
		}
	}
	n := len(idx)
	type cluster struct {
		hist    [256]uint64
		cost    int64 // ideal coded size in bits, fixed point (log2Fixed)
		members []int
		alive   bool
		best    int // the partner of least merge cost, -1 if none
		bestInc int64
	}
	cl := make([]cluster, n)
	// integer arithmetic, so that the setup is the same on every platform
	entropyCost := func(h *[256]uint64) int64 {
		var tot, sum uint64
		for _, c := range h {
			if c != 0 {
				tot += c
				sum += c * log2Fixed(c)
			}
		}
		return int64(tot*log2Fixed(tot)) - int64(sum)
	}
	mergeInc := func(a, b int) int64 {
		var h [256]uint64
		for s := range h {
			h[s] = cl[a].hist[s] + cl[b].hist[s]
		}
		return entropyCost(&h) - cl[a].cost - cl[b].cost
	}
	findBest := func(a int) {
		cl[a].best, cl[a].bestInc = -1, 0
		for b := range cl {
			if b == a || !cl[b].alive {
				continue
			}
			if inc := mergeInc(a, b); cl[a].best < 0 || inc < cl[a].bestInc {
				cl[a].best, cl[a].bestInc = b, inc
			}
		}
	}
	var total int64
	for i, ci := range idx {
		for s, c := range chunks[ci].hist {
			cl[i].hist[s] = uint64(c)
		}
		cl[i].cost = entropyCost(&cl[i].hist)
		cl[i].members = []int{ci}
		cl[i].alive = true
		total += cl[i].cost
	}
	for i := range cl {
		findBest(i)
	}
	// costs[k] is the total ideal cost with k clusters; groups are
	// snapshotted once the count is small enough to be a candidate
	costs := make([]int64, n+1)
	costs[n] = total
	maxK := opt.MaxK
	if opt.K > 0 {
		maxK = opt.K
	}
	snap := map[int][][]int{}
	snapshot := func(k int) {
		var g [][]int
		for i := range cl {
			if cl[i].alive {
				g = append(g, slices.Clone(cl[i].members))
			}
		}
		snap[k] = g
	}
	if n <= maxK {
		snapshot(n)
	}
	for k := n; k > 1; k-- {
		if k%32 == 0 && opt.cancelled() {
			return [][]int{idx} // abandoned: BuildSetup returns the context's error
		}
		a := -1
		for i := range cl {
			if cl[i].alive && cl[i].best >= 0 && (a < 0 || cl[i].bestInc < cl[a].bestInc) {
				a = i
			}
		}
		b := cl[a].best
		for s := range cl[a].hist {
			cl[a].hist[s] += cl[b].hist[s]
		}
		total += cl[a].bestInc
		cl[a].cost = entropyCost(&cl[a].hist)
		cl[a].members = append(cl[a].members, cl[b].members...)
		cl[b].alive = false
		cl[b].members = nil
		for i := range cl {
			if cl[i].alive && (i == a || cl[i].best == a || cl[i].best == b) {
				findBest(i)
			} else if cl[i].alive && i != a {
				// a changed: it may now be i's best partner
				if inc := mergeInc(i, a); inc < cl[i].bestInc {
					cl[i].best, cl[i].bestInc = a, inc
				}
			}
		}
		costs[k-1] = total
		if k-1 <= maxK {
			snapshot(k - 1)
		}
	}
	if opt.K > 0 {
		return snap[min(opt.K, n)]
	}
	k := 1
	for k < min(maxK, n) && float64(costs[k]-costs[k+1]) >= opt.MinGain*float64(costs[k]) {
		k++
	}
	return snap[k]
}
