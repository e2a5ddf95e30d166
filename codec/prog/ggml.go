package prog

import "encoding/binary"

// The record layouts of ggml's quantised block types, written from the
// block_* structs of ggml-common.h and the dequantize_row_* functions of
// ggml-quants.c (ggml-org/ggml): which bits of a record make one quant or
// one sub-block scale. Offsets are bytes into the record; every layout's
// parts cover its record exactly.
func init() {
	register(
		// Q4_0: f16 d, 16 bytes of nibbles (value j low, j+16 high)
		newSchema(2, "Q4_0", 18, 32, half{0, "d"}, raw{2, 16, "qs", 4}),
		// Q4_1: f16 d, f16 m, 16 bytes of nibbles
		newSchema(3, "Q4_1", 20, 32, half{0, "d"}, half{2, "m"}, raw{4, 16, "qs", 4}),
		// Q5_0: f16 d, u32 qh (fifth bits), 16 bytes of nibbles
		newSchema(6, "Q5_0", 22, 32, half{0, "d"}, q5x32{2, 6}),
		// Q5_1: f16 d, f16 m, u32 qh, 16 bytes of nibbles
		newSchema(7, "Q5_1", 24, 32, half{0, "d"}, half{2, "m"}, q5x32{4, 8}),
		// Q8_0: f16 d, 32 int8 quants
		newSchema(8, "Q8_0", 34, 32, half{0, "d"}, raw{2, 32, "qs", 8}),
		// Q2_K: 16 bytes of scale|min<<4, 64 bytes of 2-bit quants, f16 d, f16 dmin
		newSchema(10, "Q2_K", 84, 256, raw{0, 16, "scales", 4}, raw{16, 64, "qs", 2}, half{80, "d"}, half{82, "dmin"}),
		// Q3_K: hmask[32] (third bits), qs[64] (low 2 bits), 12 bytes of 16 6-bit scales, f16 d
		newSchema(11, "Q3_K", 110, 256, q3K{0, 32}, q3Scales{96}, half{108, "d"}),
		// Q4_K: f16 d, f16 dmin, 12 bytes of 8 6-bit scales and 8 mins, 128 bytes of nibbles
		newSchema(12, "Q4_K", 144, 256, half{0, "d"}, half{2, "dmin"}, kScales{4}, raw{16, 128, "qs", 4}),
		// Q5_K: as Q4_K, then qh[32] (fifth bits) before the nibbles
		newSchema(13, "Q5_K", 176, 256, half{0, "d"}, half{2, "dmin"}, kScales{4}, q5K{16, 48}),
		// Q6_K: ql[128] (low nibbles), qh[64] (top 2 bits), 16 int8 scales, f16 d
		newSchema(14, "Q6_K", 210, 256, q6K{0, 128}, raw{192, 16, "scales", 8}, half{208, "d"}),
		// IQ4_NL: f16 d, 16 bytes of nibbles (indices into a fixed table)
		newSchema(20, "IQ4_NL", 18, 32, half{0, "d"}, raw{2, 16, "qs", 4}),
		// I8: one 8-bit integer a record; also the tensors of other
		// formats' 8-bit integer types (TF.js uint8 weights, ONNX and
		// TFLite int8): one stream of bytes with its own table
		newSchema(24, "I8", 1, 1, raw{0, 1, "q", 8}),
	)
}

// half is an f16 at off: its high byte (sign, exponent, top two mantissa
// bits) and its low byte, as two fields.
type half struct {
	off  int
	name string
}

func (h half) fields() []Field {
	return []Field{{Name: h.name + ".hi", Width: 8, Per: 1, Elem: 8, Half: 1}, {Name: h.name + ".lo", Width: 8, Per: 1, Elem: 8, Half: 2}}
}

func (h half) split(src []byte, stride, n int, out [][]byte) {
	hi, lo := out[0][:n], out[1][:n]
	src = src[h.off : h.off+(n-1)*stride+2]
	for r := range hi {
		o := r * stride
		lo[r], hi[r] = src[o], src[o+1]
	}
}

func (h half) merge(dst []byte, stride, n int, in [][]byte) {
	hi, lo := in[0][:n], in[1][:n]
	dst = dst[h.off : h.off+(n-1)*stride+2]
	for r := range hi {
		o := r * stride
		dst[o], dst[o+1] = lo[r], hi[r]
	}
}

// raw is n bytes at off taken as symbols as they are (int8 quants,
// nibble pairs, 2-bit quadruples): one field of elements of elem bits.
type raw struct {
	off, n int
	name   string
	elem   uint8
}

func (p raw) fields() []Field {
	return []Field{{Name: p.name, Width: 8, Per: p.n, Elem: p.elem}}
}

