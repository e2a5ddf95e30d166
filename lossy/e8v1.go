package lossy

import (
	"encoding/binary"
	"math"

	"neuralzip/codec/rangecoder"
)

// Format 1 of the e8 stream (lossy archives of version 1), kept so that
// they still decode: each row's scale a float32 (e8Index.scales), and each
// point coded as its coset bit, seven integers and the eighth halved, with
// adaptive models per position in the vector and per magnitude class of
// the integer before it. Only its decoder remains; Code writes format 2.

// e8Symbols is what codes a point of E8 (p: twice its coordinates over
// the step): sym[8] is the coset (0: D8, 1: D8 + ½), sym[0..6] the
// integers k_i = (p_i − coset)/2 of the first seven coordinates, and
// sym[7] the last one's k_7 halved, its parity being that which makes
// Σk_i even (D8).
func e8Symbols(p []int32, sym *[9]int32) {
	h := p[0] & 1
	var sum int32
	for i := 0; i < 7; i++ {
		sym[i] = (p[i] - h) >> 1
		sum += sym[i]
	}
	k7 := (p[7] - h) >> 1
	sym[7] = (k7 - sum&1) >> 1
	sym[8] = h
}

// e8Point is e8Symbols' inverse.
func e8Point(sym *[9]int32, p []int32) {
	h := sym[8]
	var sum int32
	for i := 0; i < 7; i++ {
		p[i] = 2*sym[i] + h
		sum += sym[i]
	}
	p[7] = 2*(2*sym[7]+sum&1) + h
}

// e8ModelsV1 are the adaptive models of one tile of format 1: the coset bit, and per
// position in the vector and magnitude class of the integer before it, a
// zero flag, a sign, and the magnitude's bits (Elias-gamma: unary length,
// then the bits).
type e8ModelsV1 struct {
	coset rangecoder.Model
	zero  [8][4]rangecoder.Model
	sign  [8]rangecoder.Model
	unar  [8][4][24]rangecoder.Model
	rest  [24]rangecoder.Model
}

func magClass(c int32) int {
	switch a := abs32(c); {
	case a == 0:
		return 0
	case a <= 1:
		return 1
	case a <= 3:
		return 2
	}
	return 3
}

func (m *e8ModelsV1) decodeVector(d *rangecoder.Decoder, p []int32) {
	var sym [9]int32
	sym[8] = int32(d.Decode(&m.coset))
	prev := int32(0)
	for i := 0; i < 8; i++ {
		sym[i] = m.decode(d, i, magClass(prev))
		prev = sym[i]
	}
	e8Point(&sym, p)
}

func (m *e8ModelsV1) decode(d *rangecoder.Decoder, pos, k int) int32 {
	if d.Decode(&m.zero[pos][k]) == 1 {
		return 0
	}
	neg := d.Decode(&m.sign[pos]) == 1
	nb := 0
	for nb < 23 && d.Decode(&m.unar[pos][k][nb]) == 1 {
		nb++
	}
	a := uint32(1)
	for i := nb - 1; i >= 0; i-- {
		a = a<<1 | d.Decode(&m.rest[i])
	}
	c := int32(a)
	if neg {
		c = -c
	}
	return c
}

// decodeTileV1 decodes tile t of the format 1 stream b into s.
func (x *e8Index) decodeTileV1(d *rangecoder.Decoder, b []byte, t int, s *valueSink) {
	var m e8ModelsV1
	var p [8]int32
	var v [8]float32
	cols, step := x.cols, x.step
	per := (cols + 7) / 8 * 8
	end := min(x.rows, (t+1)*e8TileRows)
	for r := t * e8TileRows; r < end; r++ {
		scale := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[x.scales+4*r:])))
		for j := 0; j < per; j += 8 {
			m.decodeVector(d, p[:])
			k := min(8, cols-j)
			for i, c := range p[:k] {
				v[i] = float32(float64(c) / 2 * step * scale)
			}
			s.put(r*cols+j, v[:k])
		}
	}
}
