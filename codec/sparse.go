package codec

import (
	"encoding/binary"
	"io"
	"math/bits"
	"sync"

	"neuralzip/codec/rangecoder"
	"neuralzip/dtype"
)

// Sparse float blocks (form 2, format version 8; doc.go, "Sparse blocks").
//
// Activations after a ReLU, pruned weights and masks are mostly exact
// zeros (bit pattern 0). A sparse block codes the zero mask apart, by the
// cheapest of three methods (a bitmap stream, a stream of zero runs, or
// range-coded bits with a context per column of the tensor), and only the
// nonzero values through the fields split of the float coder; when every
// nonzero value has sign bit 0, the sign is not coded. The encoder tries
// it on blocks with at least 1/8 zeros and keeps it where it is smaller
// than the block's other coding.

// Format versions: archives whose float tensors show neither zeros nor
// repeated words to the probe (probeBlocks) stay denseVersion, readable by
// builds that predate sparse blocks; those with zeros are sparseVersion
// and may hold sparse blocks; those with repeats are lzPlanesVersion and
// may hold sparse blocks and zstd-coded streams (block.go, encodeLZPlanes).
const (
	denseVersion    = 7
	sparseVersion   = 8
	lzPlanesVersion = 9
)

// sparseForce makes the encoder write one mask method (tests); -1: the
// smallest.
var sparseForce = -1

// sparseMinZeros: a block is tried sparse when at least 1/sparseMinZeros
// of its values are zero.
const sparseMinZeros = 8

// columnsMinZeros8: the column-context mask (maskColumns) is tried only
// where at least columnsMinZeros8/8 of a block's values are zero (ReLU
// activations: half or more). It is range-coded bit by bit, ~15 ns a
// value each way; on weights with fewer zeros it saved ~1.4 % of a block
// (real-f16-native's mostly-zero tensors, 16-36 % zeros) and halved the
// file's compression and decompression speed.
const columnsMinZeros8 = 3

// Column-context model of the zero mask (maskColumns). Each bit has the
// probability of a 1 (a nonzero value) from three counts in turn, each
// estimate the prior of the next, weighted as colPrior observations:
// the block's so far (Krichevsky–Trofimov), its column's, and its
// column's given the bit before it in the row. Counts are halved when
// their pair reaches the limit (which keeps every product in 32 bits).
const (
	colPrior     = 8
	colGlobalMax = 8192
	colCountMax  = 1024
	colProbMin   = 32
	colProbMax   = 1<<16 - 32
)

// colModel is the state of the column-context mask model.
type colModel struct {
	col []uint16 // 2 per column: zeros, ones
	lft []uint16 // 4 per column: (bit before 0: zeros, ones), (bit before 1: ...)
}

func (m *colModel) reset(row int) {
	m.col = resize(m.col, 2*row)
	m.lft = resize(m.lft, 4*row)
}

