package lossy

import (
	"math"
	"sort"

	"neuralzip/dtype"
)

// e4m3Max is the largest finite E4M3 value.
const e4m3Max = 448

// An fp8Format is one of the two FP8 formats: its non-negative finite
// values by code, increasing (the largest is max).
type fp8Format []float32

var (
	// E4M3 (OCP, "FN": no infinities, 0x7f is NaN): codes 0..126
	fmtE4M3 = fp8Values(3, 7, 127)
	// E5M2 (OCP: IEEE style, codes 124..127 infinity and NaNs): 0..123
	fmtE5M2 = fp8Values(2, 15, 124)
)

// fp8Values are the non-negative values of the first n codes of an FP8
// format with man mantissa bits and exponent bias bias (exponent field 0:
// subnormals); they increase.
func fp8Values(man, bias, n int) fp8Format {
	t := make(fp8Format, n)
	for c := range t {
		e, m := c>>man, float32(c&(1<<man-1))/float32(int(1)<<man)
		if e == 0 {
			t[c] = m * float32(math.Ldexp(1, 1-bias))
		} else {
			t[c] = (1 + m) * float32(math.Ldexp(1, e-bias))
		}
	}
	return t
}

// max is the format's largest finite value.
func (f fp8Format) max() float32 { return f[len(f)-1] }

// code rounds x to the nearest value of the format (ties to the even
// code), saturating at ±max.
func (f fp8Format) code(x float32) byte {
	s := byte(0)
	if x < 0 || x == 0 && math.Signbit(float64(x)) {
		s, x = 0x80, -x
	}
	n := len(f)
	if x >= f[n-1] {
		return s | byte(n-1)
	}
	i := sort.Search(n, func(i int) bool { return f[i] >= x })
	if i == 0 {
		return s
	}
	lo, hi := f[i-1], f[i]
	switch {
	case hi-x < x-lo:
		return s | byte(i)
	case x-lo < hi-x:
		return s | byte(i-1)
	case i%2 == 0:
		return s | byte(i)
	}
	return s | byte(i-1)
}

// finite reports whether c is a code of a finite value (not E4M3's NaN,
// not E5M2's infinities and NaNs).
func (f fp8Format) finite(c byte) bool { return int(c&127) < len(f) }

// value is the value of a finite code.
func (f fp8Format) value(c byte) float32 {
	v := f[c&127]
	if c&0x80 != 0 {
		return -v
	}
	return v
}

// toE4M3 rounds x to the nearest E4M3 value (ties to the even code),
// saturating at ±448.
func toE4M3(x float32) byte { return fmtE4M3.code(x) }

// fromE4M3 is the value of an E4M3 code (not 0x7f or 0xff, NaN).
func fromE4M3(c byte) float32 { return fmtE4M3.value(c) }

// fp8Scaled codes vals as FP8 of format f of vals/scale into codes and
// recon.
func fp8Scaled(f fp8Format, vals []float32, scale float32, codes []byte, recon []float32) {
	for i, x := range vals {
		c := byte(0)
		if scale > 0 {
			c = f.code(x / scale)
		}
		codes[i] = c
		recon[i] = f.value(c) * scale
	}
}

func absMax(v []float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	return m
}

// fp8Tensor is FP8 E4M3 (e5: E5M2) with one scale per tensor (absmax /
// the format's largest value, kept as float32).
type fp8Tensor struct{ e5 bool }

func (m fp8Tensor) Name() string {
	if m.e5 {
		return "fp8e5"
	}
	return "fp8"
}
func (fp8Tensor) Rated() bool { return false }

func (m fp8Tensor) Code(v []float32, rows, cols int, _ float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	f := fp8Of(m.e5)
	scale := absMax(v) / f.max()
	codes := make([]byte, len(v))
	recon := make([]float32, len(v))
	fp8Scaled(f, v, scale, codes, recon)
	return append(appendF32(nil, scale), codes...), recon, nil
}

// fp8Row is FP8 E4M3 (e5: E5M2) with one scale per row.
type fp8Row struct{ e5 bool }

