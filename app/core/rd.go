package core

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"neuralzip/lossy"
)

// RDRates are the target rates (bits per parameter) the rate-distortion
// screen measures the rated methods at (e8, lowrank, kron).
var RDRates = []float64{2, 3, 4, 5, 6, 7, 8}

// RDTensor is what the rate-distortion measurements keep of a tensor.
type RDTensor struct {
	Coded  bool    // the lab codes it (lossy.Tensor.Coded); else it counts as stored
	Params int64   // values
	Stored int64   // bytes as stored
	SqNorm float64 // Σ v² (coded tensors)
}

// RDRun is one lossy method at one rate on every tensor of a model.
type RDRun struct {
	Method  string
	Bits    float64   // the target rate; 0: the method's own
	Bytes   []int64   // per tensor (as Model.Tensors): coded bytes, or the stored bytes of a tensor the lab keeps
	SqErr   []float64 // per tensor: Σ (v − v̂)²
	Seconds float64   // coding and decoding
}

// RD is the rate and distortion of the lossy lab's methods (package lossy)
// on a model, kept per tensor so that any scope (the model, a layer, a
// tensor) is summed from it, and the lossless coder's bytes per tensor on
// the same terms.
type RD struct {
	Model   string
	Tensors []RDTensor // as Model.Tensors
	Runs    []RDRun    // lossy.Methods' order, rates ascending
	// Lossless is each tensor's share of an nzip archive of the model
	// (RunResult.TensorBytes); nil until known. LosslessFrom says where it
	// came from.
	Lossless     []float64
	LosslessFrom string

	src     []byte
	tensors []lossy.Tensor // as Model.Tensors, offsets in src
}

// RDPoint is a measurement on a scope: the measured rate and the relative
// L2 error ‖W − Ŵ‖ / ‖W‖ of its coded tensors.
type RDPoint struct {
	BitsTarget   float64
	BitsPerParam float64
	RelL2        float64
	Bytes        int64
	Params       int64
}

// RDCurve is a method's points on a scope, rates ascending.
type RDCurve struct {
	Method string
	Rated  bool
	Points []RDPoint
}

// NewRD reads the model's tensors for measuring (nothing is coded yet).
func NewRD(m *Model) (*RD, error) {
	src, _, starts, err := m.ReadAll()
	if err != nil {
		return nil, err
	}
	rd := &RD{Model: m.Name, src: src, Tensors: make([]RDTensor, len(m.Tensors)), tensors: make([]lossy.Tensor, len(m.Tensors))}
	for i, t := range m.Tensors {
		off := starts[t.File] + t.Offset
		lt := lossy.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Offset: off, Data: src[off : off+t.Bytes]}
		rd.tensors[i] = lt
		rt := RDTensor{Coded: lt.Coded(), Params: lt.Params(), Stored: t.Bytes}
		if rt.Coded {
			for _, x := range lossy.Values(t.DType, lt.Data) {
				rt.SqNorm += float64(x) * float64(x)
			}
		}
		rd.Tensors[i] = rt
	}
	return rd, nil
}

// Coded is the number of tensors the lab codes.
func (rd *RD) Coded() int {
	n := 0
	for _, t := range rd.Tensors {
		if t.Coded {
			n++
		}
	}
	return n
}

// rdJob is one method at one rate.
type rdJob struct {
	m    lossy.Method
	bits float64
}

// rdMethods are the methods measured (tests add one a build lacks).
var rdMethods = lossy.Methods

// jobs are every method at its rates: the unrated once, the rated at
// RDRates.
func rdJobs() []rdJob {
	var out []rdJob
	for _, m := range rdMethods() {
		if !m.Rated() {
			out = append(out, rdJob{m, 0})
			continue
		}
		for _, b := range RDRates {
			out = append(out, rdJob{m, b})
		}
	}
	return out
}

