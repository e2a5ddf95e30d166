package codec

import "math/bits"

// Fixed-point log2 for the encoder's decisions. Floating-point logarithms
// may differ in the last bit between platforms (assembly on some, pure Go
// on others), and a decision that flips would change the archive bytes;
// integer arithmetic keeps them identical everywhere. Precision: 1/2^16
// bit, plenty for choosing between codings.

const log2Frac = 16

// log2Table[i] = round(log2(1 + i/1024) · 2^16) for i in 0..1023.
var log2Table = func() (t [1024]uint32) {
	// Computed with integer arithmetic only: log2(1+i/1024) by the
	// bit-by-bit square method on a 1.62 fixed-point mantissa.
	for i := range t {
		x := uint64(1024+i) << 52 // 1.62 fixed point: (1024+i)/1024 in [1,2)
		var r uint32
		for b := 0; b < log2Frac+2; b++ {
			// x = x² (in 1.62), keep it in [1,2)
			hi, lo := bits.Mul64(x, x)
			x = hi<<2 | lo>>62 // (x*x) >> 62
			r <<= 1
			if x >= 1<<63 {
				x >>= 1
				r |= 1
			}
		}
		// r has log2Frac+2 fraction bits; round to log2Frac
		t[i] = (r + 2) >> 2
	}
	return
}()

// log2Fixed returns log2(x)·2^16 for x ≥ 1 (0 for x = 0), accurate to a
// few units in the last place.
func log2Fixed(x uint64) uint64 {
	if x == 0 {
		return 0
	}
	e := bits.Len64(x) - 1
	// top 10 bits below the leading one
	var m uint64
	if e >= 10 {
		m = (x >> (e - 10)) & 1023
	} else {
		m = (x << (10 - e)) & 1023
	}
	return uint64(e)<<log2Frac + uint64(log2Table[m])
}

// entropyBits returns Σ c·log2(n/c) over hist — the order-0 cost of the
// stream — in bits (fixed point, 2^16 per bit, returned as float for
// convenience but computed exactly in integers), and the number of distinct
// symbols.
func entropyBits(hist *[256]uint32, n int) (float64, int) {
	if n == 0 {
		return 0, 0
	}
	ln := log2Fixed(uint64(n))
	var h uint64
	d := 0
	for _, c := range hist {
		if c != 0 {
			h += uint64(c) * (ln - log2Fixed(uint64(c)))
			d++
		}
	}
	return float64(h) / (1 << log2Frac), d
}

// entropyBitsOf is entropyBits for a histogram whose nonzero symbols are
// listed in nz (the same sum, over fewer entries).
func entropyBitsOf(hist *[256]uint32, nz []byte, n int) float64 {
	if n == 0 {
		return 0
	}
	ln := log2Fixed(uint64(n))
	var h uint64
	for _, s := range nz {
		c := uint64(hist[s])
		h += c * (ln - log2Fixed(c))
	}
	return float64(h) / (1 << log2Frac)
}
