package lossy

import (
	"encoding/binary"
	"errors"
	"math"
)

// kron approximates a matrix by a sum of Kronecker products, in the manner
// of MixT's tensor-operator mixtures (without their recovery training):
// W (m × n) ≈ Σ_r A_r ⊗ B_r with A_r of m1 × n1 and B_r of m2 × n2
// (m = m1·m2, n = n1·n2). Van Loan and Pitsianis' rearrangement turns the
// problem into a low-rank one: R(W), whose row (i1, j1) is the block
// W[i1·m2:(i1+1)·m2, j1·n2:(j1+1)·n2] read row by row, satisfies
// ‖W − Σ A_r ⊗ B_r‖ = ‖R(W) − Σ vec(A_r)·vec(B_r)ᵀ‖, so the truncated SVD
// of R(W) gives the best terms. The shapes are chosen from the divisors of
// m and n: those whose term costs least (m1·n1 + m2·n2 values, so the
// budget buys the most terms), ties to the most balanced; the number of
// terms k is the most whose factors, in BF16, fit the target rate (at
// least 1). Stored: m1, n1, m2, n2, k as uvarints, then the k factors A_r
// (σ_r folded in) and the k factors B_r, BF16, row-major.
type kron struct{}

func (kron) Name() string { return "kron" }
func (kron) Rated() bool  { return true }

// kronShape is a factorisation of an m × n matrix into m1 × n1 ⊗ m2 × n2.
type kronShape struct{ m1, n1, m2, n2 int }

// cost is the values one term stores.
func (s kronShape) cost() int { return s.m1*s.n1 + s.m2*s.n2 }

// rank is the most terms that can help (the rank of R(W)).
func (s kronShape) rank() int { return min(s.m1*s.n1, s.m2*s.n2) }

// aspect is how far the factors are from square (1 when both are).
func (s kronShape) aspect() float64 {
	r := func(a, b int) float64 { return float64(max(a, b)) / float64(min(a, b)) }
	return r(s.m1, s.n1) * r(s.m2, s.n2)
}

// kronShapeFor picks the shape for an m × n matrix: among the divisor
// pairs whose rearrangement has rank ≥ 2 where there are any (rank 1 is a
// scalar times W, no saving), the least cost per term, then the most
// balanced m1·n1 against m2·n2, then the factors nearest square, then the
// smallest m1.
func kronShapeFor(m, n int) kronShape {
	var best kronShape
	found := false
	better := func(s kronShape) bool {
		if !found {
			return true
		}
		if (s.rank() >= 2) != (best.rank() >= 2) {
			return s.rank() >= 2
		}
		if s.cost() != best.cost() {
			return s.cost() < best.cost()
		}
		ds, db := abs(s.m1*s.n1-s.m2*s.n2), abs(best.m1*best.n1-best.m2*best.n2)
		if ds != db {
			return ds < db
		}
		if as, ab := s.aspect(), best.aspect(); as != ab {
			return as < ab
		}
		return s.m1 < best.m1
	}
	for m1 := 1; m1 <= m; m1++ {
		if m%m1 != 0 {
			continue
		}
		for n1 := 1; n1 <= n; n1++ {
			if n%n1 != 0 {
				continue
			}
			s := kronShape{m1, n1, m / m1, n / n1}
			if better(s) {
				best, found = s, true
			}
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// kronTerms is the number of terms whose BF16 factors fit bits per value
// of an m × n matrix (at least 1, at most the rank).
func kronTerms(s kronShape, bits float64) int {
	m, n := s.m1*s.m2, s.n1*s.n2
	k := int(bits * float64(m) * float64(n) / (16 * float64(s.cost())))
	return max(1, min(k, s.rank()))
}

func (kron) Code(v []float32, rows, cols int, bits float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	if rows == 0 || cols == 0 {
		return kronHeader(nil, kronShape{}, 0), []float32{}, nil
	}
	s := kronShapeFor(rows, cols)
	k := kronTerms(s, bits)
	// R(W): (m1·n1) × (m2·n2)
	rc := s.m2 * s.n2
	a := make([]float64, s.m1*s.n1*rc)
	for i1 := 0; i1 < s.m1; i1++ {
		for j1 := 0; j1 < s.n1; j1++ {
			row := a[(i1*s.n1+j1)*rc : (i1*s.n1+j1+1)*rc]
			for i2 := 0; i2 < s.m2; i2++ {
				src := v[(i1*s.m2+i2)*cols+j1*s.n2:]
				for j2 := 0; j2 < s.n2; j2++ {
					row[i2*s.n2+j2] = float64(src[j2])
				}
			}
		}
	}
	u, vt, sv, r, err := thinSVD(a, s.m1*s.n1, rc)
	if err != nil {
		return nil, nil, err
	}
	coded := kronHeader(nil, s, k)
	for t := 0; t < k; t++ {
		for i := 0; i < s.m1*s.n1; i++ {
			coded = appendBF16(coded, float32(u[i*r+t]*sv[t]))
		}
	}
	for t := 0; t < k; t++ {
		for i := 0; i < s.m2*s.n2; i++ {
			coded = appendBF16(coded, float32(vt[i*r+t]))
		}
	}
	recon, err := kronDecode(coded, rows, cols)
	if err != nil {
		return nil, nil, err
	}
	return coded, recon, nil
}

func kronHeader(dst []byte, s kronShape, k int) []byte {
	for _, x := range []int{s.m1, s.n1, s.m2, s.n2, k} {
		dst = binary.AppendUvarint(dst, uint64(x))
	}
	return dst
}

var errKron = errors.New("lossy: a damaged kron stream")

// kronDecode decodes kron's bytes to the rows × cols values they code.
func kronDecode(b []byte, rows, cols int) ([]float32, error) {
	var h [5]int
	for i := range h {
		x, n := binary.Uvarint(b)
		if n <= 0 || x > 1<<31 {
			return nil, errKron
		}
		h[i], b = int(x), b[n:]
	}
	s, k := kronShape{h[0], h[1], h[2], h[3]}, h[4]
	if rows == 0 || cols == 0 {
		if len(b) != 0 || k != 0 {
			return nil, errKron
		}
		return []float32{}, nil
	}
	if int64(s.m1)*int64(s.m2) != int64(rows) || int64(s.n1)*int64(s.n2) != int64(cols) ||
		k < 1 || k > s.rank() || int64(len(b)) != 2*int64(k)*int64(s.cost()) {
		return nil, errKron
	}
	a := bf16s(b[:2*k*s.m1*s.n1])
	bb := bf16s(b[2*k*s.m1*s.n1:])
	out := make([]float32, rows*cols)
	na, nb := s.m1*s.n1, s.m2*s.n2
	for t := 0; t < k; t++ {
		for i1 := 0; i1 < s.m1; i1++ {
			for j1 := 0; j1 < s.n1; j1++ {
				f := a[t*na+i1*s.n1+j1]
				if f == 0 {
					continue
				}
				for i2 := 0; i2 < s.m2; i2++ {
					dst := out[(i1*s.m2+i2)*cols+j1*s.n2:][:s.n2]
					src := bb[t*nb+i2*s.n2:][:s.n2]
					for j2, x := range src {
						dst[j2] += f * x
					}
				}
			}
		}
	}
	return out, nil
}

// bf16s reads little-endian BF16 values.
func bf16s(b []byte) []float32 {
	out := make([]float32, len(b)/2)
	for i := range out {
		out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
	}
	return out
}
