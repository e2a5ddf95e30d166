package gpu

import (
	"context"
	"encoding/binary"
	"math/bits"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"neuralzip/codec"
)

// The Go twin of the kernels in kernels/decode.cu: the same algorithms on
// the same job lists, one call per device thread. The CPU backend runs
// them on goroutines; the tests run the C++ build of the kernels and the
// CUDA backend against them.

// buildLUT is kernel build_lut for table t: it expands the table's huff0
// weights into its decoding table, whose entry i (the next TableLog bits
// of a stream) is code length | symbol<<8. Codes are canonical as in
// huff0: ordered by weight, then by symbol. NewPlan checked that the
// weights make a complete code of at most 11 bits.
func buildLUT(t int, weights []byte, luts []uint16) {
	w := weights[t*WeightsPerTable : (t+1)*WeightsPerTable]
	var rank [16]uint32
	var total uint32
	for _, x := range w {
		rank[x&15]++
		if x > 0 {
			total += 1 << (x - 1)
		}
	}
	tl := uint32(bits.Len32(total)) - 1 // total is 1<<tl
	var start [16]uint32
	var next uint32
	for x := uint32(1); x <= tl; x++ {
		start[x] = next
		next += rank[x] << (x - 1)
	}
	lut := luts[t*LUTEntries : (t+1)*LUTEntries]
	for s, x := range w {
		if x == 0 {
			continue
		}
		e := uint16(tl+1-uint32(x)) | uint16(s)<<8
		for i := start[x]; i < start[x]+1<<x>>1; i++ {
			lut[i] = e
		}
		start[x] += 1 << x >> 1
	}
}

// decodeStream is kernel huff_decode for one job. A huff0 bit stream is
// read from its end: the last byte's highest set bit marks the end, and
// each symbol's code is the next TableLog bits below the read position
// (bits below the stream's start read as 0), of which the table entry's
// code length are consumed. It reports false for a damaged stream (a code
// running past the start, or bits left over).
func decodeStream(j *StreamJob, payload []byte, luts []uint16, scratch []byte) bool {
	src := payload[j.Src : j.Src+j.Len]
	lut := luts[j.Table*LUTEntries : j.Table*LUTEntries+1<<j.TableLog]
	out := scratch[j.Dst : j.Dst+j.N]
	tl := int64(j.TableLog)
	mask := uint64(1)<<tl - 1
	last := src[len(src)-1]
	if last == 0 {
		return false
	}
	p := int64(8*len(src)) - int64(bits.LeadingZeros8(last)+1) // bits left
	b0 := int64(1) << 40                                       // window: bytes [b0, b0+8); first use loads it
	var win uint64
	for k := range out {
		if p-tl < 8*b0 {
			b0 = (p+7)/8 - 8
			win = 0
			for i := int64(7); i >= 0; i-- {
				win <<= 8
				if b0+i >= 0 {
					win |= uint64(src[b0+i])
				}
			}
		}
		e := lut[(win>>uint(p-tl-8*b0))&mask]
		p -= int64(e & 0xff)
		if p < 0 {
			return false
		}
		out[k] = byte(e >> 8)
	}
	return p == 0
}

// pairCount is kernel pair_count for segment t: it counts the escape codes
// among the segment's codes into counts[t] and flags invalid codes in
// bad[job].
func pairCount(t int, pairs []PairJob, segs []uint32, scratch []byte, counts, bad []uint32) {
	ji := segs[t]
	j := &pairs[ji]
	lo := (uint64(t) - j.Seg) * PairSegment
	hi := min(lo+PairSegment, j.M)
	esc := j.K * j.K
	var c uint32
	for i := lo; i < hi; i++ {
		v := uint32(scratch[j.Codes+i])
		if v == esc {
			c++
		} else if v > esc {
			atomic.StoreUint32(&bad[ji], 1) // segments of one job run on several goroutines
		}
	}
	counts[t] = c
}

