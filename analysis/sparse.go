package analysis

import (
	"encoding/binary"
	"math"

	"neuralzip/dtype"
)

// SparseStats describes the exact zeros of a float tensor and the
// theoretical optimum of coding it as a zero mask plus its nonzero values
// (the BitSparse bound): the mask at its order-0 entropy, or at the
// entropy each column (hidden unit) has with its own zero probability,
// and the nonzero values at the order-0 entropy of their bit patterns.
type SparseStats struct {
	DType  dtype.DType
	Values int64
	Zeros  int64 // values whose bits are all zero (-0 is not a zero here)
	Row    int   // the row length the column figures use (0: none)
	// MaskBits is Values × the binary entropy of the zero fraction;
	// MaskColumnBits the sum over columns of each column's (MaskBits
	// without rows).
	MaskBits, MaskColumnBits float64
	// ValueBits is the nonzero values' order-0 entropy in bits, of the
	// whole bit pattern for types of up to 2 bytes; for F32, of the sign
	// and exponent with the 23 mantissa bits raw (nearly every F32 value
	// is distinct, so the plug-in entropy of whole patterns is no bound).
	ValueBits float64
}

// Sparsity is the fraction of zeros.
func (s SparseStats) Sparsity() float64 {
	if s.Values == 0 {
		return 0
	}
	return float64(s.Zeros) / float64(s.Values)
}

// Optimum is the order-0 optimum in bytes: mask entropy plus nonzero-value
// entropy.
func (s SparseStats) Optimum() float64 { return (s.MaskBits + s.ValueBits) / 8 }

// OptimumColumns is Optimum with the mask at its per-column entropy.
func (s SparseStats) OptimumColumns() float64 { return (s.MaskColumnBits + s.ValueBits) / 8 }

// SparseAccumulator computes SparseStats of a tensor whose bytes arrive in
// pieces of any size.
type SparseAccumulator struct {
	d       dtype.DType
	size    int
	mant    uint // F32: mantissa bits left raw
	row     int
	pos     int // values seen
	partial []byte
	hist    []uint64 // nonzero patterns (F32: sign and exponent)
	colNZ   []uint64 // nonzero values per column
	zeros   int64
}

// NewSparseAccumulator returns an accumulator for a tensor of dtype d
// whose rows (last dimension) hold row values (0 or 1: no columns); ok is
// false unless d is a float type of 1, 2 or 4 bytes.
func NewSparseAccumulator(d dtype.DType, row int) (*SparseAccumulator, bool) {
	l, ok := d.FloatLayout()
	size := d.Size()
	if !ok || size == 0 || size > 4 {
		return nil, false
	}
	a := &SparseAccumulator{d: d, size: size}
	if size == 4 {
		a.mant = uint(l.Mant)
	}
	a.hist = make([]uint64, 1<<(8*size-int(a.mant)))
	if row > 1 {
		a.row = row
		a.colNZ = make([]uint64, row)
	}
	return a, true
}

// Write adds bytes of the tensor.
func (a *SparseAccumulator) Write(p []byte) (int, error) {
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

func (a *SparseAccumulator) add(p []byte) {
	for i := 0; i+a.size <= len(p); i += a.size {
		var v uint64
		switch a.size {
		case 1:
			v = uint64(p[i])
		case 2:
			v = uint64(binary.LittleEndian.Uint16(p[i:]))
		default:
			v = uint64(binary.LittleEndian.Uint32(p[i:]))
		}
		if v == 0 {
			a.zeros++
		} else {
			a.hist[v>>a.mant]++
			if a.row > 0 {
				a.colNZ[a.pos%a.row]++
			}
		}
		a.pos++
	}
}

// Stats returns the statistics of the bytes written so far.
func (a *SparseAccumulator) Stats() SparseStats {
	n := int64(a.pos)
	s := SparseStats{DType: a.d, Values: n, Zeros: a.zeros, Row: a.row}
	s.MaskBits = float64(n) * h2(a.zeros, n)
	s.MaskColumnBits = s.MaskBits
	if a.row > 0 {
		s.MaskColumnBits = 0
		for c, nz := range a.colNZ {
			// values in column c: every row, and the part of the last
			k := n / int64(a.row)
			if int64(c) < n%int64(a.row) {
				k++
			}
			s.MaskColumnBits += float64(k) * h2(k-int64(nz), k)
		}
	}
	nz := n - a.zeros
	s.ValueBits = Entropy(a.hist)*float64(nz) + float64(nz)*float64(a.mant)
	return s
}

// h2 is the binary entropy in bits of k of n.
func h2(k, n int64) float64 {
	if n == 0 || k == 0 || k == n {
		return 0
	}
	p := float64(k) / float64(n)
	return -p*math.Log2(p) - (1-p)*math.Log2(1-p)
}
