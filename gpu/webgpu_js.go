//go:build js

package gpu

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"sync"
	"syscall/js"
	"time"
)

// The WebGPU backend of the browser build: the kernels of decode.wgsl run
// through navigator.gpu, driven by webgpu.js (both embedded). Without an
// adapter (a browser without WebGPU, node) it is unavailable and callers
// fall back to the CPU.

//go:embed kernels/decode.wgsl
var decodeWGSL string

//go:embed kernels/webgpu.js
var webgpuJS string

var webgpu struct {
	sync.Mutex
	api  js.Value
	name string
	err  error
	done bool
}

// await blocks until the promise settles. It must not be called from a
// js.FuncOf callback (the event loop would wait for itself).
func await(p js.Value) (js.Value, error) {
	type res struct {
		v   js.Value
		err error
	}
	ch := make(chan res, 1)
	var ok, fail js.Func
	ok = js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- res{v: args[0]}
		return nil
	})
	fail = js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "rejected"
		if len(args) > 0 {
			if m := args[0].Get("message"); m.Type() == js.TypeString {
				msg = m.String()
			} else {
				msg = args[0].Call("toString").String()
			}
		}
		ch <- res{err: errors.New(msg)}
		return nil
	})
	defer ok.Release()
	defer fail.Release()
	p.Call("then", ok, fail)
	r := <-ch
	return r.v, r.err
}

func openWebGPU() (Backend, error) {
	webgpu.Lock()
	defer webgpu.Unlock()
	if webgpu.done && webgpu.err == nil && !webgpu.api.Call("alive").Bool() {
		webgpu.done = false // the device was lost: ask for a new one
	}
	if !webgpu.done {
		webgpu.done = true
		webgpu.err = func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%v", r)
				}
			}()
			if nav := js.Global().Get("navigator"); nav.IsUndefined() || nav.Get("gpu").IsUndefined() {
				return errors.New("this browser has no WebGPU (navigator.gpu)")
			}
			webgpu.api = js.Global().Get("Function").New("return (\n" + webgpuJS + "\n)").Invoke()
			info, err := await(webgpu.api.Call("init", decodeWGSL))
			if err != nil {
				return err
			}
			webgpu.name = info.Get("name").String()
			return nil
		}()
	}
	if webgpu.err != nil {
		return nil, &Unavailable{Backend: "webgpu", Reason: webgpu.err.Error()}
	}
	return &webgpuBackend{}, nil
}

type webgpuBackend struct{ mu sync.Mutex }

func (b *webgpuBackend) Name() string   { return "webgpu" }
func (b *webgpuBackend) Device() string { return webgpu.name + " (WebGPU)" }
func (b *webgpuBackend) Close() error   { return nil }

// u32s packs the plan's job lists into the u32 words decode.wgsl reads.
func u32s(p *Plan) (streams, pairs, blocks []uint32, err error) {
	big := func(v uint64) bool { return v > math.MaxUint32 }
	if big(uint64(len(p.Payload))) || big(uint64(p.Scratch)) || big(uint64(p.Size)) || big(4*LUTEntries*uint64(p.NumTables())) {
		return nil, nil, nil, fmt.Errorf("gpu: webgpu: %s is too large for 32-bit offsets", p.File)
	}
	streams = make([]uint32, 0, 8*len(p.Streams))
	for _, s := range p.Streams {
		streams = append(streams, uint32(s.Src), uint32(s.Len), uint32(s.N), uint32(s.Dst), uint32(s.Table), uint32(s.TableLog), uint32(s.Block), 0)
	}
	pairs = make([]uint32, 0, 16*len(p.Pairs)+len(p.Segs))
	for _, j := range p.Pairs {
		pairs = append(pairs, uint32(j.Codes), uint32(j.M), uint32(j.Dst), uint32(j.N), uint32(j.Top), j.K,
			j.Exc.Kind, j.Exc.Width, uint32(j.Exc.Off), uint32(j.X), uint32(j.Seg), uint32(j.Block), 0, 0, 0, 0)
	}
	pairs = append(pairs, p.Segs...)
	blocks = make([]uint32, 0, 32*len(p.Blocks))
	for _, bl := range p.Blocks {
		w := [32]uint32{uint32(bl.Out), uint32(bl.N), bl.Size, bl.E, bl.M, bl.S, bl.J, bl.Z, bl.NSrc, uint32(bl.Index), bl.Sparse, uint32(bl.Mask)}
		for k, s := range bl.Src {
			w[12+4*k], w[13+4*k], w[14+4*k] = s.Kind, s.Width, uint32(s.Off)
		}
		blocks = append(blocks, w[:]...)
	}
	return streams, pairs, blocks, nil
}

func jsBytes(b []byte) js.Value {
	a := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(a, b)
	return a
}

func jsWords(w []uint32) js.Value {
	b := make([]byte, 4*len(w))
	for i, v := range w {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return js.Global().Get("Uint32Array").New(jsBytes(b).Get("buffer"))
}

func goWords(v js.Value, n int) []uint32 {
	b := make([]byte, 4*n)
	js.CopyBytesToGo(b, v)
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
	}
	return out
}

func (b *webgpuBackend) Decode(ctx context.Context, p *Plan, out []byte, o DecodeOptions) (Timing, error) {
	if err := checkArgs(p, out, o); err != nil {
		return Timing{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	start := time.Now()
	streams, pairs, blocks, err := u32s(p)
	if err != nil {
		return Timing{}, err
	}
	var maxN uint64
	for _, bl := range p.Blocks {
		maxN = max(maxN, bl.N)
	}
	a := js.Global().Get("Object").New()
	a.Set("payload", jsBytes(p.Payload))
	a.Set("weights", jsBytes(p.Weights))
	a.Set("nTables", p.NumTables())
	a.Set("streams", jsWords(streams))
	a.Set("pairs", jsWords(pairs))
	a.Set("blocks", jsWords(blocks))
	a.Set("nStreams", len(p.Streams))
	a.Set("nPairs", len(p.Pairs))
	a.Set("nSegs", len(p.Segs))
	a.Set("segOff", 16*len(p.Pairs))
	a.Set("nBlocks", len(p.Blocks))
	a.Set("maxN", maxN)
	a.Set("scratchBytes", p.Scratch)
	a.Set("outBytes", p.Size)
	a.Set("hist", o.Hist != nil)
	best := -1.0
	var res js.Value
	for rep := 0; rep < max(1, o.Repeat); rep++ {
		if err := ctx.Err(); err != nil {
			return Timing{}, err
		}
		r, err := await(webgpu.api.Call("decode", a))
		if err != nil {
			return Timing{}, fmt.Errorf("gpu: webgpu: %v", err)
		}
		if ms := r.Get("ms").Float(); best < 0 || ms < best {
			best = ms
		}
		res = r
	}
	js.CopyBytesToGo(out, res.Get("out"))
	bad := goWords(res.Get("bad"), len(p.Streams)+len(p.Pairs))
	if o.Hist != nil {
		copy(o.Hist, goWords(res.Get("hist"), 256*len(p.Blocks)))
	}
	kernel := time.Duration(best * 1e6)
	return Timing{Kernel: kernel, Total: time.Since(start) - time.Duration(float64(max(1, o.Repeat)-1)*best*1e6)}, p.streamErrors(bad)
}
