package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// checkArgs checks Decode's buffers against the plan.
func checkArgs(p *Plan, out []byte, o DecodeOptions) error {
	if int64(len(out)) != p.Size {
		return fmt.Errorf("gpu: output buffer of %d bytes for a plan of %d", len(out), p.Size)
	}
	if o.Hist != nil && len(o.Hist) != 256*len(p.Blocks) {
		return fmt.Errorf("gpu: %d histogram counters for %d blocks (want 256 each)", len(o.Hist), len(p.Blocks))
	}
	return nil
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
			return fmt.Errorf("gpu: %s: %w: Huffman stream %d of block %d (file offset %d) does not decode", p.File, ErrCorrupt, i, blk.Index, p.Base+int64(blk.Out))
		}
		blk := p.Blocks[p.Pairs[i-len(p.Streams)].Block]
		return fmt.Errorf("gpu: %s: %w: the pair codes of block %d (file offset %d) do not match their exceptions", p.File, ErrCorrupt, blk.Index, p.Base+int64(blk.Out))
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
	Exact     bool             // the digest of the output (BLAKE3, SHA-256 in older archives) equals the original's
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
	// BatchBytes bounds the original bytes decoded at once (DecodeTo);
	// DefaultBatchBytes when 0.
	BatchBytes int64
	Repeat     int // run the device kernels this many times, report the fastest
}

// DecodeFile decodes file fi of an archive through b into memory (see
// DecodeTo) and returns its bytes.
func DecodeFile(ctx context.Context, rd *codec.Reader, ra io.ReaderAt, fi int, b Backend, opt Options) ([]byte, Result, error) {
	files := rd.Files()
	if fi < 0 || fi >= len(files) {
		return nil, Result{}, fmt.Errorf("gpu: no file %d in the archive", fi)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(files[fi].Size, rd.PlausibleOutput(), 1<<30)))
	res, err := DecodeTo(ctx, &buf, rd, ra, fi, b, opt)
	if err != nil {
		return nil, res, err
	}
	return buf.Bytes(), res, nil
}

// DefaultBatchBytes is the default of Options.BatchBytes.
const DefaultBatchBytes = 1 << 30

// DecodeTo decodes file fi of an archive through b and writes it to w, in
// batches of whole blocks of at most Options.BatchBytes original bytes
// (one block at least), so memory on the host and the device stays
// bounded whatever the file's size. In each batch the device decodes what
// its plan gives it and the CPU the rest; every device block is checked by
// its CRC-32C (so damage is located) and the file by its digest, which is
// known only at the end: on an error w has received part of the file
// (write to a temporary file, as nzip does).
func DecodeTo(ctx context.Context, w io.Writer, rd *codec.Reader, ra io.ReaderAt, fi int, b Backend, opt Options) (Result, error) {
	files := rd.Files()
	if fi < 0 || fi >= len(files) {
		return Result{}, fmt.Errorf("gpu: no file %d in the archive", fi)
	}
	f := files[fi]
	blocks := f.Blocks()
	batch := opt.BatchBytes
	if batch <= 0 {
		batch = DefaultBatchBytes
	}
	// A batch's output is allocated before its blocks are checked: no
	// more than the archive can plausibly hold (a few hundred bytes of
	// duplicate blocks may claim gigabytes of zeros).
	batch = min(batch, rd.PlausibleOutput())
	res := Result{File: f.Name, Backend: b.Name(), Device: b.Device(), Bytes: f.Size, Stored: f.Compressed, Unhandled: map[string]int64{}}
	sum := f.Digest.New() // the archive's digest kind: BLAKE3, or SHA-256 in older ones
	var out []byte
	for from := 0; from < len(blocks); {
		to, n := from, int64(0)
		for to < len(blocks) && (to == from || n+blocks[to].Length <= batch) {
			n += blocks[to].Length
			to++
		}
		t0 := time.Now()
		p, err := newPlan(rd, ra, fi, blocks, from, to)
		if err != nil {
			return res, err
		}
		res.PlanTime += time.Since(t0)
		res.DevBytes += p.DevBytes
		res.Resident += p.ResidentBytes()
		for k, v := range p.Unhandled {
			res.Unhandled[k] += v
		}
		ns, ms := p.parallelism()
		res.Streams += ns
		res.MaxStreamSymbols = max(res.MaxStreamSymbols, ms)
		if int64(cap(out)) < p.Size {
			out = make([]byte, p.Size)
		}
		out = out[:p.Size]
		var hist []uint32
		if opt.Hist {
			hist = make([]uint32, 256*len(p.Blocks))
		}
		tm, err := b.Decode(ctx, p, out, DecodeOptions{Hist: hist, Repeat: opt.Repeat})
		if err != nil {
			return res, err
		}
		res.Kernel += tm.Kernel
		res.Total += tm.Total
		t1 := time.Now()
		if err := hostDecode(ctx, rd, fi, p, out, opt.Threads); err != nil {
			return res, err
		}
		res.HostTime += time.Since(t1)
		for _, j := range p.Blocks {
			bl := blocks[j.Index]
			o := bl.Offset - p.Base
			if codec.CRC32C(out[o:o+bl.Length]) != bl.CRC {
				return res, fmt.Errorf("gpu: %s: %w: block %d (file offset %d) decodes with a wrong CRC-32C on %s", p.File, ErrCorrupt, j.Index, bl.Offset, b.Name())
			}
		}
		for i := range hist {
			res.ExpHist[i%256] += uint64(hist[i])
		}
		sum.Write(out)
		if _, err := w.Write(out); err != nil {
			return res, err
		}
		from = to
	}
	res.Exact = bytes.Equal(sum.Sum(nil), f.Sum[:])
	if !res.Exact {
		return res, fmt.Errorf("gpu: %s: %v of the decoded file differs from the archive's", f.Name, f.Digest)
	}
	return res, nil
}

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
	threads, _ = codec.ClampThreads(min(threads, max(1, len(p.Host))))
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
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
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
	l := SortUnhandled(r.Unhandled)
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = fmt.Sprintf("%s %d B", e.Reason, e.Bytes)
	}
	return out
}

// Unhandled is one reason the CPU decoded bytes, and how many.
type Unhandled struct {
	Reason string
	Bytes  int64
}

// SortUnhandled lists the non-zero entries of m (Plan.Unhandled,
// Result.Unhandled), most bytes first, then by reason.
func SortUnhandled(m map[string]int64) []Unhandled {
	var l []Unhandled
	for k, v := range m {
		if v > 0 {
			l = append(l, Unhandled{k, v})
		}
	}
	sort.Slice(l, func(i, j int) bool {
		return l[i].Bytes > l[j].Bytes || l[i].Bytes == l[j].Bytes && l[i].Reason < l[j].Reason
	})
	return l
}
