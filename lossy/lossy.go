// Package lossy is the lossy lab: quantizers and approximations that
// users weigh against lossless storage (NF4, int8 and int4 per row, FP8
// per tensor and per row, FP8 after a Hadamard rotation, E8 lattice
// coding, low-rank factors, sums of Kronecker products), each measured by the bytes it writes (codes, scales and
// tables included) and the error it leaves. Nothing here is reachable
// from nzip compress: archives stay lossless.
//
// Every method codes a matrix (rows × cols, row-major float32) to bytes
// and decodes them back; Measure runs one over a tensor and reports the
// bits per parameter of those bytes and the relative L2 error.
package lossy

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Method is a lossy coding of matrices.
type Method interface {
	// Name is the method's name on the command line (nzip rd -methods).
	Name() string
	// Rated reports whether the method takes a target rate (bits per
	// parameter); the others have one rate of their own.
	Rated() bool
	// Code codes v (rows × cols, row-major) at about bits per parameter
	// (ignored by unrated methods) and returns the coded bytes and the
	// values they decode to.
	Code(v []float32, rows, cols int, bits float64) (coded []byte, recon []float32, err error)
}

// Methods returns every method, in the order nzip rd lists them.
func Methods() []Method {
	return []Method{nf4{}, intRow{bits: 8}, intRow{bits: 4}, fp8Tensor{}, fp8Row{}, fp8Tensor{e5: true}, fp8Row{e5: true}, fp8Hadamard{}, fp8Hadamard{dual: true}, e8{}, lowRank{}, kron{}}
}

// ByName returns the methods of a comma-separated list of names ("" or
// "all": every method).
func ByName(list string) ([]Method, error) {
	all := Methods()
	if list == "" || list == "all" {
		return all, nil
	}
	var out []Method
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, m := range all {
			if m.Name() == n {
				out, found = append(out, m), true
				break
			}
		}
		if !found {
			var names []string
			for _, m := range all {
				names = append(names, m.Name())
			}
			return nil, fmt.Errorf("lossy: no method %q (methods: %s)", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Errors of the methods.
var (
	// ErrShape is returned for a matrix whose size does not match its values.
	ErrShape = errors.New("lossy: rows × cols does not match the values")
)

// Result is one method's measurement on one tensor.
type Result struct {
	Method     string
	BitsTarget float64 // the rate asked for (0: the method's own)
	Params     int64
	Bytes      int64   // coded bytes, scales and tables included
	SqErr      float64 // Σ (v − recon)²
	SqNorm     float64 // Σ v²
	Seconds    float64 // coding and decoding
}

// BitsPerParam is the measured rate.
func (r Result) BitsPerParam() float64 {
	if r.Params == 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / float64(r.Params)
}

// RelL2 is ‖v − recon‖ / ‖v‖ (0 for a zero tensor coded exactly).
func (r Result) RelL2() float64 {
	if r.SqNorm == 0 {
		if r.SqErr == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(r.SqErr / r.SqNorm)
}

// errors returns Σ(v−r)² and Σv², in float64.
func sqErrors(v, r []float32) (sqErr, sqNorm float64) {
	for i, x := range v {
		d := float64(x) - float64(r[i])
		sqErr += d * d
		sqNorm += float64(x) * float64(x)
	}
	return sqErr, sqNorm
}

// check validates a matrix.
func check(v []float32, rows, cols int) error {
	if rows < 0 || cols < 0 || rows*cols != len(v) {
		return ErrShape
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errors.New("lossy: the tensor holds NaN or Inf")
		}
	}
	return nil
}

// nf4 is bitsandbytes' NormalFloat4: blocks of 64 values, each scaled by
// its absolute maximum (kept as float32) and rounded to the nearest of 16
// levels placed at quantiles of a normal distribution; 4.5 bits per value.
type nf4 struct{}

// nf4Levels are bitsandbytes' NF4 code values.
var nf4Levels = [16]float32{
	-1, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
	-0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0,
	0.07958029955625534, 0.16093020141124725, 0.24611230480670929, 0.33791524171829224,
	0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1,
}

const nf4Block = 64

func (nf4) Name() string { return "nf4" }
func (nf4) Rated() bool  { return false }

func (nf4) Code(v []float32, rows, cols int, _ float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	nb := (len(v) + nf4Block - 1) / nf4Block
	coded := make([]byte, 0, 4*nb+(len(v)+1)/2)
	recon := make([]float32, len(v))
	codes := make([]byte, len(v))
	for b := 0; b < nb; b++ {
		blk := v[b*nf4Block : min(len(v), (b+1)*nf4Block)]
		var absmax float32
		for _, x := range blk {
			absmax = max(absmax, float32(math.Abs(float64(x))))
		}
		coded = appendF32(coded, absmax)
		for i, x := range blk {
			c := byte(7) // the zero level
			if absmax > 0 {
				c = nearestLevel(x / absmax)
			}
			codes[b*nf4Block+i] = c
			recon[b*nf4Block+i] = nf4Levels[c] * absmax
		}
	}
	return appendNibbles(coded, codes), recon, nil
}

// nearestLevel is the NF4 level nearest x (ties to the lower).
func nearestLevel(x float32) byte {
	i := sort.Search(16, func(i int) bool { return nf4Levels[i] >= x })
	switch {
	case i == 0:
		return 0
	case i == 16:
		return 15
	case nf4Levels[i]-x < x-nf4Levels[i-1]:
		return byte(i)
	}
	return byte(i - 1)
}

// intRow is symmetric integer quantization per row: each row scaled by its
// absolute maximum over 2^(bits−1)−1 (the scale kept as float32) and
// rounded to the nearest integer.
type intRow struct{ bits int }

func (q intRow) Name() string { return fmt.Sprintf("int%d", q.bits) }
func (intRow) Rated() bool    { return false }

func (q intRow) Code(v []float32, rows, cols int, _ float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	qmax := float32(int(1)<<(q.bits-1) - 1)
	recon := make([]float32, len(v))
	codes := make([]byte, len(v))
	coded := make([]byte, 0, 4*rows+len(v)*q.bits/8+1)
	for r := 0; r < rows; r++ {
		row := v[r*cols : (r+1)*cols]
		var absmax float32
		for _, x := range row {
			absmax = max(absmax, float32(math.Abs(float64(x))))
		}
		scale := absmax / qmax
		coded = appendF32(coded, scale)
		for i, x := range row {
			var k float32
			if scale > 0 {
				k = float32(math.RoundToEven(float64(x / scale)))
				k = max(-qmax, min(qmax, k))
			}
			codes[r*cols+i] = byte(int8(k))
			recon[r*cols+i] = float32(int8(k)) * scale // −0 rounds to the code 0, which decodes to +0
		}
	}
	if q.bits == 4 {
		return appendNibbles(coded, codes), recon, nil
	}
	return append(coded, codes...), recon, nil
}

// appendNibbles packs 4-bit codes two to a byte (the low nibble first).
func appendNibbles(dst, codes []byte) []byte {
	for i := 0; i < len(codes); i += 2 {
		b := codes[i] & 15
		if i+1 < len(codes) {
			b |= codes[i+1] << 4
		}
		dst = append(dst, b)
	}
	return dst
}

func appendF32(dst []byte, x float32) []byte {
	b := math.Float32bits(x)
	return append(dst, byte(b), byte(b>>8), byte(b>>16), byte(b>>24))
}
