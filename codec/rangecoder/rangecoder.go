// Package rangecoder is a binary adaptive range coder (the LZMA
// construction with 16-bit probabilities), the coder of nzip's reference
// blocks of method 2 (codec/doc.go, "Range-coded difference blocks").
// Integer arithmetic only, so every decoder computes the same
// probabilities as the encoder: the model update rule is part of the
// archive format.
package rangecoder

import (
	"errors"
	"math"
)

// ErrStart means a coded stream is shorter than its 5-byte start or does
// not begin with a zero byte.
var ErrStart = errors.New("range-coded stream: bad start")

// Model is the adaptive probability of one binary decision. p holds
// P(bit = 1)·2^16 XOR 0x8000, so the zero value is probability one half;
// n counts the decisions seen, up to adaptMax.
type Model struct{ p, n uint16 }

// adaptMax bounds the count that sets the adaptation rate: the first
// decisions move the probability by about 1/(n+1.8) (a Krichevsky–Trofimov
// estimate), later ones by about 1/130, so a model follows drifting
// statistics.
const adaptMax = 127

// inv[n] = floor(655360 / (10n + 18)): the update weight, scaled by 2^16.
var inv = func() (t [adaptMax + 1]int64) {
	for n := range t {
		t[n] = 655360 / int64(10*n+18)
	}
	return
}()

const (
	probMin = 32
	probMax = 65536 - 32
)

func (m *Model) prob() uint32 { return uint32(m.p ^ 0x8000) }

func (m *Model) update(bit uint32) {
	p := int64(m.p ^ 0x8000)
	n := m.n & adaptMax
	p += (int64(bit)<<16 - p) * inv[n] >> 16
	p = min(max(p, probMin), probMax)
	m.p = uint16(p) ^ 0x8000
	m.n = min(n+1, adaptMax)
}

// Encoder codes bits; Reset it before use.
type Encoder struct {
	low       uint64
	rng       uint32
	cache     byte
	cacheSize int
	out       []byte
	start     int // len(out) at Reset
}

// Reset starts a stream that Finish appends to out.
func (e *Encoder) Reset(out []byte) {
	*e = Encoder{rng: 0xFFFFFFFF, cacheSize: 1, out: out, start: len(out)}
}

// Encode codes bit (0 or 1) with model m and adapts m.
func (e *Encoder) Encode(m *Model, bit uint32) {
	bound := (e.rng >> 16) * m.prob()
	if bit != 0 {
		e.rng = bound
	} else {
		e.low += uint64(bound)
		e.rng -= bound
	}
	m.update(bit)
	for e.rng < 1<<24 {
		e.rng <<= 8
		e.shiftLow()
	}
}

// EncodeP codes bit (0 or 1) with the probability p/2^16 of a 1, which
// the caller computes (a model of its own); p must be in [1, 2^16-1].
func (e *Encoder) EncodeP(p uint32, bit uint32) {
	bound := (e.rng >> 16) * p
	if bit != 0 {
		e.rng = bound
	} else {
		e.low += uint64(bound)
		e.rng -= bound
	}
	for e.rng < 1<<24 {
		e.rng <<= 8
		e.shiftLow()
	}
}

func (e *Encoder) shiftLow() {
	if uint32(e.low) < 0xFF000000 || e.low >= 1<<32 {
		carry := byte(e.low >> 32)
		b := e.cache
		for ; e.cacheSize > 0; e.cacheSize-- {
			e.out = append(e.out, b+carry)
			b = 0xFF
		}
		e.cache = byte(e.low >> 24)
	}
	e.cacheSize++
	e.low = e.low & 0x00FFFFFF << 8
}

// Finish flushes the coder and returns the coded bytes.
func (e *Encoder) Finish() []byte {
	for range 5 {
		e.shiftLow()
	}
	return e.out
}

// ShortSlack is the zero bytes at most that FinishShort drops from a
// stream's end (ResetShort reads them back as zeros).
const ShortSlack = 4

// FinishShort flushes the coder as Finish does, with the code value of
// the final interval that has the most trailing zero bits, and returns
// the coded bytes without the zero byte every stream starts with and
// without up to ShortSlack zero bytes at the end: about 4 bytes shorter
// than Finish's. ResetShort reads it.
func (e *Encoder) FinishShort() []byte {
	for k := 32; k >= 0; k-- {
		v := (e.low + 1<<k - 1) &^ (1<<k - 1)
		if v < e.low+uint64(e.rng) {
			e.low = v
			break
		}
	}
	out := e.Finish()[e.start+1:]
	for n := 0; n < ShortSlack && len(out) > 0 && out[len(out)-1] == 0; n++ {
		out = out[:len(out)-1]
	}
	return out
}

// Decoder reads the bits of a stream an Encoder wrote.
type Decoder struct {
	rng, code uint32
	src       []byte
	pos       int
	over      int // bytes read past the end (as zeros; from −ShortSlack after ResetShort)
}

// Reset starts reading the coded stream src.
func (d *Decoder) Reset(src []byte) error {
	if len(src) < 5 || src[0] != 0 {
		return ErrStart
	}
	*d = Decoder{rng: 0xFFFFFFFF, code: uint32(src[1])<<24 | uint32(src[2])<<16 | uint32(src[3])<<8 | uint32(src[4]), src: src, pos: 5}
	return nil
}

