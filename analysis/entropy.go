// Package analysis computes statistics of checkpoint tensors: exponent
// histograms, order-0 entropies and the compression bounds they imply. It
// has no UI dependencies, so the CLI, the desktop workbench and the browser
// build share it.
package analysis

import (
	"encoding/binary"
	"math"

	"neuralzip/dtype"
)

// FloatStats summarises the exponent field of a float tensor.
type FloatStats struct {
	DType      dtype.DType
	Values     int64
	ExpBits    int      // width of the exponent field
	OtherBits  int      // sign and mantissa bits per value
	Hist       []uint64 // exponent histogram, 2^ExpBits bins
	ExpEntropy float64  // order-0 entropy of the exponents, bits per value
}

// Bound is the order-0 bound on the coded size in bytes: every exponent at
// its entropy, every other bit raw — n·(H + sign and mantissa bits)/8.
func (s FloatStats) Bound() float64 {
	return float64(s.Values) * (s.ExpEntropy + float64(s.OtherBits)) / 8
}

// Bytes is the raw size of the values.
func (s FloatStats) Bytes() int64 { return s.Values * int64(s.ExpBits+s.OtherBits) / 8 }

// Float computes the statistics of data, the little-endian values of a float
// tensor of type d. C64 counts as pairs of F32. ok is false for non-float
// and sub-byte types; a trailing partial value is ignored.
func Float(d dtype.DType, data []byte) (st FloatStats, ok bool) {
	l, ok := d.FloatLayout()
	size := d.Size()
	if d == dtype.C64 {
		l, ok = dtype.F32.FloatLayout()
		size = 4
	}
	if !ok {
		return FloatStats{}, false
	}
	n := len(data) / size
	st = FloatStats{DType: d, Values: int64(n), ExpBits: l.Exp, OtherBits: l.Sign + l.Mant, Hist: make([]uint64, 1<<l.Exp)}
	emask := uint64(1)<<l.Exp - 1
	m := uint(l.Mant)
	switch size {
	case 1:
		for _, b := range data[:n] {
			st.Hist[uint64(b)>>m&emask]++
		}
	case 2:
		for i := 0; i < n; i++ {
			st.Hist[uint64(binary.LittleEndian.Uint16(data[2*i:]))>>m&emask]++
		}
	case 4:
		for i := 0; i < n; i++ {
			st.Hist[uint64(binary.LittleEndian.Uint32(data[4*i:]))>>m&emask]++
		}
	case 8:
		for i := 0; i < n; i++ {
			st.Hist[binary.LittleEndian.Uint64(data[8*i:])>>m&emask]++
		}
	}
	st.ExpEntropy = Entropy(st.Hist)
	return st, true
}

// Entropy returns the order-0 entropy in bits per symbol of a histogram.
func Entropy(hist []uint64) float64 {
	var n uint64
	for _, c := range hist {
		n += c
	}
	if n == 0 {
		return 0
	}
	var h float64
	ln := math.Log2(float64(n))
	for _, c := range hist {
		if c != 0 {
			h += float64(c) * (ln - math.Log2(float64(c)))
		}
	}
	return h / float64(n)
}

// Merge adds the statistics of b to a (same dtype).
func (s *FloatStats) Merge(b FloatStats) {
	if s.Hist == nil {
		*s = FloatStats{DType: b.DType, ExpBits: b.ExpBits, OtherBits: b.OtherBits, Hist: make([]uint64, len(b.Hist))}
	}
	s.Values += b.Values
	for i, c := range b.Hist {
		s.Hist[i] += c
	}
	s.ExpEntropy = Entropy(s.Hist)
}

// Accumulator computes FloatStats of a tensor whose bytes arrive in pieces
// of any size (values may straddle pieces).
type Accumulator struct {
	d       dtype.DType
	size    int
	partial []byte
	st      FloatStats
	ok      bool
}

// NewAccumulator returns an accumulator for dtype d; ok is false when d is
// not a float type Float understands.
func NewAccumulator(d dtype.DType) (*Accumulator, bool) {
	st, ok := Float(d, nil)
	if !ok {
		return nil, false
	}
	size := d.Size()
	if d == dtype.C64 {
		size = 4
	}
	return &Accumulator{d: d, size: size, st: st, ok: true}, true
}

// Write adds bytes of the tensor.
func (a *Accumulator) Write(p []byte) (int, error) {
	n := len(p)
	if len(a.partial) > 0 {
		k := min(a.size-len(a.partial), len(p))
		a.partial = append(a.partial, p[:k]...)
		p = p[k:]
		if len(a.partial) == a.size {
			a.add(a.partial)
			a.partial = a.partial[:0]
		}
	}
	whole := len(p) - len(p)%a.size
	a.add(p[:whole])
	a.partial = append(a.partial, p[whole:]...)
	return n, nil
}

func (a *Accumulator) add(p []byte) {
	if len(p) == 0 {
		return
	}
	s, _ := Float(a.d, p)
	a.st.Values += s.Values
	for i, c := range s.Hist {
		a.st.Hist[i] += c
	}
}

// Stats returns the statistics of everything written so far.
func (a *Accumulator) Stats() FloatStats {
	st := a.st
	st.Hist = append([]uint64(nil), a.st.Hist...)
	st.ExpEntropy = Entropy(st.Hist)
	return st
}