func (m fp8Row) Name() string {
	if m.e5 {
		return "fp8e5row"
	}
	return "fp8row"
}
func (fp8Row) Rated() bool { return false }

func (m fp8Row) Code(v []float32, rows, cols int, _ float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	f := fp8Of(m.e5)
	coded := make([]byte, 0, 4*rows+len(v))
	codes := make([]byte, len(v))
	recon := make([]float32, len(v))
	for r := 0; r < rows; r++ {
		row := v[r*cols : (r+1)*cols]
		scale := absMax(row) / f.max()
		coded = appendF32(coded, scale)
		fp8Scaled(f, row, scale, codes[r*cols:(r+1)*cols], recon[r*cols:(r+1)*cols])
	}
	return append(coded, codes...), recon, nil
}

// fp8Of is E5M2 if e5, else E4M3.
func fp8Of(e5 bool) fp8Format {
	if e5 {
		return fmtE5M2
	}
	return fmtE4M3
}

// fp8Hadamard is FP8 after a rotation, in the manner of TACO: each row is
// split into blocks of h values (the largest power of two up to 256 that
// divides the row; rows of odd length are not rotated) and each block
// multiplied by the orthonormal Walsh–Hadamard matrix, which spreads
// outliers over the block; each rotated row is then coded as E4M3 with
// the scale (absmax/448 × 1, 15/16, …, 10/16: clipping the largest values
// when that lowers the row's squared error) chosen per row. Decoding
// rotates back.
//
// With dual set (fp8hd) each row also has a second, finer scale per
// group of dualGroup values, as TACO's dual-scale quantization keeps
// near-zero values apart from the row's largest: a power of two 2^-k
// (k = 0..15, four bits a group) by which the group's values are
// enlarged before rounding, the largest k that keeps the group's absolute
// maximum within the row's range, so that a group far below the row's
// largest values is not rounded into E4M3's subnormals or to zero.
type fp8Hadamard struct{ dual bool }

// dualGroup is the values per second scale of fp8hd.
const dualGroup = 32

func (m fp8Hadamard) Name() string {
	if m.dual {
		return "fp8hd"
	}
	return "fp8h"
}
func (fp8Hadamard) Rated() bool { return false }

func (m fp8Hadamard) Code(v []float32, rows, cols int, _ float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	h := hadamardBlock(cols)
	groups := 0 // second scales per row
	if m.dual {
		groups = (cols + dualGroup - 1) / dualGroup
	}
	codes := make([]byte, len(v))
	recon := make([]float32, len(v))
	exps := make([]byte, rows*groups) // one k a byte here, nibbles in the stream
	scales := make([]byte, 0, 4*rows)
	rot := make([]float32, cols)
	try := make([]float32, cols)
	tryCodes := make([]byte, cols)
	tryExps := make([]byte, groups)
	for r := 0; r < rows; r++ {
		copy(rot, v[r*cols:(r+1)*cols])
		for b := 0; b < cols; b += h {
			fwht(rot[b : b+h])
		}
		am := absMax(rot) / e4m3Max
		best, bestErr := am, math.Inf(1)
		for k := 16; k >= 10; k-- {
			s := am * float32(k) / 16
			fp8Grouped(rot, s, tryExps, tryCodes, try)
			if e, _ := sqErrors(rot, try); e < bestErr {
				best, bestErr = s, e
			}
		}
		scales = appendF32(scales, best)
		out := recon[r*cols : (r+1)*cols]
		fp8Grouped(rot, best, exps[r*groups:(r+1)*groups], codes[r*cols:(r+1)*cols], out)
		for b := 0; b < cols; b += h {
			fwht(out[b : b+h])
		}
	}
	coded := append(scales, packNibbles(exps)...)
	return append(coded, codes...), recon, nil
}

