package codec

import (
	"encoding/binary"

	"neuralzip/codec/rangecoder"
)

// Method 2 of difference blocks: the tokens and the top extra bit of each
// value range-coded with adaptive models instead of Huffman-coded by
// group (see doc.go, "Range-coded difference blocks"). It has no tables to
// store and no whole-bit rounding, so it codes the trajectory's frames
// about 2 % smaller; its decoder is a scalar loop of about nine binary
// decisions per value, an order of magnitude slower than method 1.
// Encoders use it only when asked (EncodeOptions.Best).
const refMethodRange = 2

// rcState holds a worker's models: one binary tree of 255 decisions per
// context key for the tokens (allocated as contexts appear, cleared per
// block) and one decision per magnitude bucket for the top extra bit.
type rcState struct {
	rows  [][256]rangecoder.Model
	slot  []int32 // context key -> row + 1, 0 when the block has not used it
	used  []int   // context keys used in the block
	top   [128]rangecoder.Model
	nrows int
}

func (s *rcState) reset(nctx int) {
	if len(s.slot) < nctx {
		s.slot = make([]int32, nctx)
	}
	for _, c := range s.used {
		s.slot[c] = 0
	}
	s.used = s.used[:0]
	s.nrows = 0
	s.top = [128]rangecoder.Model{}
}

// row returns the token models of context key c.
func (s *rcState) row(c int) *[256]rangecoder.Model {
	if r := s.slot[c]; r != 0 {
		return &s.rows[r-1]
	}
	if s.nrows == len(s.rows) {
		s.rows = append(s.rows, [256]rangecoder.Model{})
	} else {
		s.rows[s.nrows] = [256]rangecoder.Model{}
	}
	s.nrows++
	s.slot[c] = int32(s.nrows)
	s.used = append(s.used, c)
	return &s.rows[s.nrows-1]
}

// appendRefRange appends the method-2 payload of the block's n values
// whose tokens, contexts and extra bits refEncoder holds.
func (e *refEncoder) appendRefRange(dst []byte, p *refSpec, n int) []byte {
	if e.rc == nil {
		e.rc = &rcState{}
	}
	s := e.rc
	s.reset(p.nctx)
	var enc rangecoder.Encoder
	enc.Reset(e.rcOut[:0])
	raw := e.rcRaw[:0]
	var acc uint64
	var nb uint
	for i := range n {
		t := uint32(e.toks[i])
		row := s.row(int(e.ctxs[i]))
		node := uint32(1)
		for j := 7; j >= 0; j-- {
			bit := t >> uint(j) & 1
			enc.Encode(&row[node], bit)
			node = node<<1 | bit
		}
		xn := uint(e.xns[i])
		if xn == 0 {
			continue
		}
		x := uint64(e.xs[i])
		enc.Encode(&s.top[(t+1)>>1], uint32(x>>(xn-1))&1)
		acc |= (x & (1<<(xn-1) - 1)) << nb
		nb += xn - 1
		for nb >= 8 {
			raw = append(raw, byte(acc))
			acc >>= 8
			nb -= 8
		}
	}
	if nb > 0 {
		raw = append(raw, byte(acc))
	}
	coded := enc.Finish()
	e.rcOut, e.rcRaw = coded, raw
	dst = append(dst, refMethodRange, byte(p.q))
	dst = binary.AppendUvarint(dst, uint64(len(coded)))
	dst = append(dst, coded...)
	return append(dst, raw...)
}

// decodeRefRange decodes a method-2 payload (src after the method byte)
// into dst given the reference ref.
func (e *refDecoder) decodeRefRange(dst, src, ref []byte, p *refSpec) error {
	if len(src) < 1 || !p.setQ(uint(src[0])) {
		return errf("reference block: bad sub-bucket bits")
	}
	l, rest, err := readLen(src[1:])
	if err != nil {
		return err
	}
	coded, raw := rest[:l], rest[l:]
	if e.rc == nil {
		e.rc = &rcState{}
	}
	s := e.rc
	s.reset(p.nctx)
	var dec rangecoder.Decoder
	if err := dec.Reset(coded); err != nil {
		return errf("%v", err)
	}
	n := len(dst) / p.size
	maxTok := uint32(p.maxTok)
	q := p.q
	var acc uint64
	var nb uint
	rp := 0
	for i := range n {
		r := loadValue(ref, i, p.size)
		row := s.row(p.ctx(r))
		t := uint32(1)
		for range 8 {
			t = t<<1 | dec.Decode(&row[t])
		}
		t &= 0xFF
		if t == 0 {
			storeValue(dst, i, p.size, r)
			continue
		}
		if t > maxTok {
			return errf("reference block: invalid token %d", t)
		}
		k := uint64(t+1) >> 1
		a := k
		if k >= 2<<q {
			xn := uint(k>>q) - 1 // L-1-q extra bits, L = k>>q + q
			x := uint64(dec.Decode(&s.top[k])) << (xn - 1)
			for nb < xn-1 {
				if rp == len(raw) {
					return errf("reference block: extra bits truncated")
				}
				acc |= uint64(raw[rp]) << nb
				rp++
				nb += 8
			}
			x |= acc & (1<<(xn-1) - 1)
			acc >>= xn - 1
			nb -= xn - 1
			a = (1<<q|k&(1<<q-1))<<xn | x
		}
		d := a
		if ((t+1)&1)^uint32(p.sign(r)) != 0 { // s XOR z = (t+1) mod 2
			d = -a
		}
		storeValue(dst, i, p.size, p.unkey((p.key(r)+d)&p.mask))
	}
	if !dec.Done() {
		return errf("reference block: range-coded tokens end at byte %d of %d", dec.Pos(), len(coded))
	}
	if rp != len(raw) {
		return errf("reference block: %d bytes after the extra bits", len(raw)-rp)
	}
	return nil
}