func (p raw) split(src []byte, stride, n int, out [][]byte) {
	o := out[0][:n*p.n]
	if stride == p.n {
		copy(o, src[:n*p.n]) // the record is the field (I8)
		return
	}
	for r := 0; r < n; r++ {
		copy(o[r*p.n:(r+1)*p.n], src[r*stride+p.off:])
	}
}

func (p raw) merge(dst []byte, stride, n int, in [][]byte) {
	s := in[0][:n*p.n]
	if stride == p.n {
		copy(dst[:n*p.n], s)
		return
	}
	for r := 0; r < n; r++ {
		copy(dst[r*stride+p.off:r*stride+p.off+p.n], s[r*p.n:])
	}
}

// q5x32 is the 32 5-bit quants of Q5_0/Q5_1: a u32 qh at qh whose bit j
// is the fifth bit of value j, and 16 bytes at qs whose byte j holds
// value j's low nibble and value j+16's high nibble.
type q5x32 struct{ qh, qs int }

func (q5x32) fields() []Field { return []Field{{Name: "q", Width: 5, Per: 32, Elem: 5}} }

// Bytes in 64-bit words: m4 keeps each byte's low nibble, m1 its low
// bit, m2 its low two bits.
const (
	m4 = 0x0f0f0f0f0f0f0f0f
	m1 = 0x0101010101010101
	m2 = 0x0303030303030303
)

// spread8 places bit k of b's low byte in bit 0 of byte k.
func spread8(b uint32) uint64 { return spreadTab[b&0xff] }

var spreadTab = func() (t [256]uint64) {
	for b := range t {
		for k := 0; k < 8; k++ {
			t[b] |= uint64(b>>k&1) << (8 * k)
		}
	}
	return t
}()

// gather8 is spread8's inverse: bit 0 of byte k of x (its other bits
// zero) to bit k.
func gather8(x uint64) uint32 { return uint32(x * 0x0102040810204080 >> 56) }

func (p q5x32) split(src []byte, stride, n int, out [][]byte) {
	o := out[0][:n*32]
	le := binary.LittleEndian
	for r := 0; r < n; r++ {
		rec := src[r*stride : r*stride+p.qs+16]
		h := le.Uint32(rec[p.qh:])
		a, b := le.Uint64(rec[p.qs:]), le.Uint64(rec[p.qs+8:])
		q := o[r*32 : r*32+32]
		le.PutUint64(q[0:], a&m4|spread8(h)<<4)
		le.PutUint64(q[8:], b&m4|spread8(h>>8)<<4)
		le.PutUint64(q[16:], a>>4&m4|spread8(h>>16)<<4)
		le.PutUint64(q[24:], b>>4&m4|spread8(h>>24)<<4)
	}
}

func (p q5x32) merge(dst []byte, stride, n int, in [][]byte) {
	s := in[0][:n*32]
	le := binary.LittleEndian
	for r := 0; r < n; r++ {
		rec := dst[r*stride : r*stride+p.qs+16]
		q := s[r*32 : r*32+32]
		a0, a1, b0, b1 := le.Uint64(q[0:]), le.Uint64(q[8:]), le.Uint64(q[16:]), le.Uint64(q[24:])
		le.PutUint64(rec[p.qs:], a0&m4|(b0&m4)<<4)
		le.PutUint64(rec[p.qs+8:], a1&m4|(b1&m4)<<4)
		h := gather8(a0>>4&m1) | gather8(a1>>4&m1)<<8 | gather8(b0>>4&m1)<<16 | gather8(b1>>4&m1)<<24
		le.PutUint32(rec[p.qh:], h)
	}
}

// q5K is the 256 5-bit quants of Q5_K: qh[32] at qh and 128 bytes of
// nibbles at qs. Values 64c+l and 64c+32+l (c < 4, l < 32) are the low and
// high nibble of qs[32c+l] with bits 2c and 2c+1 of qh[l] on top.
type q5K struct{ qh, qs int }

func (q5K) fields() []Field { return []Field{{Name: "q", Width: 5, Per: 256, Elem: 5}} }

func (p q5K) split(src []byte, stride, n int, out [][]byte) {
	o := out[0][:n*256]
	le := binary.LittleEndian
	for r := 0; r < n; r++ {
		rec := src[r*stride : r*stride+p.qs+128]
		qh := rec[p.qh : p.qh+32]
		qs := rec[p.qs : p.qs+128]
		q := o[r*256 : r*256+256]
		for c := 0; c < 4; c++ {
			v := q[64*c : 64*c+64]
			for l := 0; l < 32; l += 8 {
				a, h := le.Uint64(qs[32*c+l:]), le.Uint64(qh[l:])
				le.PutUint64(v[l:], a&m4|(h>>(2*c)&m1)<<4)
				le.PutUint64(v[l+32:], a>>4&m4|(h>>(2*c+1)&m1)<<4)
			}
		}
	}
}

