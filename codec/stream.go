package codec

import (
	"encoding/binary"

	"neuralzip/codec/huff"
)

// Symbol streams. Every field of a float block (exponent symbols, residual
// byte planes) is a stream of n symbols of a known width w ≤ 8; n and w come
// from the context, so a stream only records how it is coded:
//
//	mode 0 packed: packedLen(n, w) bytes, LSB-first
//	mode 1 const:  one byte, the symbol repeated n times
//	mode 2 huff1:  uvarint L, L bytes of a huff0 1X block (table + data)
//	mode 3 huff4:  uvarint L, L bytes of a huff0 4X block (table + data)
//	mode 4 pair1 / mode 5 pair4: pairs of symbols coded as one (below)
//
// Pair modes code the n/2 pairs (s[2i], s[2i+1]) as one byte each: with the
// k (1..15) most frequent symbols t[0..k-1], a pair of two of them is the
// code a*k+b (t[a], t[b]); every other pair is the escape code k*k and its
// two symbols go to an exception stream, which also holds the last symbol
// when n is odd. Layout:
//
//	u8 k, k bytes t, uvarint L, L bytes huff0 block of the n/2 codes
//	(1X for mode 4, 4X for mode 5), uvarint x, then the x exception
//	symbols as a nested stream (modes 0..3) of width w.
//
// Pairs halve the symbols huff0 has to decode and capture the correlation
// of neighbouring exponents.
const (
	minHuffSymbols = 32   // below this a stream is stored packed
	min4XSymbols   = 256  // from here on the 4-stream layout decodes faster (huff.Decoder)
	minPairSymbols = 8192 // below this pairs gain too little for a second table (ref_switch.go)
	pairSampleStep = 8    // appendSymbols ranks symbols by every 8th one
	minExcHuff     = 1024 // fewer exceptions than this are stored packed
)

// minPairStream is the fewest symbols of a stream for which the float
// coder also tries pair coding: below it the pair table's build, its
// header and the exceptions' coding cost more time than the pairs save
// bytes. Trying pairs from 8,192 symbols on instead took 11 % of
// real-bf16's one-thread compression (its many tensors of 4-32 Ki
// values: 819 against 918 MB/s) to save 0.02 % of the archive (1,530
// bytes; corpus-bf16 5,800, unseen-vision-bf16 6,600); larger streams keep
// them (a block of 64 Ki values is one stream).
const minPairStream = 32768

// streamEncoder holds the reusable state of one worker's stream coding.
type streamEncoder struct {
	single, pair huff.Table
	hist         [256]uint32
	hdr          []byte
	// pair coding state, filled by preparePairs
	codes      []byte
	exc        []byte
	excEnc     []byte
	codeHist   [256]uint32
	top        []byte
	excW       uint
	pc         *[65536]byte
	pcSet      []uint16
	sampleHist [256]uint32 // appendShared's half-sample histogram
	// shared-table state (appendWithTable), cached between blocks
	spc            *[65536]byte
	spcSet         []uint16
	spcTab         *SetupTable
	spcD           int
	spcW           uint
	rotFwd, rotInv [256]byte
	rotD           int
	rotW           uint
	rotOK          bool
	perm           *huff.Table
	// the nested encoder for exception streams
	inner *streamEncoder
	// lastMode is the mode of the last stream written (for tests)
	lastMode byte
}

