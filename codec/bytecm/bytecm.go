// Package bytecm codes bytes one bit at a time with adaptive binary
// models and a match model: the coder of nzip's "cm" blocks (codec/doc.go,
// "Context-modelled blocks"), for opaque bytes that LZ barely shrinks —
// quantised 8-bit weights, packed integers.
//
// Each byte is coded from its most significant bit down with the range
// coder of package rangecoder. A bit's model is chosen by the bits of the
// byte coded so far and by the match state: the match model remembers
// where each context of minMatch bytes last occurred in the block, and
// while the bytes after that occurrence keep predicting the current ones
// the predicted bit and the match's length select the model. Where no
// match predicts (or the byte has already left the prediction) the model
// is the order-0 one. The models adapt with counts (rangecoder.Model), so
// they learn a tensor's distribution within a few hundred bytes and then
// follow it as it drifts. On handtrack's weights file (272 uint8
// tensors) this codes 1.2 % below xz -6 (whose literals are coded the
// same way, with LZ matches instead of the match model) and 2.7 % below
// zstd's level 3.
//
// Integer arithmetic only: the model, its updates and the match search
// are part of the format, so every decoder computes the encoder's
// probabilities.
package bytecm

import (
	"errors"
	"sync"

	"neuralzip/codec/rangecoder"
)

// ErrCorrupt means a coded stream is not one Encode wrote for the length
// asked: its start is bad or it does not end where the last byte does.
var ErrCorrupt = errors.New("bytecm: corrupt stream")

const (
	// minMatch is the length of the contexts the match model finds again.
	minMatch = 6
	// verifyMax is how far back a found context is compared: the length
	// a match starts with.
	verifyMax = 32
	// hashBits is the size of the table of contexts' last positions.
	hashBits = 16
)

// lengthClass buckets a match's length: the longer a match has run, the
// surer its next byte.
func lengthClass(n int) int {
	switch {
	case n < 12:
		return 0
	case n < 16:
		return 1
	case n < 32:
		return 2
	}
	return 3
}

// state is the model of one stream: the bit models by match state, and
// the match model's table.
type state struct {
	plain   [256]rangecoder.Model    // no match predicts
	matched [4][512]rangecoder.Model // by length class, predicted bit and tree index
	last    [1 << hashBits]int32     // 1 + the position after a context's last occurrence; 0: none
}

var pool = sync.Pool{New: func() any { return new(state) }}

func getState() *state {
	s := pool.Get().(*state)
	s.plain = [256]rangecoder.Model{}
	s.matched = [4][512]rangecoder.Model{}
	clear(s.last[:])
	return s
}

// matcher follows the match model over the bytes p coded so far.
type matcher struct {
	h   uint64 // the last 8 bytes, the newest lowest
	pos int    // where the predicted byte is in p (valid while n > 0)
	n   int    // the match's length; 0: no match
}

// next returns the byte the match predicts next (-1: none) and the
// match's length class.
func (m *matcher) next(p []byte) (expect int, class int) {
	if m.n == 0 {
		return -1, 0
	}
	return int(p[m.pos]), lengthClass(m.n)
}

// step records p[i], the byte just coded, and looks for a new match when
// none runs.
func (m *matcher) step(s *state, p []byte, i int) {
	c := p[i]
	if m.n > 0 {
		if p[m.pos] == c {
			m.n++
			m.pos++
		} else {
			m.n = 0
		}
	}
	m.h = m.h<<8 | uint64(c)
	if i+1 < minMatch {
		return
	}
	k := (m.h & (1<<(8*minMatch) - 1)) * 0x9E3779B97F4A7C15 >> (64 - hashBits)
	if m.n == 0 {
		if q := int(s.last[k]) - 1; q > 0 {
			// q is the position after an earlier occurrence: compare back
			l := 0
			for l < verifyMax && q-1-l >= 0 && p[q-1-l] == p[i-l] {
				l++
			}
			if l >= minMatch {
				m.n, m.pos = l, q
			}
		}
	}
	s.last[k] = int32(i + 2)
}

// Encode appends the coded form of src to dst. Blocks should stay under
// 2 GiB (positions are int32).
func Encode(dst, src []byte) []byte {
	s := getState()
	defer pool.Put(s)
	var e rangecoder.Encoder
	e.Reset(dst)
	var m matcher
	for i, c := range src {
		expect, class := m.next(src)
		e.EncodeByte(c, &s.plain, &s.matched[class], expect)
		m.step(s, src, i)
	}
	return e.Finish()
}

// Decode decodes the stream src that Encode made of len(dst) bytes into
// dst. It fails with ErrCorrupt when src is not such a stream (its
// start, or its end is not where the last byte ends); a damaged stream
// that ends right decodes to wrong bytes, which the caller's checksum
// catches. Time and memory are linear in len(dst) whatever src holds, and
// a stream too short stops the decoding where it runs out.
func Decode(dst, src []byte) error {
	var d rangecoder.Decoder
	if err := d.Reset(src); err != nil {
		return ErrCorrupt
	}
	s := getState()
	defer pool.Put(s)
	var m matcher
	for i := range dst {
		expect, class := m.next(dst)
		dst[i] = d.DecodeByte(&s.plain, &s.matched[class], expect)
		if d.Overrun() {
			// a stream too short for len(dst): stop here, not after
			// decoding up to 4 MiB of zeros' worth
			return ErrCorrupt
		}
		m.step(s, dst, i)
	}
	if !d.Done() {
		return ErrCorrupt
	}
	return nil
}
