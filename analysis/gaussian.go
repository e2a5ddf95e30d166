package analysis

import (
	"math"

	"neuralzip/dtype"
)

// The Gaussian-model table (after ZipCCL). For values distributed as
// N(0, σ²), the distribution of the exponent field is known in closed form,
// so a coder can code a tensor's exponents with a Huffman table derived
// from σ alone (one float32 stored per tensor, no table, no setup). The
// functions here compute that table and what it would cost on real
// tensors, to compare with the order-0 bound (FloatStats.Bound) and with
// the real coders.

// Model parameters. An exponent the model gives less than gaussMinProb has
// no code of its own: it is coded as the escape followed by the raw
// exponent (ExpBits bits), as the codec's shared tables do with symbols
// outside their alphabet. The escape's weight is the probability of the
// exponents it stands for plus gaussEscProb, a pseudo-probability for what
// real tensors have and the model does not predict (zeros in BF16, say).
//
// Giving every exponent a code of its own instead (a floor probability)
// mostly costs more: with 256 exponents and codes of at most 11 bits, the
// ~230 improbable ones take ~11 % of the code space. Measured on the bench
// files (σ = RMS), a floor of 2^-20 costs 0.15 bits per value more on
// real-bf16 and real-f32 and 0.01 more on real-f16; it is cheaper (by 0.13)
// only on real-f16-native, whose many zeros and subnormals escape at 16
// bits each.
const (
	gaussMinProb = 1.0 / (1 << 14)
	gaussEscProb = 1.0 / (1 << 16)
)

// GaussianExpProbs returns, for values X ~ N(0, σ²) stored in type d with
// round-to-nearest-even, the probability of each value of the exponent field
// (2^E entries for E exponent bits, bias B = 2^(E-1)-1):
//
//   - e = 0 (zero and subnormals): |X| < 2^(1-B)
//   - 1 ≤ e ≤ 2^E-2: |X| in [2^(e-B), 2^(e-B+1))
//   - e = 2^E-1: Inf and NaN in IEEE formats, so only the values that
//     overflow to Inf; in F8_E4M3 (E4M3FN) the top binade [256, 448] and
//     everything above it (which saturates or becomes NaN, both with this
//     exponent)
//
// Each boundary sits at the rounding midpoint below the power of two (a
// factor 1-2^-(M+2), 1-2^-(M+1) at the subnormal boundary, for M mantissa
// bits), so this is the exponent distribution of a rounded Gaussian; for
// F32 that changes nothing visible, for FP8 E4M3 it moves ~4 % of the mass.
// Probabilities are differences of math.Erf, or of math.Erfc above the
// median where Erf loses the tail's digits. ok is false when σ is not
// finite and positive, or d is not a signed float type (C64 counts as F32).
func GaussianExpProbs(d dtype.DType, sigma float64) ([]float64, bool) {
	f, _, ok := formatOf(d)
	s := sigma * math.Sqrt2
	if !ok || !(sigma > 0) || math.IsInf(s, 0) {
		return nil, false
	}
	n := 1 << f.exp
	top := n - 1 // the last bin: everything from its boundary up
	p := make([]float64, n)
	// lo and hi are the boundaries of bin e scaled by 1/(σ√2); from e = 2
	// on each is twice the last, which is exact unless lo underflowed
	frac0, frac := 1-math.Ldexp(1, -(f.mant+1)), 1-math.Ldexp(1, -(f.mant+2))
	lo := 0.0
	for e := 0; e < top; e++ {
		var hi float64
		switch {
		case e == 0:
			hi = math.Ldexp(frac0, 1-f.bias) / s
		case e >= 2 && lo >= 0x1p-1000:
			hi = 2 * lo
		default:
			hi = math.Ldexp(frac, e+1-f.bias) / s
		}
		if lo > 27 { // erfc(27) < 1e-318: the rest is 0
			lo = hi
			break
		}
		if lo >= 0.5 {
			p[e] = math.Erfc(lo) - math.Erfc(hi)
		} else {
			p[e] = math.Erf(hi) - math.Erf(lo)
		}
		p[e] = max(p[e], 0) // never negative by rounding
		lo = hi
	}
	p[top] = math.Erfc(lo)
	return p, true
}

// GaussianTable is the exponent code that the model derives from σ.
type GaussianTable struct {
	Sigma   float64
	ExpBits int
	// Lengths holds the code length of each exponent value; 0 means the
	// exponent has no code and is coded as the escape plus ExpBits raw
	// bits.
	Lengths []uint8
	EscLen  uint8 // the escape's code length, 0 when every exponent has a code
}

// NewGaussianTable returns the model's table for values of type d with
// spread σ: an optimal code of at most DefaultMaxLen bits (huff0's limit)
// for the probabilities of GaussianExpProbs, where exponents of probability
// below 2^-14 share an escape (see the model parameters above). ok is false
// where GaussianExpProbs reports false.
//
// The table comes from floating-point math (Erf, float sums), which is fine
// for estimates; a codec that adopts the model must derive it the same way
// on every platform (fixed-point or tabulated), or store it.
func NewGaussianTable(d dtype.DType, sigma float64) (GaussianTable, bool) {
	p, ok := GaussianExpProbs(d, sigma)
	if !ok {
		return GaussianTable{}, false
	}
	n := len(p)
	w := make([]float64, n+1) // the escape last
	esc := false
	for e, q := range p {
		if q >= gaussMinProb {
			w[e] = q
		} else {
			w[n] += q
			esc = true
		}
	}
	if esc {
		w[n] += gaussEscProb
	}
	lens := HuffmanLengths(w, DefaultMaxLen)
	t := GaussianTable{Sigma: sigma, Lengths: lens[:n], EscLen: lens[n]}
	for 1<<t.ExpBits < n {
		t.ExpBits++
	}
	return t, true
}

