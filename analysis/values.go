package analysis

import (
	"encoding/binary"
	"math"

	"neuralzip/dtype"
)

// floatFormat is what the value decoder and the Gaussian model need to know
// about a signed float type: field widths, the exponent bias and whether the
// all-ones exponent is a normal binade (OCP FP8 E4M3FN: no infinities, only
// S.1111.111 is NaN) instead of IEEE infinities and NaNs.
type floatFormat struct {
	exp, mant int
	bias      int
	fn        bool
}

// formatOf returns the format of d's values. C64 counts as F32 (its real and
// imaginary parts); unsigned formats (F8_E8M0), sub-byte floats and
// non-floats report ok=false.
func formatOf(d dtype.DType) (f floatFormat, size int, ok bool) {
	size = d.Size()
	if d == dtype.C64 {
		d, size = dtype.F32, 4
	}
	l, ok := d.FloatLayout()
	if !ok || l.Sign != 1 {
		return floatFormat{}, 0, false
	}
	return floatFormat{exp: l.Exp, mant: l.Mant, bias: 1<<(l.Exp-1) - 1, fn: d == dtype.F8E4M3}, size, true
}

// value decodes the bits of one value of a format narrower than F64 (and
// F64 itself).
func (f floatFormat) value(bits uint64) float64 {
	switch {
	case f.exp == 11 && f.mant == 52:
		return math.Float64frombits(bits)
	case f.exp == 8 && f.mant == 23:
		return float64(math.Float32frombits(uint32(bits)))
	case f.exp == 8 && f.mant == 7:
		return float64(math.Float32frombits(uint32(bits) << 16))
	}
	emax := uint64(1)<<f.exp - 1
	e := bits >> f.mant & emax
	m := bits & (1<<f.mant - 1)
	neg := bits>>(f.exp+f.mant)&1 != 0
	var v float64
	switch {
	case f.fn && e == emax && m == 1<<f.mant-1:
		return math.NaN()
	case !f.fn && e == emax:
		if m != 0 {
			return math.NaN()
		}
		v = math.Inf(1)
	case e == 0: // zero and subnormals: m·2^(1-bias-mant), exact
		v = float64(m) * math.Float64frombits(uint64(1023+1-f.bias-f.mant)<<52)
	default: // the same value with float64's bias and a wider mantissa
		v = math.Float64frombits((e+1023-uint64(f.bias))<<52 | m<<(52-f.mant))
	}
	if neg {
		v = -v
	}
	return v
}

// AppendValues appends the values of data, the little-endian elements of a
// float tensor of type d, to dst as float64 (exactly: every supported format
// is a subset of float64). F8_E4M3 is OCP E4M3FN (no infinities, NaN =
// S.1111.111), F8_E5M2 is IEEE-like; C64 yields its parts in order. ok is
// false for unsigned, sub-byte and non-float types; a trailing partial value
// is ignored.
func AppendValues(dst []float64, d dtype.DType, data []byte) ([]float64, bool) {
	f, size, ok := formatOf(d)
	if !ok {
		return dst, false
	}
	n := len(data) / size
	for i := 0; i < n; i++ {
		dst = append(dst, f.value(load(data[i*size:], size)))
	}
	return dst, true
}

// load reads one little-endian element of size bytes.
func load(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

// Moments are the count, mean and spread of a tensor's values. Mean and M2
// describe the finite values only; infinities and NaNs are counted in Values
// but otherwise left out.
type Moments struct {
	Values int64   // all values
	Finite int64   // finite values
	Mean   float64 // mean of the finite values
	M2     float64 // sum of squared deviations of the finite values from Mean
}

// Std is the (population) standard deviation of the finite values, 0 when
// there are none.
func (m Moments) Std() float64 {
	if m.Finite == 0 {
		return 0
	}
	return math.Sqrt(m.M2 / float64(m.Finite))
}

// RMS is the root mean square of the finite values, √(σ²+μ²): the maximum
// likelihood σ of a zero-mean Gaussian, which is what the Gaussian exponent
// model assumes.
func (m Moments) RMS() float64 {
	if m.Finite == 0 {
		return 0
	}
	return math.Sqrt(m.M2/float64(m.Finite) + m.Mean*m.Mean)
}

// Add adds one value.
func (m *Moments) Add(x float64) {
	m.Values++
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return
	}
	m.Finite++
	d := x - m.Mean
	m.Mean += d / float64(m.Finite)
	m.M2 += d * (x - m.Mean)
}

