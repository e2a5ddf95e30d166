package gpu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sort"
	"sync"
	"time"

	"neuralzip/codec"
)

// Backend decodes plans on one device.
type Backend interface {
	Name() string   // "cpu", "cuda"
	Device() string // what it runs on, e.g. "NVIDIA H200 (139 GiB)"
	// Decode writes the values of p's device blocks into out (len p.Size;
	// the host blocks' bytes are undefined afterwards). A damaged stream is
	// an error naming its block; out is then undefined.
	Decode(ctx context.Context, p *Plan, out []byte, o DecodeOptions) (Timing, error)
	Close() error
}

// DecodeOptions of Backend.Decode.
type DecodeOptions struct {
	// Hist, when not nil (256 counters per BlockJob), receives the
	// histogram of each block's exponent field, counted on the device.
	Hist []uint32
	// Repeat runs the kernels this many times (at least once) and reports
	// the fastest: device timings vary from run to run.
	Repeat int
}

// Timing is what a decode cost. Kernel is the time of the kernels alone
// (CUDA events on a GPU): the decode rate of weights kept compressed in
// device memory. Total adds moving the plan to the device and the values
// back.
type Timing struct {
	Kernel, Total time.Duration
}

// Unavailable is returned by Open when a backend cannot run here; Reason
// says why ("no CUDA driver: ...").
type Unavailable struct {
	Backend, Reason string
}

func (e *Unavailable) Error() string {
	return fmt.Sprintf("gpu: backend %s unavailable: %s", e.Backend, e.Reason)
}

// ErrUnavailable matches every *Unavailable with errors.Is.
var ErrUnavailable = errors.New("backend unavailable")

func (e *Unavailable) Is(target error) bool { return target == ErrUnavailable }

// Names lists the backends this build knows, the reference first: cuda
// runs natively (linux), webgpu in the browser build (GOOS=js).
func Names() []string { return []string{"cpu", "cuda", "webgpu"} }

// Open returns the named backend ("cpu", "cuda", "webgpu", or "auto": the
// first device backend that is available, else the CPU) or an
// *Unavailable saying why it cannot run.
func Open(name string, threads int) (Backend, error) {
	switch name {
	case "cpu":
		return CPU(threads), nil
	case "cuda":
		return openCUDA()
	case "webgpu":
		return openWebGPU()
	case "auto", "":
		if b, err := openCUDA(); err == nil {
			return b, nil
		}
		if b, err := openWebGPU(); err == nil {
			return b, nil
		}
		return CPU(threads), nil
	}
	return nil, fmt.Errorf("gpu: unknown backend %q (known: cpu, cuda, webgpu, auto)", name)
}

// Probe reports every backend's availability: the device, or why not.
func Probe() map[string]string {
	out := map[string]string{}
	for _, n := range Names() {
		b, err := Open(n, 0)
		if err != nil {
			out[n] = err.Error()
			continue
		}
		out[n] = b.Device()
		b.Close()
	}
	return out
}

// streamErrors turns the error flags of a decode (one per stream job,
// then one per pair job) into an error naming the first damaged block.
func (p *Plan) streamErrors(bad []uint32) error {
	for i, b := range bad {
		if b == 0 {
			continue
		}
		if i < len(p.Streams) {
			blk := p.Blocks[p.Streams[i].Block]
			return fmt.Errorf("gpu: %s: %w: Huffman stream %d of block %d (file offset %d) does not decode", p.File, ErrCorrupt, i, blk.Index, blk.Out)
		}
		blk := p.Blocks[p.Pairs[i-len(p.Streams)].Block]
		return fmt.Errorf("gpu: %s: %w: the pair codes of block %d (file offset %d) do not match their exceptions", p.File, ErrCorrupt, blk.Index, blk.Out)
	}
	return nil
}

// Result is one file decoded through a backend.
type Result struct {
	File      string
	Backend   string
	Device    string
	Bytes     int64 // original file size
	DevBytes  int64 // of which the device decoded
	Resident  int64 // device memory the compressed form of those takes (Plan.ResidentBytes)
	Stored    int64 // bytes the archive holds for the file
	Kernel    time.Duration
	Total     time.Duration // device decode including transfers
	HostTime  time.Duration // the CPU's share (Plan.Host blocks)
	PlanTime  time.Duration
	Unhandled map[string]int64 // bytes left to the CPU, by reason
	Exact     bool             // SHA-256 of the output equals the original's
	ExpHist   [256]uint64      // Options.Hist: exponent fields of the device's values
	Copies    int              // Bench: copies of the file's device work decoded at once
	// The device's parallelism: Huffman streams (one thread each) and the
	// longest one's symbols (the serial depth of huff_decode).
	Streams, MaxStreamSymbols int
}

