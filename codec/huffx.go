package codec

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/klauspost/compress/fse"
)

// huffX decodes huff0 4-stream Huffman blocks (the layout huff0's
// Decompress4X reads) with a table that yields up to two symbols per
// lookup: where the codes of two symbols fit in the table's tl bits, one
// lookup writes both. huff0's decoder takes one symbol per lookup, and
// each lookup waits on the one before in the same stream, so on streams
// of short codes (pair codes of exponents, tokens) this decodes more per
// step. Tables of longer codes (mantissa planes) decode one symbol per
// lookup, in the same rounds. huff0's own decoder is the twin
// (huffx_test.go, FuzzHuffX); the assembly rounds and the AVX-512 table
// build have pure-Go twins of their own (TestHuffXTiers).
type huffX struct {
	// single must come right before double: the AVX-512 table build
	// reads 2 bytes past single's end
	single [1 << huffMaxBits]uint16 // symbol<<8 | code length
	double [1 << huffMaxBits]uint32 // bits | sym1<<8 | sym2<<16 | count<<24
	tl     uint
	two    bool      // decode with double (else single)
	w      [257]byte // weights, then the implied last one
	fse    *fse.Scratch
}

// readTable reads a huff0 table description (as huff0.ReadTable does,
// with the same checks) and builds the decoding table, and the two-symbol
// one where at least half the lookups would yield two symbols. It returns
// the bytes after the description.
func (h *huffX) readTable(src []byte) ([]byte, error) {
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
		if h.fse == nil {
			h.fse = &fse.Scratch{}
		}
		h.fse.DecompressLimit = 255
		h.fse.Out = h.w[:0:255]
		b, err := fse.Decompress(in[:iSize], h.fse)
		h.fse.Out = nil
		if err != nil {
			return nil, errf("huffman table: weights: %v", err)
		}
		if len(b) > 255 {
			return nil, errf("huffman table: too many weights")
		}
		n = copy(h.w[:], b)
		in = in[iSize:]
	}
	// four histograms: weights repeat, so each increment does not wait
	// on the one before
	var hist [4][16]uint32
	var seen byte
	w := h.w[:n]
	for ; len(w) >= 4; w = w[4:] {
		hist[0][w[0]&15]++
		hist[1][w[1]&15]++
		hist[2][w[2]&15]++
		hist[3][w[3]&15]++
		seen |= w[0] | w[1] | w[2] | w[3]
	}
	for _, v := range w {
		hist[0][v&15]++
		seen |= v
	}
	var rank [16]uint32
	for i := range rank {
		rank[i] = hist[0][i] + hist[1][i] + hist[2][i] + hist[3][i]
	}
	if seen > 15 || rank[12]|rank[13]|rank[14]|rank[15] != 0 {
		return nil, errf("huffman table: weight too large")
	}
	var total uint32
	for i := 1; i < len(rank); i++ {
		total += rank[i] << (i - 1)
	}
	if total == 0 {
		return nil, errf("huffman table: weights zero")
	}
	tl := uint(bits.Len32(total))
	if tl > huffMaxBits {
		return nil, errf("huffman table: tableLog too big")
	}
	rest := uint32(1)<<tl - total
	last := uint(bits.Len32(rest))
	if rest != 1<<(last-1) {
		return nil, errf("huffman table: last weight not a power of two")
	}
	h.w[n] = byte(last)
	n++
	rank[last]++
	if rank[1] < 2 || rank[1]&1 != 0 {
		return nil, errf("huffman table: bad count of the longest codes")
	}
	h.tl = tl
	// Under the code's own distribution every table entry is equally
	// likely, so the share of lookups that yield two symbols is the share
	// of pairs of codes that fit in tl bits: weights w1 + w2 ≥ tl + 2. A
	// table below one half decodes faster one symbol per lookup (fewer
	// instructions per lookup, no second table to build).
	var suffix [huffMaxBits + 3]uint64
	for w := tl; w >= 1; w-- {
		suffix[w] = suffix[w+1] + uint64(rank[w])<<(w-1)
	}
	var pairs uint64
	for w := uint(2); w <= tl; w++ {
		pairs += uint64(rank[w]) << (w - 1) * suffix[tl+2-w]
	}
	h.two = 2*pairs >= 1<<(2*tl)
	var next uint32
	for w := uint(1); w <= tl; w++ {
		cur := next
		next += rank[w] << (w - 1)
		rank[w] = cur
	}
	single := h.single[:1<<tl]
	quad := (*[1 << huffMaxBits / 4]uint64)(unsafe.Pointer(&h.single))
	for s, w := range h.w[:n] {
		if w == 0 {
			continue
		}
		e := uint16(s)<<8 | uint16(tl+1-uint(w))
		r, l := rank[w], uint32(1)<<(w-1)
		if l >= 4 { // runs of 4 and more start at multiples of 4
			v := uint64(e) * 0x0001_0001_0001_0001
			for k := r / 4; k < (r+l)/4; k++ {
				quad[k] = v
			}
		} else {
			for i := r; i < r+l; i++ {
				single[i] = e
			}
		}
		rank[w] += l
	}
	if h.two {
		h.buildDouble()
	}
	return in, nil
}

// buildDoubleGo derives the two-symbol table from the single one: the
// entries of a symbol of length l1 form a run of 2^(tl-l1), and entry j of
// the run sees the next symbol's code at single[j<<l1].
func (h *huffX) buildDoubleGo() {
	tl := h.tl
	single := h.single[:1<<tl]
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

// decode4 decodes the 4-stream data src (jump table and streams, after the
// table description) into dst, whose capacity is the symbol count.
func (h *huffX) decode4(dst, src []byte) error {
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

// hxStream is one backward bitstream: the unread bits end c bits below
// the top of the 8-byte window src[p-8:p]; output goes to dst[o:oe].
type hxStream struct {
	p, lo, o, oe int
	c            uint
}

// fast4Go decodes the four streams in step, up to ten symbols each per
// round, while every stream has a full window above src[0] and room for
// ten symbols: the pure-Go twin of huffXRounds.
func (h *huffX) fast4Go(dst, src []byte, st *[4]hxStream) {
	tl := h.tl
	sh := 64 - tl
	double, single := &h.double, &h.single
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
					e := double[(w<<c)>>sh&(1<<huffMaxBits-1)]
					binary.LittleEndian.PutUint16(dst[o:], uint16(e>>8))
					c += uint(e) & 0xFF
					o += int(e >> 24)
				}
			} else {
				for range 5 {
					e := single[(w<<c)>>sh&(1<<huffMaxBits-1)]
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
// it ends exactly with its bits.
func (h *huffX) tail(dst, src []byte, s *hxStream) error {
	tl := h.tl
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
			x = peekBack(src, s.lo, pos, tl)
		}
		e := h.single[x]
		dst[s.o] = byte(e >> 8)
		pos -= int(e & 0xFF)
	}
	if pos != 0 {
		return errf("%d bits left over", pos)
	}
	return nil
}

// peekBack returns the n bits of src below bit position pos counted from
// byte lo (most significant first); bits below lo read as zeros.
func peekBack(src []byte, lo, pos int, n uint) uint32 {
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
