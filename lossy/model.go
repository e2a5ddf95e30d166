package lossy

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"neuralzip/dtype"
)

// Tensor is a tensor of a checkpoint: its stored bytes.
type Tensor struct {
	Name   string
	DType  dtype.DType
	Shape  []int64
	Offset int64 // in the file
	Data   []byte
}

// Coded reports whether the lab codes t: a float tensor (F32, F16, BF16)
// of at least two dimensions and 256 values. Other tensors (norms,
// biases, embeddings of other types) are kept as stored, and count at
// their stored size.
func (t Tensor) Coded() bool {
	if t.DType != dtype.F32 && t.DType != dtype.F16 && t.DType != dtype.BF16 || len(t.Shape) < 2 {
		return false
	}
	return t.rows()*t.cols() >= 256 && int64(len(t.Data)) == t.rows()*t.cols()*int64(t.DType.Size())
}

// rows is the tensor's first dimension (output channels) and cols the
// product of the others: per-row scales are per output channel, for
// linear and convolution weights alike.
func (t Tensor) rows() int64 { return t.Shape[0] }

func (t Tensor) cols() int64 {
	c := int64(1)
	for _, d := range t.Shape[1:] {
		c *= d
	}
	return c
}

// Params is the tensor's number of values (its bytes over its element
// size).
func (t Tensor) Params() int64 {
	if s := t.DType.Size(); s > 0 {
		return int64(len(t.Data) / s)
	}
	return int64(len(t.Data))
}

// Values decodes a float tensor's values.
func Values(d dtype.DType, b []byte) []float32 {
	switch d {
	case dtype.F32:
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	case dtype.BF16:
		v := make([]float32, len(b)/2)
		for i := range v {
			v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
		return v
	case dtype.F16:
		v := make([]float32, len(b)/2)
		for i := range v {
			v[i] = dtype.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		}
		return v
	}
	return nil
}

// Store writes v into b as d (rounded to nearest even).
func Store(d dtype.DType, b []byte, v []float32) {
	switch d {
	case dtype.F32:
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
	case dtype.BF16:
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], dtype.F32ToBF16(x))
		}
	case dtype.F16:
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], dtype.F32ToF16(x))
		}
	}
}

// Row is one line of nzip rd: a method at a rate on one tensor, or on the
// whole model (Tensor "").
type Row struct {
	Method       string  `json:"method"`
	BitsTarget   float64 `json:"bits_target"`
	BitsPerParam float64 `json:"bits_per_param"`
	RelL2        float64 `json:"rel_l2"`
	Tensor       string  `json:"tensor"`
	Params       int64   `json:"params"`
	Bytes        int64   `json:"bytes"`
	Seconds      float64 `json:"seconds"`
	// whole-model rows of models nzip generate runs (EvalLM)
	KL   *float64 `json:"kl,omitempty"`
	Top1 *float64 `json:"top1,omitempty"`
	Text string   `json:"text,omitempty"`
}

// Run codes every tensor the lab codes with method m at rate bits and
// returns a row per coded tensor and one for the whole model, and the file
// src with each coded tensor replaced by its reconstruction (in its own
// type). The whole-model rate counts the tensors the lab keeps at their
// stored bytes; its relative error is that of the coded tensors together
// (‖W − Ŵ‖ / ‖W‖ over all of them: kept buffers, such as masks of large
// values, would otherwise hide it).
func Run(src []byte, tensors []Tensor, m Method, bits float64) ([]Row, []byte, error) {
	out := append([]byte(nil), src...)
	var rows []Row
	total := Row{Method: m.Name(), BitsTarget: bits}
	var sqErr, sqNorm float64
	for _, t := range tensors {
		if !t.Coded() {
			total.Params += t.Params()
			total.Bytes += int64(len(t.Data))
			continue
		}
		v := Values(t.DType, t.Data)
		t0 := time.Now()
		coded, recon, err := m.Code(v, int(t.rows()), int(t.cols()), bits)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", m.Name(), t.Name, err)
		}
		sec := time.Since(t0).Seconds()
		e, n := sqErrors(v, recon)
		sqErr, sqNorm = sqErr+e, sqNorm+n
		r := Row{Method: m.Name(), BitsTarget: bits, Tensor: t.Name, Params: int64(len(v)), Bytes: int64(len(coded)), Seconds: sec}
		r.BitsPerParam = float64(r.Bytes) * 8 / float64(r.Params)
		r.RelL2 = relL2(e, n)
		rows = append(rows, r)
		total.Params += r.Params
		total.Bytes += r.Bytes
		total.Seconds += sec
		Store(t.DType, out[t.Offset:t.Offset+int64(len(t.Data))], recon)
	}
	if total.Params > 0 {
		total.BitsPerParam = float64(total.Bytes) * 8 / float64(total.Params)
	}
	total.RelL2 = relL2(sqErr, sqNorm)
	return append(rows, total), out, nil
}

func relL2(sqErr, sqNorm float64) float64 {
	if sqNorm == 0 {
		return 0
	}
	return math.Sqrt(sqErr / sqNorm)
}
