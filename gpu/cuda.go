//go:build linux && (amd64 || arm64)

package gpu

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The CUDA backend: the driver API through purego (no cgo), opened at run
// time, with the kernels of kernels/decode.cu as embedded PTX that the
// driver compiles for the GPU it finds (scripts/ptx.sh makes the PTX).
//
// NZIP_LIBCUDA names the driver library to open instead of libcuda.so.1
// (the tests point it at kernels/fakecuda.cc built as a shared library).

//go:embed kernels/decode.ptx
var decodePTX string

type cuFuncs struct {
	cuInit               func(flags uint32) int32
	cuDriverGetVersion   func(v *int32) int32
	cuDeviceGetCount     func(n *int32) int32
	cuDeviceGet          func(dev *int32, ordinal int32) int32
	cuDeviceGetName      func(name *byte, n int32, dev int32) int32
	cuDeviceTotalMem     func(bytes *uint64, dev int32) int32
	cuDeviceGetAttribute func(v *int32, attr int32, dev int32) int32
	cuPrimaryCtxRetain   func(ctx *uintptr, dev int32) int32
	cuPrimaryCtxRelease  func(dev int32) int32
	cuCtxSetCurrent      func(ctx uintptr) int32
	cuCtxSynchronize     func() int32
	cuModuleLoadData     func(mod *uintptr, image *byte) int32
	cuModuleUnload       func(mod uintptr) int32
	cuModuleGetFunction  func(f *uintptr, mod uintptr, name string) int32
	cuMemAlloc           func(p *uint64, n uint64) int32
	cuMemFree            func(p uint64) int32
	cuMemcpyHtoD         func(dst uint64, src unsafe.Pointer, n uint64) int32
	cuMemcpyDtoH         func(dst unsafe.Pointer, src uint64, n uint64) int32
	cuMemsetD8           func(dst uint64, v uint8, n uint64) int32
	cuLaunchKernel       func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params unsafe.Pointer, extra uintptr) int32
	cuEventCreate        func(ev *uintptr, flags uint32) int32
	cuEventDestroy       func(ev uintptr) int32
	cuEventRecord        func(ev uintptr, stream uintptr) int32
	cuEventSynchronize   func(ev uintptr) int32
	cuEventElapsedTime   func(ms *float32, a, b uintptr) int32
	cuGetErrorString     func(e int32, s **byte) int32
}

type driver struct {
	fn  cuFuncs
	err error
}

var drivers struct {
	sync.Mutex
	m map[string]*driver
}

