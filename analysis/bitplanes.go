package analysis

import (
	"math"

	"neuralzip/dtype"
)

// BitPlanes counts, for every bit of a float type's values, how many values
// have it set: the sign and mantissa bit-plane statistics beside the
// exponent histogram. Bit 0 is the least significant bit of the value.
type BitPlanes struct {
	DType  dtype.DType
	Values int64
	Sign   int      // sign bits (0 or 1), the top bits
	Exp    int      // exponent bits, below the sign
	Mant   int      // mantissa bits, the low bits
	Ones   []uint64 // per bit, Sign+Exp+Mant entries

	size  int
	pos   int             // byte position within the current value
	bytes *[8][256]uint64 // histogram of each byte position, of the values written since Compact
	base  []uint64        // per-bit counts of the values before (Compact)
}

// NewBitPlanes returns a counter for values of type d (C64 counts as F32);
// ok is false for types without a float layout.
func NewBitPlanes(d dtype.DType) (*BitPlanes, bool) {
	l, ok := d.FloatLayout()
	size := d.Size()
	if d == dtype.C64 {
		l, ok = dtype.F32.FloatLayout()
		size = 4
	}
	if !ok || size < 1 || size > 8 {
		return nil, false
	}
	return &BitPlanes{DType: d, Sign: l.Sign, Exp: l.Exp, Mant: l.Mant, size: size}, true
}

// Write adds bytes of little-endian values; values may straddle calls.
func (b *BitPlanes) Write(p []byte) (int, error) {
	n := len(p)
	if b.bytes == nil {
		b.bytes = new([8][256]uint64)
	}
	for len(p) > 0 && b.pos != 0 {
		b.bytes[b.pos][p[0]]++
		p = p[1:]
		b.pos = (b.pos + 1) % b.size
		if b.pos == 0 {
			b.Values++
		}
	}
	whole := len(p) / b.size
	switch b.size {
	case 1:
		for _, x := range p[:whole] {
			b.bytes[0][x]++
		}
	case 2:
		h0, h1 := &b.bytes[0], &b.bytes[1]
		for i := 0; i < whole; i++ {
			h0[p[2*i]]++
			h1[p[2*i+1]]++
		}
	default:
		for i := 0; i < whole*b.size; i += b.size {
			for k := 0; k < b.size; k++ {
				b.bytes[k][p[i+k]]++
			}
		}
	}
	b.Values += int64(whole)
	for _, x := range p[whole*b.size:] {
		b.bytes[b.pos][x]++
		b.pos++
	}
	b.Ones = nil
	return n, nil
}

// Merge adds the counts of o (same dtype).
func (b *BitPlanes) Merge(o *BitPlanes) {
	switch {
	case o.bytes != nil && o.base == nil:
		if b.bytes == nil {
			b.bytes = new([8][256]uint64)
		}
		for k := range b.bytes {
			for x := range b.bytes[k] {
				b.bytes[k][x] += o.bytes[k][x]
			}
		}
	default: // o was compacted: add its per-bit counts
		oc := o.Count()
		if b.base == nil {
			b.base = make([]uint64, len(oc))
		}
		for i, c := range oc {
			b.base[i] += c
		}
	}
	b.Values += o.Values
	b.Ones = nil
}

// Compact keeps only the per-bit counts (Ones) and frees the byte
// histograms (16 KiB): a model's statistics keep one BitPlanes per tensor,
// and a file of many tiny tensors would otherwise cost 16 KiB each.
// Writing more values afterwards still counts them.
func (b *BitPlanes) Compact() {
	b.base = append([]uint64(nil), b.Count()...)
	b.bytes = nil
}

// Count fills Ones from the byte histograms and returns it.
func (b *BitPlanes) Count() []uint64 {
	bits := b.Sign + b.Exp + b.Mant
	ones := make([]uint64, bits)
	copy(ones, b.base)
	for k := 0; k < b.size && b.bytes != nil; k++ {
		for x, c := range b.bytes[k] {
			if c == 0 {
				continue
			}
			for j := 0; j < 8; j++ {
				if bit := 8*k + j; bit < bits && x>>j&1 == 1 {
					ones[bit] += c
				}
			}
		}
	}
	b.Ones = ones
	return ones
}

// Fraction is the fraction of values with bit set (bit 0 = LSB).
func (b *BitPlanes) Fraction(bit int) float64 {
	if b.Ones == nil {
		b.Count()
	}
	if b.Values == 0 || bit < 0 || bit >= len(b.Ones) {
		return 0
	}
	return float64(b.Ones[bit]) / float64(b.Values)
}

// BitEntropy is the binary entropy of bit (bits per value, 0..1).
func (b *BitPlanes) BitEntropy(bit int) float64 {
	return binaryEntropy(b.Fraction(bit))
}

// MantissaEntropy is the sum of the mantissa bits' binary entropies: an
// upper bound on what a bit-plane coder could save is Mant minus it.
func (b *BitPlanes) MantissaEntropy() float64 {
	var s float64
	for bit := 0; bit < b.Mant; bit++ {
		s += b.BitEntropy(bit)
	}
	return s
}

// ConstantMantissaBits counts the mantissa bits that are equal in every
// value (always 0 or always 1): bits a coder can drop.
func (b *BitPlanes) ConstantMantissaBits() int {
	if b.Ones == nil {
		b.Count()
	}
	n := 0
	for bit := 0; bit < b.Mant; bit++ {
		if b.Values > 0 && (b.Ones[bit] == 0 || b.Ones[bit] == uint64(b.Values)) {
			n++
		}
	}
	return n
}

// SignBit is the index of the sign bit, -1 when the type has none.
func (b *BitPlanes) SignBit() int {
	if b.Sign == 0 {
		return -1
	}
	return b.Exp + b.Mant
}

func binaryEntropy(p float64) float64 {
	if p <= 0 || p >= 1 {
		return 0
	}
	return -p*math.Log2(p) - (1-p)*math.Log2(1-p)
}
