package codec

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"neuralzip/codec/huff"
	"neuralzip/dtype"
)

// Reference-conditioned float blocks (block kind 3 with a payload; see
// doc.go, "Reference blocks"). A value v and its reference value r of B bits
// are mapped to order-preserving integers (key), and the difference
// d = key(v) - key(r) mod 2^B — the distance in units in the last place —
// is coded as a token (magnitude bucket and sign) with extra bits. Tokens
// are Huffman-coded in groups by context, the reference's exponent and sign,
// since how many ULPs a weight moves depends on its exponent.

const refMethodULP = 1

// refMethodsFor is the newest difference-block method an archive of
// format version v may hold: method 2 came with version 4, 3 with 5, 4
// with 6.
func refMethodsFor(v int) byte {
	switch {
	case v <= 3:
		return refMethodULP
	case v == 4:
		return refMethodRange
	case v == 5:
		return refMethodSwitch
	}
	return refMethodCompact
}

// refSpec is the per-dtype arithmetic of ULP coding.
type refSpec struct {
	size   int
	b      uint   // bits per value
	s      uint   // sign bits
	m      uint   // mantissa bits
	emask  uint64 // exponent mask (after shifting by m)
	mask   uint64 // 2^b - 1
	top    uint64 // 2^(b-1)
	q      uint   // sub-bucket bits of the magnitude buckets
	tokW   uint   // token symbol width: bit length of maxTok
	maxTok int    // largest valid token
	nctx   int    // context keys: 2^e
}

func refSpecFor(d dtype.DType) (refSpec, bool) {
	f, ok := specFor(d)
	if !ok {
		return refSpec{}, false
	}
	b := uint(8 * f.size)
	p := refSpec{size: f.size, b: b, s: f.s, m: f.m, emask: 1<<f.e - 1, mask: 1<<b - 1, top: 1 << (b - 1), nctx: 1 << f.e}
	p.setQ(refDefaultQ(b))
	return p, true
}

// refDefaultQ is the encoder's sub-bucket precision: the largest with
// tokens below 256.
func refDefaultQ(b uint) uint {
	if b > 16 {
		return 2
	}
	return 3
}

// setQ sets the sub-bucket bits and reports whether every token fits a byte.
func (p *refSpec) setQ(q uint) bool {
	p.q = q
	if q > 6 || p.b < q+1 {
		return false
	}
	maxBucket := (p.b-q+1)<<q - 1
	p.maxTok = int(2 * maxBucket)
	p.tokW = uint(bits.Len(uint(p.maxTok)))
	return p.maxTok < 256
}

// key maps a value to an integer that orders like the value it encodes
// (sign-magnitude to offset binary); a bijection on b-bit patterns.
func (p *refSpec) key(v uint64) uint64 {
	if p.s == 0 {
		return v
	}
	if v&p.top != 0 {
		return ^v & p.mask
	}
	return v | p.top
}

func (p *refSpec) unkey(k uint64) uint64 {
	if p.s == 0 {
		return k
	}
	if k&p.top != 0 {
		return k ^ p.top
	}
	return ^k & p.mask
}

// ctx is the context key of a reference value: its exponent.
func (p *refSpec) ctx(r uint64) int { return int(r >> p.m & p.emask) }

// sign is the sign bit of a reference value (0 for unsigned formats).
func (p *refSpec) sign(r uint64) uint64 { return r >> (p.b - 1) & uint64(p.s) }

// token returns the token of difference d (mod 2^b) and its extra bits
// (value, count). Magnitudes a < 2^(q+1) are their own bucket; otherwise a
// of bit length L is bucket (L-q)·2^q + h, h the q bits below its leading
// one, with the L-1-q bits below them as extra bits. Token 0 is
// "unchanged"; otherwise 2·bucket-1+sign, where sign is 1 when d is
// negative, flipped when the reference value is negative (rs = 1): so it
// says whether the magnitude shrinks, and weight decay makes that the more
// frequent case whatever the weight's sign.
func (p *refSpec) token(d, rs uint64) (tok byte, extra uint64, n uint) {
	d &= p.mask
	if d == 0 {
		return 0, 0, 0
	}
	a, sg := d, rs
	if d >= p.top {
		a, sg = (p.mask-d+1)&p.mask, 1^rs
	}
	var bk uint64
	if a < 2<<p.q {
		bk = a
	} else {
		l := uint(bits.Len64(a))
		n = l - 1 - p.q
		bk = uint64(l-p.q)<<p.q + (a>>n)&(1<<p.q-1)
		extra = a & (1<<n - 1)
	}
	return byte(2*bk - 1 + sg), extra, n
}

// tokTable fills tab with the decoding of each valid token: magnitude base,
// extra-bit mask and count, sign mask (tokens above maxTok stay zero; they
// are rejected when the tokens are put back in order).
func (p *refSpec) tokTable(tab *[256]refTok) {
	for t := 1; t <= p.maxTok; t++ {
		bk := uint32(t+1) >> 1
		if (t+1)&1 != 0 {
			tab[t].neg = ^uint32(0)
		}
		if bk < 2<<p.q {
			tab[t].base = bk
			continue
		}
		l := uint(bk>>p.q) + p.q
		n := l - 1 - p.q
		tab[t].base = (1<<p.q | bk&(1<<p.q-1)) << n
		tab[t].low = 1<<n - 1
		tab[t].n = uint8(n)
	}
}

