package codec

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"

	"neuralzip/dtype"
)

// SetupOptions configures BuildSetup. The zero value is ready to use.
type SetupOptions struct {
	// K is the number of clusters (tables) per dtype; 0 chooses it: clusters
	// are added while one more gains at least MinGain of the sample's coded
	// size, up to MaxK.
	K       int
	MaxK    int     // 0 means 16
	MinGain float64 // 0 means 0.001 (0.1 %)
	// ChunkValues is the chunk size the sample is cut into (0 means
	// DefaultChunkValues); encode with the same chunk size for best results.
	ChunkValues int
	// Sample is the fraction of chunks sampled (0 means all, up to
	// MaxSampleValues values per dtype).
	Sample          float64
	MaxSampleValues int // 0 means 1<<25
	// PairBias: a cluster codes pairs when their cost on the sample is at
	// most (1+PairBias) times the singles cost (pairs decode faster).
	// 0 means 0.01; negative values turn pairs off.
	PairBias float64
	Builder  string // recorded in the setup
}

func (o *SetupOptions) defaults() {
	if o.MaxK == 0 {
		o.MaxK = 16
	}
	if o.MinGain == 0 {
		o.MinGain = 0.001
	}
	if o.ChunkValues == 0 {
		o.ChunkValues = DefaultChunkValues
	}
	if o.MaxSampleValues == 0 {
		o.MaxSampleValues = 1 << 25
	}
	if o.PairBias == 0 {
		o.PairBias = 0.01
	}
	if o.Builder == "" {
		o.Builder = "neuralzip codec"
	}
}

// sampleChunk is one sampled chunk's aligned symbols and histogram.
type sampleChunk struct {
	syms []byte
	hist [256]uint32
}

// BuildSetup samples the float tensors of the inputs and builds a setup:
// per dtype, the chunks are clustered by coding cost and each cluster gets a
// Huffman table over single symbols or symbol pairs.
func BuildSetup(inputs []Input, opt SetupOptions) (*Setup, error) {
	opt.defaults()
	if opt.ChunkValues < MinChunkValues || opt.ChunkValues > MaxChunkValues {
		return nil, fmt.Errorf("codec: setup chunk size %d outside %d..%d", opt.ChunkValues, MinChunkValues, MaxChunkValues)
	}
	if opt.K < 0 || opt.K > maxSetupTables || opt.MaxK < 1 || opt.MaxK > maxSetupTables || opt.Sample < 0 || opt.Sample > 1 {
		return nil, errors.New("codec: setup options out of range")
	}
	type block struct {
		in   int
		plan blockPlan
	}
	byType := map[dtype.DType][]block{}
	s := &Setup{ChunkValues: opt.ChunkValues, Builder: opt.Builder}
	for i, in := range inputs {
		plans, err := planBlocks(in.Segments, in.Size, opt.ChunkValues)
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
		for i, raw := range raws {
			cn := len(raw) / f.size
			c := &chunks[i]
			c.syms = make([]byte, cn)
			planes := make([][]byte, f.planes())
			for p := range planes {
				planes[p] = make([]byte, cn)
			}
			splitGeneric(raw, cn, f, c.syms, planes, &c.hist)
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
		tables := clusterChunks(chunks, f.symW(), opt)
		s.Sections = append(s.Sections, &SetupSection{DType: d, Join: f.j, Tables: tables})
	}
	if len(s.Sections) == 0 {
		return nil, errors.New("codec: no float tensors to build a setup from")
	}
	if err := s.finish(); err != nil {
		return nil, err
	}
	return s, nil
}

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
	var ht huffTable
	out := make([]uint8, n)
	if n < 2 {
		return nil // a complete code needs two codes
	}
	if err := ht.build(&h); err != nil {
		return nil
	}
	copy(out, ht.lens[:n])
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
		for it := 0; it < 20; it++ {
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
	tables, cost := refine([]*SetupTable{tableFor(all)})
	target := opt.K
	for (target == 0 && len(tables) < opt.MaxK) || len(tables) < target {
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
