package analysis

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"neuralzip/dtype"
)

// encodeRNE rounds x to format f (round to nearest, ties to even) and
// returns its bits: an independent twin of floatFormat.value for the
// tests. Overflow gives Inf in IEEE formats and NaN in E4M3FN (as
// non-saturating casts do).
func encodeRNE(f floatFormat, x float64) uint64 {
	signBit := uint64(1) << (f.exp + f.mant)
	emax := uint64(1)<<f.exp - 1
	if math.IsNaN(x) {
		return emax<<f.mant | (1<<f.mant - 1)
	}
	var sign uint64
	if math.Signbit(x) {
		sign, x = signBit, -x
	}
	var bits uint64
	switch {
	case x == 0:
	case math.IsInf(x, 0):
		bits = emax << f.mant
	default:
		_, ex := math.Frexp(x) // x = fr·2^ex, fr in [0.5, 1)
		if u := ex - 1; u < 1-f.bias {
			// subnormal: a multiple of 2^(1-bias-mant); a carry into
			// the exponent field gives the smallest normal by itself
			bits = uint64(math.RoundToEven(math.Ldexp(x, f.bias-1+f.mant)))
		} else {
			q := uint64(math.RoundToEven(math.Ldexp(x, f.mant-u))) // in [2^mant, 2^(mant+1)]
			bits = uint64(u+f.bias-1)<<f.mant + q
		}
	}
	switch {
	case f.fn && bits >= emax<<f.mant|(1<<f.mant-1):
		bits = emax<<f.mant | (1<<f.mant - 1) // NaN
	case !f.fn && bits >= emax<<f.mant && !math.IsInf(x, 0):
		bits = emax << f.mant // Inf
	}
	return sign | bits
}

// castBytes stores xs as little-endian values of d.
func castBytes(t testing.TB, d dtype.DType, xs []float64) []byte {
	f, size, ok := formatOf(d)
	if !ok {
		t.Fatalf("%v: no format", d)
	}
	out := make([]byte, 0, len(xs)*size)
	for _, x := range xs {
		var b uint64
		switch d {
		case dtype.F64:
			b = math.Float64bits(x)
		case dtype.F32:
			b = uint64(math.Float32bits(float32(x)))
		default:
			b = encodeRNE(f, x)
		}
		switch size {
		case 1:
			out = append(out, byte(b))
		case 2:
			out = binary.LittleEndian.AppendUint16(out, uint16(b))
		case 4:
			out = binary.LittleEndian.AppendUint32(out, uint32(b))
		default:
			out = binary.LittleEndian.AppendUint64(out, b)
		}
	}
	return out
}

func TestDecodeKnownValues(t *testing.T) {
	for _, c := range []struct {
		d    dtype.DType
		bits uint64
		want float64
	}{
		{dtype.BF16, 0x3f80, 1},
		{dtype.BF16, 0xc040, -3},
		{dtype.BF16, 0x0001, math.Ldexp(1, -133)},
		{dtype.BF16, 0x7f80, math.Inf(1)},
		{dtype.F16, 0x3c00, 1},
		{dtype.F16, 0xc000, -2},
		{dtype.F16, 0x7bff, 65504},
		{dtype.F16, 0x0001, math.Ldexp(1, -24)},
		{dtype.F16, 0x0400, math.Ldexp(1, -14)},
		{dtype.F16, 0x7c00, math.Inf(1)},
		{dtype.F16, 0xfc00, math.Inf(-1)},
		{dtype.F8E4M3, 0x38, 1},
		{dtype.F8E4M3, 0x7e, 448},
		{dtype.F8E4M3, 0x78, 256}, // exponent 15 is a normal binade
		{dtype.F8E4M3, 0xfe, -448},
		{dtype.F8E4M3, 0x08, math.Ldexp(1, -6)},
		{dtype.F8E4M3, 0x01, math.Ldexp(1, -9)},
		{dtype.F8E5M2, 0x3c, 1},
		{dtype.F8E5M2, 0x7b, 57344},
		{dtype.F8E5M2, 0x7c, math.Inf(1)},
		{dtype.F8E5M2, 0x01, math.Ldexp(1, -16)},
		{dtype.F32, uint64(math.Float32bits(0.1)), float64(float32(0.1))},
		{dtype.F64, math.Float64bits(-0.1), -0.1},
	} {
		f, _, _ := formatOf(c.d)
		if got := f.value(c.bits); got != c.want {
			t.Errorf("%v %#x = %v, want %v", c.d, c.bits, got, c.want)
		}
	}
	for _, c := range []struct {
		d    dtype.DType
		bits uint64
	}{{dtype.F8E4M3, 0x7f}, {dtype.F8E4M3, 0xff}, {dtype.F8E5M2, 0x7d}, {dtype.F16, 0x7e00}, {dtype.BF16, 0x7fc0}} {
		f, _, _ := formatOf(c.d)
		if got := f.value(c.bits); !math.IsNaN(got) {
			t.Errorf("%v %#x = %v, want NaN", c.d, c.bits, got)
		}
	}
	for _, d := range []dtype.DType{dtype.F8E8M0, dtype.I32, dtype.F4, dtype.Invalid} {
		if _, ok := AppendValues(nil, d, []byte{1, 2, 3, 4}); ok {
			t.Errorf("%v decoded", d)
		}
	}
}