func (p q5K) merge(dst []byte, stride, n int, in [][]byte) {
	s := in[0][:n*256]
	le := binary.LittleEndian
	for r := 0; r < n; r++ {
		rec := dst[r*stride : r*stride+p.qs+128]
		qh := rec[p.qh : p.qh+32]
		qs := rec[p.qs : p.qs+128]
		q := s[r*256 : r*256+256]
		for l := 0; l < 32; l += 8 {
			var h uint64
			for c := 0; c < 4; c++ {
				v := q[64*c : 64*c+64]
				a, b := le.Uint64(v[l:]), le.Uint64(v[l+32:])
				le.PutUint64(qs[32*c+l:], a&m4|(b&m4)<<4)
				h |= (a>>4&m1)<<(2*c) | (b>>4&m1)<<(2*c+1)
			}
			le.PutUint64(qh[l:], h)
		}
	}
}

// q6K is the 256 6-bit quants of Q6_K: ql[128] at ql, qh[64] at qh. In
// half h (128 values; ql from 64h, qh from 32h), for l < 32, values l,
// l+32, l+64, l+96 are the low nibbles of ql[l], ql[l+32] and the high
// nibbles of ql[l], ql[l+32], with bits 0-1, 2-3, 4-5, 6-7 of qh[l] on top.
type q6K struct{ ql, qh int }

func (q6K) fields() []Field { return []Field{{Name: "q", Width: 6, Per: 256, Elem: 6}} }

func (p q6K) split(src []byte, stride, n int, out [][]byte) {
	o := out[0][:n*256]
	le := binary.LittleEndian
	for r := 0; r < n; r++ {
		rec := src[r*stride : r*stride+max(p.ql+128, p.qh+64)]
		for h := 0; h < 2; h++ {
			ql := rec[p.ql+64*h : p.ql+64*h+64]
			qh := rec[p.qh+32*h : p.qh+32*h+32]
			v := o[r*256+128*h : r*256+128*h+128]
			for l := 0; l < 32; l += 8 {
				a, b, c := le.Uint64(ql[l:]), le.Uint64(ql[l+32:]), le.Uint64(qh[l:])
				le.PutUint64(v[l:], a&m4|(c&m2)<<4)
				le.PutUint64(v[l+32:], b&m4|(c>>2&m2)<<4)
				le.PutUint64(v[l+64:], a>>4&m4|(c>>4&m2)<<4)
				le.PutUint64(v[l+96:], b>>4&m4|(c>>6&m2)<<4)
			}
		}
	}
}

func (p q6K) merge(dst []byte, stride, n int, in [][]byte) {
	s := in[0][:n*256]
	le := binary.LittleEndian
	for r := 0; r < n; r++ {
		rec := dst[r*stride : r*stride+max(p.ql+128, p.qh+64)]
		for h := 0; h < 2; h++ {
			ql := rec[p.ql+64*h : p.ql+64*h+64]
			qh := rec[p.qh+32*h : p.qh+32*h+32]
			v := s[r*256+128*h : r*256+128*h+128]
			for l := 0; l < 32; l += 8 {
				a, b, c, d := le.Uint64(v[l:]), le.Uint64(v[l+32:]), le.Uint64(v[l+64:]), le.Uint64(v[l+96:])
				le.PutUint64(ql[l:], a&m4|(c&m4)<<4)
				le.PutUint64(ql[l+32:], b&m4|(d&m4)<<4)
				le.PutUint64(qh[l:], a>>4&m2|(b>>4&m2)<<2|(c>>4&m2)<<4|(d>>4&m2)<<6)
			}
		}
	}
}

// q3K is the 256 3-bit quants of Q3_K, joined in pairs: hmask[32] at hm,
// qs[64] at qs. Value 128h+32j+l (h < 2, j < 4, l < 32) is bits 2j..2j+1
// of qs[32h+l] with bit 4h+j of hmask[l] on top; values 2i and 2i+1 are
// symbol i's low and high three bits.
type q3K struct{ hm, qs int }

func (q3K) fields() []Field { return []Field{{Name: "q", Width: 6, Per: 128, Elem: 3}} }

func (p q3K) split(src []byte, stride, n int, out [][]byte) {
	o := out[0][:n*128]
	for r := 0; r < n; r++ {
		rec := src[r*stride : r*stride+max(p.hm+32, p.qs+64)]
		hm := rec[p.hm : p.hm+32]
		qs := rec[p.qs : p.qs+64]
		v := o[r*128 : r*128+128]
		for h := 0; h < 2; h++ {
			for j := 0; j < 4; j++ {
				w := v[64*h+16*j : 64*h+16*j+16]
				for l := 0; l < 32; l += 2 {
					a := qs[32*h+l]>>(2*j)&3 | (hm[l]>>(4*h+j)&1)<<2
					b := qs[32*h+l+1]>>(2*j)&3 | (hm[l+1]>>(4*h+j)&1)<<2
					w[l/2] = a | b<<3
				}
			}
		}
	}
}