// KernelGBps is the device's decode rate in GB/s of original bytes.
func (r Result) KernelGBps() float64 {
	if r.Kernel <= 0 {
		return 0
	}
	return float64(r.DevBytes) / r.Kernel.Seconds() / 1e9
}

// TotalGBps is the device's rate including transfers.
func (r Result) TotalGBps() float64 {
	if r.Total <= 0 {
		return 0
	}
	return float64(r.DevBytes) / r.Total.Seconds() / 1e9
}

// Options of DecodeFile.
type Options struct {
	Threads int  // CPU threads for the host blocks and the CPU backend
	Hist    bool // also count exponents on the device (Result.ExpHist)
	Repeat  int  // run the device kernels this many times, report the fastest
	Context context.Context
}

// DecodeFile decodes file fi of an archive through b: the device decodes
// what its plan gives it, the CPU the rest, and the output is checked
// block by block (CRC-32C, so damage is located) and as a whole (SHA-256).
// It returns the file's bytes.
func DecodeFile(rd *codec.Reader, ra io.ReaderAt, fi int, b Backend, opt Options) ([]byte, Result, error) {
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	t0 := time.Now()
	p, err := NewPlan(rd, ra, fi)
	if err != nil {
		return nil, Result{}, err
	}
	res := Result{File: p.File, Backend: b.Name(), Device: b.Device(), Bytes: p.Size, DevBytes: p.DevBytes, Resident: p.ResidentBytes(), Unhandled: p.Unhandled, PlanTime: time.Since(t0)}
	res.Stored = rd.Files()[fi].Compressed
	res.Streams, res.MaxStreamSymbols = p.parallelism()
	out := make([]byte, p.Size)
	var hist []uint32
	if opt.Hist {
		hist = make([]uint32, 256*len(p.Blocks))
	}
	tm, err := b.Decode(ctx, p, out, DecodeOptions{Hist: hist, Repeat: opt.Repeat})
	if err != nil {
		return nil, res, err
	}
	res.Kernel, res.Total = tm.Kernel, tm.Total
	t1 := time.Now()
	if err := hostDecode(ctx, rd, fi, p, out, opt.Threads); err != nil {
		return nil, res, err
	}
	res.HostTime = time.Since(t1)
	blocks := rd.Files()[fi].Blocks()
	for _, j := range p.Blocks {
		bl := blocks[j.Index]
		if crc32.Checksum(out[bl.Offset:bl.Offset+bl.Length], castagnoli) != bl.CRC {
			return nil, res, fmt.Errorf("gpu: %s: %w: block %d (file offset %d) decodes with a wrong CRC-32C on %s", p.File, ErrCorrupt, j.Index, bl.Offset, b.Name())
		}
	}
	sum := sha256.Sum256(out)
	res.Exact = bytes.Equal(sum[:], p.SHA256[:])
	if !res.Exact {
		return nil, res, fmt.Errorf("gpu: %s: SHA-256 of the decoded file differs from the archive's", p.File)
	}
	for i := range hist {
		res.ExpHist[i%256] += uint64(hist[i])
	}
	return out, res, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// parallelism returns the number of stream jobs and the most symbols one
// of them decodes.
func (p *Plan) parallelism() (int, int) {
	m := uint64(0)
	for _, s := range p.Streams {
		m = max(m, s.N)
	}
	return len(p.Streams), int(m)
}

// hostDecode decodes the plan's host blocks into out on threads goroutines.
func hostDecode(ctx context.Context, rd *codec.Reader, fi int, p *Plan, out []byte, threads int) error {
	if threads < 1 {
		threads = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan HostBlock)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range jobs {
				if err := rd.DecodeBlock(fi, h.Index, out[h.Offset:h.Offset+h.Length]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, h := range p.Host {
		if ctx.Err() != nil {
			break
		}
		jobs <- h
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// UnhandledSummary lists the bytes left to the CPU by reason, largest
// first, e.g. "zstd 1.2 MB, setup tables 300 kB".
func (r Result) UnhandledSummary() []string {
	type kv struct {
		k string
		v int64
	}
	var l []kv
	for k, v := range r.Unhandled {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = fmt.Sprintf("%s %d B", e.k, e.v)
	}
	return out
}