// Compute measures every method (lossy.Methods) at its rates (RDRates for
// the rated ones) on every tensor, replacing Runs. progress (may be nil)
// gets the fraction done. The result does not depend on the number of
// processors.
func (rd *RD) Compute(ctx context.Context, progress func(float64)) error {
	jobs := rdJobs()
	var runs []RDRun
	for k, j := range jobs {
		run, err := rd.Measure(ctx, j.m, j.bits, func(f float64) {
			if progress != nil {
				progress((float64(k) + f) / float64(len(jobs)))
			}
		})
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	if progress != nil {
		progress(1)
	}
	rd.Runs = runs
	return nil
}

// Measure codes every coded tensor with m at bits (lossy.Run, a tensor at
// a time, on as many processors as there are) and returns the run.
// progress (may be nil) gets the fraction done.
func (rd *RD) Measure(ctx context.Context, m lossy.Method, bits float64, progress func(float64)) (RDRun, error) {
	if !m.Rated() {
		bits = 0
	}
	run := RDRun{Method: m.Name(), Bits: bits, Bytes: make([]int64, len(rd.Tensors)), SqErr: make([]float64, len(rd.Tensors))}
	var todo []int
	var total int64
	for i, t := range rd.Tensors {
		if !t.Coded {
			run.Bytes[i] = t.Stored
			continue
		}
		todo = append(todo, i)
		total += t.Params
	}
	secs := make([]float64, len(rd.Tensors))
	errs := make([]error, len(rd.Tensors))
	var mu sync.Mutex
	var done int64
	one := func(i int) {
		if ctx.Err() != nil {
			errs[i] = ErrCancelled
			return
		}
		t := rd.tensors[i]
		t.Offset = 0
		rows, _, err := lossy.Run(t.Data, []lossy.Tensor{t}, m, bits)
		if err != nil {
			errs[i] = err
			return
		}
		r := rows[0]
		run.Bytes[i] = r.Bytes
		run.SqErr[i] = r.RelL2 * r.RelL2 * rd.Tensors[i].SqNorm
		secs[i] = r.Seconds
		if progress != nil {
			mu.Lock()
			done += rd.Tensors[i].Params
			progress(float64(done) / float64(max(total, 1)))
			mu.Unlock()
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	if workers <= 1 {
		last := time.Now()
		for _, i := range todo {
			one(i)
			last = yieldJS(last)
		}
	} else {
		next := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					one(i)
				}
			}()
		}
		for _, i := range todo {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	for i, err := range errs {
		if err != nil {
			if ctx.Err() != nil {
				return RDRun{}, ErrCancelled
			}
			return RDRun{}, fmt.Errorf("%s: %s: %w", m.Name(), rd.tensors[i].Name, err)
		}
	}
	for _, s := range secs {
		run.Seconds += s
	}
	return run, nil
}

// yieldJS lets the browser draw: in WebAssembly a running goroutine is
// never preempted, so long work sleeps a millisecond every 100 ms. It
// returns the time of the last pause.
func yieldJS(last time.Time) time.Time {
	if runtime.GOOS != "js" || time.Since(last) < 100*time.Millisecond {
		return last
	}
	time.Sleep(time.Millisecond)
	return time.Now()
}

// Point sums run over the tensors idx: the measured rate counts every
// tensor (those the lab keeps at their stored bytes, as lossy.Run's model
// row does); the error is that of the coded tensors together. false when
// idx has no coded tensor.
func (rd *RD) Point(run RDRun, idx []int) (RDPoint, bool) {
	p := RDPoint{BitsTarget: run.Bits}
	var sqErr, sqNorm float64
	coded := false
	for _, i := range idx {
		t := rd.Tensors[i]
		p.Params += t.Params
		p.Bytes += run.Bytes[i]
		if t.Coded {
			coded = true
			sqErr += run.SqErr[i]
			sqNorm += t.SqNorm
		}
	}
	if !coded || p.Params == 0 {
		return RDPoint{}, false
	}
	p.BitsPerParam = float64(p.Bytes) * 8 / float64(p.Params)
	if sqNorm > 0 {
		p.RelL2 = math.Sqrt(sqErr / sqNorm)
	}
	return p, true
}

// Curves are the methods' points on the tensors idx, in lossy.Methods'
// order; nil when idx has no coded tensor or nothing is measured.
func (rd *RD) Curves(idx []int) []RDCurve {
	var out []RDCurve
	for _, run := range rd.Runs {
		p, ok := rd.Point(run, idx)
		if !ok {
			return nil
		}
		if len(out) == 0 || out[len(out)-1].Method != run.Method {
			out = append(out, RDCurve{Method: run.Method, Rated: run.Bits > 0})
		}
		c := &out[len(out)-1]
		c.Points = append(c.Points, p)
	}
	return out
}

// LosslessBits is the lossless coder's rate on the tensors idx (their
// share of the archive over their values); false when it is not known.
func (rd *RD) LosslessBits(idx []int) (float64, bool) {
	if len(rd.Lossless) != len(rd.Tensors) {
		return 0, false
	}
	var b float64
	var n int64
	for _, i := range idx {
		b += rd.Lossless[i]
		n += rd.Tensors[i].Params
	}
	if n == 0 {
		return 0, false
	}
	return b * 8 / float64(n), true
}

// Where the lossless point comes from (RD.LosslessFrom).
const (
	LosslessFromRun      = "the last nzip run"
	LosslessFromComputed = "nzip, compressed for this chart"
)

// ComputeLossless compresses the model with nzip (as the Run screen does,
// default options) and keeps each tensor's share of the archive.
func (rd *RD) ComputeLossless(ctx context.Context, m *Model, progress func(float64)) error {
	src, segs, starts, err := m.ReadAll()
	if err != nil {
		return err
	}
	r := Run(ctx, m, src, segs, starts, RunSpec{Codec: CodecNZip}, func(phase string, f float64) {
		if progress != nil && phase == PhaseCompress && f >= 0 {
			progress(f)
		}
	})
	if r.Error != "" {
		if ctx.Err() != nil {
			return ErrCancelled
		}
		return fmt.Errorf("nzip: %s", r.Error)
	}
	if len(r.TensorBytes) != len(rd.Tensors) {
		return fmt.Errorf("nzip: the archive's blocks could not be attributed to the tensors")
	}
	rd.Lossless, rd.LosslessFrom = r.TensorBytes, LosslessFromComputed
	return nil
}

// PredictE8 is the E8 coder's sampled estimate (lossy.E8Predict) of the
// tensors idx at bits per parameter, in bytes, those the lab keeps at
// their stored bytes.
func (rd *RD) PredictE8(ctx context.Context, idx []int, bits float64) (float64, error) {
	var total float64
	last := time.Now()
	for _, i := range idx {
		if err := ctx.Err(); err != nil {
			return 0, ErrCancelled
		}
		t := rd.tensors[i]
		if !rd.Tensors[i].Coded {
			total += float64(rd.Tensors[i].Stored)
			continue
		}
		rows, cols := int(t.Shape[0]), int(rd.Tensors[i].Params/t.Shape[0])
		b, err := lossy.E8Predict(lossy.Values(t.DType, t.Data), rows, cols, bits)
		if err != nil {
			return 0, fmt.Errorf("e8: %s: %w", t.Name, err)
		}
		total += b
		last = yieldJS(last)
	}
	return total, nil
}

// Params is the number of values of the tensors idx.
func (rd *RD) Params(idx []int) int64 {
	var n int64
	for _, i := range idx {
		n += rd.Tensors[i].Params
	}
	return n
}