// applier is the refApply of p's values with token table tab and the
// padded extra bits pad.
func (p *refSpec) applier(tab *[256]refTok, pad []byte) refApply {
	ap := refApply{tab: tab, pad: pad, mask: uint32(p.mask), sh: uint32(p.b - 1), sbit: uint32(p.s)}
	if p.s != 0 {
		ap.top, ap.flip = uint32(p.top), uint32(p.mask)>>1
	}
	return ap
}

// refTokens writes the token, context and extra bits (value, count) of
// each value of src coded against ref (the pure-Go path for any dtype).
func refTokens(toks, ctxs []byte, xs []uint32, xns []byte, src, ref []byte, p *refSpec) {
	for i := range toks {
		v, r := loadValue(src, i, p.size), loadValue(ref, i, p.size)
		t, x, xn := p.token(p.key(v)-p.key(r), p.sign(r))
		toks[i], ctxs[i], xs[i], xns[i] = t, byte(p.ctx(r)), uint32(x), byte(xn)
	}
}

// refEncoder is one worker's state for reference-conditioned blocks.
type refEncoder struct {
	ctxs    []byte   // context of each value (its reference's exponent)
	xs      []uint32 // extra bits of each value
	xns     []byte   // and their count
	toks    []byte
	grouped []byte
	extra   []byte
	rows    [][256]uint32 // token histogram per context key
	counts  []uint32      // values per context key
	used    []int         // context keys seen in the block
	groupOf []byte
	ghist   [256][256]uint32
	order   []int
	own     []int
	best    []byte // the payload coded
	sw      []byte // method 4's payload, or the other one
	swTabs  []*huff.Table
	swEnc   []uint64 // each group's codes (huff.Table.EncL), 256 per group
	swOut   []byte
	est     huff.Table
	estHdr  []byte
	rc      *rcState // method 2 (EncodeOptions.Best)
	rcOut   []byte
	rcRaw   []byte
}

// refGroupThresholds: the encoder considers these minimum context sizes (a
// context with fewer values joins group 0; 1<<30 means one group), in
// decreasing order, estimates each grouping from its histograms
// (estimateStream of each own group, estimateRest) and codes the one whose
// estimate plus refGroupPenalty per group is smallest. The estimate picks
// within 0.005 % of coding every candidate in full. With the penalty a
// fine ladder matters: with three candidates (1<<30, 512, 128) a penalty
// of 128 mostly falls back to one group (extract 3 % faster, +0.13 %),
// with these ten it takes the groupings between (8.5 % faster, +0.15 %).
var refGroupThresholds = []int{1 << 30, 32768, 16384, 8192, 4096, 2048, 1024, 512, 256, 128}

// refGroupPenalty is what the encoder counts, in bytes, for each group
// beyond the first when it compares groupings: a group costs the decoder
// a Huffman table to read (~1 µs a table in a profile of 10-frame
// extracts), a stream to start and its tail: the time of decoding some
// two thousand tokens.
// Measured on the real bf16 trajectory (one core, extract of a 10-frame
// chain; the run's archive), relative to a penalty of 32 with three
// candidates: 96 bytes -6.5 % time, +0.09 % size; 128: -8.5 %, +0.15 %;
// 160: -10 %, +0.28 %. 128 keeps a one-core extract within K independent
// decodes with a margin (issue 7); the last steps of a run, whose streams
// are small, pay most (step 1000: 0.110 of raw instead of 0.107).
const refGroupPenalty = 128