func (p q3K) merge(dst []byte, stride, n int, in [][]byte) {
	s := in[0][:n*128]
	for r := 0; r < n; r++ {
		rec := dst[r*stride : r*stride+max(p.hm+32, p.qs+64)]
		hm := rec[p.hm : p.hm+32]
		qs := rec[p.qs : p.qs+64]
		clear(hm)
		clear(qs)
		v := s[r*128 : r*128+128]
		for h := 0; h < 2; h++ {
			for j := 0; j < 4; j++ {
				w := v[64*h+16*j : 64*h+16*j+16]
				for l := 0; l < 32; l += 2 {
					a, b := w[l/2]&7, w[l/2]>>3&7
					qs[32*h+l] |= (a & 3) << (2 * j)
					qs[32*h+l+1] |= (b & 3) << (2 * j)
					hm[l] |= (a >> 2) << (4*h + j)
					hm[l+1] |= (b >> 2) << (4*h + j)
				}
			}
		}
	}
}

// kScales is the 12 bytes of Q4_K/Q5_K's 6-bit sub-block scales sc and
// mins m (8 each): for j < 4, sc[j] and m[j] are the low six bits of
// bytes j and j+4; sc[j+4] is the low nibble of byte j+8 with the top two
// bits of byte j above it, m[j+4] the high nibble of byte j+8 with the
// top two bits of byte j+4.
type kScales struct{ off int }

func (kScales) fields() []Field {
	return []Field{{Name: "scales", Width: 6, Per: 8, Elem: 6}, {Name: "mins", Width: 6, Per: 8, Elem: 6}}
}

func (p kScales) split(src []byte, stride, n int, out [][]byte) {
	sc, mn := out[0][:n*8], out[1][:n*8]
	for r := 0; r < n; r++ {
		q := src[r*stride+p.off : r*stride+p.off+12]
		s, m := sc[r*8:r*8+8], mn[r*8:r*8+8]
		for j := 0; j < 4; j++ {
			s[j], m[j] = q[j]&63, q[j+4]&63
			s[j+4] = q[j+8]&15 | q[j]>>6<<4
			m[j+4] = q[j+8]>>4 | q[j+4]>>6<<4
		}
	}
}

func (p kScales) merge(dst []byte, stride, n int, in [][]byte) {
	sc, mn := in[0][:n*8], in[1][:n*8]
	for r := 0; r < n; r++ {
		q := dst[r*stride+p.off : r*stride+p.off+12]
		s, m := sc[r*8:r*8+8], mn[r*8:r*8+8]
		for j := 0; j < 4; j++ {
			q[j] = s[j]&63 | s[j+4]>>4<<6
			q[j+4] = m[j]&63 | m[j+4]>>4<<6
			q[j+8] = s[j+4]&15 | m[j+4]<<4
		}
	}
}

// q3Scales is the 12 bytes of Q3_K's 16 6-bit scales: scale i's low
// nibble is the low nibble of byte i (i < 8) or the high nibble of byte
// i-8, and its top two bits are bits 2(i/4), 2(i/4)+1 of byte 8 + i%4.
type q3Scales struct{ off int }

func (q3Scales) fields() []Field { return []Field{{Name: "scales", Width: 6, Per: 16, Elem: 6}} }

func (p q3Scales) split(src []byte, stride, n int, out [][]byte) {
	o := out[0][:n*16]
	for r := 0; r < n; r++ {
		b := src[r*stride+p.off : r*stride+p.off+12]
		s := o[r*16 : r*16+16]
		for i := 0; i < 8; i++ {
			s[i] = b[i]&15 | (b[8+i%4]>>(2*(i/4))&3)<<4
			s[i+8] = b[i]>>4 | (b[8+i%4]>>(2*(i/4+2))&3)<<4
		}
	}
}

func (p q3Scales) merge(dst []byte, stride, n int, in [][]byte) {
	o := in[0][:n*16]
	for r := 0; r < n; r++ {
		b := dst[r*stride+p.off : r*stride+p.off+12]
		s := o[r*16 : r*16+16]
		clear(b[8:])
		for i := 0; i < 8; i++ {
			b[i] = s[i]&15 | s[i+8]<<4
			b[8+i%4] |= (s[i]>>4&3)<<(2*(i/4)) | (s[i+8]>>4&3)<<(2*(i/4+2))
		}
	}
}