// fp8Grouped codes a row as E4M3 with the row's scale and, when exps is
// not empty, one second scale 2^-exps[g] per group of dualGroup values
// (fp8Hadamard).
func fp8Grouped(row []float32, scale float32, exps []byte, codes []byte, recon []float32) {
	if len(exps) == 0 {
		fp8Scaled(fmtE4M3, row, scale, codes, recon)
		return
	}
	for g := range exps {
		lo, hi := g*dualGroup, min((g+1)*dualGroup, len(row))
		m := absMax(row[lo:hi])
		k := 0
		for k < 15 && m > 0 && float64(m)*math.Ldexp(1, k+1) <= float64(scale)*e4m3Max {
			k++
		}
		exps[g] = byte(k)
		fp8Scaled(fmtE4M3, row[lo:hi], groupScale(scale, k), codes[lo:hi], recon[lo:hi])
	}
}

// groupScale is a row's scale times 2^-k (the decoder's too).
func groupScale(scale float32, k int) float32 { return scale * float32(math.Ldexp(1, -k)) }

// packNibbles packs values below 16 two a byte, the first in the low
// nibble (as nibble reads them).
func packNibbles(v []byte) []byte {
	out := make([]byte, (len(v)+1)/2)
	for i, x := range v {
		out[i/2] |= x << (4 * uint(i&1))
	}
	return out
}

// hadamardBlock is the largest power of two up to 256 that divides n.
func hadamardBlock(n int) int {
	h := 1
	for h < 256 && n%(2*h) == 0 {
		h *= 2
	}
	return h
}

// fwht applies the orthonormal Walsh–Hadamard transform to x (a power of
// two long) in place; it is its own inverse.
func fwht(x []float32) {
	n := len(x)
	for h := 1; h < n; h *= 2 {
		for i := 0; i < n; i += 2 * h {
			for j := i; j < i+h; j++ {
				a, b := x[j], x[j+h]
				x[j], x[j+h] = a+b, a-b
			}
		}
	}
	s := float32(1 / math.Sqrt(float64(n)))
	for i := range x {
		x[i] *= s
	}
}

// lowRank approximates a matrix by its best rank-k factors (truncated SVD),
// U·Σ (rows × k) and Vᵀ (k × cols) kept as BF16, k the largest rank whose
// factors fit the target rate (at least 1; MixT's mixtures of tensor
// operators start from such factorisations).
type lowRank struct{}

func (lowRank) Name() string { return "lowrank" }
func (lowRank) Rated() bool  { return true }

func (lowRank) Code(v []float32, rows, cols int, bits float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	if rows == 0 || cols == 0 {
		return []byte{0, 0, 0, 0}, []float32{}, nil
	}
	k := int(bits * float64(rows) * float64(cols) / (16 * float64(rows+cols)))
	k = max(1, min(k, rows, cols))
	a := make([]float64, len(v))
	for i, x := range v {
		a[i] = float64(x)
	}
	u, vt, sv, r, err := thinSVD(a, rows, cols)
	if err != nil {
		return nil, nil, err
	}
	coded := []byte{byte(k), byte(k >> 8), byte(k >> 16), byte(k >> 24)}
	us := make([]float32, rows*k)
	vs := make([]float32, k*cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < k; j++ {
			us[i*k+j] = roundBF16(float32(u[i*r+j] * sv[j]))
			coded = appendBF16(coded, us[i*k+j])
		}
	}
	for j := 0; j < k; j++ {
		for c := 0; c < cols; c++ {
			vs[j*cols+c] = roundBF16(float32(vt[c*r+j]))
			coded = appendBF16(coded, vs[j*cols+c])
		}
	}
	recon := make([]float32, rows*cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < k; j++ {
			f := us[i*k+j]
			if f == 0 {
				continue
			}
			row := recon[i*cols : (i+1)*cols]
			for c, x := range vs[j*cols : (j+1)*cols] {
				row[c] += f * x
			}
		}
	}
	return coded, recon, nil
}

var errorsSVD = errorString("lossy: the SVD did not converge")

type errorString string

func (e errorString) Error() string { return string(e) }

// roundBF16 rounds x to BF16 (nearest even), as a float32.
func roundBF16(x float32) float32 {
	return math.Float32frombits(uint32(dtype.F32ToBF16(x)) << 16)
}

func appendBF16(dst []byte, x float32) []byte {
	b := dtype.F32ToBF16(x)
	return append(dst, byte(b), byte(b>>8))
}