// Bits is the cost of exponent e in bits.
func (t GaussianTable) Bits(e int) int {
	if l := t.Lengths[e]; l != 0 {
		return int(l)
	}
	return int(t.EscLen) + t.ExpBits
}

// Cost is the number of bits the table spends on the exponents of hist
// (which must have len(t.Lengths) bins).
func (t GaussianTable) Cost(hist []uint64) float64 {
	var bits float64
	for e, c := range hist {
		if c != 0 {
			bits += float64(c) * float64(t.Bits(e))
		}
	}
	return bits
}

// GaussianCost is the size in bits of the tensor st describes when its
// exponents are coded with the model's table for σ and every sign and
// mantissa bit is stored raw — the counterpart of FloatStats.Bound (which
// is in bytes, and spends the exponents' entropy instead). It is never
// below 8·Bound(): any prefix code spends at least the entropy. The σ
// itself is not included. ok is false where NewGaussianTable reports false,
// or when st does not match its dtype.
func GaussianCost(st FloatStats, sigma float64) (bits float64, ok bool) {
	t, ok := NewGaussianTable(st.DType, sigma)
	if !ok || len(st.Hist) != len(t.Lengths) {
		return 0, false
	}
	return t.Cost(st.Hist) + float64(st.Values)*float64(st.OtherBits), true
}

// FitSigma returns the σ whose model table codes st's exponents in the
// fewest bits, and that cost (as GaussianCost). A coder stores σ anyway, so
// it is free to store this one rather than the measured spread; the
// exponent histogram alone determines it. The search starts from the σ
// that the histogram's mean log-magnitude implies (E[log2 |X|] = log2 σ −
// 0.916 for a Gaussian), scans ±3 octaves in quarter octaves and refines in
// 1/32 octaves within 1/8 octave of the best. ok is false when st has no
// finite nonzero values or a dtype the model does not support.
func FitSigma(st FloatStats) (sigma, bits float64, ok bool) {
	f, _, ok := formatOf(st.DType)
	if !ok || len(st.Hist) != 1<<f.exp {
		return 0, 0, false
	}
	var n, sum float64
	for e, c := range st.Hist {
		if c == 0 || e == 0 || (e == len(st.Hist)-1 && !f.fn) {
			continue
		}
		n += float64(c)
		sum += float64(c) * (float64(e-f.bias) + 0.5)
	}
	if n == 0 {
		return 0, 0, false
	}
	const eulerGamma = 0.5772156649015329
	centre := sum/n + (eulerGamma+math.Ln2)/(2*math.Ln2)
	best, bestBits := math.NaN(), math.Inf(1)
	try := func(lg float64) {
		s := math.Exp2(lg)
		if b, ok := GaussianCost(st, s); ok && b < bestBits {
			best, bestBits = lg, b
		}
	}
	for k := -12; k <= 12; k++ {
		try(centre + float64(k)/4)
	}
	if math.IsNaN(best) {
		return 0, 0, false
	}
	c := best
	for k := -3; k <= 3; k++ {
		try(c + float64(k)/32)
	}
	return math.Exp2(best), bestBits, true
}

// TensorModel is a float tensor's statistics and the σ stored for it.
type TensorModel struct {
	Stats FloatStats
	Sigma float64
}

// Bytes is the tensor's coded size under the model: its GaussianCost in
// bytes plus 4 for σ (a float32). Where the model is undefined (σ zero or
// not finite — a constant or empty tensor, say) the tensor is costed at its
// order-0 Bound plus 4 bytes and an inline table: one header byte and a
// 4-bit length per exponent value up to the largest present, as huff0's
// direct table description has it. An empty tensor costs nothing.
func (m TensorModel) Bytes() float64 {
	st := m.Stats
	if st.Values == 0 {
		return 0
	}
	if bits, ok := GaussianCost(st, m.Sigma); ok {
		return bits/8 + 4
	}
	maxSym := 0
	for e, c := range st.Hist {
		if c != 0 {
			maxSym = e
		}
	}
	return st.Bound() + 4 + 1 + float64(maxSym+2)/2
}

// GaussianRatio estimates the compression ratio of a file of fileSize bytes
// whose float tensors are coded with the model (see TensorModel.Bytes) and
// whose other bytes — headers, non-float tensors, the partial last value of
// a tensor — are stored raw: fileSize / (Σ tensor bytes + other bytes),
// the counterpart of the CLI's order-0 bound ratio. It is 0 when the
// estimate is 0 bytes.
func GaussianRatio(fileSize int64, tensors []TensorModel) float64 {
	var coded float64
	other := fileSize
	for _, t := range tensors {
		coded += t.Bytes()
		other -= t.Stats.Bytes()
	}
	coded += float64(other)
	if coded <= 0 {
		return 0
	}
	return float64(fileSize) / coded
}