// resize returns s with n cleared elements, reusing its array when it
// is large enough.
func resize[T uint16 | uint32](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// colRecips are the reciprocals of the column model's divisors (2 to
// 2·colGlobalMax+2): floor((2^64-1)/d) + 1, with which the high word of
// a·r is floor(a/d) for every 32-bit a (Lemire, Kaser and Kurz, "Faster
// remainder by direct computation", 2019), the division's exact result
// in a multiplication.
var colRecips = sync.OnceValue(func() []uint64 {
	r := make([]uint64, 2*colGlobalMax+3)
	for d := 2; d < len(r); d++ {
		r[d] = ^uint64(0)/uint64(d) + 1
	}
	return r
})

// divR is a/d (floor) for 2 ≤ d < len(r).
func divR(r []uint64, a, d uint32) uint32 {
	hi, _ := bits.Mul64(r[d], uint64(a))
	return uint32(hi)
}

// sparseEnc is a block encoder's sparse state.
type sparseEnc struct {
	on    bool   // the archive's version allows sparse blocks
	mask  []byte // one bit per value, LSB first
	vals  []byte // the nonzero values
	gaps  []byte
	cand  []byte // a mask coding being measured
	best  []byte // the smallest so far
	out   []byte // the whole sparse payload
	n, m  int    // gather's values and nonzero values
	signs bool   // a nonzero value has its sign bit set
	hist  [256]uint32
	model colModel
	rc    rangecoder.Encoder
	fast  bool // bitmap and gaps only (TensorCoder without Best)
	// the estimates of the last block's sparse and dense forms
	// (denseMayWin)
	est struct {
		ok            bool
		sparse, dense uint64
	}
	ones []uint32 // columnBits' counts
	acc  []uint64 // columnOnes8's sums
}

// sparseDec is a block decoder's sparse state.
type sparseDec struct {
	on    bool // the archive's version allows sparse blocks
	mask  []byte
	vals  []byte
	gaps  []byte
	model colModel
	rc    rangecoder.Decoder
}

// sparseType reports whether blocks of d may be sparse: the fields types
// of at most 4 bytes (BF16, F16, F32, F8_E4M3, F8_E5M2, F8_E8M0).
func sparseType(d dtype.DType) bool {
	f, ok := specFor(d)
	return ok && f.size <= 4
}

// sparseRow is the row length a block of tensor g uses as its columns:
// the last dimension of its shape, when that is at least 2 and at most
// maxSparseRow (0: none).
func sparseRow(g Segment) int64 {
	if len(g.Shape) < 2 {
		return 0
	}
	r := g.Shape[len(g.Shape)-1]
	if r < 2 || r > maxSparseRow {
		return 0
	}
	return r
}

// sparseCol is the column of value v of a tensor with rows of row values.
func sparseCol(v, row int64) int64 {
	if row <= 0 {
		return 0
	}
	return v % row
}

// countZeros counts the values of size bytes in p that are all zero bits:
// eight bytes at a time, each lane's "not zero" in its top bit (SWAR: the
// low bits plus all-ones-but-top carry into the top bit unless they are
// zero), then the bytes that do not fill a word. It runs on every float
// block of an archive that may hold sparse blocks, so it must cost little
// next to coding (a byte loop took 29 % of compressing real-bf16).
func countZeros(p []byte, size int) int {
	var low, top uint64
	switch size {
	case 1:
		low, top = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	case 2:
		low, top = 0x7fff7fff7fff7fff, 0x8000800080008000
	case 4:
		low, top = 0x7fffffff7fffffff, 0x8000000080000000
	default:
		return 0
	}
	lanes := 8 / size
	z, i := 0, 0
	// four words at a time, their lane tops moved to four distinct bits of
	// each lane, one population count
	for ; i+32 <= len(p); i += 32 {
		a := binary.LittleEndian.Uint64(p[i:])
		b := binary.LittleEndian.Uint64(p[i+8:])
		c := binary.LittleEndian.Uint64(p[i+16:])
		d := binary.LittleEndian.Uint64(p[i+24:])
		a = ((a & low) + low | a) & top
		b = ((b & low) + low | b) & top
		c = ((c & low) + low | c) & top
		d = ((d & low) + low | d) & top
		z += 4*lanes - bits.OnesCount64(a|b>>1|c>>2|d>>3)
	}
	for ; i+8 <= len(p); i += 8 {
		v := binary.LittleEndian.Uint64(p[i:])
		nonzero := ((v & low) + low | v) & top
		z += lanes - bits.OnesCount64(nonzero)
	}
	for ; i+size <= len(p); i += size {
		var v uint32
		for j := range size {
			v |= uint32(p[i+j])
		}
		if v == 0 {
			z++
		}
	}
	return z
}

// countZerosGo is the plain count, countZeros's twin in tests.
func countZerosGo(p []byte, size int) int {
	z := 0
	for i := 0; i+size <= len(p); i += size {
		zero := true
		for _, b := range p[i : i+size] {
			zero = zero && b == 0
		}
		if zero {
			z++
		}
	}
	return z
}

// encodeFloatBlock appends the float block in (plan p): the float coder's
// form, or the sparse form where the archive allows it, the block has at
// least 1/sparseMinZeros zeros and that is smaller. The sparse form is
// made first; on the default path the dense one is made only where an
// estimate says it may be smaller (denseMayWin: on weights with zeros the
// sparse form won 218 of 220 such blocks, and coding both cost a fifth
// of their compression), by bytes alone (Best) always.
func (b *blockEncoder) encodeFloatBlock(out, in []byte, p blockPlan) []byte {
	mark := len(out)
	if !b.sp.on || !p.sparseTry || !sparseType(p.dtype) {
		return b.encodeFloat(out, in, p.dtype)
	}
	size := p.dtype.Size()
	n := len(in) / size
	if n == 0 || countZeros(in, size)*sparseMinZeros < n {
		return b.encodeFloat(out, in, p.dtype)
	}
	b.sp.out = b.encodeSparse(b.sp.out[:0], in, p.dtype, int(p.row), int(p.col))
	if !b.best && !b.sp.denseMayWin() {
		return append(out, b.sp.out...)
	}
	out = b.encodeFloat(out, in, p.dtype)
	if len(b.sp.out) < len(out)-mark {
		out = append(out[:mark], b.sp.out...)
	}
	return out
}

// denseMayWin reports whether the float coder's dense form of the block
// just coded sparse may be smaller. For the types whose symbol joins no
// residual bits (BF16, F32: the dense form's planes hold the same bytes
// plus the zeros') both forms are estimated at order 0 from the sparse
// coder's histograms (denseEstimate): the exponent symbols, each residual
// plane at its entropy or raw width, whichever is less, and the sparse
// form's mask at its coded size; the dense form is tried where its
// estimate is under 33/32 of the sparse one's. Other types, and blocks
// without nonzero values, always try it.
func (sp *sparseEnc) denseMayWin() bool {
	return !sp.est.ok || 32*sp.est.dense < 33*sp.est.sparse
}

// denseEstimate sets sp.est for the m nonzero values of n split as f
// (sign dropped or not: dense is the same layout with the sign) into the
// symbols of histogram hist and planes, after a mask of maskLen bytes, in
// bits·2^16.
func (sp *sparseEnc) denseEstimate(f, dense fieldSpec, hist *[256]uint32, planes [][]byte, n, m, maskLen int) {
	sp.est.ok = f.maxJoin() == 0 && dense.maxJoin() == 0 && f.tz == 0 && m > 0
	if !sp.est.ok {
		return
	}
	z := n - m
	h := *hist
	sb, _ := entropyBits(&h, m)
	h[0] += uint32(z)
	db, _ := entropyBits(&h, n)
	sparse, denseB := uint64(sb*(1<<log2Frac)), uint64(db*(1<<log2Frac))
	sparse += uint64(maskLen) << (log2Frac + 3)
	for p := range planes {
		countHist(&h, planes[p][:m])
		pb, _ := entropyBits(&h, m)
		sparse += min(uint64(pb*(1<<log2Frac)), uint64(m)*uint64(f.planeW(p))<<log2Frac)
		h[0] += uint32(z)
		pd, _ := entropyBits(&h, n)
		denseB += min(uint64(pd*(1<<log2Frac)), uint64(n)*uint64(dense.planeW(p))<<log2Frac)
	}
	sp.est.sparse, sp.est.dense = sparse, denseB
}

// encodeSparse appends the sparse coding of the values in src (dtype d,
// a sparseType) to dst. row is the tensor's row length (0: none) and col
// the column of the first value.
func (b *blockEncoder) encodeSparse(dst, src []byte, d dtype.DType, row, col int) []byte {
	b.sp.gather(src, d)
	return b.encodeGathered(dst, d, row, col)
}

// gather sets the mask and the nonzero values of src (dtype d) and
// returns how many values are zero.
func (sp *sparseEnc) gather(src []byte, d dtype.DType) (zeros int) {
	size := d.Size()
	n := len(src) / size
	nb := (n + 7) / 8
	if cap(sp.mask) < nb {
		sp.mask = make([]byte, nb)
	}
	sp.mask = sp.mask[:nb]
	if cap(sp.vals) < len(src) {
		sp.vals = make([]byte, len(src))
	}
	l, _ := d.FloatLayout()
	sp.n = n
	sp.m, sp.signs = gatherNonzero(src, size, sp.vals[:len(src)], sp.mask, uint(l.Exp+l.Mant))
	return n - sp.m
}

// encodeGathered appends the sparse coding of the values gather took.
func (b *blockEncoder) encodeGathered(dst []byte, d dtype.DType, row, col int) []byte {
	f, _ := specFor(d)
	sp := &b.sp
	n, m := sp.n, sp.m
	vals := sp.vals[:m*f.size]
	var flags byte
	if f.s == 1 && !sp.signs {
		flags |= sparseSignDropped
		f.s = 0
	}
	// the mask: the smallest of the methods (or the one tests force)
	force := sparseForce
	sp.best = append(sp.best[:0], maskBitmap)
	countHist(&sp.hist, sp.mask)
	sp.best = b.st.appendStream(sp.best, sp.mask, 8, &sp.hist, false)
	// the gap stream has a symbol per nonzero value at least: it is made
	// only where that many may code smaller than the bitmap (mostly zeros)
	if force == maskGaps || force < 0 && m+8 < len(sp.best) {
		sp.gaps = appendGaps(sp.gaps[:0], sp.mask, n)
	}
	if force == maskGaps || force < 0 && m+8 < len(sp.best) && len(sp.gaps)+8 < len(sp.best) {
		sp.cand = append(sp.cand[:0], maskGaps)
		sp.cand = binary.AppendUvarint(sp.cand, uint64(len(sp.gaps)))
		countHist(&sp.hist, sp.gaps)
		sp.cand = b.st.appendStream(sp.cand, sp.gaps, 8, &sp.hist, false)
		if force == maskGaps || len(sp.cand) < len(sp.best) {
			sp.best, sp.cand = sp.cand, sp.best
		}
	}
	r := min(max(row, 1), max(n, 1)) // readers refuse a row longer than the block
	if force == maskColumns || force < 0 && !sp.fast && 8*(n-m) >= columnsMinZeros8*n && (b.best || sp.columnsMayPay(len(sp.best), n, r, col%r)) {
		sp.cand = append(sp.cand[:0], maskColumns)
		sp.cand = binary.AppendUvarint(sp.cand, uint64(r))
		sp.cand = binary.AppendUvarint(sp.cand, uint64(col%r))
		mark := len(sp.cand)
		sp.cand = sp.encodeColumns(sp.cand, n, r, col%r)
		// the length goes before the bytes
		l := len(sp.cand) - mark
		var lb [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(lb[:], uint64(l))
		sp.cand = append(sp.cand, lb[:k]...)
		copy(sp.cand[mark+k:], sp.cand[mark:mark+l])
		copy(sp.cand[mark:], lb[:k])
		if saved := len(sp.best) - len(sp.cand); force == maskColumns || saved > 0 && (b.best || slowerPays(saved, n, costColumnsPs)) {
			sp.best, sp.cand = sp.cand, sp.best
		}
	}
	sp.est.ok = false
	maskLen := len(sp.best)
	dst = append(dst, formSparse, flags)
	dst = append(dst, sp.best...)
	if m == 0 {
		return dst
	}
	return b.appendSparseValues(dst, vals, m, f, d, maskLen)
}

// columnsMayPay reports whether the column mask of the n gathered values
// (rows of row, the first value in column col) may save enough over the
// fast mask of fast bytes to pay for its decoding time (slowerPays). It
// estimates what the column model can reach, the order-0 cost of each
// column's bits and of learning it (columnBits, about 1 ns a value), and
// tries it where that saves at least half of what the rule asks, so that
// weights whose zeros the column model barely predicts skip the trial
// (about 12 ns a value).
func (sp *sparseEnc) columnsMayPay(fast, n, row, col int) bool {
	est := fast - int(sp.columnBits(n, row, col)>>(log2Frac+3))
	return est > 0 && slowerPays(2*est, n, costColumnsPs)
}

// columnBits is Σ over the columns of the order-0 cost of their mask bits
// and of learning their rates (n values, rows of row, the first in column
// col), in bits·2^log2Frac.
func (sp *sparseEnc) columnBits(n, row, col int) uint64 {
	sp.ones = resize(sp.ones, row)
	ones, mask := sp.ones, sp.mask
	switch {
	case row%8 == 0 && col%8 == 0:
		sp.columnOnes8(n, row, col)
	case row < 64:
		columnOnesShort(ones, mask, n, row, col)
	default:
		columnOnes(ones, mask, n, row, col)
	}
	var h uint64
	for c := range ones {
		t, o := uint64(colCount(n, row, col, c)), uint64(ones[c])
		if o == 0 || o == t {
			continue
		}
		z := t - o
		// plus what an adaptive model pays to learn the column's rate:
		// about ½·log2(t) bits (Krichevsky–Trofimov)
		h += t*log2Fixed(t) - o*log2Fixed(o) - z*log2Fixed(z) + log2Fixed(t)/2
	}
	return h
}

// columnOnes adds to ones[c] the set mask bits of column c (n values,
// rows of row, the first in column col), one bit at a time.
func columnOnes(ones []uint32, mask []byte, n, row, col int) {
	for i, c0 := 0, col; i < n; c0 = 0 {
		end := min(row, c0+n-i)
		for c := c0; c < end; c++ {
			ones[c] += uint32(mask[i>>3]>>(i&7)) & 1
			i++
		}
	}
}

// columnOnesShort is columnOnes for rows of fewer than 64 values, a
// mask word at a time: the word's bits of one column lie row apart, so
// each column's count is one popcount of the word under a comb shifted
// to it (row popcounts per 64 values; bit by bit, the short rows of a
// store's small tensors cost ~24 instructions a value, 2 % of a large
// model's add).
func columnOnesShort(ones []uint32, mask []byte, n, row, col int) {
	var comb uint64 // the bits of the word's first column
	for j := 0; j < 64; j += row {
		comb |= 1 << j
	}
	s, step := col%row, 64%row // the column of the word's first bit; its change per word
	for i := 0; i < n; i += 64 {
		var x uint64
		if n-i >= 64 {
			x = binary.LittleEndian.Uint64(mask[i>>3:])
		} else {
			for b := 0; b < (n-i+7)/8; b++ {
				x |= uint64(mask[i>>3+b]) << (8 * b)
			}
			x &= 1<<(n-i) - 1
		}
		c := s
		for k := range row {
			ones[c] += uint32(bits.OnesCount64(x & (comb << k)))
			if c++; c == row {
				c = 0
			}
		}
		if s += step; s >= row {
			s -= row
		}
	}
}

// columnOnes8 is columnOnes where whole mask bytes fall in one row (row
// and col multiples of 8): each byte's bits are spread into the eight
// byte lanes of a word (spread8) and the words of a column group summed
// across rows, at most 255 rows before they are added to sp.ones.
func (sp *sparseEnc) columnOnes8(n, row, col int) {
	g := row / 8
	if cap(sp.acc) < g {
		sp.acc = make([]uint64, g)
	}
	acc := sp.acc[:g]
	clear(acc)
	flush := func() {
		for j, w := range acc {
			o := sp.ones[8*j : 8*j+8 : 8*j+8]
			for k := range o {
				o[k] += uint32(w >> (8 * k) & 0xff)
			}
			acc[j] = 0
		}
	}
	sp8 := spread8()
	rows := 0
	j := col / 8
	for _, x := range sp.mask[:(n+7)/8] {
		acc[j] += sp8[x]
		if j++; j == g {
			j = 0
			if rows++; rows == 255 {
				flush()
				rows = 0
			}
		}
	}
	flush()
}

// spread8 maps a byte to the word whose byte k is its bit k.
var spread8 = sync.OnceValue(func() *[256]uint64 {
	var t [256]uint64
	for x := range t {
		for k := range 8 {
			t[x] |= uint64(x>>k&1) << (8 * k)
		}
	}
	return &t
})

// colCount is how many of n values, rows of row with the first in column
// col, lie in column c.
func colCount(n, row, col, c int) int {
	d := (c - col + row) % row
	if d >= n {
		return 0
	}
	return (n-1-d)/row + 1
}

// gatherNonzero sets mask (one bit per value of src, 1 where it is
// nonzero) and copies the nonzero values to vals; it returns their count
// and whether any has its sign bit (bit sbit) set. Branch-free: every
// value is written at vals[m], and m moves on past the nonzero ones.
func gatherNonzero(src []byte, size int, vals, mask []byte, sbit uint) (m int, signs bool) {
	n := len(src) / size
	var or uint64
	// 64 bytes at a time with AVX-512 where the CPU has it (its twin is
	// the rest of this function)
	i, m, orw := gatherNonzeroFast(src, size, vals, mask)
	// whole 8-byte words next: a word's nonzero lanes found at once
	// (SWAR: a lane's top bit after adding 0x7f..f to its low bits, or'd
	// with the lane), then one store per nonzero value
	switch size {
	case 1:
		for ; i+8 <= n; i += 8 {
			x := binary.LittleEndian.Uint64(src[i:])
			orw |= x
			nz := ((x&0x7f7f7f7f7f7f7f7f + 0x7f7f7f7f7f7f7f7f) | x) & 0x8080808080808080
			var mb byte
			for nz != 0 {
				lane := bits.TrailingZeros64(nz) >> 3
				nz &= nz - 1
				vals[m] = byte(x >> (8 * lane))
				m++
				mb |= 1 << lane
			}
			mask[i>>3] = mb
		}
	case 2:
		for ; i+8 <= n; i += 8 {
			x := binary.LittleEndian.Uint64(src[2*i:])
			y := binary.LittleEndian.Uint64(src[2*i+8:])
			orw |= x | y
			nx := ((x&0x7fff7fff7fff7fff + 0x7fff7fff7fff7fff) | x) & 0x8000800080008000
			ny := ((y&0x7fff7fff7fff7fff + 0x7fff7fff7fff7fff) | y) & 0x8000800080008000
			var mb byte
			for nx != 0 {
				lane := bits.TrailingZeros64(nx) >> 4
				nx &= nx - 1
				binary.LittleEndian.PutUint16(vals[2*m:], uint16(x>>(16*lane)))
				m++
				mb |= 1 << lane
			}
			for ny != 0 {
				lane := bits.TrailingZeros64(ny) >> 4
				ny &= ny - 1
				binary.LittleEndian.PutUint16(vals[2*m:], uint16(y>>(16*lane)))
				m++
				mb |= 16 << lane
			}
			mask[i>>3] = mb
		}
	}
	// fold the words' lanes: their OR is that of the values
	for sh := 8 * size; sh < 64; sh *= 2 {
		orw |= orw >> sh
	}
	or |= orw & (1<<(8*size) - 1)
	// the rest, value by value
	switch size {
	case 1:
		for ; i < n; i += 8 {
			var mb byte
			for k := 0; k < 8 && i+k < n; k++ {
				v := src[i+k]
				vals[m] = v
				nz := b2i(v != 0)
				m += nz
				mb |= byte(nz) << k
				or |= uint64(v)
			}
			mask[i>>3] = mb
		}
	case 2:
		for ; i < n; i += 8 {
			var mb byte
			for k := 0; k < 8 && i+k < n; k++ {
				v := binary.LittleEndian.Uint16(src[2*(i+k):])
				binary.LittleEndian.PutUint16(vals[2*m:], v)
				nz := b2i(v != 0)
				m += nz
				mb |= byte(nz) << k
				or |= uint64(v)
			}
			mask[i>>3] = mb
		}
	default:
		for ; i < n; i += 8 {
			var mb byte
			for k := 0; k < 8 && i+k < n; k++ {
				v := binary.LittleEndian.Uint32(src[4*(i+k):])
				binary.LittleEndian.PutUint32(vals[4*m:], v)
				nz := b2i(v != 0)
				m += nz
				mb |= byte(nz) << k
				or |= uint64(v)
			}
			mask[i>>3] = mb
		}
	}
	return m, or>>sbit&1 != 0
}

// b2i is 1 for true, 0 for false (a SETcc, no branch).
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendGaps appends the zero-run symbols of the mask of n values: per
// nonzero value the zeros before it (since the previous one), 255 for
// each whole 255 zeros first; zeros after the last nonzero value are not
// coded.
func appendGaps(dst, mask []byte, n int) []byte {
	// one symbol per nonzero value plus one per whole 255 zeros: at most
	// n + n/255 + 1; written by index into room made once
	start := len(dst)
	dst = grow(dst, n+n/255+1)
	out := dst[start:]
	o, prev := 0, 0
	for w := 0; w < len(mask); w += 8 {
		var x uint64
		if w+8 <= len(mask) {
			x = binary.LittleEndian.Uint64(mask[w:])
		} else {
			for k := w; k < len(mask); k++ {
				x |= uint64(mask[k]) << (8 * (k - w))
			}
		}
		for x != 0 {
			i := 8*w + bits.TrailingZeros64(x)
			x &= x - 1
			g := i - prev
			for g >= 255 {
				out[o] = 255
				o++
				g -= 255
			}
			out[o] = byte(g)
			o++
			prev = i + 1
		}
	}
	return dst[:start+o]
}

// encodeColumns appends the range-coded mask bits of n values with the
// column model (rows of row values, the first in column col). The model's
// p and update are written out in the loop (as in decodeColumns, which
// must compute the same): as calls they took most of the time.
func (sp *sparseEnc) encodeColumns(dst []byte, n, row, col int) []byte {
	sp.model.reset(row)
	sp.rc.Reset(dst)
	r := colRecips()
	cm, lm := sp.model.col, sp.model.lft
	var g0, g1 uint32
	c, l := col, 0
	for i := 0; i < n; i++ {
		bit := uint32(sp.mask[i>>3]>>(i&7)) & 1
		if c == 0 {
			l = 0
		}
		// p
		pg := divR(r, (2*g1+1)<<16, 2*(g0+g1)+2)
		ci, k := 2*c, 4*c+2*l
		c0, c1 := uint32(cm[ci]), uint32(cm[ci+1])
		p1 := divR(r, c1<<16+colPrior*pg, c0+c1+colPrior)
		d0, d1 := uint32(lm[k]), uint32(lm[k+1])
		p := min(max(divR(r, d1<<16+colPrior*p1, d0+d1+colPrior), colProbMin), colProbMax)
		sp.rc.EncodeP(p, bit)
		// update
		g0, g1 = g0+1-bit, g1+bit
		if g0+g1 >= colGlobalMax {
			g0, g1 = (g0+1)/2, (g1+1)/2
		}
		cm[ci+int(bit)]++
		if c0+c1+1 >= colCountMax {
			cm[ci], cm[ci+1] = (cm[ci]+1)/2, (cm[ci+1]+1)/2
		}
		lm[k+int(bit)]++
		if d0+d1+1 >= colCountMax {
			lm[k], lm[k+1] = (lm[k]+1)/2, (lm[k+1]+1)/2
		}
		l = int(bit)
		if c++; c == row {
			c = 0
		}
	}
	return sp.rc.Finish()
}

// appendSparseValues codes the m nonzero values in vals with the fields
// split f (the sign dropped where f.s is 0): u8 join, u8 zero bits, the
// symbol stream and the planes, as the fields form does without a setup.
// d is the block's type and maskLen the bytes of its mask (for
// denseEstimate, on the default path).
func (b *blockEncoder) appendSparseValues(dst, vals []byte, m int, f fieldSpec, d dtype.DType, maskLen int) []byte {
	syms := b.syms
	switch {
	case !sparseGenericSplit && f.size == 2 && f.s == 0 && f.maxJoin() == 0 && f.m <= 8:
		// BF16 without sign: no join to choose; one pass splits, counts
		// the exponents and ORs the mantissas (the dropped bits)
		b.buffers(m, 1)
		orR := splitNoSign16(vals[:2*m], f.m, b.syms[:m], b.planes[0][:m], &b.hist)
		if f.tz = chooseTZ(orR, f); f.tz != 0 {
			b.buffers(m, f.planes())
			splitFields(vals, m, f, b.syms, b.planes[:f.planes()], &b.hist)
		}
		syms = b.syms
	case !sparseGenericSplit && f.size == 1 && f.s == 0:
		// FP8 without sign: the join's statistics are the values' own
		// histogram; joined whole, the symbols are the values
		countHist(&b.stats.top, vals[:m])
		b.stats.jmax = f.maxJoin()
		var or byte
		for _, v := range vals[:m] {
			or |= v
		}
		b.stats.orR = uint64(or) & (1<<f.m - 1)
		f.j, f.tz = chooseJoin(&b.stats, f, m)
		if f.j == f.maxJoin() && f.j == f.m {
			b.hist = b.stats.top
			syms = vals[:m]
			break
		}
		b.buffers(m, f.planes())
		splitGeneric(vals, m, f, b.syms, b.planes[:f.planes()], &b.hist)
		syms = b.syms
	case !sparseGenericSplit && f.size == 2 && f.e == 8 && f.s == 1:
		// BF16 with its sign: no join to choose (maxJoin 0); the dense
		// coder's fast split, then the symbols' histogram
		b.buffers(m, f.planes())
		orR := splitBF16(vals[:2*m], b.syms[:m], b.planes[0][:m])
		if f.tz = chooseTZ(uint64(orR), f); f.tz != 0 {
			b.buffers(m, f.planes())
			splitFields(vals, m, f, b.syms, b.planes[:f.planes()], &b.hist)
		} else {
			countHist(&b.hist, b.syms[:m])
		}
		syms = b.syms
	default:
		// the dense coder's split (F16 with its sign: its fast one)
		f = b.splitJoined(vals, m, f, sparseGenericSplit)
		syms = b.syms
	}
	dst = append(dst, byte(f.j), byte(f.tz))
	if !b.best {
		// the dense form: the same split with the sign
		dense, _ := specFor(d)
		dense.j, dense.tz = f.j, f.tz
		b.sp.denseEstimate(f, dense, &b.hist, b.planes[:f.planes()], b.sp.n, m, maskLen)
	}
	dst = b.st.appendStream(dst, syms[:m], f.symW(), &b.hist, true)
	for p := 0; p < f.planes(); p++ {
		dst = b.appendPlane(dst, b.planes[p], f.planeW(p))
	}
	return dst
}

// sparseGenericSplit makes appendSparseValues take the generic split
// (tests compare the fast ones with it).
var sparseGenericSplit = false

// splitNoSign16 splits 2-byte values without sign bit into the symbol
// v>>m and the plane v & (2^m-1) (m ≤ 8, no join, no dropped bits),
// counts the symbols into hist and returns the OR of the planes.
func splitNoSign16(vals []byte, m uint, syms, plane []byte, hist *[256]uint32) uint64 {
	// four histograms, one per value of a group of four, so that runs of
	// one symbol do not wait on one counter
	var h [4][256]uint32
	mm := uint16(1)<<m - 1
	var or uint16
	n := len(syms)
	vals, plane = vals[:2*n], plane[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		x := binary.LittleEndian.Uint64(vals[2*i:])
		v0, v1, v2, v3 := uint16(x), uint16(x>>16), uint16(x>>32), uint16(x>>48)
		s := syms[i : i+4 : i+4]
		s[0], s[1], s[2], s[3] = byte(v0>>m), byte(v1>>m), byte(v2>>m), byte(v3>>m)
		h[0][s[0]]++
		h[1][s[1]]++
		h[2][s[2]]++
		h[3][s[3]]++
		p := plane[i : i+4 : i+4]
		p[0], p[1], p[2], p[3] = byte(v0&mm), byte(v1&mm), byte(v2&mm), byte(v3&mm)
		or |= (v0 | v1 | v2 | v3) & mm
	}
	for ; i < n; i++ {
		v := binary.LittleEndian.Uint16(vals[2*i:])
		s := byte(v >> m)
		syms[i] = s
		h[0][s]++
		plane[i] = byte(v & mm)
		or |= v & mm
	}
	for k := range hist {
		hist[k] = h[0][k] + h[1][k] + h[2][k] + h[3][k]
	}
	return uint64(or)
}

// sparseMask decodes the zero mask of the sparse block src (header h, n
// values) into mask, ceil(n/8) bytes (bit i&7 of byte i>>3 set where value
// i is nonzero), and returns how many values are nonzero. A block without
// one must end with its mask.
func (b *blockDecoder) sparseMask(mask, src []byte, h SparseHeader, n int) (int, error) {
	sp := &b.sp
	nb := len(mask)
	switch h.Mask {
	case MaskBitmap:
		rest, err := b.st.decodeStream(mask, src[h.Stream.Start:h.Stream.End], 8)
		if err != nil {
			return 0, err
		}
		if len(rest) != 0 {
			return 0, errf("sparse block: bitmap stream: %d trailing bytes", len(rest))
		}
		if n&7 != 0 && mask[nb-1]>>(n&7) != 0 {
			return 0, errf("sparse block: bitmap bits past the last value")
		}
	case MaskGaps:
		if cap(sp.gaps) < h.Gaps+1 {
			sp.gaps = make([]byte, h.Gaps+1)
		}
		gaps := sp.gaps[:h.Gaps]
		rest, err := b.st.decodeStream(gaps, src[h.Stream.Start:h.Stream.End], 8)
		if err != nil {
			return 0, err
		}
		if len(rest) != 0 {
			return 0, errf("sparse block: gap stream: %d trailing bytes", len(rest))
		}
		if err := expandGaps(mask, gaps, n); err != nil {
			return 0, err
		}
	case MaskColumns:
		if err := sp.decodeColumns(mask, src[h.Data:h.DataEnd], n, h.Row, h.Col); err != nil {
			return 0, err
		}
	}
	m := 0
	for _, x := range mask {
		m += bits.OnesCount8(x)
	}
	if m == 0 && h.Values != len(src) {
		return 0, errf("sparse block: %d trailing bytes", len(src)-h.Values)
	}
	return m, nil
}

// SparseMask decodes the zero mask of a sparse float block (its payload
// src, whose header h ReadSparseHeader read, of n values) into mask,
// which must hold ceil(n/8) bytes: bit i&7 of byte i>>3 is set where value
// i is nonzero. It returns how many are; their values follow at h.Values
// when there is one (ReadSparseValues). The GPU planner decodes masks so:
// the device then only scatters the values.
func SparseMask(mask, src []byte, h SparseHeader, n int) (int, error) {
	if len(mask) != (n+7)/8 {
		return 0, errf("sparse block: a mask of %d bytes for %d values", len(mask), n)
	}
	bd := blockDecoders.Get().(*blockDecoder)
	defer blockDecoders.Put(bd)
	bd.setup, bd.sp.on = nil, true
	return bd.sparseMask(mask, src, h, n)
}

// decodeSparse decodes a sparse block of dtype d into dst (n values).
func (b *blockDecoder) decodeSparse(dst, src []byte, d dtype.DType, n int) error {
	if !b.sp.on {
		return errf("sparse block in an archive of version < %d", sparseVersion)
	}
	h, err := ReadSparseHeader(src, n, d)
	if err != nil {
		return err
	}
	sp := &b.sp
	nb := (n + 7) / 8
	if cap(sp.mask) < nb+8 {
		sp.mask = make([]byte, nb+8)
	}
	mask := sp.mask[:nb]
	m, err := b.sparseMask(mask, src, h, n)
	if err != nil {
		return err
	}
	if m == 0 {
		clear(dst)
		return nil
	}
	vh, err := ReadSparseValues(src, h, d)
	if err != nil {
		return err
	}
	f := vh.spec()
	np := f.planes()
	b.buffers(m, np)
	b.st.sec = nil
	rest := src[vh.Len:]
	if rest, err = b.st.decodeStream(b.syms[:m], rest, vh.Width(0)); err != nil {
		return err
	}
	var planes [8][]byte
	for p := 0; p < np; p++ {
		if planes[p], rest, err = b.st.decodeStreamRef(b.planes[p][:m], rest, vh.Width(1+p)); err != nil {
			return err
		}
	}
	if len(rest) != 0 {
		return errf("sparse block: %d trailing bytes", len(rest))
	}
	if !scatterMerge(dst, mask, f, b.syms[:m], planes[:np], &sp.vals) {
		return errf("sparse block: a zero among the nonzero values")
	}
	return nil
}

// expandGaps sets the mask bits of the nonzero values the zero-run
// symbols gaps describe (appendGaps) for a block of n values.
func expandGaps(mask, gaps []byte, n int) error {
	clear(mask)
	pos := 0
	for _, g := range gaps {
		pos += int(g)
		if g == 255 {
			continue
		}
		if pos >= n {
			return errf("sparse block: zero runs pass the block's end")
		}
		mask[pos>>3] |= 1 << (pos & 7)
		pos++
	}
	if pos > n {
		return errf("sparse block: zero runs pass the block's end")
	}
	return nil
}

// decodeColumns decodes the n range-coded mask bits of src (encodeColumns,
// whose model it repeats step for step).
func (sp *sparseDec) decodeColumns(mask, src []byte, n, row, col int) error {
	if err := sp.rc.Reset(src); err != nil {
		return errf("sparse block: column mask: %v", err)
	}
	clear(mask)
	sp.model.reset(row)
	r := colRecips()
	cm, lm := sp.model.col, sp.model.lft
	var g0, g1 uint32
	c, l := col, 0
	for i := 0; i < n; i++ {
		if c == 0 {
			l = 0
		}
		pg := divR(r, (2*g1+1)<<16, 2*(g0+g1)+2)
		ci, k := 2*c, 4*c+2*l
		c0, c1 := uint32(cm[ci]), uint32(cm[ci+1])
		p1 := divR(r, c1<<16+colPrior*pg, c0+c1+colPrior)
		d0, d1 := uint32(lm[k]), uint32(lm[k+1])
		p := min(max(divR(r, d1<<16+colPrior*p1, d0+d1+colPrior), colProbMin), colProbMax)
		bit := sp.rc.DecodeP(p)
		g0, g1 = g0+1-bit, g1+bit
		if g0+g1 >= colGlobalMax {
			g0, g1 = (g0+1)/2, (g1+1)/2
		}
		cm[ci+int(bit)]++
		if c0+c1+1 >= colCountMax {
			cm[ci], cm[ci+1] = (cm[ci]+1)/2, (cm[ci+1]+1)/2
		}
		lm[k+int(bit)]++
		if d0+d1+1 >= colCountMax {
			lm[k], lm[k+1] = (lm[k]+1)/2, (lm[k+1]+1)/2
		}
		mask[i>>3] |= byte(bit) << (i & 7)
		l = int(bit)
		if c++; c == row {
			c = 0
		}
	}
	if !sp.rc.Done() {
		return errf("sparse block: column mask does not end with its bytes")
	}
	return nil
}

// scatterMerge merges the m nonzero values from their symbols and planes
// (as mergeGeneric) into the positions the mask marks, zeros elsewhere;
// false when a merged value is zero. Where merge has a fast path (BF16,
// F16, F32), FP8 symbols are the values, or BF16 without a sign is
// exponent<<m | plane, the values are merged densely into vals first and
// then expanded into place (scatterNonzero: SIMD where the CPU has it);
// the other 1- and 2-byte layouts merge value by value into place.
func scatterMerge(dst, mask []byte, f fieldSpec, syms []byte, planes [][]byte, vals *[]byte) bool {
	m := len(syms)
	dense := func() []byte {
		if cap(*vals) < m*f.size {
			*vals = make([]byte, m*f.size)
		}
		return (*vals)[:m*f.size]
	}
	f16 := f.size == 2 && f.e == 5 && f.s == 1 && f.tz == 0
	bf16 := f.size == 2 && f.e == 8 && f.s == 1 && f.j == 0 && f.tz == 0
	switch {
	case f.size > 2 || len(planes) > 2 || f16 || bf16:
		v := dense()
		merge(v, m, f, syms, planes)
		return scatterNonzero(dst, v, mask, f.size)
	case f.size == 1 && len(planes) == 0 && f.s == 0 && f.j == f.m && f.tz == 0:
		// FP8 without a sign: the symbol is the value
		return scatterNonzero(dst, syms, mask, 1)
	case f.size == 2 && len(planes) == 1 && f.s == 0 && f.j == 0 && f.tz == 0 && f.m <= 8:
		// BF16 without a sign: exponent<<m | the mantissa plane
		v := dense()
		mergeSym16(v, syms, planes[0][:m], f.m)
		return scatterNonzero(dst, v, mask, 2)
	}
	clear(dst)
	var p0, p1 []byte
	if len(planes) > 0 {
		p0 = planes[0][:len(syms)]
	}
	if len(planes) > 1 {
		p1 = planes[1][:len(syms)]
	}
	rest := f.w() - f.j
	jmask := uint32(1)<<f.j - 1
	emask := uint32(1)<<f.e - 1
	mmask := uint32(1)<<f.m - 1
	tz, mb, eb := f.tz, f.m, f.m+f.e
	ok := true
	k := 0
	for w := 0; w < len(mask); w += 8 {
		var x uint64
		if w+8 <= len(mask) {
			x = binary.LittleEndian.Uint64(mask[w:])
		} else {
			for j := w; j < len(mask); j++ {
				x |= uint64(mask[j]) << (8 * (j - w))
			}
		}
		for x != 0 {
			i := 8*w + bits.TrailingZeros64(x)
			x &= x - 1
			s := uint32(syms[k])
			var rt uint32
			if p0 != nil {
				rt = uint32(p0[k])
			}
			if p1 != nil {
				rt |= uint32(p1[k]) << 8
			}
			r := (s&jmask)<<rest | rt<<tz
			v := (r>>mb)<<eb | (s>>f.j&emask)<<mb | r&mmask
			if v == 0 {
				ok = false
			}
			if f.size == 1 {
				dst[i] = byte(v)
			} else {
				binary.LittleEndian.PutUint16(dst[2*i:], uint16(v))
			}
			k++
		}
	}
	return ok
}

// mergeSym16 writes the 2-byte values s<<m | p of the symbols and the
// plane, little-endian, to dst.
func mergeSym16(dst, syms, p []byte, m uint) {
	n := len(syms)
	p = p[:n]
	dst = dst[:2*n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s, q := syms[i:i+4:i+4], p[i:i+4:i+4]
		binary.LittleEndian.PutUint64(dst[2*i:], uint64(uint16(s[0])<<m|uint16(q[0]))|
			uint64(uint16(s[1])<<m|uint16(q[1]))<<16|
			uint64(uint16(s[2])<<m|uint16(q[2]))<<32|
			uint64(uint16(s[3])<<m|uint16(q[3]))<<48)
	}
	for ; i < n; i++ {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(syms[i])<<m|uint16(p[i]))
	}
}

// maskWord is the 64 mask bits from byte w (fewer at the end).
func maskWord(mask []byte, w int) uint64 {
	if w+8 <= len(mask) {
		return binary.LittleEndian.Uint64(mask[w:])
	}
	var x uint64
	for j := w; j < len(mask); j++ {
		x |= uint64(mask[j]) << (8 * (j - w))
	}
	return x
}

// scatterNonzero writes the values of vals to the positions the mask
// marks and zeros elsewhere; false when a value of vals is zero or vals
// holds fewer values than the mask marks. With AVX-512 (VBMI2) most of dst
// is expanded 64 bytes at a time (scatterNonzeroFast); scatterNonzeroGo,
// its twin, does the rest.
func scatterNonzero(dst, vals, mask []byte, size int) bool {
	m := 0
	for w := 0; w < len(mask); w += 8 {
		m += bits.OnesCount64(maskWord(mask, w))
	}
	if len(vals) < m*size {
		return false
	}
	i, k, zero := scatterNonzeroFast(dst, vals, mask, size)
	return scatterNonzeroGo(dst[i*size:], vals[k*size:], mask[i/8:], size) && !zero
}

// scatterNonzeroGo is scatterNonzero in Go: a mask word of all ones copies
// its 64 values at once, one of zeros clears them, others place value by
// value (a loop per value size).
func scatterNonzeroGo(dst, vals, mask []byte, size int) bool {
	n := len(dst) / size
	k := 0
	ok := true
	for w := 0; w < len(mask); w += 8 {
		x := maskWord(mask, w)
		i0 := 8 * w
		span := min(64, n-i0)
		d := dst[i0*size : (i0+span)*size]
		if x == ^uint64(0) {
			v := vals[k*size : (k+64)*size]
			copy(d, v)
			ok = ok && noZero(v, size)
			k += 64
			continue
		}
		clear(d)
		switch size {
		case 1:
			for x != 0 {
				i := bits.TrailingZeros64(x)
				x &= x - 1
				v := vals[k]
				d[i] = v
				ok = ok && v != 0
				k++
			}
		case 2:
			for x != 0 {
				i := bits.TrailingZeros64(x)
				x &= x - 1
				v := binary.LittleEndian.Uint16(vals[2*k:])
				binary.LittleEndian.PutUint16(d[2*i:], v)
				ok = ok && v != 0
				k++
			}
		default:
			for x != 0 {
				i := bits.TrailingZeros64(x)
				x &= x - 1
				v := binary.LittleEndian.Uint32(vals[4*k:])
				binary.LittleEndian.PutUint32(d[4*i:], v)
				ok = ok && v != 0
				k++
			}
		}
	}
	return ok
}

// noZero reports whether none of the values of size bytes in p is zero.
func noZero(p []byte, size int) bool {
	return countZeros(p, size) == 0
}

// probeBlocks probes the float blocks of plans for what decides the
// archive's format version: exact zeros, for which sparse blocks may pay
// (version 8), and words that repeat, for which zstd-coded planes may pay
// (version 9, lzPlanesVersion). From the first block of each tensor (at
// most sparseProbeBlocks blocks) it reads sparseProbeReads runs of
// sparseProbeBytes spread over the block. One block where at least 1/4 of
// those values are zero decides sparse. One block of 16- or 32-bit values,
// at least lzPlanesMinBytes long and with fewer zeros, where at least 1/16
// of the 4-byte words read without a zero value repeat another
// (lzWorthTrying's share; probeRepeats) decides repeats. It also marks the
// blocks worth trying sparse (blockPlan.sparseTry): those of a tensor whose
// probe found at least 1/sparseTryZeros zeros, and every block past the
// probe's limit, so that the other blocks of a dense model that holds one
// sparse tensor do not pay for counting their zeros. It marks the blocks
// of tensors of at least lzTryMinBytes whose probed nonzero words repeat
// (at least 1/lzTryShare), or, where the tensor has zeros, whose
// contiguous run repeats (lzSelfRepeats), to try zstd on equal terms
// (blockPlan.lzTry, mergeLZTensors); with rowProbe (EncodeOptions.Best)
// also 16-bit tensors whose rows mirror themselves, for repeat blocks
// (repeatRowProbe). The answer depends on the input's bytes and rowProbe
// only.
func probeBlocks(r io.ReaderAt, plans []blockPlan, rowProbe bool) (sparse, repeats bool) {
	var buf [sparseProbeBytes]byte
	var words [sparseProbeReads * sparseProbeBytes / 4]uint32
	probed := 0
	try, lzTry := false, false
	var set []uint64
	var err error
	for i := range plans {
		p := &plans[i]
		if !p.float || !sparseType(p.dtype) {
			continue
		}
		if p.cont {
			p.sparseTry, p.lzTry = try, lzTry
			continue
		}
		if probed++; probed > sparseProbeBlocks {
			p.sparseTry, try, lzTry = true, true, false
			continue
		}
		size := int64(p.dtype.Size())
		n := p.length / size
		per := int64(sparseProbeBytes) / size
		zeros, vals, nw := 0, 0, 0
		// repeats matter in blocks that may be tried as planes: of 16- or
		// 32-bit values (planes of 8-bit ones are the values), at least
		// lzPlanesMinBytes long
		lz := !repeats && size > 1 && p.length >= lzPlanesMinBytes
		// the same words decide lzTry, in tensors of at least
		// lzTryMinBytes (smaller blocks: lzWorth probes them as they are
		// coded; here the reads would overlap)
		probeLZ := size > 1 && p.length >= lzTryMinBytes
		lzTry = false
		for k := int64(0); k < sparseProbeReads; k++ {
			first := spreadRun(k, sparseProbeReads, n, per)
			l := min(per, n-first) * size
			if l <= 0 {
				continue
			}
			b, ok := inPlace(r, p.off+first*size, l) // an input in memory: no copy
			if !ok {
				if _, err := r.ReadAt(buf[:l], p.off+first*size); err != nil && err != io.EOF {
					return sparse, repeats // Encode reports the read error when it codes the block
				}
				b = buf[:l]
			}
			zeros += countZeros(b, int(size))
			vals += int(l / size)
			for j := 0; (lz || probeLZ) && j+4 <= len(b); j += 4 {
				if w := binary.LittleEndian.Uint32(b[j:]); noZeroValue(w, size) {
					words[nw] = w
					nw++
				}
			}
		}
		try = vals > 0 && sparseTryZeros*zeros >= vals
		p.sparseTry = try
		zeroed := vals > 0 && 4*zeros >= vals
		sparse = sparse || zeroed
		dup := -1
		if nw >= lzMinWords && nw <= lzProbeWords {
			dup = repeatCount(words[:nw])
		}
		repeats = repeats || lz && !zeroed && probeRepeats(nw, dup)
		// never worse than zstd: tensors whose nonzero words repeat try
		// LZ on equal terms (lzTry; mergeLZTensors)
		lzTry = probeLZ && dup >= 0 && dup*lzTryShare >= nw
		if !lzTry && probeLZ && try {
			if lzTry, err = lzSelfRepeats(r, p, &set); err != nil {
				return sparse, repeats
			}
		}
		p.lzTry = lzTry
		// repeat blocks: tensors whose words repeat (lzTry) probed for
		// row matches; with rowProbe (Best), 16-bit ones whose value pairs
		// do not (a DFT basis repeats single values) first through the
		// cheap row probe, and where they match tried on the same terms as
		// lzTry's. Not on the default path: real-bf16's one such table
		// (Silero VAD's STFT basis) saves 1.1 % of the file for 62 % more
		// compress and 32 % more decompress instructions.
		if !repeatOff && p.tensorRow > 0 && (lzTry || rowProbe && size == 2 && probeLZ) && repeatType(p.dtype, p.tensorRow, p.length/size/p.tensorRow*p.tensorRow*size) {
			rows := lzTry
			if !rows {
				if rows, err = repeatRowProbe(r, p); err != nil {
					return sparse, repeats
				}
			}
			if rows {
				if p.repeatTry, err = repeatProbe(r, p, &set); err != nil {
					return sparse, repeats
				}
				lzTry = lzTry || p.repeatTry
				p.lzTry = lzTry
			}
		}
	}
	return sparse, repeats
}

// lzTryMinBytes: smaller tensors are not probed for lzTry.
const lzTryMinBytes = 4 << 10

// lzTryShare: a tensor whose probed nonzero words repeat at least one in
// lzTryShare times tries LZ coding beside the float coder's (lzTry).
const lzTryShare = 16

// lzSelfBytes is what lzSelfRepeats reads: 16 KiB, 4096 words.
const lzSelfBytes = 16 << 10

// lzSelfRepeats reads lzSelfBytes from the middle of block p (a tensor's
// first block, with zeros) and reports whether at least 1/lzTryShare of
// its units without a zero value equal an earlier one there: 4-byte
// words of F32, 8 bytes (four values) of 16-bit types, whose value pairs
// repeat by chance where the values come from a small set (quantised
// weights, 18 % of a hand-landmark model's F16 conv pairs, 0.5 % of its
// 4-value units). Tables made from formulas (an STFT basis under a
// window shorter than the transform, filterbanks) repeat each value a
// few times across the block, which the probe's sparse sample of a few
// hundred words does not show; a contiguous run of a few rows does (45 %
// of the nonzero words of a windowed 512-point DFT basis, none of relu
// activations). set is scratch for the count.
func lzSelfRepeats(r io.ReaderAt, p *blockPlan, set *[]uint64) (bool, error) {
	l := min(p.length, lzSelfBytes) &^ 7
	off := p.off + (p.length-l)/2
	off -= (off - p.off) % 8
	b, ok := inPlace(r, off, l)
	if !ok {
		b = make([]byte, l)
		if _, err := r.ReadAt(b, off); err != nil && err != io.EOF {
			return false, err
		}
	}
	if *set == nil {
		*set = make([]uint64, 1<<lzSelfSetBits)
	}
	s := *set
	clear(s)
	size := int64(p.dtype.Size())
	unit := 4
	if size == 2 {
		unit = 8
	}
	nz, dup := 0, 0
	for j := 0; j+unit <= len(b); j += unit {
		w := binary.LittleEndian.Uint32(b[j:])
		if !noZeroValue(w, size) {
			continue
		}
		if unit == 8 {
			w2 := binary.LittleEndian.Uint32(b[j+4:])
			if !noZeroValue(w2, size) {
				continue
			}
			// the 8 bytes as one 32-bit key (a product's high half)
			w = uint32((uint64(w2)<<32 | uint64(w)) * 0x9e3779b97f4a7c15 >> 32)
		}
		nz++
		e := uint64(w) | 1<<32
		for h := (w * 0x9e3779b1) >> (32 - lzSelfSetBits); ; h = (h + 1) & (1<<lzSelfSetBits - 1) {
			if s[h] == 0 {
				s[h] = e
				break
			}
			if s[h] == e {
				dup++
				break
			}
		}
	}
	return nz >= lzMinWords && dup*lzTryShare >= nz, nil
}

// lzSelfSetBits: log2 of lzSelfRepeats' set slots (twice its words).
const lzSelfSetBits = 13

// spreadRun is where run k of reads runs of per units starts in a span
// of n units: at the middle of the span's k-th of reads equal parts, kept
// inside the span where it is long enough (the probes' reads).
func spreadRun(k, reads, n, per int64) int64 {
	return min((2*k+1)*n/(2*reads), max(n-per, 0))
}

// noZeroValue reports whether the 4-byte word w holds no value ±0 of
// size bytes (2 or 4): the zeros of sparse tensors repeat, and sparse
// blocks code them.
func noZeroValue(w uint32, size int64) bool {
	if size == 2 {
		return w&0x7fff != 0 && w&0x7fff0000 != 0
	}
	return w&0x7fffffff != 0
}

// probeRepeats reports whether at least 1/16 but fewer than half of nw
// probed words equal an earlier one (dup of them; dup < 0: fewer than
// lzMinWords or more than lzProbeWords words, not counted): where more
// repeat (a constant tensor, a layer norm's ones), zstd's block of the
// interleaved bytes wins by far and planes are not tried (lzTryPlanes).
func probeRepeats(nw, dup int) bool {
	if dup < 0 {
		return false
	}
	return dup*16 >= nw && dup*2 < nw
}

// sparseTryZeros: the blocks of a tensor whose probe finds at least
// 1/sparseTryZeros zeros try a sparse coding (half the 1/sparseMinZeros a
// block needs, for the probe's sampling).
const sparseTryZeros = 16

// The probe: blocks, reads per block and bytes per read.
const (
	sparseProbeBlocks = 4096
	sparseProbeReads  = 4
	sparseProbeBytes  = 256
)

// versionFor is the format version of an archive whose probes found zeros
// (sparse) or repeated words (repeats) in float tensors (probeBlocks), or
// opaque bytes for cm blocks (cm, probeOpaque), or planned records blocks
// (records, planRecords).
func versionFor(sparse, repeats, cm, records bool) int {
	switch {
	case records:
		return recordsVersion
	case cm:
		return cmVersion
	case repeats:
		return lzPlanesVersion
	case sparse:
		return sparseVersion
	}
	return denseVersion
}
