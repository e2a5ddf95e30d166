package infer

import (
	"encoding/binary"
	"math"
	"sync"

	"neuralzip/dtype"
)

// The kernels read weights straight from their stored bytes (little-endian
// F32, BF16 or F16), widening each value exactly to float32. Every sum runs
// in float32 in the order of llama2.c's run.c; the explicit float32
// conversions of products keep the compiler from fusing them into FMAs
// (the Go spec lets it fuse otherwise), so the results do not depend on
// the platform.

// f16Table maps every F16 bit pattern to its float32 value.
var (
	f16Once  sync.Once
	f16Table []float32
)

func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// subnormal: normalise
	e := uint32(127 - 15 + 1)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

func f16Lookup() []float32 {
	f16Once.Do(func() {
		f16Table = make([]float32, 1<<16)
		for i := range f16Table {
			f16Table[i] = f16ToF32(uint16(i))
		}
	})
	return f16Table
}

// toF32 widens n stored values of type dt into dst.
func toF32(dst []float32, src []byte, dt dtype.DType) {
	switch dt {
	case dtype.F32:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case dtype.BF16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	case dtype.F16:
		tab := f16Lookup()
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = tab[binary.LittleEndian.Uint16(src[2*i:])]
		}
	default:
		panic("infer: toF32 of " + dt.String())
	}
}

// matmul computes out = W x for W of d rows and n columns stored row-major
// as dt (run.c's matmul: out[i] = Σ_j W[i][j]·x[j], summed in j order).
func matmul(out, x []float32, w []byte, dt dtype.DType, n, d int) {
	out = out[:d]
	x = x[:n]
	switch dt {
	case dtype.F32:
		matmulF32(out, x, w[:4*n*d], n)
	case dtype.BF16:
		matmulBF16(out, x, w[:2*n*d], n)
	case dtype.F16:
		matmulF16(out, x, w[:2*n*d], n, f16Lookup())
	default:
		panic("infer: matmul of " + dt.String())
	}
}

// matmulStream computes out = W in for each of nb positions (rows of in
// nIn wide, of out dOut wide) with the tensor st.stream returned last,
// whose bytes may still be decoding: it waits for them (st.ready) a group
// of rows at a time and computes each group as it arrives, for every
// position. Each row's sum is matmul's, whatever the grouping, so the
// logits are those of matmul over the whole tensor.
func matmulStream(st store, out, in []float32, w []byte, dt dtype.DType, nIn, dOut, nb int) error {
	row := nIn * int(dt.Size())
	g := max(4, streamRowBytes/row&^3) // rows per wait
	for r0 := 0; r0 < dOut; r0 += g {
		r1 := min(dOut, r0+g)
		if err := st.ready(int64(r1 * row)); err != nil {
			return err
		}
		for p := range nb {
			matmul(out[p*dOut+r0:p*dOut+r1], in[p*nIn:(p+1)*nIn], w[r0*row:r1*row], dt, nIn, r1-r0)
		}
	}
	return nil
}

// streamRowBytes is about how many weight bytes matmulStream waits for at
// a time: a fraction of a block, so the rows of a block are computed as
// soon as it is decoded, and few enough waits that they cost nothing.
const streamRowBytes = 8 << 10

// Each kernel computes four rows at once: four independent sums, each in
// its own order, so the CPU overlaps them without changing any result.