// Merge adds the values that b describes (Chan et al.'s pairwise update,
// numerically stable like Welford's).
func (m *Moments) Merge(b Moments) {
	m.Values += b.Values
	if b.Finite == 0 {
		return
	}
	if m.Finite == 0 {
		m.Finite, m.Mean, m.M2 = b.Finite, b.Mean, b.M2
		return
	}
	na, nb := float64(m.Finite), float64(b.Finite)
	n := na + nb
	d := b.Mean - m.Mean
	m.Mean += d * nb / n
	m.M2 += b.M2 + d*d*na*nb/n
	m.Finite += b.Finite
}

// momentBlock is how many values ValueMoments sums exactly (two passes over
// a small buffer) before merging them into the running moments.
const momentBlock = 256

// ValueMoments computes the moments of data, the little-endian values of a
// float tensor of type d (see AppendValues for the formats). Values are
// taken in blocks of 256: two passes in float64 per block, then merged, so
// the result is accurate for any length and scale. ok is false where
// AppendValues reports false.
func ValueMoments(d dtype.DType, data []byte) (m Moments, ok bool) {
	a, ok := NewMomentAccumulator(d)
	if !ok {
		return Moments{}, false
	}
	a.Write(data)
	return a.Moments(), true
}

// MomentAccumulator computes the Moments of a tensor whose bytes arrive in
// pieces of any size (values may straddle pieces), like Accumulator does
// for FloatStats. The result does not depend on how the bytes are cut.
type MomentAccumulator struct {
	f       floatFormat
	size    int
	partial []byte
	m       Moments // the full blocks
	values  int64   // values in buf, finite or not
	buf     []float64
}

// NewMomentAccumulator returns an accumulator for dtype d; ok is false where
// AppendValues reports false.
func NewMomentAccumulator(d dtype.DType) (*MomentAccumulator, bool) {
	f, size, ok := formatOf(d)
	if !ok {
		return nil, false
	}
	return &MomentAccumulator{f: f, size: size, buf: make([]float64, 0, momentBlock)}, true
}

// Write adds bytes of the tensor.
func (a *MomentAccumulator) Write(p []byte) (int, error) {
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

// Moments returns the moments of everything written so far (a trailing
// partial value aside).
func (a *MomentAccumulator) Moments() Moments {
	m := a.m
	m.Merge(blockMoments(a.buf, a.values))
	return m
}

// add adds whole values.
func (a *MomentAccumulator) add(p []byte) {
	for i := 0; i < len(p); i += a.size {
		x := a.f.value(load(p[i:], a.size))
		a.values++
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			a.buf = append(a.buf, x)
		}
		if a.values == momentBlock {
			a.m.Merge(blockMoments(a.buf, a.values))
			a.buf, a.values = a.buf[:0], 0
		}
	}
}

// blockMoments computes the moments of a block of values of which xs are
// the finite ones, in two passes.
func blockMoments(xs []float64, values int64) Moments {
	b := Moments{Values: values, Finite: int64(len(xs))}
	if len(xs) == 0 {
		return b
	}
	n := float64(len(xs))
	for _, x := range xs {
		b.Mean += x
	}
	b.Mean /= n
	if math.IsInf(b.Mean, 0) { // the sum overflowed; scale first
		b.Mean = 0
		for _, x := range xs {
			b.Mean += x / n
		}
	}
	for _, x := range xs {
		b.M2 += (x - b.Mean) * (x - b.Mean)
	}
	return b
}
