package huff

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Decoder decodes huff0 Huffman blocks (the layouts huff0's Decompress4X
// and Decompress1X read) with a table that yields up to two symbols per
// lookup: where the codes of two symbols fit in the table's tl bits, one
// lookup writes both. huff0's decoder takes one symbol per lookup, and
// each lookup waits on the one before in the same stream, so on streams
// of short codes (pair codes of exponents, tokens) this decodes more per
// step. Tables of longer codes (mantissa planes, most token tables)
// decode one symbol per lookup, in the same rounds. Reading a table is
// most of the cost of a short block (a difference block has a table per
// group of tokens): the weights come from fseWeights, and the table is
// filled weight by weight. huff0's own decoder is the twin (huffx_test.go,
// FuzzHuffX, FuzzHuffX1); the assembly rounds and the AVX-512 table build
// have pure-Go twins of their own (TestHuffXTiers).
type Decoder struct {
	// Single must come right before double: the AVX-512 table build
	// reads 2 bytes past Single's end
	Single [1 << MaxBits]uint16 // symbol<<8 | code length
	double [1 << MaxBits]uint32 // bits | sym1<<8 | sym2<<16 | count<<24
	TL     uint
	NSym   int             // symbols described (the last one has the implied weight)
	two    bool            // decode with double (else single)
	w      [fseOutMax]byte // weights, then the implied last one
}

// TwoSymbol says whether the table last read decodes two symbols per
// lookup where it can.
func (h *Decoder) TwoSymbol() bool { return h.two }

// TwoMin: Huffman blocks of this many symbols and more are decoded two
// symbols per lookup where their table makes it pay; below it building
// the second table costs more than it saves.
const TwoMin = 2048

// ReadTable reads a huff0 table description (as huff0.ReadTable does,
// with the same checks) and builds the decoding table, and for a block of
// n ≥ TwoMin symbols the two-symbol one where at least half the lookups
// would yield two symbols (below that building it costs more than it
// saves). It returns the bytes after the description.
func (h *Decoder) ReadTable(src []byte, n int) ([]byte, error) {
	rest, err := h.ReadWeights(src)
	if err != nil {
		return nil, err
	}
	if h.two && (n < TwoMin || !use.Two) {
		h.two = false
	}
	if h.two {
		h.buildDouble()
	}
	return rest, nil
}

// ReadWeights reads the description and builds the single-symbol table;
// two says whether the two-symbol one would pay on a long block.
func (h *Decoder) ReadWeights(src []byte) ([]byte, error) { return h.ReadWeightsTo(src, nil) }

// ReadWeightsTo is ReadWeights building the table into dst(tl) when dst
// is not nil (see finishWeights).
func (h *Decoder) ReadWeightsTo(src []byte, dst func(tl uint) *[1 << MaxBits]uint16) ([]byte, error) {
	if len(src) <= 1 {
		return nil, errf("huffman table: input too small")
	}
	iSize := int(src[0])
	in := src[1:]
	n := 0
	if iSize >= 128 {
		n = iSize - 127
		nb := (n + 1) / 2
		if nb > len(in) {
			return nil, errf("huffman table: input too small")
		}
		for i := 0; i < n; i += 2 {
			v := in[i/2]
			h.w[i], h.w[i+1] = v>>4, v&15
		}
		in = in[nb:]
	} else {
		if len(in) < iSize {
			return nil, errf("huffman table: want %d bytes, have %d", iSize, len(in))
		}
		if in[0]&15+5 > 6 {
			return nil, errf("huffman table: weights tableLog too big")
		}
		var err error
		if n, err = fseWeights(&h.w, in[:iSize]); err != nil {
			return nil, errf("huffman table: weights: %v", err)
		}
		if n > 255 {
			return nil, errf("huffman table: too many weights")
		}
		in = in[iSize:]
	}
	if err := h.finishWeights(n, dst); err != nil {
		return nil, err
	}
	return in, nil
}

// finishWeights checks the n weights described in h.w (huff0's: length =
// tableLog + 1 - weight, 0 for an absent symbol), adds the last symbol's,
// implied by the code being complete, and builds the single-symbol table:
// into h.Single, or where dst (given the table log) says.
func (h *Decoder) finishWeights(n int, dst func(tl uint) *[1 << MaxBits]uint16) error {
	// four histograms: weights repeat, so each increment does not wait
	// on the one before
	var hist [4][16]uint32
	var seen byte
	w := h.w[:n]
	// (of the four quarters of the weights, the last one with the
	// remainder: buildSingle sorts the quarters apart, too)
	q := len(w) / 4
	for i := range q {
		a, b, c, d := w[i], w[q+i], w[2*q+i], w[3*q+i]
		hist[0][a&15]++
		hist[1][b&15]++
		hist[2][c&15]++
		hist[3][d&15]++
		seen |= a | b | c | d
	}
	for _, v := range w[4*q:] {
		hist[3][v&15]++
		seen |= v
	}
	var rank [16]uint32
	for i := range rank {
		rank[i] = hist[0][i] + hist[1][i] + hist[2][i] + hist[3][i]
	}
	if seen > 15 || rank[12]|rank[13]|rank[14]|rank[15] != 0 {
		return errf("huffman table: weight too large")
	}
	var total uint32
	for i := 1; i < len(rank); i++ {
		total += rank[i] << (i - 1)
	}
	if total == 0 {
		return errf("huffman table: weights zero")
	}
	tl := uint(bits.Len32(total))
	if tl > MaxBits {
		return errf("huffman table: tableLog too big")
	}
	rest := uint32(1)<<tl - total
	last := uint(bits.Len32(rest))
	if rest != 1<<(last-1) {
		return errf("huffman table: last weight not a power of two")
	}
	h.w[n] = byte(last)
	n++
	h.NSym = n
	rank[last]++
	hist[3][last]++
	if rank[1] < 2 || rank[1]&1 != 0 {
		return errf("huffman table: bad count of the longest codes")
	}
	h.TL = tl
	// Under the code's own distribution every table entry is equally
	// likely, so the share of lookups that yield two symbols is the share
	// of pairs of codes that fit in tl bits: weights w1 + w2 ≥ tl + 2. A
	// table below one half decodes faster one symbol per lookup (fewer
	// instructions per lookup, no second table to build).
	var suffix [MaxBits + 3]uint64
	for w := tl; w >= 1; w-- {
		suffix[w] = suffix[w+1] + uint64(rank[w])<<(w-1)
	}
	var pairs uint64
	for w := uint(2); w <= tl; w++ {
		pairs += uint64(rank[w]) << (w - 1) * suffix[tl+2-w]
	}
	h.two = 2*pairs >= 1<<(2*tl)
	single := &h.Single
	if dst != nil {
		single = dst(tl)
	}
	h.buildSingle(single, n, q, &rank, &hist)
	return nil
}

// buildSingle fills the single-symbol table from the n weights, of which
// rank[w] have weight w (hist[k][w] in quarter k: q weights each, the
// last quarter the rest): symbols by increasing weight (longest codes
// first), in symbol order within a weight, each repeated 2^(w-1) times.
// The symbols are sorted by weight first, the four quarters in step (the
// position counters of one quarter do not wait on another's), so that
// each weight's runs are written by one loop of fixed stores (the runs of
// a complete code are aligned to their length).
func (h *Decoder) buildSingle(single *[1 << MaxBits]uint16, n, q int, rank *[16]uint32, hist *[4][16]uint32) {
	tl := h.TL           // ≥ every weight
	var at [4][16]uint32 // where each quarter's symbols of each weight go in order
	for w := uint(1); w <= tl; w++ {
		at[0][w+1] = at[0][w] + rank[w]
	}
	at[0][0] = at[0][tl+1] // symbols of weight 0 go last
	for k := 1; k < 4; k++ {
		for w := range at[k] {
			at[k][w] = at[k-1][w] + hist[k-1][w]
		}
	}
	var order [256]byte
	w := h.w[:n]
	for i := range q {
		a, b, c, d := w[i]&15, w[q+i]&15, w[2*q+i]&15, w[3*q+i]&15
		order[at[0][a]&255] = byte(i)
		order[at[1][b]&255] = byte(q + i)
		order[at[2][c]&255] = byte(2*q + i)
		order[at[3][d]&255] = byte(3*q + i)
		at[0][a]++
		at[1][b]++
		at[2][c]++
		at[3][d]++
	}
	for i := 4 * q; i < n; i++ {
		order[at[3][w[i]&15]&255] = byte(i)
		at[3][w[i]&15]++
	}
	quad := (*[1 << MaxBits / 4]uint64)(unsafe.Pointer(single))
	pos, k := uint32(0), uint32(0)
	for w := uint(1); w <= tl; w++ {
		syms := order[k : k+rank[w]]
		k += rank[w]
		length := uint16(tl + 1 - w)
		switch w {
		case 1:
			for _, s := range syms {
				single[pos&(1<<MaxBits-1)] = uint16(s)<<8 | length
				pos++
			}
		case 2:
			for _, s := range syms {
				v := uint32(uint16(s)<<8|length) * 0x0001_0001
				*(*uint32)(unsafe.Pointer(&single[pos&(1<<MaxBits-2)])) = v
				pos += 2
			}
		case 3:
			for _, s := range syms {
				quad[pos/4&(1<<MaxBits/4-1)] = uint64(uint16(s)<<8|length) * 0x0001_0001_0001_0001
				pos += 4
			}
		default:
			l := uint32(1) << (w - 1)
			for _, s := range syms {
				v := uint64(uint16(s)<<8|length) * 0x0001_0001_0001_0001
				q := quad[pos/4 : (pos+l)/4]
				for j := range q {
					q[j] = v
				}
				pos += l
			}
		}
	}
}

// buildDoubleGo derives the two-symbol table from the single one: the
// entries of a symbol of length l1 form a run of 2^(tl-l1), and entry j of
// the run sees the next symbol's code at single[j<<l1].
func (h *Decoder) buildDoubleGo() {
	tl := h.TL
	single := h.Single[:1<<tl]
	double := h.double[:1<<tl]
	for i := 0; i < len(single); {
		e1 := single[i]
		l1 := uint(e1 & 0xFF)
		run := 1 << (tl - l1)
		s1 := uint32(e1>>8) << 8
		one := s1 | uint32(l1) | 1<<24
		out := double[i : i+run]
		// entry j of the run sees the next code at single[j<<l1]
		step := 1 << l1
		next := single[:len(out)<<l1]
		lim := uint32(tl - l1)
		for j := range out {
			e2 := uint32(next[j*step])
			v := s1 | e2>>8<<16 | (e2&0xFF + uint32(l1)) | 2<<24
			if e2&0xFF > lim { // branch-free (CMOV): the outcome is data
				v = one
			}
			out[j] = v
		}
		i += run
	}
}

// Decode4 decodes the 4-stream data src (jump table and streams, after the
// table description) into dst, whose capacity is the symbol count.
func (h *Decoder) Decode4(dst, src []byte) error {
	n := cap(dst)
	dst = dst[:n]
	if len(src) < 6+4 {
		return errf("huffman data: input too small")
	}
	var start, end [4]int
	s := 6
	for i := range 3 {
		l := int(binary.LittleEndian.Uint16(src[2*i:]))
		if s+l >= len(src) {
			return errf("huffman data: truncated input (or invalid offset)")
		}
		start[i], end[i] = s, s+l
		s += l
	}
	start[3], end[3] = s, len(src)
	seg := (n + 3) / 4
	var st [4]hxStream
	for i := range st {
		if start[i] == end[i] || src[end[i]-1] == 0 {
			return errf("huffman data: stream %d: no end marker", i)
		}
		o := min(seg*i, n)
		st[i] = hxStream{p: end[i], c: 8 - uint(bits.Len8(src[end[i]-1])-1), o: o, oe: min(o+seg, n), lo: start[i]}
	}
	h.fast4(dst, src, &st)
	for i := range st {
		if err := h.tail(dst, src, &st[i]); err != nil {
			return errf("huffman data: stream %d: %v", i, err)
		}
	}
	return nil
}

// Decode1 decodes the 1-stream data src (after the table description)
// into dst, whose capacity is the symbol count: the stream must end
// exactly with the last symbol (huff0's Decompress1X, with the caller's
// check that it yields exactly cap(dst) symbols).
func (h *Decoder) Decode1(dst, src []byte) error {
	n := cap(dst)
	dst = dst[:n]
	if len(src) == 0 || src[len(src)-1] == 0 {
		return errf("huffman data: no end marker")
	}
	s := hxStream{p: len(src), c: 8 - uint(bits.Len8(src[len(src)-1])-1), oe: n}
	h.fast1(dst, src, &s)
	if err := h.tail(dst, src, &s); err != nil {
		return errf("huffman data: %v", err)
	}
	return nil
}

// fast1Go decodes one stream five lookups at a time while it has a full
// window above src[0] and room for what five lookups write: the pure-Go
// twin of huffXStream.
func (h *Decoder) fast1Go(dst, src []byte, s *hxStream) {
	sh := 64 - h.TL
	p, c, o := s.p, s.c, s.o
	if h.two {
		double := &h.double
		for p-int(c>>3) >= 8 && o+12 <= s.oe {
			p -= int(c >> 3)
			c &= 7
			w := binary.LittleEndian.Uint64(src[p-8:])
			for range 5 {
				e := double[(w<<c)>>sh&(1<<MaxBits-1)]
				binary.LittleEndian.PutUint16(dst[o:], uint16(e>>8))
				c += uint(e) & 0xFF
				o += int(e >> 24)
			}
		}
		s.p, s.c, s.o = p, c, o
		return
	}
	for s.o+5 <= s.oe && h.window1(dst, src, s, 5) {
	}
}

// window1 takes k ≤ 5 symbols of stream s one per lookup from its next
// 8-byte window, if that lies above src[0], and reports whether it did.
func (h *Decoder) window1(dst, src []byte, s *hxStream, k int) bool {
	p := s.p - int(s.c>>3)
	if p < 8 {
		return false
	}
	s.p, s.c = p, s.c&7
	w := binary.LittleEndian.Uint64(src[p-8:])
	sh := 64 - h.TL
	d := dst[s.o : s.o+k]
	for j := range d {
		e := h.Single[(w<<s.c)>>sh&(1<<MaxBits-1)]
		d[j] = byte(e >> 8)
		s.c += uint(e) & 0xFF
	}
	s.o += k
	return true
}

// hxStream is one backward bitstream: the unread bits end c bits below
// the top of the 8-byte window src[p-8:p]; output goes to dst[o:oe].
type hxStream struct {
	p, lo, o, oe int
	c            uint
}

// fast4Go decodes the four streams in step, up to ten symbols each per
// round, while every stream has a full window above src[0] and room for
// ten symbols: the pure-Go twin of huffXRounds.
func (h *Decoder) fast4Go(dst, src []byte, st *[4]hxStream) {
	tl := h.TL
	sh := 64 - tl
	double, single := &h.double, &h.Single
	for {
		for i := range st {
			s := &st[i]
			p := s.p - int(s.c>>3)
			if p < 8 || h.two && s.o+12 > s.oe || !h.two && s.o+5 > s.oe {
				return
			}
		}
		for i := range st {
			s := &st[i]
			s.p -= int(s.c >> 3)
			s.c &= 7
			w := binary.LittleEndian.Uint64(src[s.p-8:])
			c, o := s.c, s.o
			if h.two {
				for range 5 {
					e := double[(w<<c)>>sh&(1<<MaxBits-1)]
					binary.LittleEndian.PutUint16(dst[o:], uint16(e>>8))
					c += uint(e) & 0xFF
					o += int(e >> 24)
				}
			} else {
				for range 5 {
					e := single[(w<<c)>>sh&(1<<MaxBits-1)]
					dst[o] = byte(e >> 8)
					c += uint(e) & 0xFF
					o++
				}
			}
			s.c, s.o = c, o
		}
	}
}

// tail decodes the rest of a stream one symbol at a time and checks that
// it ends exactly with its bits. While an 8-byte window lies above src[0]
// it takes up to five symbols from each window without checking the bits
// left: the window may reach below the stream's start, but a stream that
// ends exactly with its bits decodes the same whatever lies below it, and
// one that does not comes out with the bits left not zero, so it fails as
// the checked loop below fails it (the unread bits only decrease).
func (h *Decoder) tail(dst, src []byte, s *hxStream) error {
	tl := h.TL
	for s.o < s.oe && h.window1(dst, src, s, min(5, s.oe-s.o)) {
	}
	pos := 8*(s.p-s.lo) - int(s.c) // unread bits of the stream
	for ; s.o < s.oe; s.o++ {
		if pos <= 0 {
			return errf("%d symbols short", s.oe-s.o)
		}
		var x uint32
		if end := s.lo + (pos+7)>>3; end >= 8 && pos >= int(tl) {
			// the window of 8 bytes ending with the next unread bit
			v := binary.LittleEndian.Uint64(src[end-8 : end])
			top := uint(pos - 8*(end-8-s.lo))
			x = uint32(v << (64 - top) >> (64 - tl))
		} else {
			x = PeekBack(src, s.lo, pos, tl)
		}
		e := h.Single[x]
		dst[s.o] = byte(e >> 8)
		pos -= int(e & 0xFF)
	}
	if pos != 0 {
		return errf("%d bits left over", pos)
	}
	return nil
}

// PeekBack returns the n bits of src below bit position pos counted from
// byte lo (most significant first); bits below lo read as zeros.
func PeekBack(src []byte, lo, pos int, n uint) uint32 {
	end := lo + (pos+7)/8
	var v uint64
	if end >= 8 {
		v = binary.LittleEndian.Uint64(src[end-8 : end]) // may reach below lo: masked below
	} else {
		for k := 0; k < end; k++ {
			v |= uint64(src[k]) << (8 * uint(k-(end-8)))
		}
	}
	top := uint(pos - 8*(end-8-lo)) // bit index in v above the n bits
	x := uint32(v << (64 - top) >> (64 - n))
	if pos < int(n) {
		x &^= 1<<(n-uint(pos)) - 1
	}
	return x
}