// huffSize is the size of a huff0 block of n symbols whose data is bits
// long, given the header size: one end bit per stream and byte rounding,
// plus the jump table for 4 streams.
func huffSize(hdr int, bits int64, n int) int {
	if n >= min4XSymbols {
		return hdr + 6 + int(bits+4*8)/8
	}
	return hdr + int(bits+8)/8
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

const (
	pairsNone     = iota // do not consider pairs
	pairsCompute         // rank by the exact histogram and compute pair codes
	pairsPrepared        // preparePairs already ran
)

// appendStream appends the coded form of syms (each < 1<<w) to dst. hist must
// be the exact histogram of syms. Pair coding is considered when allowPairs.
// Every candidate's size is computed exactly, so only the chosen one is
// encoded.
func (e *streamEncoder) appendStream(dst, syms []byte, w uint, hist *[256]uint32, allowPairs bool) []byte {
	pairs := pairsNone
	if allowPairs && len(syms) >= minPairStream && pairCoverage(hist, len(syms)) {
		pairs = pairsCompute
	}
	return e.choose(dst, syms, w, hist, pairs)
}

// pairCoverage reports whether the most frequent symbols cover enough of
// the stream for pair coding to pay: with wide alphabets (exponents joined
// with mantissa bits) most pairs would escape.
func pairCoverage(hist *[256]uint32, n int) bool {
	var top [maxPairK]uint32
	for _, c := range hist {
		if c > top[maxPairK-1] {
			i := maxPairK - 1
			for i > 0 && top[i-1] < c {
				top[i] = top[i-1]
				i--
			}
			top[i] = c
		}
	}
	var cov uint64
	for _, c := range top {
		cov += uint64(c)
	}
	// the share of pairs with both symbols among the top must be ≥ 50 %
	return cov*cov*10 >= uint64(n)*uint64(n)*5
}

// appendSymbols is appendStream for a stream whose histogram is not known
// yet: the pair coding ranks symbols by a sample, and the exact histogram
// is then derived from the code histogram and the exceptions, which saves a
// counting pass over the symbols.
func (e *streamEncoder) appendSymbols(dst, syms []byte, w uint) []byte {
	n := len(syms)
	if n < minPairStream {
		countHist(&e.hist, syms)
		return e.choose(dst, syms, w, &e.hist, pairsNone)
	}
	var sh [256]uint32
	for i := 0; i < n; i += pairSampleStep {
		sh[syms[i]]++
	}
	e.preparePairs(syms, w, &sh)
	// exact histogram: pairs from the codes, the rest from the exceptions
	e.hist = [256]uint32{}
	k := len(e.top)
	for c, cnt := range e.codeHist[:k*k] {
		if cnt != 0 {
			e.hist[e.top[c/k]] += cnt
			e.hist[e.top[c%k]] += cnt
		}
	}
	for _, s := range e.exc {
		e.hist[s]++
	}
	return e.choose(dst, syms, w, &e.hist, pairsPrepared)
}

// choose picks the smallest coding of syms and appends it.
func (e *streamEncoder) choose(dst, syms []byte, w uint, hist *[256]uint32, pairs int) []byte {
	n := len(syms)
	raw := packedLen(n, w)
	distinct := 0
	for _, c := range hist {
		if c != 0 {
			distinct++
		}
	}
	if n > 0 && distinct == 1 {
		e.lastMode = smConst
		return append(dst, smConst, syms[0])
	}
	best, bestMode := raw, byte(smPacked)
	if n >= minHuffSymbols {
		if pairs == pairsCompute {
			e.preparePairs(syms, w, hist)
		}
		if pairs != pairsNone {
			if sz, ok := e.pairCost(); ok && sz < best {
				best, bestMode = sz, smPair1
			}
		}
		// Singles cannot code below their order-0 entropy (plus a header
		// of at least two bytes); build their table only when that bound
		// leaves them a chance.
		if hb, _ := entropyBits(hist, n); int(hb/8)+2 < best {
			if e.single.Build(hist) == nil {
				if h, err := e.single.AppendHeader(e.hdr[:0]); err == nil {
					e.hdr = h
					sz := huffSize(len(h), e.single.Cost(hist), n)
					sz += uvarintLen(uint64(sz))
					if sz < best {
						best, bestMode = sz, smHuff1
					}
				}
			}
		}
	}
	mark := len(dst)
	switch bestMode {
	case smHuff1:
		if out, ok := e.appendHuff(dst, &e.single, syms, smHuff1); ok {
			e.lastMode = out[mark]
			return out
		}
	case smPair1:
		if out, ok := e.appendPairs(dst); ok {
			e.lastMode = out[mark]
			return out
		}
	}
	e.lastMode = smPacked
	dst = append(dst, smPacked)
	return appendPacked(dst, syms, w)
}

// appendHuff appends mode (+1 for the 4X layout when long), uvarint size and
// the huff0 block of syms under table t.
func (e *streamEncoder) appendHuff(dst []byte, t *huff.Table, syms []byte, mode byte) ([]byte, bool) {
	x4 := len(syms) >= min4XSymbols
	if x4 {
		mode++
	}
	mark := len(dst)
	// Encode after a gap for the size: 4 bytes of uvarint hold any block.
	dst = append(dst, mode, 0, 0, 0, 0)
	body := len(dst)
	var err error
	if x4 {
		dst, err = t.Append4X(dst, syms)
	} else {
		dst, err = t.Append1X(dst, syms)
	}
	if err != nil {
		return dst[:mark], false
	}
	l := len(dst) - body
	k := uvarintLen(uint64(l))
	binary.PutUvarint(dst[mark+1:], uint64(l))
	copy(dst[mark+1+k:], dst[body:])
	return dst[:mark+1+k+l], true
}

// topSymbols returns up to maxPairK symbols of hist by decreasing count
// (ties by symbol value).
func topSymbols(hist *[256]uint32, top []byte) []byte {
	top = top[:0]
	for s, c := range hist {
		if c == 0 {
			continue
		}
		// insert s keeping the order; drop what falls off the end
		i := len(top)
		if i < maxPairK {
			top = append(top, byte(s))
		} else if c <= hist[top[i-1]] {
			continue
		} else {
			i--
			top[i] = byte(s)
		}
		for ; i > 0 && hist[top[i-1]] < c; i-- {
			top[i-1], top[i] = top[i], top[i-1]
		}
	}
	return top
}

// preparePairs computes the pair codes of syms with the top symbols of
// rankHist (an exact or sampled histogram), the code histogram and the
// exception symbols.
func (e *streamEncoder) preparePairs(syms []byte, w uint, rankHist *[256]uint32) {
	e.top = topSymbols(rankHist, e.top)
	k := len(e.top)
	if k == 0 {
		e.top = append(e.top, syms[0])
		k = 1
	}
	// pc maps the two symbols of a pair (s0 | s1<<8) to its code+1; 0 is
	// an escape. Only the entries set for the previous stream are cleared.
	if e.pc == nil {
		e.pc = new([65536]byte)
	}
	for _, i := range e.pcSet {
		e.pc[i] = 0
	}
	e.pcSet = e.pcSet[:0]
	for a, sa := range e.top {
		for b, sb := range e.top {
			i := uint16(sa) | uint16(sb)<<8
			e.pc[i] = byte(a*k+b) + 1
			e.pcSet = append(e.pcSet, i)
		}
	}
	m := len(syms) / 2
	if cap(e.codes) < m {
		e.codes = make([]byte, m)
	}
	e.codes = e.codes[:m]
	e.exc = pairize(e.codes, syms, e.pc, byte(k*k), e.exc[:0])
	countHist(&e.codeHist, e.codes)
	e.excW = w
}

// pairize writes the code of each pair of syms into codes (len(syms)/2) and
// returns exc with the symbols of escaped pairs (and an odd last symbol)
// appended. pc maps s0 | s1<<8 to code+1, or 0 for an escape.
func pairize(codes, syms []byte, pc *[65536]byte, esc byte, exc []byte) []byte {
	m := len(codes)
	i := 0
	// the assembly runs until an escape; Go codes the escape and the rest
	for use.avx2 && i < m {
		if i = pairizeFast(codes, syms, i, pc); i < m {
			exc = pairOne(codes, syms, i, pc, esc, exc)
			i++
		}
	}
	for ; i+4 <= m; i += 4 {
		v := binary.LittleEndian.Uint64(syms[2*i:])
		c0 := pc[uint16(v)]
		c1 := pc[uint16(v>>16)]
		c2 := pc[uint16(v>>32)]
		c3 := pc[uint16(v>>48)]
		if c0 != 0 && c1 != 0 && c2 != 0 && c3 != 0 {
			binary.LittleEndian.PutUint32(codes[i:], uint32(c0)|uint32(c1)<<8|uint32(c2)<<16|uint32(c3)<<24-0x01010101)
			continue
		}
		for j := i; j < i+4; j++ {
			exc = pairOne(codes, syms, j, pc, esc, exc)
		}
	}
	for ; i < m; i++ {
		exc = pairOne(codes, syms, i, pc, esc, exc)
	}
	if len(syms)&1 != 0 {
		exc = append(exc, syms[len(syms)-1])
	}
	return exc
}

func pairOne(codes, syms []byte, i int, pc *[65536]byte, esc byte, exc []byte) []byte {
	s0, s1 := syms[2*i], syms[2*i+1]
	c := pc[uint16(s0)|uint16(s1)<<8]
	if c == 0 {
		codes[i] = esc
		return append(exc, s0, s1)
	}
	codes[i] = c - 1
	return exc
}

// pairCost builds the table of the prepared codes, codes the exceptions and
// returns the exact size of the pair stream.
func (e *streamEncoder) pairCost() (int, bool) {
	if e.pair.Build(&e.codeHist) != nil {
		return 0, false
	}
	h, err := e.pair.AppendHeader(e.hdr[:0])
	if err != nil {
		return 0, false
	}
	e.hdr = h
	if e.inner == nil {
		e.inner = &streamEncoder{}
	}
	if len(e.exc) < minExcHuff {
		e.excEnc = appendPacked(append(e.excEnc[:0], smPacked), e.exc, e.excW)
	} else {
		var xh [256]uint32
		countHist(&xh, e.exc)
		e.excEnc = e.inner.choose(e.excEnc[:0], e.exc, e.excW, &xh, pairsNone)
	}
	m := len(e.codes)
	sz := huffSize(len(h), e.pair.Cost(&e.codeHist), m)
	sz += 2 + len(e.top) + uvarintLen(uint64(sz)) + uvarintLen(uint64(len(e.exc))) + len(e.excEnc)
	return sz, true
}

// appendPairs writes the prepared pair coding.
func (e *streamEncoder) appendPairs(dst []byte) ([]byte, bool) {
	mark := len(dst)
	dst = append(dst, 0, byte(len(e.top)))
	dst = append(dst, e.top...)
	body := len(dst)
	out, ok := e.appendHuff(dst, &e.pair, e.codes, smPair1)
	if !ok {
		return dst[:mark], false
	}
	// appendHuff wrote its mode byte at body; move it to the front.
	out[mark] = out[body]
	copy(out[body:], out[body+1:])
	out = out[:len(out)-1]
	out = binary.AppendUvarint(out, uint64(len(e.exc)))
	return append(out, e.excEnc...), true
}

// Shared-table streams (modes 6 and 7) code their symbols with a table of
// the archive's setup instead of one of their own:
//
//	uvarint t        the table's index in the setup section of the block's dtype
//	varint d         the shift that aligns the symbols (0 for sections with a join)
//	u8 kind          0: singles code, 1: pairs code
//	uvarint L, L bytes huff0 data without a table description: one stream
//	                 (mode 6) or a jump table and four streams (mode 7), of
//	                 n codes (singles) or floor(n/2) codes (pairs)
//	uvarint x        exception symbols
//	stream           x symbols of width w (modes 0..3)
//
// Codes stand for aligned symbols: symbol s of the block is aligned(s) of
// the table's alphabet (see the rotation in setup.go). Singles code i is
// Alphabet[i]; pairs code a*k+b is (PairTop[a], PairTop[b]); the last code
// of each is the escape: the next exception symbol (two for a pair), which
// is stored as is, not aligned. A last odd symbol of a pairs stream is the
// last exception.

// selNeighbours: tables whose neighbouring alignment shifts are tried.
const selNeighbours = 4

// sharedSampleStep is the step (in 8-symbol words, countHistWords) of the
// sample from which a block of n symbols picks its shared table: about
// 1/sharedSampleDiv of the block, at most every sharedSampleMaxStep-th
// word, and every word in blocks of fewer than 1⅞·sharedSampleDiv symbols
// (so that a block of 4 Ki values, a few symbols short of 4096 once pairs
// are joined, is sampled). A variable for measurements.
var sharedSampleDiv, sharedSampleMaxStep = 2048, 16

func sharedSampleStep(n int) int {
	return min((n+sharedSampleDiv/8)/sharedSampleDiv, sharedSampleMaxStep)
}

// minSharedSymbols: shorter streams keep their own coding.
const minSharedSymbols = 64

// DefaultSetupThreshold is the default of EncodeOptions.SetupThreshold: a block
// builds its own table when the best shared one is estimated to cost more
// than this fraction above the block's own order-0 entropy plus a table.
const DefaultSetupThreshold = 0.03

// appendShared codes syms with the cheapest table of sec (and the best
// alignment), or with a table of its own when that is estimated to be
// cheaper by more than threshold. hist is the exact histogram of syms, or
// nil (then it is counted here).
//
// memo, when not nil, carries the tables a run's first block found
// cheapest (pickMemo): the run's later blocks choose among those only.
func (e *streamEncoder) appendShared(dst, syms []byte, w uint, sec *SetupSection, hist *[256]uint32, threshold float64, memo *pickMemo) []byte {
	n := len(syms)
	// the histogram that picks the table: the exact one when given or when
	// the block is short, else that of every other 8-symbol word (long
	// blocks pick the same tables from half their symbols)
	h, sampled := hist, n
	if h == nil {
		if step := sharedSampleStep(n); step >= 2 {
			sampled = countHistWords(&e.sampleHist, syms, step)
			h = &e.sampleHist
		} else {
			countHist(&e.hist, syms)
			hist, h = &e.hist, &e.hist
		}
	}
	if n < minSharedSymbols {
		return e.appendStream(dst, syms, w, hist, true)
	}
	// the nonzero symbols, and the most frequent one of 1..2^w-2 (modeOf)
	var nzb [256]byte
	top := 1<<w - 2
	k, blockMode := nonzeroSymbols(h, &nzb, top, 1<<(w-1)-1)
	nz := nzb[:k]
	best, bestD, bestCost := sec.pick(h, nz, blockMode, w, memo)
	// A table of its own cannot beat the order-0 entropy plus its
	// description; use the shared one unless that leaves a clear gain.
	hb := entropyBitsOf(h, nz, sampled)
	distinct := len(nz)
	ownEst := hb + float64(8*(distinct/2+8))*float64(sampled)/float64(n)
	if float64(bestCost) > (1+threshold)*ownEst {
		if hist == nil {
			// as without a setup: the exact histogram comes with the
			// pair codes
			return e.appendSymbols(dst, syms, w)
		}
		return e.appendStream(dst, syms, w, hist, true)
	}
	t := sec.Tables[best]
	noEsc := false
	if !t.hasPair && hist != nil {
		// (a sampled histogram may miss a symbol without a code)
		fwd, _ := e.rotation(bestD, w)
		noEsc = true
		for _, s := range nz {
			if t.single.lens[fwd[s]] == 0 {
				noEsc = false
				break
			}
		}
	}
	return e.appendWithTable(dst, syms, w, t, best, bestD, noEsc)
}

// pick returns the table of sec (and its shift) that codes the histogram h
// (nonzero symbols nz, most frequent symbol blockMode) in the fewest bits,
// and that cost.
//
// With memo holding a run's candidates (memo.n > 0) only those tables are
// costed; with an empty memo every table is, and the cheapest few are
// recorded in it for the run's later blocks.
func (sec *SetupSection) pick(h *[256]uint32, nz []byte, blockMode int, w uint, memo *pickMemo) (best, bestD int, bestCost uint64) {
	// every table at the shift that aligns the modes; then the neighbouring
	// shifts of the few best (a shift off by one rarely wins elsewhere)
	best, bestD, bestCost = 0, 0, ^uint64(0)
	var cand [selNeighbours]struct {
		i    int
		cost uint64
	}
	nc := 0
	// the rotating symbols by their index relative to the block's mode
	// (tableSel.rel), and the others (0 and above 2^w-2), which do not move
	var rib [256]uint8
	var rcb [256]uint32
	var fixb [256]byte
	ri, rc, fixed := rib[:0], rcb[:0], fixb[:0]
	if sec.shifts {
		nr, nf := relativeSymbols(h, nz, 1<<w-2, blockMode, &rib, &rcb, &fixb)
		ri, rc, fixed = rib[:nr], rcb[:nr], fixb[:nf]
	}
	sels := sec.selectors()
	var only []int16
	if memo != nil && memo.n > 0 {
		only = memo.tables[:memo.n]
	}
	for x := range len(sels) {
		i := x
		if only != nil {
			if x >= len(only) {
				break
			}
			i = int(only[x])
		}
		t := &sels[i]
		var c uint64
		d := 0
		if sec.shifts {
			d = blockMode - int(t.mode)
			c = t.costRel(ri, rc, 0) + t.cost(h, fixed, 0, w)
		} else {
			c = t.cost(h, nz, 0, w)
		}
		if c < bestCost {
			best, bestD, bestCost = i, d, c
		}
		// keep the selNeighbours cheapest (ties: the lower index)
		j := nc
		if nc < len(cand) {
			nc++
		} else if c >= cand[j-1].cost {
			continue
		} else {
			j--
		}
		for ; j > 0 && cand[j-1].cost > c; j-- {
			cand[j] = cand[j-1]
		}
		cand[j].i, cand[j].cost = i, c
	}
	if sec.shifts {
		for _, k := range cand[:nc] {
			t := &sels[k.i]
			fc := t.cost(h, fixed, 0, w)
			d0 := blockMode - int(t.mode)
			for _, delta := range [2]int{-1, 1} {
				if c := t.costRel(ri, rc, delta) + fc; c < bestCost || (c == bestCost && k.i < best) {
					best, bestD, bestCost = k.i, d0+delta, c
				}
			}
		}
	}
	if memo != nil && memo.n == 0 {
		for j := range cand[:nc] {
			memo.tables[j] = int16(cand[j].i)
		}
		memo.n = int8(nc)
	}
	return best, bestD, bestCost
}

// nonzeroSymbols lists the symbols of h with a nonzero count in nz and
// returns their number and the most frequent of 1..top (ties: the
// smallest; def when there is none), as modeOf does.
func nonzeroSymbols(h *[256]uint32, nz *[256]byte, top, def int) (k, mode int) {
	mode = def
	var mc uint32
	for s, c := range h {
		if c == 0 {
			continue
		}
		nz[k] = byte(s)
		k++
		if c > mc && s >= 1 && s <= top {
			mode, mc = s, c
		}
	}
	return k, mode
}

// relativeSymbols splits the nonzero symbols nz of h into the rotating
// ones (1..m), given as their index relative to mode (see tableSel.rel) and
// count, and the fixed ones; it returns how many of each.
func relativeSymbols(h *[256]uint32, nz []byte, m, mode int, ri *[256]uint8, rc *[256]uint32, fixed *[256]byte) (nr, nf int) {
	for _, s := range nz {
		if s >= 1 && int(s) <= m {
			r := int(s) - mode
			if r < 0 {
				r += m
			}
			ri[nr] = uint8(r + 1)
			rc[nr] = h[s]
			nr++
		} else {
			fixed[nf] = s
			nf++
		}
	}
	return nr, nf
}

// appendWithTable writes syms as a shared-table stream coded with table t
// (index ti of its section) after aligning by shift d. noEsc says that
// every symbol of syms has a singles code after the shift (known from an
// exact histogram); the singles path then codes syms in place.
func (e *streamEncoder) appendWithTable(dst, syms []byte, w uint, t *SetupTable, ti, d int, noEsc bool) []byte {
	n := len(syms)
	fwd, inv := e.rotation(d, w)
	e.exc = e.exc[:0]
	var codes []byte
	code := &t.single
	tab := &code.huff
	kind := byte(0)
	switch {
	case t.hasPair && n >= 2:
		code, kind = &t.pair, 1
		tab = &code.huff
		m := n / 2
		if cap(e.codes) < m {
			e.codes = make([]byte, m)
		}
		codes = e.codes[:m]
		e.exc = pairize(codes, syms, e.sharedPairMap(t, d, w, inv), code.esc, e.exc)
	case noEsc:
		// the code of symbol s is that of its aligned symbol: permute the
		// encoding table instead of the symbols
		if e.perm == nil {
			e.perm = new(huff.Table)
		}
		for s := range e.perm.Enc {
			e.perm.Enc[s] = code.huff.Enc[fwd[s]]
			e.perm.EncL[s] = code.huff.EncL[fwd[s]]
		}
		tab, codes = e.perm, syms
	default:
		// the huff0 symbol of a code is the aligned symbol itself
		var local [256]byte
		for s := range local {
			u := fwd[s]
			if code.lens[u] != 0 {
				local[s] = u
			} else {
				local[s] = code.esc
			}
		}
		if cap(e.codes) < n {
			e.codes = make([]byte, n)
		}
		codes = e.codes[:n]
		for i, s := range syms {
			c := local[s]
			codes[i] = c
			if c == code.esc {
				e.exc = append(e.exc, s)
			}
		}
	}
	mode := byte(smShared1)
	if len(codes) >= min4XSymbols {
		mode = smShared4
	}
	modeAt := len(dst)
	dst = append(dst, mode)
	dst = binary.AppendUvarint(dst, uint64(ti))
	dst = binary.AppendVarint(dst, int64(d))
	dst = append(dst, kind)
	// data after a gap for its size (4 bytes of uvarint hold any block)
	mark := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	body := len(dst)
	if mode == smShared4 {
		var err error
		if dst, err = tab.AppendData4X(dst, codes); err != nil {
			// a stream over 64 KiB cannot be described in the jump
			// table: use one stream
			dst = tab.AppendStream1(dst[:body], codes)
			mode = smShared1
			dst[modeAt] = mode
		}
	} else {
		dst = tab.AppendStream1(dst, codes)
	}
	l := len(dst) - body
	k := uvarintLen(uint64(l))
	binary.PutUvarint(dst[mark:], uint64(l))
	copy(dst[mark+k:], dst[body:])
	dst = dst[:mark+k+l]
	dst = binary.AppendUvarint(dst, uint64(len(e.exc)))
	if len(e.exc) < minExcHuff {
		dst = append(dst, smPacked)
		dst = appendPacked(dst, e.exc, w)
	} else {
		if e.inner == nil {
			e.inner = &streamEncoder{}
		}
		var xh [256]uint32
		countHist(&xh, e.exc)
		dst = e.inner.choose(dst, e.exc, w, &xh, pairsNone)
	}
	e.lastMode = mode
	return dst
}

// rotation is the package's rotation for shift d and width w, cached (blocks
// of a tensor mostly share one shift).
func (e *streamEncoder) rotation(d int, w uint) (fwd, inv *[256]byte) {
	if !e.rotOK || e.rotD != d || e.rotW != w {
		e.rotFwd, e.rotInv = rotation(d, w)
		e.rotD, e.rotW, e.rotOK = d, w, true
	}
	return &e.rotFwd, &e.rotInv
}

// sharedPairMap returns the pair map of table t for shift d (s0 | s1<<8 of
// the block's symbols -> pair code + 1), rebuilt only when the table or the
// shift changes.
func (e *streamEncoder) sharedPairMap(t *SetupTable, d int, w uint, inv *[256]byte) *[65536]byte {
	if e.spc == nil {
		e.spc = new([65536]byte)
	}
	if e.spcTab == t && e.spcD == d && e.spcW == w {
		return e.spc
	}
	for _, i := range e.spcSet {
		e.spc[i] = 0
	}
	e.spcSet = e.spcSet[:0]
	k := len(t.PairTop)
	for a, x := range t.PairTop {
		for b, y := range t.PairTop {
			if t.PairLengths[a*k+b] != 0 {
				i := uint16(inv[x]) | uint16(inv[y])<<8
				e.spc[i] = byte(a*k+b) + 1
				e.spcSet = append(e.spcSet, i)
			}
		}
	}
	e.spcTab, e.spcD, e.spcW = t, d, w
	return e.spc
}