func matmulF32(out, x []float32, w []byte, n int) {
	i := 0
	for ; i+4 <= len(out); i += 4 {
		r0 := w[(i+0)*4*n : (i+1)*4*n]
		r1 := w[(i+1)*4*n : (i+2)*4*n]
		r2 := w[(i+2)*4*n : (i+3)*4*n]
		r3 := w[(i+3)*4*n : (i+4)*4*n]
		var v0, v1, v2, v3 float32
		for j, xj := range x {
			v0 += float32(math.Float32frombits(binary.LittleEndian.Uint32(r0[4*j:])) * xj)
			v1 += float32(math.Float32frombits(binary.LittleEndian.Uint32(r1[4*j:])) * xj)
			v2 += float32(math.Float32frombits(binary.LittleEndian.Uint32(r2[4*j:])) * xj)
			v3 += float32(math.Float32frombits(binary.LittleEndian.Uint32(r3[4*j:])) * xj)
		}
		out[i], out[i+1], out[i+2], out[i+3] = v0, v1, v2, v3
	}
	for ; i < len(out); i++ {
		r := w[i*4*n : (i+1)*4*n]
		var v float32
		for j, xj := range x {
			v += float32(math.Float32frombits(binary.LittleEndian.Uint32(r[4*j:])) * xj)
		}
		out[i] = v
	}
}

func bf16(b []byte, j int) float32 {
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*j:])) << 16)
}

func matmulBF16(out, x []float32, w []byte, n int) {
	i := 0
	for ; i+4 <= len(out); i += 4 {
		r0 := w[(i+0)*2*n : (i+1)*2*n]
		r1 := w[(i+1)*2*n : (i+2)*2*n]
		r2 := w[(i+2)*2*n : (i+3)*2*n]
		r3 := w[(i+3)*2*n : (i+4)*2*n]
		var v0, v1, v2, v3 float32
		for j, xj := range x {
			v0 += float32(bf16(r0, j) * xj)
			v1 += float32(bf16(r1, j) * xj)
			v2 += float32(bf16(r2, j) * xj)
			v3 += float32(bf16(r3, j) * xj)
		}
		out[i], out[i+1], out[i+2], out[i+3] = v0, v1, v2, v3
	}
	for ; i < len(out); i++ {
		r := w[i*2*n : (i+1)*2*n]
		var v float32
		for j, xj := range x {
			v += float32(bf16(r, j) * xj)
		}
		out[i] = v
	}
}

func matmulF16(out, x []float32, w []byte, n int, tab []float32) {
	tab = tab[:1<<16]
	i := 0
	for ; i+4 <= len(out); i += 4 {
		r0 := w[(i+0)*2*n : (i+1)*2*n]
		r1 := w[(i+1)*2*n : (i+2)*2*n]
		r2 := w[(i+2)*2*n : (i+3)*2*n]
		r3 := w[(i+3)*2*n : (i+4)*2*n]
		var v0, v1, v2, v3 float32
		for j, xj := range x {
			v0 += float32(tab[binary.LittleEndian.Uint16(r0[2*j:])] * xj)
			v1 += float32(tab[binary.LittleEndian.Uint16(r1[2*j:])] * xj)
			v2 += float32(tab[binary.LittleEndian.Uint16(r2[2*j:])] * xj)
			v3 += float32(tab[binary.LittleEndian.Uint16(r3[2*j:])] * xj)
		}
		out[i], out[i+1], out[i+2], out[i+3] = v0, v1, v2, v3
	}
	for ; i < len(out); i++ {
		r := w[i*2*n : (i+1)*2*n]
		var v float32
		for j, xj := range x {
			v += float32(tab[binary.LittleEndian.Uint16(r[2*j:])] * xj)
		}
		out[i] = v
	}
}

// expf is float32 exp (correctly rounded from float64, as glibc's expf
// is to within an ulp).
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// softmax is run.c's softmax of x in place.
func softmax(x []float32) {
	maxv := x[0]
	for _, v := range x[1:] {
		if v > maxv {
			maxv = v
		}
	}
	var sum float32
	for i, v := range x {
		e := expf(v - maxv)
		x[i] = e
		sum += e
	}
	for i := range x {
		x[i] /= sum
	}
}

// rmsnorm is run.c's rmsnorm: o = w ⊙ x / sqrt(mean(x²) + eps).
func rmsnorm(o, x, w []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += float32(v * v)
	}
	ss /= float32(len(x))
	ss += eps
	ss = 1 / float32(math.Sqrt(float64(ss)))
	for j := range x {
		o[j] = w[j] * float32(ss*x[j])
	}
}
