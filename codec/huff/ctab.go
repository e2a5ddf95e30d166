package huff

import (
	"encoding/binary"
	"math/bits"
)

// Compact Huffman table descriptions (method 4 of difference blocks, see
// doc.go, "Compact table descriptions"): the code lengths of the tokens
// 0..count-1 (the last token's length, count, is implied by the code being
// complete, as in huff0's), each predicted from the one two tokens back —
// the same direction of change, one bucket smaller — and coded with a few
// bits. Token tables are smooth in that sense and full of absent tokens in
// runs, which huff0's FSE-coded weights (made for byte alphabets) capture
// poorly: on the bf16 trajectory a table takes ~30 bytes instead of ~48.

// ctabW writes bits LSB-first.
type ctabW struct {
	b   []byte
	acc uint64
	n   uint
}

func (w *ctabW) put(v uint64, n uint) {
	w.acc |= v << w.n
	w.n += n
	for w.n >= 8 {
		w.b = append(w.b, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

func (w *ctabW) flush() []byte {
	if w.n > 0 {
		w.b = append(w.b, byte(w.acc))
	}
	w.acc, w.n = 0, 0
	return w.b
}

// ctabDelta writes the length l predicted as p (1..11): 0 for the same,
// 1 0 s for one more (s = 0) or less, 1 1 0 s for two, 1 1 1 0 for an
// absent token (l = 0), 1 1 1 1 and 4 bits for any other.
func (w *ctabW) delta(l, p int) {
	d := l - p
	var neg uint64
	if d < 0 {
		neg = 1
	}
	switch {
	case l == 0:
		w.put(0b0111, 4)
	case d == 0:
		w.put(0, 1)
	case d == 1 || d == -1:
		w.put(0b001|neg<<2, 3)
	case d == 2 || d == -2:
		w.put(0b0011|neg<<3, 4)
	default:
		w.put(0b1111|uint64(l)<<4, 8)
	}
}

// AppendCompactTable appends the compact description of t's code (at least
// two symbols): u8 count = t.MaxSym, then the lengths of tokens
// 0..count-1 as described in codec/doc.go.
func AppendCompactTable(dst []byte, t *Table) []byte {
	count := t.MaxSym
	dst = append(dst, byte(count))
	w := ctabW{b: dst}
	l := func(s int) int {
		if s < 0 {
			return 0
		}
		return int(t.Enc[s] >> 16)
	}
	for s := 0; s < count; {
		a, b := l(s-2), l(s-1)
		switch {
		case a == 0 && b == 0:
			r := 0
			for s+r < count && l(s+r) == 0 {
				r++
			}
			// Elias gamma of r+1: k ones, a zero, the k bits below its top
			v := uint64(r + 1)
			k := uint(bits.Len64(v)) - 1
			w.put(1<<k-1, k+1)
			w.put(v&(1<<k-1), k)
			s += r
			if s < count {
				w.put(uint64(l(s)), 4)
				s++
			}
		case a == 0:
			if l(s) == 0 {
				w.put(0, 1)
			} else {
				w.put(1, 1)
				w.delta(l(s), b)
			}
			s++
		default:
			w.delta(l(s), a)
			s++
		}
	}
	return w.flush()
}

// ctabLUT decodes the delta code (ctabW.delta) from its first 8 bits.
var ctabLUT = func() (t [256]struct{ nb, add, kind int8 }) {
	for v := range t {
		e := &t[v]
		switch {
		case v&1 == 0:
			e.nb = 1
		case v&2 == 0:
			e.nb, e.add = 3, int8(1-2*(v>>2&1))
		case v&4 == 0:
			e.nb, e.add = 4, int8(2-4*(v>>3&1))
		case v&8 == 0:
			e.nb, e.kind = 4, ctabAbsent
		default:
			e.nb, e.kind = 8, ctabRaw
		}
	}
	return t
}()

const (
	ctabAbsent = 1
	ctabRaw    = 2
)

// ctabMaxBytes bounds a compact description after its count: at most 254
// steps of at most 21 bits (a run: 2·8+1 bits of Elias gamma and a 4-bit
// length; any other step at most 9 bits).
const ctabMaxBytes = (254*21+7)/8 + 1

// ReadCompactTable reads a compact table description and builds h's
// decoding table (as ReadWeights does for a huff0 description, with the
// same checks of the code; into dst(tl) if dst is not nil), returning the
// bytes after it.
func (h *Decoder) ReadCompactTable(src []byte, dst func(tl uint) *[1 << MaxBits]uint16) ([]byte, error) {
	if len(src) < 1 || src[0] == 0 {
		return nil, errf("compact table: no lengths")
	}
	count := int(src[0])
	in := src[1:]
	// the description, zero-padded, read through a bit buffer that holds
	// at least the 21 bits a step may take
	var buf [ctabMaxBytes + 16]byte
	nIn := copy(buf[:ctabMaxBytes], in)
	limit := uint(8 * nIn)
	var L [256]byte
	var acc uint64 // bits not yet taken, the next one lowest
	var nacc uint  // how many
	rpos := 0      // bytes of buf moved into acc
	a, b := 0, 0   // the lengths of the two tokens before
	maxL := 0
	for s := 0; s < count; {
		if nacc < 32 {
			// past the description's end only zeros: a step takes at
			// most 21 bits, so a description cut short shows here or
			// in the check after the loop
			if rpos > nIn+4 {
				return nil, errf("compact table: description cut short")
			}
			acc |= uint64(binary.LittleEndian.Uint32(buf[rpos:])) << nacc
			rpos += 4
			nacc += 32
		}
		w := acc
		if a == 0 && b == 0 {
			// a run of r zeros: Elias gamma of r+1, then a length
			k := uint(bits.TrailingZeros64(^w))
			if k > 8 {
				return nil, errf("compact table: run too long")
			}
			r := int(1<<k|w>>(k+1)&(1<<k-1)) - 1
			used := 2*k + 1
			if s+r > count {
				return nil, errf("compact table: run past the last token")
			}
			s += r
			if s < count {
				l := int(w >> used & 15)
				if l == 0 || l > MaxBits {
					return nil, errf("compact table: code length %d", l)
				}
				L[s] = byte(l)
				maxL = max(maxL, l)
				used += 4
				s++
				a, b = 0, l
			}
			acc >>= used
			nacc -= used
			continue
		}
		// the length predicted from the one two back (a), or after an
		// absent token there from the one before (b) behind a flag bit:
		// 0 absent, 1 present
		p, flag := a, uint64(0)
		if a == 0 {
			p, flag = b, 1
		}
		z := w&flag ^ flag // 1: flagged absent
		e := ctabLUT[w>>flag&255]
		// l: p + e.add, or the raw length, or 0 (absent)
		l := p + int(e.add)
		if e.kind == ctabRaw {
			l = int(w >> (flag + 4) & 15)
		}
		used := uint(flag) + uint(e.nb)
		if z != 0 {
			l, used = 0, 1 // the flag alone
		}
		switch {
		case z == 0 && e.kind == ctabAbsent:
			if a == 0 {
				return nil, errf("compact table: an absent token coded where a flag said present")
			}
			l = 0
		case z == 0 && (l < 1 || l > MaxBits):
			return nil, errf("compact table: code length %d", l)
		}
		acc >>= used
		nacc -= used
		L[s] = byte(l)
		maxL = max(maxL, l)
		a, b = b, l
		s++
	}
	pos := uint(8*rpos) - nacc // bits read
	if pos > limit {
		return nil, errf("compact table: description cut short")
	}
	if maxL == 0 {
		return nil, errf("compact table: no token present")
	}
	// as huff0 weights: weight = maxL + 1 - length (0: absent); the last
	// token's weight follows from the rest (finishWeights)
	for s, l := range L[:count] {
		if l != 0 {
			l = byte(maxL) + 1 - l
		}
		h.w[s] = l
	}
	if err := h.finishWeights(count, dst); err != nil {
		return nil, err
	}
	// finishWeights sizes the code from the weights' sum: it is the
	// lengths as described only when they leave the last token a length
	// of 1..maxL, i.e. the code's longest is maxL
	if h.TL != uint(maxL) {
		return nil, errf("compact table: the lengths do not make a complete code")
	}
	return in[(pos+7)>>3:], nil
}