// ResetShort starts reading a stream FinishShort wrote: its start byte
// implied, and up to ShortSlack bytes past its end read as zeros without
// counting as an overrun.
func (d *Decoder) ResetShort(src []byte) {
	*d = Decoder{rng: 0xFFFFFFFF, src: src, over: -ShortSlack}
	for range 4 {
		d.code = d.code<<8 | uint32(d.next())
	}
}

// Decode returns the next bit coded with model m and adapts m.
func (d *Decoder) Decode(m *Model) uint32 {
	bound := (d.rng >> 16) * m.prob()
	// branch-free: the bit is as good as random to a branch predictor
	var bit uint32
	if d.code < bound {
		bit = 1
	}
	mask := -bit // all ones for a 1
	d.code -= bound &^ mask
	d.rng = bound&mask | (d.rng-bound)&^mask
	m.update(bit)
	for d.rng < 1<<24 {
		d.rng <<= 8
		d.code = d.code<<8 | uint32(d.next())
	}
	return bit
}

// DecodeP returns the next bit, coded with the probability p/2^16 of a 1
// (EncodeP).
func (d *Decoder) DecodeP(p uint32) uint32 {
	bound := (d.rng >> 16) * p
	var bit uint32
	if d.code < bound {
		bit = 1
	}
	mask := -bit
	d.code -= bound &^ mask
	d.rng = bound&mask | (d.rng-bound)&^mask
	for d.rng < 1<<24 {
		d.rng <<= 8
		d.code = d.code<<8 | uint32(d.next())
	}
	return bit
}

func (d *Decoder) next() byte {
	if d.pos < len(d.src) {
		c := d.src[d.pos]
		d.pos++
		return c
	}
	d.over++
	return 0
}

// Done reports whether the stream was read exactly to its end, as the
// encoder wrote it.
func (d *Decoder) Done() bool { return d.over == 0 && d.pos == len(d.src) }

// Overrun reports whether the decoder has read past the stream's end (it
// reads zeros there): a stream the encoder wrote never makes it, so a
// caller may stop at once.
func (d *Decoder) Overrun() bool { return d.over > 0 }

// Pos is the bytes of the stream read so far.
func (d *Decoder) Pos() int { return d.pos }

// Bytes are coded as 8 binary decisions, most significant bit first, each
// with the model of the bits already coded (a bit tree: index 1, then
// 2..3, 4..7, …; LZMA's literals). EncodeByte and DecodeByte may also take
// a predicted byte: while the bits coded agree with its bits, a decision
// takes its model from matched, by the predicted bit and the tree index
// (matched[bit<<8|index]); from the first bit that differs on, from plain.

// EncodeByte codes the byte c with the models plain and, while c agrees
// with the predicted byte expect (0..255; -1 for none), matched.
func (e *Encoder) EncodeByte(c byte, plain *[256]Model, matched *[512]Model, expect int) {
	c0 := 1
	for b := 7; b >= 0; b-- {
		bit := uint32(c>>b) & 1
		m := &plain[c0]
		if expect >= 0 && (expect|256)>>(b+1) == c0 {
			m = &matched[(expect>>b)&1<<8|c0]
		}
		e.Encode(m, bit)
		c0 = c0<<1 | int(bit)
	}
}

// DecodeByte returns the next byte, coded by EncodeByte with the same
// models and prediction. It is Decode's arithmetic with the coder's state
// in registers for the byte's 8 decisions.
func (d *Decoder) DecodeByte(plain *[256]Model, matched *[512]Model, expect int) byte {
	rng, code := d.rng, d.code
	c0 := 1
	for b := 7; b >= 0; b-- {
		m := &plain[c0]
		if expect >= 0 && (expect|256)>>(b+1) == c0 {
			m = &matched[(expect>>b)&1<<8|c0]
		}
		bound := (rng >> 16) * m.prob()
		var bit uint32
		if code < bound {
			bit = 1
		}
		mask := -bit
		code -= bound &^ mask
		rng = bound&mask | (rng-bound)&^mask
		m.update(bit)
		for rng < 1<<24 {
			rng <<= 8
			code = code<<8 | uint32(d.next())
		}
		c0 = c0<<1 | int(bit)
	}
	d.rng, d.code = rng, code
	return byte(c0)
}

// Cost adds up what an Encoder would spend coding bits with adaptive
// models, without coding them: each decision's −log2 of its probability
// (from a table in steps of 2^−12), and the model adapts as Encode adapts
// it. It estimates sizes (a rate search); the stream's length is what
// Encode writes.
type Cost struct {
	Bits float64 // bits spent so far
}

// costBits[i] = −log2((i + ½) / 4096): the cost of a decision of
// probability in [i/4096, (i+1)/4096).
var costBits = func() (t [4096]float64) {
	for i := range t {
		t[i] = -math.Log2((float64(i) + 0.5) / 4096)
	}
	return
}()

// EncodeP counts bit (0 or 1) coded with the probability p/2^16 of a 1
// (Encoder.EncodeP).
func (c *Cost) EncodeP(p uint32, bit uint32) {
	if bit == 0 {
		p = 65536 - p
	}
	c.Bits += costBits[p>>4]
}

// Encode counts bit (0 or 1) with model m and adapts m.
func (c *Cost) Encode(m *Model, bit uint32) {
	p := m.prob()
	if bit == 0 {
		p = 65536 - p
	}
	c.Bits += costBits[p>>4]
	m.update(bit)
}
