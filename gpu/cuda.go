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
	var bufs []devBuf
	defer func() {
		for _, d := range bufs {
			f.cuMemFree(d.ptr)
		}
	}()
	alloc := func(what string, n uint64) (uint64, error) {
		var ptr uint64
		if err := f.check("cuMemAlloc "+what, f.cuMemAlloc(&ptr, max(n, 1))); err != nil {
			return 0, err
		}
		bufs = append(bufs, devBuf{ptr, n})
		return ptr, nil
	}
	upload := func(what string, src unsafe.Pointer, n uint64) (uint64, error) {
		ptr, err := alloc(what, n)
		if err != nil || n == 0 {
			return ptr, err
		}
		return ptr, f.check("cuMemcpyHtoD "+what, f.cuMemcpyHtoD(ptr, src, n))
	}
	ptrOf := func(n int, p unsafe.Pointer) unsafe.Pointer {
		if n == 0 {
			return nil
		}
		return p
	}
	var err error
	var dPayload, dWeights, dLUTs, dStreams, dPairs, dSegs, dCounts, dBlocks, dScratch, dOut, dBad, dHist uint64
	if dPayload, err = upload("payload", ptrOf(len(p.Payload), unsafe.Pointer(unsafe.SliceData(p.Payload))), uint64(len(p.Payload))); err != nil {
		return Timing{}, err
	}
	if dWeights, err = upload("table weights", ptrOf(len(p.Weights), unsafe.Pointer(unsafe.SliceData(p.Weights))), uint64(len(p.Weights))); err != nil {
		return Timing{}, err
	}
	nt := uint64(p.NumTables())
	if dLUTs, err = alloc("decoding tables", 2*LUTEntries*nt); err != nil {
		return Timing{}, err
	}
	if dStreams, err = upload("stream jobs", ptrOf(len(p.Streams), unsafe.Pointer(unsafe.SliceData(p.Streams))), StreamJobBytes*uint64(len(p.Streams))); err != nil {
		return Timing{}, err
	}
	if dPairs, err = upload("pair jobs", ptrOf(len(p.Pairs), unsafe.Pointer(unsafe.SliceData(p.Pairs))), PairJobBytes*uint64(len(p.Pairs))); err != nil {
		return Timing{}, err
	}
	if dSegs, err = upload("pair segments", ptrOf(len(p.Segs), unsafe.Pointer(unsafe.SliceData(p.Segs))), 4*uint64(len(p.Segs))); err != nil {
		return Timing{}, err
	}
	if dCounts, err = alloc("pair counts", 4*uint64(len(p.Segs))); err != nil {
		return Timing{}, err
	}
	if dBlocks, err = upload("block jobs", ptrOf(len(p.Blocks), unsafe.Pointer(unsafe.SliceData(p.Blocks))), BlockJobBytes*uint64(len(p.Blocks))); err != nil {
		return Timing{}, err
	}
	if dScratch, err = alloc("scratch", uint64(p.Scratch)); err != nil {
		return Timing{}, err
	}
	if dOut, err = alloc("output", uint64(p.Size)); err != nil {
		return Timing{}, err
	}
	nbad := uint64(len(p.Streams) + len(p.Pairs))
	if dBad, err = alloc("error flags", 4*nbad); err != nil {
		return Timing{}, err
	}
	if err := f.check("cuMemsetD8", f.cuMemsetD8(dBad, 0, 4*nbad)); err != nil {
		return Timing{}, err
	}
	if o.Hist != nil {
		if dHist, err = alloc("histograms", 4*uint64(len(o.Hist))); err != nil {
			return Timing{}, err
		}
	}
	upTime := time.Since(start)
	var maxN uint64
	for _, bl := range p.Blocks {
		maxN = max(maxN, bl.N)
	}
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
		if dHist != 0 {
			if err := f.check("cuMemsetD8", f.cuMemsetD8(dHist, 0, 4*uint64(len(o.Hist)))); err != nil {
				return Timing{}, err
			}
		}
		if err := f.check("cuEventRecord", f.cuEventRecord(ev[0], 0)); err != nil {
			return Timing{}, err
		}
		if nt > 0 {
			if err := b.launch("build_lut", b.lut, uint32((nt+huffThreads-1)/huffThreads), 1, huffThreads, dWeights, nt, dLUTs); err != nil {
				return Timing{}, err
			}
		}
		if ns := uint64(len(p.Streams)); ns > 0 {
			if err := b.launch("huff_decode", b.huff, uint32((ns+huffThreads-1)/huffThreads), 1, huffThreads, dStreams, ns, dPayload, dLUTs, dScratch, dBad); err != nil {
				return Timing{}, err
			}
		}
		if nseg := uint64(len(p.Segs)); nseg > 0 {
			np := uint64(len(p.Pairs))
			dPairBad := dBad + 4*uint64(len(p.Streams))
			if err := b.launch("pair_count", b.pcount, uint32((nseg+huffThreads-1)/huffThreads), 1, huffThreads, dPairs, dSegs, nseg, dScratch, dCounts, dPairBad); err != nil {
				return Timing{}, err
			}
			if err := b.launch("pair_scan", b.pscan, uint32((np+huffThreads-1)/huffThreads), 1, huffThreads, dPairs, np, dPayload, uint64(len(p.Payload)), dScratch, dCounts, dPairBad); err != nil {
				return Timing{}, err
			}
			if err := b.launch("pair_expand", b.pexpand, uint32((nseg+huffThreads-1)/huffThreads), 1, huffThreads, dPairs, dSegs, nseg, dPayload, uint64(len(p.Payload)), dScratch, dCounts); err != nil {
				return Timing{}, err
			}
		}
		gx := uint32((maxN + mergeThreads - 1) / mergeThreads)
		for first := 0; gx > 0 && first < len(p.Blocks); first += maxGridY {
			gy := uint32(min(maxGridY, len(p.Blocks)-first))
			if err := b.launch("merge", b.merge, gx, gy, mergeThreads, dBlocks, uint64(first), dPayload, uint64(len(p.Payload)), dScratch, dOut); err != nil {
				return Timing{}, err
			}
			if dHist != 0 {
				if err := b.launch("exp_hist", b.hist, gx, gy, mergeThreads, dBlocks, uint64(first), dOut, dHist); err != nil {
					return Timing{}, err
				}
			}
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
		if d := time.Duration(float64(ms) * 1e6); best < 0 || d < best {
			best = d
		}
	}
	down := time.Now()
	bad := make([]uint32, nbad)
	if len(bad) > 0 {
		if err := f.check("cuMemcpyDtoH stream flags", f.cuMemcpyDtoH(unsafe.Pointer(&bad[0]), dBad, 4*uint64(len(bad)))); err != nil {
			return Timing{}, err
		}
	}
	if len(out) > 0 {
		if err := f.check("cuMemcpyDtoH output", f.cuMemcpyDtoH(unsafe.Pointer(&out[0]), dOut, uint64(len(out)))); err != nil {
			return Timing{}, err
		}
	}
	if o.Hist != nil && len(o.Hist) > 0 {
		if err := f.check("cuMemcpyDtoH histograms", f.cuMemcpyDtoH(unsafe.Pointer(&o.Hist[0]), dHist, 4*uint64(len(o.Hist)))); err != nil {
			return Timing{}, err
		}
	}
	return Timing{Kernel: best, Total: upTime + best + time.Since(down)}, p.streamErrors(bad)
}