// Every finite bit pattern of the narrow formats decodes to a value that
// encodes back to the same bits, and the generic encoder agrees with Go's
// own float64→float32 conversion.
func TestDecodeEncodeAllPatterns(t *testing.T) {
	for _, d := range []dtype.DType{dtype.F16, dtype.BF16, dtype.F8E4M3, dtype.F8E5M2} {
		f, size, _ := formatOf(d)
		for b := uint64(0); b < 1<<(8*size); b++ {
			v := f.value(b)
			if math.IsNaN(v) {
				continue
			}
			if got := encodeRNE(f, v); got != b {
				t.Fatalf("%v %#x → %v → %#x", d, b, v, got)
			}
		}
	}
	f32 := floatFormat{exp: 8, mant: 23, bias: 127}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		x := math.Ldexp(r.NormFloat64(), r.IntN(300)-170) // normals, subnormals, overflow
		if got, want := encodeRNE(f32, x), uint64(math.Float32bits(float32(x))); got != want {
			t.Fatalf("%v: %#x, float32 gives %#x", x, got, want)
		}
	}
}

func TestValueMoments(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 10007)
	for i := range xs {
		xs[i] = 1000 + r.NormFloat64() // a mean far from 0
	}
	for _, d := range []dtype.DType{dtype.F64, dtype.F32, dtype.C64, dtype.F16} {
		src := d
		if d == dtype.C64 {
			src = dtype.F32
		}
		data := castBytes(t, src, xs)
		vals, ok := AppendValues(nil, d, data)
		if !ok {
			t.Fatal(d)
		}
		// reference: two passes over the decoded values
		var mean, m2 float64
		for _, v := range vals {
			mean += v
		}
		mean /= float64(len(vals))
		for _, v := range vals {
			m2 += (v - mean) * (v - mean)
		}
		std := math.Sqrt(m2 / float64(len(vals)))
		m, ok := ValueMoments(d, data)
		if !ok || m.Values != int64(len(vals)) || m.Finite != m.Values {
			t.Fatalf("%v: %+v", d, m)
		}
		if math.Abs(m.Mean-mean) > 1e-9*math.Abs(mean) || math.Abs(m.Std()-std) > 1e-6*std {
			t.Errorf("%v: mean %v std %v, want %v %v", d, m.Mean, m.Std(), mean, std)
		}
		if rms := math.Sqrt(std*std + mean*mean); math.Abs(m.RMS()-rms) > 1e-9*rms {
			t.Errorf("%v: RMS %v, want %v", d, m.RMS(), rms)
		}
		// pieces of every size give the same result
		for _, piece := range []int{1, 3, 4, 7, 1 << 20} {
			a, _ := NewMomentAccumulator(d)
			for i := 0; i < len(data); i += piece {
				a.Write(data[i:min(i+piece, len(data))])
			}
			if got := a.Moments(); got != m {
				t.Fatalf("%v piece %d: %+v, want %+v", d, piece, got, m)
			}
		}
		// one at a time (Welford) agrees too
		var w Moments
		for _, v := range vals {
			w.Add(v)
		}
		if math.Abs(w.Mean-mean) > 1e-9*math.Abs(mean) || math.Abs(w.Std()-std) > 1e-6*std {
			t.Errorf("%v Add: mean %v std %v, want %v %v", d, w.Mean, w.Std(), mean, std)
		}
	}
	// infinities and NaNs are counted but not averaged
	data := castBytes(t, dtype.F16, []float64{1, 3, math.Inf(1), math.NaN(), 1e6})
	m, _ := ValueMoments(dtype.F16, data)
	if m.Values != 5 || m.Finite != 2 || m.Mean != 2 || m.Std() != 1 {
		t.Fatalf("%+v", m)
	}
	if m, _ := ValueMoments(dtype.BF16, nil); m.Std() != 0 || m.RMS() != 0 {
		t.Fatalf("empty: %+v", m)
	}
}