// pairScan is kernel pair_scan for job ji: it turns its segments' escape
// counts into the index of each segment's first escape, checks that the
// escapes (two exceptions each) and an odd last symbol use the exceptions
// up exactly, and writes that last symbol.
func pairScan(ji int, pairs []PairJob, payload, scratch []byte, counts, bad []uint32) {
	j := &pairs[ji]
	var run uint64
	for s := j.Seg; s < j.Seg+(j.M+PairSegment-1)/PairSegment; s++ {
		c := counts[s]
		counts[s] = uint32(run)
		run += uint64(c)
	}
	if 2*run+j.N&1 != j.X {
		bad[ji] = 1
		return
	}
	if j.N&1 != 0 {
		scratch[j.Dst+j.N-1] = byte(field(&j.Exc, j.X-1, payload, scratch))
	}
}

// pairExpand is kernel pair_expand for segment t: it writes the symbol
// pairs of the segment's codes.
func pairExpand(t int, pairs []PairJob, segs []uint32, payload, scratch []byte, counts []uint32) {
	j := &pairs[segs[t]]
	lo := (uint64(t) - j.Seg) * PairSegment
	hi := min(lo+PairSegment, j.M)
	esc := j.K * j.K
	e := 2 * uint64(counts[t])
	top := payload[j.Top : j.Top+uint64(j.K)]
	out := scratch[j.Dst : j.Dst+j.N]
	for i := lo; i < hi; i++ {
		v := uint32(scratch[j.Codes+i])
		if v < esc {
			out[2*i], out[2*i+1] = top[v/j.K], top[v%j.K]
		} else if v == esc && e+2 <= j.X {
			out[2*i] = byte(field(&j.Exc, e, payload, scratch))
			out[2*i+1] = byte(field(&j.Exc, e+1, payload, scratch))
			e += 2
		}
	}
}

// field reads value i of one source.
func field(s *Source, i uint64, payload, scratch []byte) uint32 {
	switch s.Kind {
	case SrcPayload:
		return uint32(payload[s.Off+i])
	case SrcScratch:
		return uint32(scratch[s.Off+i])
	case SrcPacked:
		bit := i * uint64(s.Width)
		at := s.Off + bit>>3
		v := uint32(payload[at])
		if at+1 < uint64(len(payload)) {
			v |= uint32(payload[at+1]) << 8
		}
		return v >> (bit & 7) & (1<<s.Width - 1)
	}
	return uint32(s.Off)
}

// mergeValue is kernel merge for value i of block b.
func mergeValue(b *BlockJob, i uint64, payload, scratch, out []byte) {
	o := out[b.Out+i*uint64(b.Size):]
	j := i // the value's index in the sources
	if b.Sparse != 0 {
		w := binary.LittleEndian.Uint64(payload[b.Mask+8*(i/64):])
		bit := i % 64
		if w>>bit&1 == 0 {
			for k := uint32(0); k < b.Size; k++ {
				o[k] = 0
			}
			return
		}
		words, wi := (b.N+63)/64, i/64
		j = uint64(binary.LittleEndian.Uint32(payload[b.Mask+8*words+4*(wi/8):]))
		for k := wi &^ 7; k < wi; k++ {
			j += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(payload[b.Mask+8*k:])))
		}
		j += uint64(bits.OnesCount64(w & (1<<bit - 1)))
	}
	sym := field(&b.Src[0], j, payload, scratch)
	var rest uint32
	for k := uint32(1); k < b.NSrc; k++ {
		rest |= field(&b.Src[k], j, payload, scratch) << (8 * (k - 1))
	}
	w := b.S + b.M
	r := (sym&(1<<b.J-1))<<(w-b.J) | rest<<b.Z
	e := sym >> b.J
	v := (r>>b.M)<<(b.M+b.E) | e<<b.M | r&(1<<b.M-1)
	for k := uint32(0); k < b.Size; k++ {
		o[k] = byte(v >> (8 * k))
	}
}

