package baseline

import "encoding/binary"

// BF16 field split shared by zipnn and dfloat11. A BF16 value s e8 m7 is
// stored little-endian as lo = e0 m7 (the exponent's low bit above the
// mantissa) and hi = s e7..e1. Split gives the exponent byte and the byte
// sign<<7 | mantissa, which is also ZipNN's reordered low byte.
//
// The word versions handle eight values per step with 64-bit operations; the
// generic twins do one value per step, finish the tails and are what the
// tests compare the word versions against.

const (
	bytes80 = 0x8080808080808080
	bytes7f = 0x7f7f7f7f7f7f7f7f
	bytes01 = 0x0101010101010101
	bytesFE = 0xfefefefefefefefe
)

// splitBF16 splits len(exp) values from src (2 bytes each) into exp and sm.
func splitBF16(src, exp, sm []byte) {
	n8 := len(exp) &^ 7
	for i := 0; i < n8; i += 8 {
		a := binary.LittleEndian.Uint64(src[2*i:])
		b := binary.LittleEndian.Uint64(src[2*i+8:])
		lo := evenBytes(a) | evenBytes(b)<<32
		hi := evenBytes(a>>8) | evenBytes(b>>8)<<32
		binary.LittleEndian.PutUint64(exp[i:], hi<<1&bytesFE|lo>>7&bytes01)
		binary.LittleEndian.PutUint64(sm[i:], hi&bytes80|lo&bytes7f)
	}
	splitBF16Generic(src[2*n8:], exp[n8:], sm[n8:])
}

// joinBF16 inverts splitBF16 into dst (2 bytes per value).
func joinBF16(dst, exp, sm []byte) {
	n8 := len(exp) &^ 7
	for i := 0; i < n8; i += 8 {
		e := binary.LittleEndian.Uint64(exp[i:])
		s := binary.LittleEndian.Uint64(sm[i:])
		lo := e<<7&bytes80 | s&bytes7f
		hi := s&bytes80 | e>>1&bytes7f
		binary.LittleEndian.PutUint64(dst[2*i:], spreadBytes(uint32(lo))|spreadBytes(uint32(hi))<<8)
		binary.LittleEndian.PutUint64(dst[2*i+8:], spreadBytes(uint32(lo>>32))|spreadBytes(uint32(hi>>32))<<8)
	}
	joinBF16Generic(dst[2*n8:], exp[n8:], sm[n8:])
}

func splitBF16Generic(src, exp, sm []byte) {
	for i := range exp {
		lo, hi := src[2*i], src[2*i+1]
		exp[i] = hi<<1 | lo>>7
		sm[i] = hi&0x80 | lo&0x7f
	}
}

func joinBF16Generic(dst, exp, sm []byte) {
	for i, e := range exp {
		s := sm[i]
		dst[2*i] = e<<7 | s&0x7f
		dst[2*i+1] = s&0x80 | e>>1
	}
}

// evenBytes gathers bytes 0, 2, 4, 6 of x into the low 32 bits.
func evenBytes(x uint64) uint64 {
	x &= 0x00ff00ff00ff00ff
	x = (x | x>>8) & 0x0000ffff0000ffff
	return (x | x>>16) & 0x00000000ffffffff
}

// spreadBytes moves byte k of x to byte 2k, leaving the odd bytes zero.
func spreadBytes(x uint32) uint64 {
	y := uint64(x)
	y = (y | y<<16) & 0x0000ffff0000ffff
	return (y | y<<8) & 0x00ff00ff00ff00ff
}
