package prog

import "math"

// Bound returns the order-0 entropy, in bits, of the fields of the
// records in src (a whole number of s's records): each f16 field at the
// entropy of its exponent plus its 11 sign and mantissa bits raw, and
// every other field at the entropy of its elements (a quant, a sub-block
// scale) as symbols of their width, each field with its own histogram.
// It is the yardstick of docs/programs.md, not used by the encoder (whose
// decisions never depend on floating point).
func Bound(src []byte, s *Schema) float64 {
	n := len(src) / s.Bytes
	if n == 0 {
		return 0
	}
	fs := grow(nil, s, n)
	s.split(src[:n*s.Bytes], n, fs)
	var bits float64
	for i, f := range s.fields {
		var hist [256]float64
		switch f.Half {
		case 1:
			for _, b := range fs[i] {
				hist[b>>2&31]++
			}
			bits += entropy(&hist) + 11*float64(n)
			continue
		case 2:
			continue // counted with its high byte
		}
		k := int(f.Width / f.Elem)
		mask := byte(1)<<f.Elem - 1
		for _, b := range fs[i] {
			for j := 0; j < k; j++ {
				hist[b>>(j*int(f.Elem))&mask]++
			}
		}
		bits += entropy(&hist)
	}
	return bits
}

// entropy returns Σ c·log2(total/c) over the counts.
func entropy(hist *[256]float64) float64 {
	var t float64
	for _, c := range hist {
		t += c
	}
	var b float64
	for _, c := range hist {
		if c > 0 {
			b += c * math.Log2(t/c)
		}
	}
	return b
}