// encodeRefFloat codes the values of src (float type d) against ref (the
// same number of bytes) and appends the payload. ok is false when d has no
// ULP coding.
func (b *blockEncoder) encodeRefFloat(dst, src, ref []byte, d dtype.DType) ([]byte, bool) {
	p, ok := refSpecFor(d)
	if !ok {
		return dst, false
	}
	if b.ref == nil {
		b.ref = &refEncoder{}
	}
	e := b.ref
	n := len(src) / p.size
	if len(e.rows) < p.nctx {
		e.rows = make([][256]uint32, p.nctx)
		e.counts = make([]uint32, p.nctx)
	}
	for _, c := range e.used {
		e.rows[c] = [256]uint32{}
		e.counts[c] = 0
	}
	e.used = e.used[:0]
	e.ctxs = slices.Grow(e.ctxs[:0], n)[:n]
	e.toks = slices.Grow(e.toks[:0], n)[:n]
	e.xs = slices.Grow(e.xs[:0], n)[:n]
	e.xns = slices.Grow(e.xns[:0], n)[:n]
	// each value's token, context and extra bits (value, count)
	k := refTokensFast(e.toks, e.ctxs, e.xs, e.xns, src, ref, &p)
	refTokens(e.toks[k:], e.ctxs[k:], e.xs[k:], e.xns[k:], src[k*p.size:], ref[k*p.size:], &p)
	// token histogram per context
	for i, c := range e.ctxs {
		e.counts[c]++
		e.rows[c][e.toks[i]]++
	}
	for c, v := range e.counts[:p.nctx] {
		if v != 0 {
			e.used = append(e.used, c)
		}
	}
	// the extra bits, LSB-first
	ex := e.extra[:0]
	var acc uint64
	var nb uint
	xns := e.xns[:n]
	for i, x := range e.xs {
		acc |= uint64(x) << nb
		nb += uint(xns[i])
		if nb >= 32 {
			ex = binary.LittleEndian.AppendUint32(ex, uint32(acc))
			acc >>= 32
			nb -= 32
		}
	}
	for nb > 0 {
		ex = append(ex, byte(acc))
		acc >>= 8
		nb -= min(nb, 8)
	}
	e.extra = ex

	// groups: contexts by decreasing size (ties: smaller key first)
	counts := e.counts
	e.order = append(e.order[:0], e.used...)
	slices.SortFunc(e.order, func(a, b int) int {
		if counts[a] != counts[b] {
			if counts[a] > counts[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	// the candidate groupings (contexts with a group of their own), each
	// estimated from its histograms: the smallest is coded
	bestK, bestEst := -1, 0
	own, ownK := 0, 0 // the estimated own streams of the ownK largest contexts
	for _, th := range refGroupThresholds {
		k := 0
		for k < len(e.order) && k < 254 && int(counts[e.order[k]]) >= th {
			k++
		}
		if k == bestK {
			continue
		}
		if k < ownK { // thresholds out of order: start over
			own, ownK = 0, 0
		}
		for ; ownK < k; ownK++ {
			c := e.order[ownK]
			own += e.estimateStream(&e.rows[c], int(e.counts[c]), p.tokW)
		}
		if est := own + e.estimateRest(&p, k) + k*refGroupPenalty; bestK < 0 || est < bestEst {
			bestK, bestEst = k, est
		}
	}
	G := e.prepareGroups(&p, bestK)
	coded := false
	// tokens in value order: method 4 (compact tables), or method 3 when
	// a test asks for it
	sw := byte(refMethodCompact)
	if refForceMethod == refMethodSwitch {
		sw = refMethodSwitch
	}
	if refForceMethod == 0 && !e.pairsMayPay(G) {
		// method 1 would be method 4 with a stream per group: no need
		// to code it
		e.best, coded = e.appendRefSwitch(e.best[:0], &p, G, n, sw)
	}
	if !coded {
		e.best = b.appendRefGroups(e.best[:0], &p, G, n)
		// method 4 unless it is larger by more than 1/refSwitchSlack: it
		// decodes faster (no counting, no ungrouping, eight chains of
		// lookups) but has no pair codes, which pay on streams of mostly
		// unchanged values
		if refForceMethod != refMethodULP {
			if sw, ok := e.appendRefSwitch(e.sw[:0], &p, G, n, sw); ok {
				e.sw = sw
				if len(sw) <= len(e.best)+len(e.best)/refSwitchSlack || refForceMethod != 0 {
					e.best, e.sw = sw, e.best
				}
			}
		}
	}
	mark := len(dst)
	dst = append(dst, e.best...)
	dst = binary.AppendUvarint(dst, uint64(len(e.extra)))
	dst = append(dst, e.extra...)
	if b.best {
		e.best = e.appendRefRange(e.best[:0], &p, n)
		if len(e.best) < len(dst)-mark {
			dst = append(dst[:mark], e.best...)
		}
	}
	return dst, true
}

// estimateRest estimates the bytes of group 0 when the k largest contexts
// (order) have groups of their own, with the 3 bytes of context map per
// own group (the own streams: estimateStream of each, which does not
// depend on k).
func (e *refEncoder) estimateRest(p *refSpec, k int) int {
	var rest [256]uint32 // group 0: the contexts without a group
	var own [256]bool
	for _, c := range e.order[:k] {
		own[c] = true
	}
	n0 := 0
	for _, c := range e.used {
		if !own[c] {
			for t, v := range e.rows[c] {
				rest[t] += v
			}
			n0 += int(e.counts[c])
		}
	}
	return e.estimateStream(&rest, n0, p.tokW) + 3*k
}

// estimateStream is the smaller of a stream's packed size and its
// Huffman-coded size with the table.
func (e *refEncoder) estimateStream(hist *[256]uint32, n int, w uint) int {
	best := packedLen(n, w) + 1
	if n >= minHuffSymbols && e.est.Build(hist) == nil {
		if hl := refTableLen(&e.est, &e.estHdr); hl < 1<<30 {
			best = min(best, huffSize(hl, e.est.Cost(hist), n)+2)
		}
	}
	return best
}

// prepareGroups puts the k largest contexts (order) in groups of their
// own, the others in group 0, and counts each group's tokens (ghist); it
// returns the number of groups. Group g ≥ 1 is the context own[g-1]; own
// ends up sorted by key, as the context map lists them.
func (e *refEncoder) prepareGroups(p *refSpec, k int) int {
	if len(e.groupOf) < p.nctx {
		e.groupOf = make([]byte, p.nctx)
	}
	clear(e.groupOf[:p.nctx])
	own := append(e.own[:0], e.order[:k]...)
	e.own = own
	for g, c := range own {
		e.groupOf[c] = byte(g + 1)
	}
	slices.Sort(own)
	G := k + 1
	for g := 0; g < G; g++ {
		e.ghist[g] = [256]uint32{}
	}
	for _, c := range e.used {
		g := e.groupOf[c]
		for t, v := range e.rows[c] {
			e.ghist[g][t] += v
		}
	}
	return G
}

// appendRefHeader appends the method, q, G and the context map of the
// groups prepareGroups made.
func (e *refEncoder) appendRefHeader(dst []byte, method byte, p *refSpec, G int) []byte {
	dst = append(dst, method, byte(p.q), byte(G))
	dst = binary.AppendUvarint(dst, uint64(len(e.own)))
	prev := -1
	for _, c := range e.own {
		dst = binary.AppendUvarint(dst, uint64(c-prev-1))
		dst = append(dst, e.groupOf[c])
		prev = c
	}
	return dst
}

// appendRefGroups appends the method header, the context map and the token
// streams (method 1) of the G groups prepareGroups made.
func (b *blockEncoder) appendRefGroups(dst []byte, p *refSpec, G, n int) []byte {
	e := b.ref
	dst = e.appendRefHeader(dst, refMethodULP, p, G)
	// tokens by group, in value order within each
	var off [256]int
	pos := 0
	for g := 0; g < G; g++ {
		off[g] = pos
		for _, v := range e.ghist[g] {
			pos += int(v)
		}
	}
	e.grouped = slices.Grow(e.grouped[:0], n)[:n]
	for i, c := range e.ctxs {
		g := e.groupOf[c]
		e.grouped[off[g]] = e.toks[i]
		off[g]++
	}
	start := 0
	for g := 0; g < G; g++ {
		syms := e.grouped[start:off[g]]
		start = off[g]
		dst = b.st.appendStream(dst, syms, p.tokW, &e.ghist[g], true)
	}
	return dst
}

// refTok is the decoding of one token.
type refTok struct {
	base, low, neg uint32
	n              uint8
}

// refUngroup puts the tokens of the groups (grouped, group g of the four
// quarters of the values starting at o[k][g]) back in value order into tv
// and returns the largest; ex holds each value's context (its reference's
// exponent), gtab maps it to its group. Four quarters make four
// independent chains of offset updates.
func refUngroup(tv, ex, grouped []byte, gtab *[256]byte, o *[4][256]int, qn int) byte {
	t0, t1, t2, t3 := tv[:qn], tv[qn:2*qn], tv[2*qn:3*qn], tv[3*qn:]
	q0, q1, q2, q3 := ex[:qn], ex[qn:2*qn], ex[2*qn:3*qn], ex[3*qn:len(tv)]
	t0, t1, t2 = t0[:len(q0)], t1[:len(q0)], t2[:len(q0)]
	q1, q2, q3 = q1[:len(q0)], q2[:len(q0)], q3[:len(t3)]
	var o0, o1, o2, o3 [256]int
	o0, o1, o2, o3 = o[0], o[1], o[2], o[3]
	var maxT byte
	for i, c := range q0 {
		g0, g1, g2, g3 := gtab[c], gtab[q1[i]], gtab[q2[i]], gtab[q3[i]]
		x0, x1, x2, x3 := grouped[o0[g0]], grouped[o1[g1]], grouped[o2[g2]], grouped[o3[g3]]
		o0[g0]++
		o1[g1]++
		o2[g2]++
		o3[g3]++
		t0[i], t1[i], t2[i], t3[i] = x0, x1, x2, x3
		maxT = max(maxT, x0, x1, x2, x3)
	}
	for i := len(q0); i < len(t3); i++ {
		g := gtab[q3[i]]
		x := grouped[o3[g]]
		o3[g]++
		t3[i] = x
		maxT = max(maxT, x)
	}
	return maxT
}

// refUngroupQuarters sets up the offsets of the four quarters (group g of
// quarter k starts after the group's values in the quarters before it)
// and runs refUngroup.
func refUngroupQuarters(tv, ex, grouped []byte, gtab *[256]byte, hc *[4][256]uint32, off *[256]int, G, nctx, qn int) byte {
	var o [4][256]int
	for t := range nctx {
		g := gtab[t]
		o[1][g] += int(hc[0][t])
		o[2][g] += int(hc[0][t] + hc[1][t])
		o[3][g] += int(hc[0][t] + hc[1][t] + hc[2][t])
	}
	for g := 0; g < G; g++ {
		for k := range o {
			o[k][g] += off[g]
		}
	}
	return refUngroup(tv, ex, grouped, gtab, &o, qn)
}

// quarterHist counts the bytes of ex in four parts (qn, qn, qn and the
// rest) into hc.
//
//go:noinline
func quarterHist(hc *[4][256]uint32, ex []byte, qn int) {
	x0, x1, x2, x3 := ex[:qn], ex[qn:2*qn], ex[2*qn:3*qn], ex[3*qn:]
	x1, x2 = x1[:len(x0)], x2[:len(x0)]
	for i, c := range x0 {
		hc[0][c]++
		hc[1][x1[i]]++
		hc[2][x2[i]]++
		hc[3][x3[i]]++
	}
	for _, c := range x3[qn:] {
		hc[3][c]++
	}
}

// refExps16 writes the exponent of each 2-byte value of ref (m mantissa
// bits, exponent mask em) to ex.
//
// Not inlined: in decodeRefFloat the loop's registers spill.
//
//go:noinline
func refExps16(ex, ref []byte, m uint, em uint16) {
	ref = ref[:2*len(ex)]
	// eight values at a time from two 8-byte loads, each value's
	// exponent shifted to the low byte of its 16 bits (the exponent lies
	// within them: m + the width of em ≤ 16) and the four bytes packed
	m &= 15
	lanes := uint64(em) * 0x0001_0001_0001_0001
	i := 0
	for ; i+8 <= len(ex); i += 8 {
		r := ref[2*i : 2*i+16]
		v0 := binary.LittleEndian.Uint64(r) >> m & lanes
		v1 := binary.LittleEndian.Uint64(r[8:]) >> m & lanes
		v0 = (v0 | v0>>8) & 0x0000_ffff_0000_ffff
		v1 = (v1 | v1>>8) & 0x0000_ffff_0000_ffff
		v0 = uint64(uint32(v0 | v0>>16))
		v1 = uint64(uint32(v1 | v1>>16))
		binary.LittleEndian.PutUint64(ex[i:i+8], v0|v1<<32)
	}
	for ; i < len(ex); i++ {
		ex[i] = byte(binary.LittleEndian.Uint16(ref[2*i:]) >> m & em)
	}
}

// refApply rebuilds values from reference values, tokens and extra bits in
// two passes: deltas reads the extra bits (the one serial chain, kept to
// few live values so that the position stays in a register) and writes
// each value's signed difference; add16 and add then apply them to the
// reference values, each value on its own.
type refApply struct {
	tab                       *[256]refTok
	pad                       []byte
	top, mask, flip, sh, sbit uint32
}

// deltas writes the signed difference of each token of ts (with its extra
// bits from position bp) to ds and returns the new extra-bit position. The
// sign is the token's; add16 and add flip it for negative references.
//
//go:noinline
func (ap *refApply) deltas(ds []uint32, ts []byte, bp uint) uint {
	tab, pad := ap.tab, ap.pad
	ds = ds[:len(ts)]
	for i, t := range ts {
		tk := &tab[t]
		a := tk.base | uint32(binary.LittleEndian.Uint64(pad[bp>>3:])>>(bp&7))&tk.low
		bp += uint(tk.n)
		ds[i] = (a ^ tk.neg) - tk.neg
	}
	return bp
}

// deltasAdd16 is deltas and add16 in one loop, for the 2-byte values of a
// signed format (BF16, F16) rebuilt from the references ref into d (the
// pure-Go path: the additions overlap the serial chain of bit positions).
//
//go:noinline
func (ap *refApply) deltasAdd16(d, ref, ts []byte, bp uint) uint {
	tab, pad := ap.tab, ap.pad
	ref = ref[:2*len(ts)]
	d = d[:2*len(ts)]
	for i, t := range ts {
		tk := &tab[t]
		a := tk.base | uint32(binary.LittleEndian.Uint64(pad[bp>>3:])>>(bp&7))&tk.low
		bp += uint(tk.n)
		dv := (a ^ tk.neg) - tk.neg
		binary.LittleEndian.PutUint16(d[2*i:], addMag16(binary.LittleEndian.Uint16(ref[2*i:]), dv))
	}
	return bp
}

// deltasAdd16Checked is deltasAdd16 over all of ts, checking the position
// as deltasChecked does; it returns the values done and the position.
func (ap *refApply) deltasAdd16Checked(d, ref, ts []byte, bp, limit uint) (int, uint) {
	for c0 := 0; c0 < len(ts); c0 += refCheckEvery {
		if bp > limit {
			return c0, bp
		}
		c1 := min(c0+refCheckEvery, len(ts))
		if c1-c0 == refCheckEvery && len(ap.pad) >= int(bp>>3)+refWin16 {
			bp = ap.deltasAdd16Block((*[2 * refCheckEvery]byte)(d[2*c0:]), (*[2 * refCheckEvery]byte)(ref[2*c0:]), (*[refCheckEvery]byte)(ts[c0:]), bp)
			continue
		}
		bp = ap.deltasAdd16(d[2*c0:], ref[2*c0:], ts[c0:c1], bp)
	}
	return len(ts), bp
}

// refWin16 is the bytes of extra bits deltasAdd16Block may read: it reads
// 8 bytes at bit offsets masked to below 1024, which the 64 values' extra
// bits never reach (a 2-byte value has fewer than 16: 64·15 < 1024).
const refWin16 = 1024/8 + 8

// deltasAdd16Block is deltasAdd16 of refCheckEvery values, written for
// the pure-Go path (arm64, the browser) in two loops: the first reads the
// extra bits, two values from each 8-byte read, and keeps each value's
// 16-bit difference, without bounds checks (the extra bits are read from
// a window of refWin16 bytes, at bit offsets within it below 1024); the
// second adds them to the references four at a time (addMag16x4), without
// branches. With it, fast8Go's four streams at a time and refExps16's
// eight values a step, a BF16 block of 64 Ki values (step 0 → 50) decodes
// in 280–300 µs instead of 505 µs in pure Go (amd64 built with -tags
// noasm, BenchmarkRefBlockDecode; this pass in one loop with a branch:
// 420 → 282 µs). Then the two loops without a branch (a branch on
// whether a value goes through zero mispredicted) and fast8Go's unchecked
// lookups made the pure-Go 10-frame chain 18–22 % faster (README).
//
//go:noinline
func (ap *refApply) deltasAdd16Block(dp, refp *[2 * refCheckEvery]byte, tsp *[refCheckEvery]byte, bp uint) uint {
	tab := ap.tab
	win := (*[refWin16]byte)(ap.pad[bp>>3:])
	var dvs [2 * refCheckEvery]byte
	off := bp & 7
	for i := 0; i < refCheckEvery; i += 2 {
		// two values from one 8-byte read: at least 57 bits, and two
		// values have at most 30 extra bits
		t0, t1 := &tab[tsp[i]], &tab[tsp[i+1]]
		o := off & 1023
		w := binary.LittleEndian.Uint64(win[o>>3:]) >> (o & 7)
		a0 := t0.base | uint32(w)&t0.low
		a1 := t1.base | uint32(w>>(t0.n&15))&t1.low
		off += uint(t0.n) + uint(t1.n)
		binary.LittleEndian.PutUint16(dvs[2*i:], uint16((a0^t0.neg)-t0.neg))
		binary.LittleEndian.PutUint16(dvs[2*i+2:], uint16((a1^t1.neg)-t1.neg))
	}
	for i := 0; i < 2*refCheckEvery; i += 8 {
		r := binary.LittleEndian.Uint64(refp[i:])
		dv := binary.LittleEndian.Uint64(dvs[i:])
		binary.LittleEndian.PutUint64(dp[i:], addMag16x4(r, dv))
	}
	return bp&^7 + off
}

// addMag16x4 is addMag16 of four values in the 16-bit lanes of r and dv:
// the magnitudes (below 2^15) and the differences' low 15 bits add
// without carrying into the next lane, and the differences' top bits go
// in by xor; a lane whose sum has its top bit set went through zero, and
// its mask, all ones, comes from that bit (m<<16 - m, mod 2^64 for the top
// lane).
func addMag16x4(r, dv uint64) uint64 {
	const h = 0x8000_8000_8000_8000
	t := (r&^h + dv&^h) ^ dv&h
	m := t & h >> 15
	return (r^t)&h | (t ^ (m<<16 - m))
}

// deltasChecked is deltas over all of ts, checking every refCheckEvery
// values that the extra-bit position has not passed limit (the padding
// covers the reads in between); it returns the values done (fewer than
// len(ts) when it had) and the position.
func (ap *refApply) deltasChecked(ds []uint32, ts []byte, bp, limit uint) (int, uint) {
	for c0 := 0; c0 < len(ts); c0 += refCheckEvery {
		if bp > limit {
			return c0, bp
		}
		c1 := min(c0+refCheckEvery, len(ts))
		bp = ap.deltas(ds[c0:c1], ts[c0:c1], bp)
	}
	return len(ts), bp
}

// add16 writes the 2-byte values of a signed format (BF16, F16) rebuilt
// from the reference values ref (2 bytes each) and the differences ds to d:
// add with the constants of 16 bits, which keeps the loop in registers.
func add16(d, ref []byte, ds []uint32) {
	ref = ref[:2*len(ds)]
	d = d[:2*len(ds)]
	for i, dv := range ds {
		binary.LittleEndian.PutUint16(d[2*i:], add16One(binary.LittleEndian.Uint16(ref[2*i:]), dv))
	}
}

// add16One is the value of a signed 2-byte format at difference dv (the
// sign flipped for negative references, as the tokens have it) from the
// reference value r: key(r) + dv, masked to 16 bits, unkeyed.
func add16One(r16 uint16, dv uint32) uint16 {
	r := uint32(r16)
	s := -(r >> 15 & 1)
	kr := r ^ (0x8000 | s&0x7fff) // key(r)
	kr = (kr + (dv ^ s) - s) & 0xffff
	kr ^= 0x8000 | (kr>>15-1)&0x7fff // unkey
	return uint16(kr)
}

// addMag16 is add16One computed on the magnitude, without branches (the
// pure-Go path; a branch on whether the value goes through zero, taken
// for 15 % of the values between early steps, mispredicts). The
// difference is to the magnitude (its sign flipped for negative
// references, as the tokens have it): t = magnitude + dv mod 2^16. Where
// t < 2^15 the sign stays and t is the magnitude; otherwise the value went
// through zero (or wrapped past the largest key) and comes out with the
// other sign and magnitude ^t & 0x7fff, as key arithmetic mod 2^16 gives.
func addMag16(r uint16, dv uint32) uint16 {
	t := r&0x7fff + uint16(dv)
	through := uint16(int16(t) >> 15) // all ones when t ≥ 2^15
	return (r^t)&0x8000 | (t ^ through)
}

// add is add16 for values of any size, written to out.
func (ap *refApply) add(out, rs, ds []uint32) {
	top, mask, flip, sh, sbit := ap.top, ap.mask, ap.flip, ap.sh, ap.sbit
	ds = ds[:len(rs)]
	out = out[:len(rs)]
	for i, r := range rs {
		kr := r ^ (top | -(r>>sh)&flip)
		neg := -(r >> sh & sbit)
		kr = (kr + (ds[i] ^ neg) - neg) & mask
		out[i] = kr ^ (top | (kr>>sh-1)&flip)
	}
}

// refFastGroups is the most groups the AVX-512 ungrouping takes on: it
// spends a compare per group and 64 values.
const refFastGroups = 24

// refPad is the padding after the extra bits: 8-byte reads of the values
// between two checks (at most 32 bits each) and a 64-byte window read
// after them (the AVX-512 paths).
const refPad = 8 + refCheckEvery*4 + 64

// refCheckEvery: the decoder checks the extra-bit position every this many
// values (and pads the extra bits for the reads in between).
const refCheckEvery = 64

// refDecoder is one worker's state for reference-conditioned blocks.
type refDecoder struct {
	grouped []byte
	groupOf []byte
	tv      []byte        // token of each value
	ex      []byte        // exponent of each reference value
	rv, out []uint32      // reference and decoded values
	pad     []byte        // the extra bits, padded for 8-byte reads
	rc      *rcState      // method 2
	sw      *refSwitchDec // methods 3 and 4
}

// loadAll reads len(v) values of the given size (1, 2 or 4 bytes).
func loadAll(v []uint32, src []byte, size int) {
	switch size {
	case 1:
		for i := range v {
			v[i] = uint32(src[i])
		}
	case 2:
		src = src[:2*len(v)]
		for i := range v {
			v[i] = uint32(src[2*i]) | uint32(src[2*i+1])<<8
		}
	default:
		for i := range v {
			v[i] = binary.LittleEndian.Uint32(src[4*i:])
		}
	}
}

// storeAll writes values of the given size.
func storeAll(dst []byte, v []uint32, size int) {
	switch size {
	case 1:
		for i, x := range v {
			dst[i] = byte(x)
		}
	case 2:
		for i, x := range v {
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(x))
		}
	default:
		for i, x := range v {
			binary.LittleEndian.PutUint32(dst[4*i:], x)
		}
	}
}

// decodeRefFloat decodes a reference-conditioned payload into dst given the
// reference bytes ref (len(dst) bytes).
func (b *blockDecoder) decodeRefFloat(dst, src, ref []byte, d dtype.DType) error {
	p, ok := refSpecFor(d)
	if !ok || p.size > 4 {
		return errf("reference block: no difference coding for %v", d)
	}
	if len(dst)%p.size != 0 || len(ref) != len(dst) {
		return errf("reference block of %v: length %d is not a whole number of values", d, len(dst))
	}
	if b.ref == nil {
		b.ref = &refDecoder{}
	}
	e := b.ref
	n := len(dst) / p.size
	if len(src) > 0 && b.methods != 0 && src[0] > b.methods && src[0] <= refMethodCompact {
		return errf("reference block: method %d is newer than the archive's format version", src[0])
	}
	if len(src) > 0 && src[0] == refMethodRange {
		return e.decodeRefRange(dst, src[1:], ref, &p)
	}
	if len(src) < 3 || src[0] != refMethodULP && src[0] != refMethodSwitch && src[0] != refMethodCompact {
		return errf("reference block: unknown method")
	}
	method := src[0]
	if !p.setQ(uint(src[1])) {
		return errf("reference block: bad sub-bucket bits %d for %v", src[1], d)
	}
	G := int(src[2])
	if G < 1 {
		return errf("reference block: no groups")
	}
	m, rest, err := readUvarint(src[3:], uint64(min(G-1, p.nctx)))
	if err != nil {
		return err
	}
	if len(e.groupOf) < p.nctx {
		e.groupOf = make([]byte, p.nctx)
	}
	groupOf := e.groupOf[:p.nctx]
	clear(groupOf)
	key := -1
	for j := uint64(0); j < m; j++ {
		var delta uint64
		if delta, rest, err = readUvarint(rest, uint64(p.nctx)); err != nil {
			return err
		}
		key += int(delta) + 1
		if key >= p.nctx || len(rest) < 1 || int(rest[0]) >= G || rest[0] == 0 {
			return errf("reference block: bad context map")
		}
		groupOf[key] = rest[0]
		rest = rest[1:]
	}
	e.out = slices.Grow(e.out[:0], n)[:n]
	e.tv = slices.Grow(e.tv[:0], n)[:n]
	e.ex = slices.Grow(e.ex[:0], n)[:n]
	out, ex := e.out, e.ex
	// the group of a value follows from its reference's exponent: ex holds
	// the exponents, gtab maps them to groups
	var gtab [256]byte
	copy(gtab[:], groupOf)
	m32, em := uint32(p.m), uint32(p.emask)
	switch p.size {
	case 2:
		refExps16Fast(ex, ref, p.m, uint16(p.emask)) // BF16, F16: from the bytes
	case 4:
		for i := refExps32Fast(ex, ref, p.m, em); i < n; i++ {
			ex[i] = byte(binary.LittleEndian.Uint32(ref[4*i:]) >> m32 & em)
		}
	default:
		for i, r := range ref[:n] {
			ex[i] = byte(uint32(r) >> m32 & em)
		}
	}
	tv := e.tv[:n]
	if method == refMethodSwitch || method == refMethodCompact {
		if e.sw == nil {
			e.sw = new(refSwitchDec)
		}
		if rest, err = e.sw.readTables(rest, G, &gtab, p.maxTok, method == refMethodCompact); err != nil {
			return err
		}
		if rest, err = e.sw.decodeTokens(tv, ex, rest); err != nil {
			return err
		}
	} else if rest, err = e.decodeGroups(b, tv, ex, rest, &gtab, G, &p); err != nil {
		return err
	}
	x, rest, err := readUvarint(rest, uint64(len(rest)))
	if err != nil {
		return err
	}
	if len(rest) != int(x) {
		return errf("reference block: %d trailing bytes", len(rest)-int(x))
	}
	// pad for the reads up to refCheckEvery values past the end
	e.pad = append(e.pad[:0], rest...)
	e.pad = append(e.pad, make([]byte, refPad)...)
	pad := e.pad
	limit := uint(8 * x)
	var tab [256]refTok
	p.tokTable(&tab)
	ap := p.applier(&tab, pad)
	if p.size == 2 && p.s == 1 { // BF16, F16: straight into dst
		// with AVX-512 most values in one pass, the rest as below
		k, done, bp := ap.deltasAddFast(dst, ref, tv, 0, limit, p.q, 2)
		if done < k {
			return errf("reference block: extra bits exhausted")
		}
		done, bp = ap.deltasAdd16Rest(dst[2*k:], ref[2*k:], out[k:n], tv[k:], bp, limit)
		if done < n-k {
			return errf("reference block: extra bits exhausted")
		}
		if bp > limit || (bp+7)/8 != uint(x) {
			return errf("reference block: %d bytes of extra bits, want %d", x, (bp+7)/8)
		}
		return nil
	}
	// FP8, or F32 without AVX-512 (and the last values with it)
	k, bp := 0, uint(0)
	if p.size == 4 && p.s == 1 {
		var done int
		k, done, bp = ap.deltasAddFast(dst, ref, tv, 0, limit, p.q, 4)
		if done < k {
			return errf("reference block: extra bits exhausted")
		}
	}
	done, bp := ap.refDeltasFast(out[k:], tv[k:], bp, limit)
	if done < n-k {
		return errf("reference block: extra bits exhausted")
	}
	if bp > limit || (bp+7)/8 != uint(x) {
		return errf("reference block: %d bytes of extra bits, want %d", x, (bp+7)/8)
	}
	e.rv = slices.Grow(e.rv[:0], n-k)[:n-k]
	loadAll(e.rv, ref[k*p.size:], p.size)
	ap.add(out[k:n], e.rv, out[k:n])
	storeAll(dst[k*p.size:], out[k:n], p.size)
	return nil
}

// decodeGroups decodes method 1's token streams (src after the context
// map) and puts the tokens back in value order into tv; it returns the
// rest of src.
func (e *refDecoder) decodeGroups(b *blockDecoder, tv, ex, rest []byte, gtab *[256]byte, G int, p *refSpec) ([]byte, error) {
	n := len(tv)
	var err error
	// four quarters of the values, counted apart (which also breaks the
	// store-to-load dependency): the quarters are put back in order by
	// four independent chains below
	var hc [4][256]uint32
	qn := n / 4
	var count, off [256]int
	var c32 [256]uint32
	quarters := false // hc holds the quarters' histograms
	if k := refCountGroupsFast(ex, gtab, G, &c32); k > 0 {
		for _, c := range ex[k:] {
			c32[gtab[c]]++
		}
		for g, c := range c32 {
			count[g] = int(c)
		}
	} else {
		quarterHist(&hc, ex, qn)
		quarters = true
		for t := range p.nctx {
			count[gtab[t]] += int(hc[0][t] + hc[1][t] + hc[2][t] + hc[3][t])
		}
	}
	e.grouped = slices.Grow(e.grouped[:0], n+1)[:n]
	pos := 0
	for g := 0; g < G; g++ {
		off[g] = pos
		if rest, err = b.st.decodeStream(e.grouped[pos:pos+count[g]], rest, p.tokW); err != nil {
			return nil, err
		}
		pos += count[g]
	}
	// tokens back in value order: with AVX-512 in one chain (the rest of
	// the values after it), otherwise one chain per quarter
	var o1 [256]uint32
	for g := 0; g < G; g++ {
		o1[g] = uint32(off[g])
	}
	if k, maxT := refUngroupFast(tv, ex, e.grouped, gtab, &o1, G); k > 0 {
		for i := k; i < n; i++ {
			g := gtab[ex[i]]
			tv[i] = e.grouped[o1[g]]
			o1[g]++
			maxT = max(maxT, tv[i])
		}
		if int(maxT) > p.maxTok {
			return nil, errf("reference block: token %d out of range", maxT)
		}
	} else {
		if !quarters {
			quarterHist(&hc, ex, qn)
		}
		if maxT := refUngroupQuarters(tv, ex, e.grouped, gtab, &hc, &off, G, p.nctx, qn); int(maxT) > p.maxTok {
			return nil, errf("reference block: token %d out of range", maxT)
		}
	}
	return rest, nil
}
