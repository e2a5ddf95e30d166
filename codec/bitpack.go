package codec

import "encoding/binary"

// Bit packing of symbol streams at an exact width (1..8 bits per symbol),
// least significant bit first. A stream of n symbols of width w occupies
// ceil(n*w/8) bytes; the unused high bits of the last byte are zero.

// packedLen is the byte length of n symbols of width w.
func packedLen(n int, w uint) int { return (n*int(w) + 7) / 8 }

// appendPacked appends syms packed at width w to dst. Symbols must be < 1<<w.
func appendPacked(dst, syms []byte, w uint) []byte {
	if w == 8 {
		return append(dst, syms...)
	}
	start := len(dst)
	n := packedLen(len(syms), w)
	dst = grow(dst, n+8) // 8 bytes of room for the whole-word stores
	out := dst[start:]
	// eight symbols at a time fill w whole bytes: one 8-byte store each
	o, i := 0, 0
	for ; i+8 <= len(syms); i += 8 {
		s := syms[i : i+8 : i+8]
		acc := uint64(s[0]) | uint64(s[1])<<w | uint64(s[2])<<(2*w) | uint64(s[3])<<(3*w) |
			uint64(s[4])<<(4*w) | uint64(s[5])<<(5*w) | uint64(s[6])<<(6*w) | uint64(s[7])<<(7*w)
		binary.LittleEndian.PutUint64(out[o:], acc)
		o += int(w)
	}
	dst = dst[:start+n]
	var acc uint64
	var nb uint
	for _, s := range syms[i:] {
		acc |= uint64(s) << nb
		nb += w
		if nb >= 32 {
			out[o] = byte(acc)
			out[o+1] = byte(acc >> 8)
			out[o+2] = byte(acc >> 16)
			out[o+3] = byte(acc >> 24)
			o += 4
			acc >>= 32
			nb -= 32
		}
	}
	for nb > 0 {
		out[o] = byte(acc)
		o++
		acc >>= 8
		if nb < 8 {
			nb = 0
		} else {
			nb -= 8
		}
	}
	return dst
}

// unpack fills dst with len(dst) symbols of width w read from src, which must
// hold at least packedLen(len(dst), w) bytes.
func unpack(dst, src []byte, w uint) {
	if w == 8 {
		copy(dst, src[:len(dst)])
		return
	}
	// with AVX-512 64 symbols at a time (unpackFast; the loop below is
	// its twin), from a whole byte: 64 symbols take 8w bytes
	if k := unpackFast(dst, src, w); k > 0 {
		dst, src = dst[k:], src[k/8*int(w):]
	}
	mask := uint64(1)<<w - 1
	var acc uint64
	var nb uint
	i := 0
	for k := range dst {
		if nb < w {
			// refill up to 4 bytes at a time while they exist
			for nb <= 56 && i < len(src) {
				acc |= uint64(src[i]) << nb
				i++
				nb += 8
			}
		}
		dst[k] = byte(acc & mask)
		acc >>= w
		nb -= w
	}
}

// grow extends dst by n bytes and returns it (contents of the new bytes are
// unspecified).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst[:len(dst)+n]
	}
	nd := make([]byte, len(dst)+n, 2*cap(dst)+n)
	copy(nd, dst)
	return nd
}