// expHist is kernel exp_hist for value i of block b: it counts the
// exponent field of the decoded value into hist (256 counters per block).
func expHist(b *BlockJob, i uint64, out []byte, hist []uint32) {
	o := out[b.Out+i*uint64(b.Size):]
	var v uint32
	for k := uint32(0); k < b.Size; k++ {
		v |= uint32(o[k]) << (8 * k)
	}
	hist[(v>>b.M)&(1<<b.E-1)]++
}

// cpuBackend runs the twin on goroutines: the reference every device
// backend is compared with.
type cpuBackend struct{ threads int }

// CPU returns the backend that runs the kernels' Go twin on threads
// goroutines (GOMAXPROCS when threads < 1).
func CPU(threads int) Backend {
	if threads < 1 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads, _ = codec.ClampThreads(threads)
	return &cpuBackend{threads: threads}
}

func (c *cpuBackend) Name() string { return "cpu" }
func (c *cpuBackend) Device() string {
	return runtime.GOARCH + " CPU, " + strconv.Itoa(c.threads) + " threads (Go twin of the kernels)"
}
func (c *cpuBackend) Close() error { return nil }

// parallel runs fn(i) for i in [0, n) on the backend's threads, in
// batches, and stops early when ctx is done.
func (c *cpuBackend) parallel(ctx context.Context, n int, fn func(i int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	batch := int64(max(1, min(64, n/(4*c.threads))))
	for t := 0; t < c.threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				s := int(next.Add(batch) - batch)
				if s >= n {
					return
				}
				for i := s; i < min(s+int(batch), n); i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func (c *cpuBackend) Decode(ctx context.Context, p *Plan, out []byte, o DecodeOptions) (Timing, error) {
	if err := checkArgs(p, out, o); err != nil {
		return Timing{}, err
	}
	var best Timing
	var err error
	for rep := 0; rep < max(1, o.Repeat); rep++ {
		t, e := c.decode(ctx, p, out, o.Hist)
		if e != nil {
			return t, e
		}
		if rep == 0 || t.Kernel < best.Kernel {
			best = t
		}
		err = e
	}
	return best, err
}

func (c *cpuBackend) decode(ctx context.Context, p *Plan, out []byte, hist []uint32) (Timing, error) {
	start := time.Now()
	scratch := make([]byte, p.Scratch)
	ns := len(p.Streams)
	bad := make([]uint32, ns+len(p.Pairs))
	luts := make([]uint16, LUTEntries*p.NumTables())
	if err := c.parallel(ctx, p.NumTables(), func(t int) {
		buildLUT(t, p.Weights, luts)
	}); err != nil {
		return Timing{}, err
	}
	if err := c.parallel(ctx, ns, func(i int) {
		if !decodeStream(&p.Streams[i], p.Payload, luts, scratch) {
			bad[i] = 1
		}
	}); err != nil {
		return Timing{}, err
	}
	counts := make([]uint32, len(p.Segs))
	if err := c.parallel(ctx, len(p.Segs), func(t int) {
		pairCount(t, p.Pairs, p.Segs, scratch, counts, bad[ns:])
	}); err != nil {
		return Timing{}, err
	}
	if err := c.parallel(ctx, len(p.Pairs), func(j int) {
		pairScan(j, p.Pairs, p.Payload, scratch, counts, bad[ns:])
	}); err != nil {
		return Timing{}, err
	}
	if err := c.parallel(ctx, len(p.Segs), func(t int) {
		pairExpand(t, p.Pairs, p.Segs, p.Payload, scratch, counts)
	}); err != nil {
		return Timing{}, err
	}
	if err := c.parallel(ctx, len(p.Blocks), func(bi int) {
		b := &p.Blocks[bi]
		for i := uint64(0); i < b.N; i++ {
			mergeValue(b, i, p.Payload, scratch, out)
		}
		if hist != nil {
			h := hist[256*bi : 256*bi+256]
			clear(h)
			for i := uint64(0); i < b.N; i++ {
				expHist(b, i, out, h)
			}
		}
	}); err != nil {
		return Timing{}, err
	}
	d := time.Since(start)
	return Timing{Kernel: d, Total: d}, p.streamErrors(bad)
}