// loadDriver opens the driver library (once per path) and binds every
// function the backend calls; a missing library or symbol is the reason
// the backend is unavailable.
func loadDriver() (*cuFuncs, error) {
	path := os.Getenv("NZIP_LIBCUDA")
	if path == "" {
		path = "libcuda.so.1"
	}
	drivers.Lock()
	defer drivers.Unlock()
	if d := drivers.m[path]; d != nil {
		return &d.fn, d.err
	}
	if drivers.m == nil {
		drivers.m = map[string]*driver{}
	}
	cuda := &driver{}
	drivers.m[path] = cuda
	func() {
		lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			cuda.err = fmt.Errorf("no CUDA driver (%s: %v)", path, err)
			return
		}
		f := &cuda.fn
		for _, b := range []struct {
			ptr  any
			name string
		}{
			{&f.cuInit, "cuInit"}, {&f.cuDriverGetVersion, "cuDriverGetVersion"},
			{&f.cuDeviceGetCount, "cuDeviceGetCount"}, {&f.cuDeviceGet, "cuDeviceGet"},
			{&f.cuDeviceGetName, "cuDeviceGetName"}, {&f.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
			{&f.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
			// the device's primary context, as the CUDA runtime uses it: its
			// API has been stable since CUDA 7 (cuCtxCreate changed in 13)
			{&f.cuPrimaryCtxRetain, "cuDevicePrimaryCtxRetain"}, {&f.cuPrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
			{&f.cuCtxSetCurrent, "cuCtxSetCurrent"}, {&f.cuCtxSynchronize, "cuCtxSynchronize"},
			{&f.cuModuleLoadData, "cuModuleLoadData"}, {&f.cuModuleUnload, "cuModuleUnload"},
			{&f.cuModuleGetFunction, "cuModuleGetFunction"},
			{&f.cuMemAlloc, "cuMemAlloc_v2"}, {&f.cuMemFree, "cuMemFree_v2"},
			{&f.cuMemcpyHtoD, "cuMemcpyHtoD_v2"}, {&f.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
			{&f.cuMemsetD8, "cuMemsetD8_v2"}, {&f.cuLaunchKernel, "cuLaunchKernel"},
			{&f.cuEventCreate, "cuEventCreate"}, {&f.cuEventDestroy, "cuEventDestroy_v2"},
			{&f.cuEventRecord, "cuEventRecord"}, {&f.cuEventSynchronize, "cuEventSynchronize"},
			{&f.cuEventElapsedTime, "cuEventElapsedTime"}, {&f.cuGetErrorString, "cuGetErrorString"},
		} {
			sym, err := purego.Dlsym(lib, b.name)
			if err != nil || sym == 0 {
				cuda.err = fmt.Errorf("CUDA driver %s lacks %s", path, b.name)
				return
			}
			purego.RegisterFunc(b.ptr, sym)
		}
		if r := f.cuInit(0); r != 0 {
			cuda.err = fmt.Errorf("cuInit: %s", f.errString(r))
		}
	}()
	if cuda.err != nil {
		return nil, cuda.err
	}
	return &cuda.fn, nil
}

func (f *cuFuncs) errString(r int32) string {
	var s *byte
	if f.cuGetErrorString(r, &s) != 0 || s == nil {
		return fmt.Sprintf("CUDA error %d", r)
	}
	return fmt.Sprintf("%s (CUDA error %d)", cString(s, 256), r)
}

// cString copies a NUL-terminated C string of at most max bytes.
func cString(p *byte, max int) string {
	b := unsafe.Slice(p, max)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func (f *cuFuncs) check(what string, r int32) error {
	if r != 0 {
		return fmt.Errorf("gpu: cuda: %s: %s", what, f.errString(r))
	}
	return nil
}

type cudaBackend struct {
	f                      *cuFuncs
	ctx                    uintptr
	dev                    int32
	mod                    uintptr
	huff                   uintptr
	merge                  uintptr
	hist                   uintptr
	pcount, pscan, pexpand uintptr
	lut                    uintptr
	name                   string
	mem                    uint64
	cc                     [2]int32
	mu                     sync.Mutex
}

func openCUDA() (Backend, error) {
	f, err := loadDriver()
	if err != nil {
		return nil, &Unavailable{Backend: "cuda", Reason: err.Error()}
	}
	var n int32
	if r := f.cuDeviceGetCount(&n); r != 0 || n == 0 {
		reason := "no CUDA device"
		if r != 0 {
			reason = "cuDeviceGetCount: " + f.errString(r)
		}
		return nil, &Unavailable{Backend: "cuda", Reason: reason}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := &cudaBackend{f: f}
	var dev int32
	if err := f.check("cuDeviceGet", f.cuDeviceGet(&dev, 0)); err != nil {
		return nil, &Unavailable{Backend: "cuda", Reason: err.Error()}
	}
	var name [256]byte
	if err := f.check("cuDeviceGetName", f.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return nil, &Unavailable{Backend: "cuda", Reason: err.Error()}
	}
	b.name = cString(&name[0], len(name))
	f.cuDeviceTotalMem(&b.mem, dev)
	f.cuDeviceGetAttribute(&b.cc[0], 75, dev)
	f.cuDeviceGetAttribute(&b.cc[1], 76, dev)
	b.dev = dev
	if err := f.check("cuDevicePrimaryCtxRetain", f.cuPrimaryCtxRetain(&b.ctx, dev)); err != nil {
		return nil, &Unavailable{Backend: "cuda", Reason: err.Error()}
	}
	if err := f.check("cuCtxSetCurrent", f.cuCtxSetCurrent(b.ctx)); err != nil {
		f.cuPrimaryCtxRelease(dev)
		return nil, &Unavailable{Backend: "cuda", Reason: err.Error()}
	}
	image := append([]byte(decodePTX), 0)
	if err := f.check("cuModuleLoadData (embedded PTX)", f.cuModuleLoadData(&b.mod, &image[0])); err != nil {
		f.cuPrimaryCtxRelease(dev)
		return nil, &Unavailable{Backend: "cuda", Reason: err.Error()}
	}
	for _, k := range []struct {
		p    *uintptr
		name string
	}{{&b.huff, "huff_decode"}, {&b.merge, "merge"}, {&b.hist, "exp_hist"}, {&b.pcount, "pair_count"}, {&b.pscan, "pair_scan"}, {&b.pexpand, "pair_expand"}, {&b.lut, "build_lut"}} {
		if err := f.check("cuModuleGetFunction "+k.name, f.cuModuleGetFunction(k.p, b.mod, k.name)); err != nil {
			f.cuModuleUnload(b.mod)
			f.cuPrimaryCtxRelease(dev)
			return nil, &Unavailable{Backend: "cuda", Reason: err.Error()}
		}
	}
	return b, nil
}

func (b *cudaBackend) Name() string { return "cuda" }
func (b *cudaBackend) Device() string {
	return fmt.Sprintf("%s (%.0f GiB, compute %d.%d)", b.name, float64(b.mem)/(1<<30), b.cc[0], b.cc[1])
}

func (b *cudaBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == 0 {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.f.cuCtxSetCurrent(b.ctx)
	b.f.cuModuleUnload(b.mod)
	err := b.f.check("cuDevicePrimaryCtxRelease", b.f.cuPrimaryCtxRelease(b.dev))
	b.ctx = 0
	return err
}

// devBuf is one device allocation.
type devBuf struct {
	ptr uint64
	n   uint64
}

// launch calls a kernel with the given arguments (each a pointer to a
// u64-sized value, as cuLaunchKernel's kernelParams wants).
func (b *cudaBackend) launch(what string, fn uintptr, gx, gy, bx uint32, args ...uint64) error {
	vals := make([]uint64, len(args)) // heap: the driver reads them during the call
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		vals[i] = a
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	r := b.f.cuLaunchKernel(fn, gx, gy, 1, bx, 1, 1, 0, 0, unsafe.Pointer(&ptrs[0]), 0)
	runtime.KeepAlive(vals)
	runtime.KeepAlive(ptrs)
	return b.f.check("launch "+what, r)
}

const (
	huffThreads  = 128
	mergeThreads = 256
	maxGridY     = 65535
)

func (b *cudaBackend) Decode(ctx context.Context, p *Plan, out []byte, o DecodeOptions) (Timing, error) {
	if err := checkArgs(p, out, o); err != nil {
		return Timing{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == 0 {
		return Timing{}, fmt.Errorf("gpu: cuda backend is closed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := b.f
	if err := f.check("cuCtxSetCurrent", f.cuCtxSetCurrent(b.ctx)); err != nil {
		return Timing{}, err
	}
	start := time.Now()
	d := &devPlan{f: f}
	defer d.free()
	if err := d.upload(p, o); err != nil {
		return Timing{}, err
	}
	upTime := time.Since(start)
	var ev [2]uintptr
	for i := range ev {
		if err := f.check("cuEventCreate", f.cuEventCreate(&ev[i], 0)); err != nil {
			return Timing{}, err
		}
		defer f.cuEventDestroy(ev[i])
	}
	best := time.Duration(-1)
	for rep := 0; rep < max(1, o.Repeat); rep++ {
		if err := ctx.Err(); err != nil {
			return Timing{}, err
		}
		if d.hist != 0 {
			if err := f.check("cuMemsetD8", f.cuMemsetD8(d.hist, 0, 4*uint64(len(o.Hist)))); err != nil {
				return Timing{}, err
			}
		}
		if err := f.check("cuEventRecord", f.cuEventRecord(ev[0], 0)); err != nil {
			return Timing{}, err
		}
		if err := b.kernels(p, d); err != nil {
			return Timing{}, err
		}
		if err := f.check("cuEventRecord", f.cuEventRecord(ev[1], 0)); err != nil {
			return Timing{}, err
		}
		if err := f.check("cuEventSynchronize", f.cuEventSynchronize(ev[1])); err != nil {
			return Timing{}, err
		}
		var ms float32
		if err := f.check("cuEventElapsedTime", f.cuEventElapsedTime(&ms, ev[0], ev[1])); err != nil {
			return Timing{}, err
		}
		if t := time.Duration(float64(ms) * 1e6); best < 0 || t < best {
			best = t
		}
	}
	down := time.Now()
	bad := make([]uint32, d.nbad)
	if len(bad) > 0 {
		if err := f.check("cuMemcpyDtoH stream flags", f.cuMemcpyDtoH(unsafe.Pointer(&bad[0]), d.bad, 4*uint64(len(bad)))); err != nil {
			return Timing{}, err
		}
	}
	if len(out) > 0 {
		if err := f.check("cuMemcpyDtoH output", f.cuMemcpyDtoH(unsafe.Pointer(&out[0]), d.out, uint64(len(out)))); err != nil {
			return Timing{}, err
		}
	}
	if o.Hist != nil && len(o.Hist) > 0 {
		if err := f.check("cuMemcpyDtoH histograms", f.cuMemcpyDtoH(unsafe.Pointer(&o.Hist[0]), d.hist, 4*uint64(len(o.Hist)))); err != nil {
			return Timing{}, err
		}
	}
	return Timing{Kernel: best, Total: upTime + best + time.Since(down)}, p.streamErrors(bad)
}

// devPlan is a plan's buffers on the device.
type devPlan struct {
	f    *cuFuncs
	bufs []devBuf // to free
	// the buffers' device addresses
	payload, weights, luts, streams, pairs, segs, counts, blocks, scratch, out, bad, hist uint64
	nt                                                                                    uint64 // Huffman tables
	nbad                                                                                  uint64 // error flags: one per stream job and pair job
	maxN                                                                                  uint64 // the most values of a block
}

func (d *devPlan) free() {
	for _, b := range d.bufs {
		d.f.cuMemFree(b.ptr)
	}
}

func (d *devPlan) alloc(what string, n uint64) (uint64, error) {
	var ptr uint64
	if err := d.f.check("cuMemAlloc "+what, d.f.cuMemAlloc(&ptr, max(n, 1))); err != nil {
		return 0, err
	}
	d.bufs = append(d.bufs, devBuf{ptr, n})
	return ptr, nil
}

// uploadBytes allocates a buffer of n bytes and copies src's n bytes there.
func (d *devPlan) uploadBytes(what string, src unsafe.Pointer, n uint64) (uint64, error) {
	ptr, err := d.alloc(what, n)
	if err != nil || n == 0 {
		return ptr, err
	}
	return ptr, d.f.check("cuMemcpyHtoD "+what, d.f.cuMemcpyHtoD(ptr, src, n))
}

// sliceData is the address of s's data, nil for an empty s.
func sliceData[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(s))
}

// upload copies the plan's payload, tables and jobs to the device and
// allocates the tables, scratch, output, error flags and histograms the
// kernels fill.
func (d *devPlan) upload(p *Plan, o DecodeOptions) error {
	var err error
	if d.payload, err = d.uploadBytes("payload", sliceData(p.Payload), uint64(len(p.Payload))); err != nil {
		return err
	}
	if d.weights, err = d.uploadBytes("table weights", sliceData(p.Weights), uint64(len(p.Weights))); err != nil {
		return err
	}
	d.nt = uint64(p.NumTables())
	if d.luts, err = d.alloc("decoding tables", 2*LUTEntries*d.nt); err != nil {
		return err
	}
	if d.streams, err = d.uploadBytes("stream jobs", sliceData(p.Streams), StreamJobBytes*uint64(len(p.Streams))); err != nil {
		return err
	}
	if d.pairs, err = d.uploadBytes("pair jobs", sliceData(p.Pairs), PairJobBytes*uint64(len(p.Pairs))); err != nil {
		return err
	}
	if d.segs, err = d.uploadBytes("pair segments", sliceData(p.Segs), 4*uint64(len(p.Segs))); err != nil {
		return err
	}
	if d.counts, err = d.alloc("pair counts", 4*uint64(len(p.Segs))); err != nil {
		return err
	}
	if d.blocks, err = d.uploadBytes("block jobs", sliceData(p.Blocks), BlockJobBytes*uint64(len(p.Blocks))); err != nil {
		return err
	}
	if d.scratch, err = d.alloc("scratch", uint64(p.Scratch)); err != nil {
		return err
	}
	if d.out, err = d.alloc("output", uint64(p.Size)); err != nil {
		return err
	}
	d.nbad = uint64(len(p.Streams) + len(p.Pairs))
	if d.bad, err = d.alloc("error flags", 4*d.nbad); err != nil {
		return err
	}
	if err := d.f.check("cuMemsetD8", d.f.cuMemsetD8(d.bad, 0, 4*d.nbad)); err != nil {
		return err
	}
	if o.Hist != nil {
		if d.hist, err = d.alloc("histograms", 4*uint64(len(o.Hist))); err != nil {
			return err
		}
	}
	for _, bl := range p.Blocks {
		d.maxN = max(d.maxN, bl.N)
	}
	return nil
}

// kernels launches one decode of the plan: tables, Huffman streams, pair
// expansion, merge (and histograms).
func (b *cudaBackend) kernels(p *Plan, d *devPlan) error {
	if d.nt > 0 {
		if err := b.launch("build_lut", b.lut, uint32((d.nt+huffThreads-1)/huffThreads), 1, huffThreads, d.weights, d.nt, d.luts); err != nil {
			return err
		}
	}
	if ns := uint64(len(p.Streams)); ns > 0 {
		if err := b.launch("huff_decode", b.huff, uint32((ns+huffThreads-1)/huffThreads), 1, huffThreads, d.streams, ns, d.payload, d.luts, d.scratch, d.bad); err != nil {
			return err
		}
	}
	if nseg := uint64(len(p.Segs)); nseg > 0 {
		np := uint64(len(p.Pairs))
		dPairBad := d.bad + 4*uint64(len(p.Streams))
		if err := b.launch("pair_count", b.pcount, uint32((nseg+huffThreads-1)/huffThreads), 1, huffThreads, d.pairs, d.segs, nseg, d.scratch, d.counts, dPairBad); err != nil {
			return err
		}
		if err := b.launch("pair_scan", b.pscan, uint32((np+huffThreads-1)/huffThreads), 1, huffThreads, d.pairs, np, d.payload, uint64(len(p.Payload)), d.scratch, d.counts, dPairBad); err != nil {
			return err
		}
		if err := b.launch("pair_expand", b.pexpand, uint32((nseg+huffThreads-1)/huffThreads), 1, huffThreads, d.pairs, d.segs, nseg, d.payload, uint64(len(p.Payload)), d.scratch, d.counts); err != nil {
			return err
		}
	}
	gx := uint32((d.maxN + mergeThreads - 1) / mergeThreads)
	for first := 0; gx > 0 && first < len(p.Blocks); first += maxGridY {
		gy := uint32(min(maxGridY, len(p.Blocks)-first))
		if err := b.launch("merge", b.merge, gx, gy, mergeThreads, d.blocks, uint64(first), d.payload, uint64(len(p.Payload)), d.scratch, d.out); err != nil {
			return err
		}
		if d.hist != 0 {
			if err := b.launch("exp_hist", b.hist, gx, gy, mergeThreads, d.blocks, uint64(first), d.out, d.hist); err != nil {
				return err
			}
		}
	}
	return nil
}
