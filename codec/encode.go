package codec

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeOptions configures Encode and CompressBytes. The zero value is
// ready to use.
type EncodeOptions struct {
	// Threads bounds the number of blocks coded at once; 0 means GOMAXPROCS.
	// Values above MaxThreads are clamped to it, and every call uses at
	// most one thread per block (task). The archive bytes do not depend
	// on it.
	Threads int
	// ChunkValues is the number of float values per block (0 means
	// DefaultChunkValues; MinChunkValues..MaxChunkValues).
	ChunkValues int
	// ZstdLevel is the zstd level (1..22) for opaque bytes and non-float
	// tensors; 0 means 3. Below cmMinLevel (3) no cm blocks are tried
	// (cm.go): opaque bytes stay on zstd, many times faster.
	ZstdLevel int
	// Progress, when set, is called after each block with the original
	// bytes done so far and the total. Calls come from one goroutine.
	Progress func(done, total int64)
	// Digest is the kind of digest Encode stores for each file; 0 means
	// DigestBLAKE3, which the workers compute in parallel. DigestSHA256
	// takes a sequential pass beside the coding (about 1.6 GB/s with
	// SHA-NI), for callers that identify files by their SHA-256.
	Digest Digest
	// Setup, when set, gives encoding its shared tables.
	Setup *Setup
	// SetupExternal stores only the setup's ID in the archive instead of
	// the setup itself; decoding then needs the setup file. The built-in
	// Gaussian setup is always stored so (every reader has it).
	SetupExternal bool
	// SetupThreshold: a block builds its own table when the best shared one
	// is estimated to cost more than this fraction above it (0 means
	// DefaultSetupThreshold).
	SetupThreshold float64
	// Ref, when set, is the reference model: blocks are coded as copies of
	// or differences to it where that is smaller (see ref.go); decoding
	// then needs it (DecodeOptions.Ref).
	Ref *Reference
	// Best also tries codings that decode much slower for a smaller
	// archive. Today that is method 2 of difference blocks (range-coded
	// tokens, see doc.go): about 2 % smaller conditioned frames, decoded
	// an order of magnitude slower. It changes nothing without Ref.
	Best bool
	// NoSparse writes no sparse blocks (sparse.go), no zstd-coded planes
	// (encodeLZPlanes) and no cm blocks (cm.go): the archive stays format
	// version 7, readable by builds that predate versions 8 to 10.
	// Programs that need those versions are then an error.
	NoSparse bool
	// Programs, when set, chooses the program of the tensors it names
	// (tensor name → program, in every input; choice.go) over the
	// setup's Programs and the encoder's own choice. A program that does
	// not apply to the tensor (Program.Applies) is ignored.
	Programs map[string]Program
	// Search, when above 1, searches each tensor's program (searchprog.go,
	// package codec/search): up to Search candidate codings of a sample of
	// the tensor are tried, in the order the setup's prior ranks them, and
	// the tensor is coded with the cheapest (bytes, its own bytes and a
	// fixed decoding-time term; never one estimated larger than the
	// encoder's own choice, which is always tried first). 0 (and 1) is
	// the encoder's own choice alone. Tensors named in Programs or the
	// setup's Programs keep theirs; with Ref nothing is searched. The
	// archive does not depend on Threads.
	Search int

	// picks, when set, is each input's searched programs (tensor name →
	// pick), over the setup's and below Programs; the search's sample
	// coder sets it too.
	picks []map[string]pick
	// arch, when set, is what the archive's probe found in the whole
	// input (sparse blocks, zstd planes allowed): the search's sample
	// coder codes with it as the archive does
	arch *archProbe

	// Sums, when set, are the BLAKE3 digests of the inputs, in order, as
	// the caller knows them already (a content address, the store's):
	// the archive stores them and the workers do not hash the inputs
	// again. Only with BLAKE3 digests; a wrong sum makes an archive that
	// fails its check.
	Sums [][32]byte
}

// DecodeOptions configures decoding: Decode, DecompressBytes and the
// Reader's WriteFile, WriteTensor, ReadFile, ReadFileTo and Verify. The
// zero value is ready to use.
type DecodeOptions struct {
	// Threads bounds the number of blocks decoded at once; 0 means
	// GOMAXPROCS (clamped to MaxThreads). The output does not depend on it.
	Threads int
	// Progress, when set, is called after each block with the original
	// bytes done so far and the total. Calls come from one goroutine.
	Progress func(done, total int64)
	// SkipHash skips the whole-file digest check (block CRC-32C checks
	// still run).
	SkipHash bool
	// Setup is the setup of an archive that references one externally
	// (Decode and DecompressBytes; a Reader takes it with UseSetup).
	Setup *Setup
	// Ref is the reference model of an archive coded against one (Decode
	// and DecompressBytes; a Reader takes it with UseRef).
	Ref *Reference
}

// Decoding is what decoding an archive written with o needs: the same
// threads, setup and reference.
func (o EncodeOptions) Decoding() DecodeOptions {
	return DecodeOptions{Threads: o.Threads, Setup: o.Setup, Ref: o.Ref}
}

func threadsOf(n int) int {
	if n > 0 {
		t, _ := ClampThreads(n)
		return t
	}
	return runtime.GOMAXPROCS(0)
}

// ThreadCount is how many goroutines a call codes blocks on: Threads
// clamped to MaxThreads, or GOMAXPROCS when Threads is 0.
func (o *EncodeOptions) ThreadCount() int { return threadsOf(o.Threads) }

// ThreadCount is how many goroutines a call decodes blocks on: Threads
// clamped to MaxThreads, or GOMAXPROCS when Threads is 0.
func (o *DecodeOptions) ThreadCount() int { return threadsOf(o.Threads) }

func (o *EncodeOptions) validate() error {
	if o.ChunkValues != 0 && (o.ChunkValues < MinChunkValues || o.ChunkValues > MaxChunkValues) {
		return fmt.Errorf("codec: chunk size %d outside %d..%d", o.ChunkValues, MinChunkValues, MaxChunkValues)
	}
	if o.ZstdLevel < 0 || o.ZstdLevel > 22 {
		return fmt.Errorf("codec: zstd level %d outside 1..22", o.ZstdLevel)
	}
	if o.Search < 0 {
		return fmt.Errorf("codec: negative search budget %d", o.Search)
	}
	if o.Threads < 0 {
		return fmt.Errorf("codec: negative thread count %d", o.Threads)
	}
	if !(o.SetupThreshold >= 0) {
		return fmt.Errorf("codec: setup threshold %v: not a fraction of 0 or more", o.SetupThreshold)
	}
	if o.Digest != 0 && !o.Digest.known() {
		return fmt.Errorf("codec: unknown digest kind %d", o.Digest)
	}
	return nil
}

// ctxOr is ctx, or the background context when ctx is nil.
func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// Input is one original file to compress.
type Input struct {
	Name     string      // stored in the archive (e.g. the base name)
	R        io.ReaderAt // read concurrently with ReadAt
	Size     int64
	Format   string    // loader format name, recorded for inspection
	Segments []Segment // layout; nil means all opaque
}

// Result summarises an encode.
type Result struct {
	Original   int64       // bytes of all inputs
	Compressed int64       // bytes of the archive
	Search     SearchStats // the program search (EncodeOptions.Search)
}

// encTask is a run of consecutive blocks of one file in flight: they are
// read with one ReadAt and coded by one worker, so small blocks do not each
// pay for a hand-off between goroutines.
type encTask struct {
	file  int
	plans []blockPlan
	in    *[]byte // original bytes of all blocks
	inMem bool    // in is a slice of an in-memory input (Bytes), not a pooled buffer
	out   *[]byte // payloads of all blocks, back to back
	info  []blockInfo
	err   error
	done  chan struct{}
	// in is read once, by the worker or the SHA-256 hasher, whichever
	// comes first (loadErr tells whether that failed); dispatched is
	// closed once the task is handed out, hashed once the hasher (or, for
	// BLAKE3, the worker) is done with in
	loadOnce           sync.Once
	loadErr            error
	dispatched, hashed chan struct{}
	part               treePart // BLAKE3: what the worker computed of in
}

// load gives the task its input (see loadTask), once.
func (t *encTask) load(r io.ReaderAt) error {
	t.loadOnce.Do(func() { t.loadErr = loadTask(r, t) })
	return t.loadErr
}

// minTaskBytes: consecutive blocks are grouped into tasks of at least this
// many original bytes (or the rest of the file).
const minTaskBytes = 256 << 10

// taskEnd returns the end of the task that starts at block i of n, where
// length(b) is block b's original length.
func taskEnd(n, i int, length func(int) int64) int {
	j, sz := i, int64(0)
	for j < n && (sz < minTaskBytes || j == i) {
		sz += length(j)
		j++
	}
	return j
}

// freeBufs recycles block buffers (inputs, payloads, outputs) between
// blocks and calls. A bounded free list rather than a sync.Pool: the pool
// is emptied at every garbage collection and hands buffers to other Ps, and
// block buffers are large enough that reallocating them dominated small
// blocks.
var freeBufs = make(chan *[]byte, 64)

func getBuf(n int) *[]byte {
	var p *[]byte
	select {
	case p = <-freeBufs:
	default:
		b := make([]byte, 0, max(n, 1<<16))
		p = &b
	}
	if cap(*p) < n {
		*p = make([]byte, n, n+n/4)
	}
	*p = (*p)[:n]
	return p
}

func putBuf(p *[]byte) {
	if p == nil || cap(*p) > 8<<20 {
		return
	}
	select {
	case freeBufs <- p:
	default:
	}
}

// Encode writes an archive of the inputs to w. Blocks are coded in parallel
// (opt.Threads), written in order, with memory bounded by a few blocks per
// thread. The same inputs give the same bytes at any thread count.
func Encode(ctx context.Context, w io.Writer, inputs []Input, opt EncodeOptions) (Result, error) {
	var res Result
	if err := opt.validate(); err != nil {
		return res, err
	}
	if opt.Sums != nil && (len(opt.Sums) != len(inputs) || opt.Digest == DigestSHA256) {
		return res, fmt.Errorf("codec: %d BLAKE3 sums for %d inputs (digest %v)", len(opt.Sums), len(inputs), opt.Digest)
	}
	if opt.Search > 1 && opt.Ref == nil {
		var err error
		if opt.picks, res.Search, err = searchInputs(ctxOr(ctx), inputs, opt); err != nil {
			return res, err
		}
	}
	e, err := planEncode(inputs, opt)
	if err != nil {
		return res, err
	}
	res.Original = e.total
	ctx, cancel := context.WithCancel(ctxOr(ctx))
	defer cancel()
	e.ctx, e.cancel = ctx, cancel
	e.startSHA256()
	order := e.startWorkers()

	// buffered writes, except into memory (CompressBytes): no second copy
	cw := &archiveWriter{}
	if b, ok := w.(*bytes.Buffer); ok {
		cw.w = nopFlusher{b}
	} else {
		cw.w = bufio.NewWriterSize(w, 1<<20)
	}
	var hdr [headerLen]byte
	copy(hdr[:], Magic[:])
	binary.LittleEndian.PutUint16(hdr[8:], uint16(e.idx.version))
	binary.LittleEndian.PutUint16(hdr[10:], e.idx.flags)
	werr := cw.write(hdr[:])
	if err := e.writeBlocks(cw, order, werr); err != nil {
		return res, err
	}
	if err := e.sums(); err != nil {
		return res, err
	}
	if err := writeIndex(cw, e.idx, e.zenc); err != nil {
		return res, err
	}
	res.Compressed = cw.n
	return res, nil
}

// encodeRun is the state of one Encode call shared by its planner,
// hashers, workers and writer.
type encodeRun struct {
	inputs    []Input
	opt       EncodeOptions
	idx       *indexData
	tasks     []*encTask
	total     int64
	threads   int
	threshold float64
	zenc, zlz *zstd.Encoder
	zfast     *zstd.Encoder
	zwhole    *zstd.Encoder // whole tensors whose words repeat (encodeLZWhole), or nil
	shas      []hash.Hash   // SHA-256 digests, one per input (or nil)
	trees     []treeHash    // BLAKE3 digests, one per input (or nil)
	// writerHashes: the writer, not the worker, hashes each coded task
	// (startWorkers)
	writerHashes bool
	ctx          context.Context
	cancel       context.CancelFunc
	hwg, wg      sync.WaitGroup // the SHA-256 hasher; the workers
	sparse       bool           // the probe found zeros: version 8, sparse blocks allowed (sparse.go)
	lzPlanes     bool           // the probe found repeats: version 9, zstd-coded planes allowed (encodeLZPlanes)
	cm           bool           // the probe found opaque bytes for cm blocks: version 10 (probeOpaque)
	records      bool           // the plan has records blocks: version 11 (records.go)
	byteRecords  bool           // records blocks of 8-bit integer tensors: version 12
	whole        bool           // the plan has whole-tensor blocks (mergeLZTensors)
	repeat       bool           // and some may be repeat blocks (repeatType; version 13)
}

// planEncode plans every file first (cheap: segment lists only), groups
// the blocks into tasks and prepares the index, encoders and digests.
func planEncode(inputs []Input, opt EncodeOptions) (*encodeRun, error) {
	chunk := opt.ChunkValues
	if chunk == 0 {
		chunk = DefaultChunkValues
	}
	level := opt.ZstdLevel
	if level == 0 {
		level = 3
	}
	e := &encodeRun{inputs: inputs, opt: opt, threshold: opt.SetupThreshold}
	if e.threshold == 0 {
		e.threshold = DefaultSetupThreshold
	}
	idx := &indexData{version: Version, chunkValues: chunk}
	e.idx = idx
	digest := opt.Digest
	if digest == 0 {
		digest = DigestBLAKE3
	}
	if opt.Setup != nil {
		idx.setupID = opt.Setup.ID()
		idx.setupMode = setupEmbedded
		idx.setupRaw = opt.Setup.Bytes()
		if opt.SetupExternal || opt.Setup.IsGaussian() {
			idx.setupMode, idx.setupRaw = setupExternal, nil
		}
	}
	if opt.Ref != nil {
		idx.flags |= flagRef
		idx.refs = opt.Ref.Files()
	}
	forced := 0 // the format version the chosen programs need
	for i, in := range inputs {
		if in.Size < 0 {
			return nil, fmt.Errorf("codec: input %q: negative size", in.Name)
		}
		var programs func(Segment) pick
		var picks map[string]pick
		if i < len(opt.picks) {
			picks = opt.picks[i]
		}
		if opt.Programs != nil || len(opt.Setup.programs()) > 0 || len(picks) > 0 {
			programs = func(g Segment) pick {
				p := pick{p: programOf(g, &opt)}
				if _, named := opt.Programs[g.Name]; !named && g.IsTensor() {
					if s, ok := picks[g.Name]; ok && s.p.Applies(g, opt.Setup) {
						p = s
					}
				}
				if v := p.p.version(); v > forced {
					forced = v
				}
				return p
			}
		}
		plans, err := planBlocks(in.Segments, in.Size, chunk, programs)
		if err != nil {
			return nil, fmt.Errorf("codec: input %q: %w", in.Name, err)
		}
		if opt.NoSparse && forced > denseVersion {
			return nil, fmt.Errorf("codec: input %q: a chosen program needs format version %d, NoSparse keeps %d", in.Name, forced, denseVersion)
		}
		if !opt.NoSparse {
			sparse, repeats := probeBlocks(in.R, plans, opt.Best)
			e.sparse = e.sparse || sparse
			e.lzPlanes = e.lzPlanes || repeats
			// cm blocks only by bytes alone (Best): on real quantised
			// weights they save 0.1-2 % for decoding some 15-100 times
			// slower, less than the exchange rate asks (cost.go), and
			// trying them costs compression at ~12 MB/s
			if !e.cm && opt.Best && level >= cmMinLevel {
				if e.cm, err = probeOpaque(in.R, plans); err != nil {
					return nil, err
				}
			}
		}
		if !opt.NoSparse && opt.Ref == nil {
			plans = mergeLZTensors(plans)
		}
		for _, p := range plans {
			e.records = e.records || p.rec != nil
			e.byteRecords = e.byteRecords || p.rec == byteRecords && p.rec != nil
			e.whole = e.whole || p.parts > 0
			e.repeat = e.repeat || p.parts > 0 && p.repeatTry && repeatType(p.dtype, p.tensorRow, p.length)
		}
		if opt.Ref != nil {
			if err := opt.Ref.mapPlans(plans, in.Segments, in.Size, in.Name, len(inputs)); err != nil {
				return nil, fmt.Errorf("codec: input %q: %w", in.Name, err)
			}
			for k := range plans {
				if plans[k].force != ProgramAuto {
					plans[k].ref = 0 // a chosen program over the reference
				}
			}
		}
		for j := 0; j < len(plans); {
			k := taskEnd(len(plans), j, func(b int) int64 { return plans[b].length })
			e.tasks = append(e.tasks, &encTask{file: i, plans: plans[j:k], done: make(chan struct{}), dispatched: make(chan struct{}), hashed: make(chan struct{})})
			j = k
		}
		f := &FileInfo{Name: in.Name, Size: in.Size, Format: in.Format, Digest: digest}
		for _, s := range in.Segments {
			if s.IsTensor() {
				f.Tensors = append(f.Tensors, TensorInfo{Name: s.Name, DType: s.DType, Type: s.Type, Shape: s.Shape, Offset: s.Offset, Length: s.Length})
			}
		}
		idx.files = append(idx.files, f)
		e.total += in.Size
	}
	idx.version = max(versionFor(e.sparse, e.lzPlanes, e.cm, e.records), forced)
	if e.byteRecords {
		idx.version = max(idx.version, byteRecordsVersion)
	}
	if e.repeat {
		idx.version = max(idx.version, repeatVersion)
	}
	var err error
	if e.zenc, err = zstdEncoder(level); err != nil {
		return nil, err
	}
	if e.zlz, err = zstdEncoder(zstdPlanesLevel); err != nil {
		return nil, err
	}
	if e.zfast, err = zstdEncoder(zstdFewMatchesLevel); err != nil {
		return nil, err
	}
	if e.whole && level < zstdWholeLevel {
		if e.zwhole, err = zstdEncoder(zstdWholeLevel); err != nil {
			return nil, err
		}
	}
	e.threads = min(opt.ThreadCount(), max(1, len(e.tasks)))
	// The digests are computed beside the coding (hashing each task as it
	// is written would leave the last tasks' hashing for after the
	// coding). BLAKE3: the worker that codes a task hashes the whole
	// subtrees of its bytes right after coding them, while they are still
	// in the core's cache (a hasher of its own read them first, from
	// memory: one-thread compression was 15 % slower), and the writer
	// merges the parts in order (treeHash). With one worker and a core to
	// spare, the writer hashes each task after it was coded, while the
	// worker codes the next (writerHashes: one-thread compression of
	// real-bf16 10-15 % faster). SHA-256, sequential: see startSHA256.
	if digest == DigestSHA256 {
		e.shas = make([]hash.Hash, len(inputs))
		for i := range e.shas {
			e.shas[i] = sha256.New()
		}
	} else if opt.Sums == nil {
		e.trees = make([]treeHash, len(inputs))
	}
	return e, nil
}

// startSHA256 starts the SHA-256 hasher, when the archive stores SHA-256
// digests: one goroutine, in file order, which takes each task as soon as
// it is handed out, reading its input itself when no worker has yet, so
// that each byte of a file is read once, and runs at most the dispatch
// window ahead of the writer. An input in memory is hashed in place from
// the start (waiting for the dispatch there made two-thread coding 9 %
// slower).
func (e *encodeRun) startSHA256() {
	if e.shas == nil {
		return
	}
	var next atomic.Int64
	e.hwg.Add(1)
	go func() {
		defer e.hwg.Done()
		for {
			i := next.Add(1) - 1
			if i >= int64(len(e.tasks)) {
				return
			}
			t := e.tasks[i]
			r := e.inputs[t.file].R
			if _, mem := inPlace(r, t.plans[0].off, 0); !mem {
				// a file: read only what the workers take next
				select {
				case <-t.dispatched:
				case <-e.ctx.Done():
					return
				}
			} else if e.ctx.Err() != nil {
				return
			}
			if t.load(r) != nil {
				return // Encode fails with the task's error
			}
			e.shas[t.file].Write(*t.in)
			close(t.hashed)
		}
	}()
}

// startWorkers starts the coding workers and the dispatcher, which hands
// the tasks out in order, at most a window ahead of the writer; it returns
// the tasks in file order, for the writer. A run of one task is coded
// before it returns, on this goroutine (runInline).
func (e *encodeRun) startWorkers() <-chan *encTask {
	if len(e.tasks) == 1 {
		return e.runInline()
	}
	// one coding worker and a core to spare: the writer hashes each task
	// (BLAKE3) while the worker codes the next
	e.writerHashes = e.trees != nil && e.threads == 1 && runtime.GOMAXPROCS(0) > 1
	window := 2*e.threads + 2
	order := make(chan *encTask, window)
	work := make(chan *encTask, window)
	for range e.threads {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			be := e.blockEncoder()
			defer blockEncoders.Put(be)
			for t := range work {
				e.code(be, t)
			}
		}()
	}
	go func() {
		defer close(work)
		defer close(order)
		for _, t := range e.tasks {
			select {
			case order <- t:
				close(t.dispatched)
			case <-e.ctx.Done():
				return
			}
			select {
			case work <- t:
			case <-e.ctx.Done():
				close(t.done)
				return
			}
		}
	}()
	return order
}

// runInline codes the only task of a run on the calling goroutine, as
// startWorkers' one worker would, and hands it to the writer: a small
// file (a store's tensor) pays for no goroutines, channels between them
// or fresh stacks to grow.
func (e *encodeRun) runInline() <-chan *encTask {
	t := e.tasks[0]
	order := make(chan *encTask, 1)
	close(t.dispatched)
	be := e.blockEncoder()
	e.code(be, t)
	blockEncoders.Put(be)
	order <- t
	close(order)
	return order
}

// blockEncoder is a pooled block encoder set up for this run.
func (e *encodeRun) blockEncoder() *blockEncoder {
	be := blockEncoders.Get().(*blockEncoder)
	be.zstd, be.zstdPlanes, be.zstdFast, be.zstdWhole = e.zenc, e.zlz, e.zfast, e.zwhole
	be.lzPlanes, be.cm, be.repeat = e.lzPlanes, e.cm, e.repeat
	be.setup, be.threshold, be.best = e.opt.Setup, e.threshold, e.opt.Best
	be.sp.on = e.sparse
	return be
}

// code loads and codes task t with be (and computes its part of the
// BLAKE3 tree), then marks it done.
func (e *encodeRun) code(be *blockEncoder, t *encTask) {
	if t.err = t.load(e.inputs[t.file].R); t.err == nil {
		t.err = encodeTask(be, e.opt.Ref, t)
		switch {
		case t.err == nil && e.trees != nil && !e.writerHashes:
			t.part.hash(*t.in, t.plans[0].off, e.inputs[t.file].Size)
			close(t.hashed)
		case t.err == nil && e.trees == nil && e.shas == nil:
			close(t.hashed) // the sums were given (EncodeOptions.Sums)
		}
	}
	close(t.done)
}

// writeBlocks writes the coded tasks in order (werr: an error already met)
// and returns once every worker and hasher has stopped.
func (e *encodeRun) writeBlocks(cw *archiveWriter, order <-chan *encTask, werr error) error {
	// empty files have no blocks
	var done int64
	var dd deduper
	for t := range order {
		<-t.done
		if e.writerHashes && t.err == nil && t.in != nil && werr == nil && e.ctx.Err() == nil {
			// (a task the workers left for a cancellation was not loaded)
			t.part.hash(*t.in, t.plans[0].off, e.inputs[t.file].Size)
			close(t.hashed)
		}
		if werr == nil && t.err == nil && e.ctx.Err() != nil {
			werr = e.ctx.Err()
		}
		if werr == nil && t.err != nil {
			werr = t.err
		}
		if werr == nil {
			f := e.idx.files[t.file]
			werr = dd.task(t, e.inputs, len(f.blocks))
			f.blocks = append(f.blocks, t.info...)
			if werr == nil {
				werr = cw.write(*t.out)
			}
			done += int64(len(*t.in))
			if e.opt.Progress != nil {
				e.opt.Progress(done, e.total)
			}
		}
		if werr != nil {
			e.cancel()
		}
		// the input goes back to the pool once hashed; after an error the
		// hasher may still be reading (or loading) it: it is left to the GC
		select {
		case <-t.hashed:
			if werr == nil && e.trees != nil {
				werr = e.trees[t.file].add(&t.part)
			}
			if !t.inMem {
				putBuf(t.in)
			}
		case <-e.ctx.Done():
		}
		putBuf(t.out)
	}
	e.wg.Wait()
	if werr != nil {
		e.cancel() // the hashers stop before Encode returns
	}
	e.hwg.Wait()
	if werr == nil && e.ctx.Err() != nil {
		werr = e.ctx.Err()
	}
	return werr
}

// sums puts each file's digest into the index.
func (e *encodeRun) sums() error {
	for i, f := range e.idx.files {
		switch {
		case e.shas != nil:
			copy(f.Sum[:], e.shas[i].Sum(nil))
			f.SHA256 = f.Sum
		case e.trees == nil:
			f.Sum = e.opt.Sums[i]
		default:
			f.Sum = e.trees[i].sum()
		}
		if len(f.blocks) == 0 && f.Size != 0 {
			return errors.New("codec: internal error: file without blocks")
		}
	}
	return nil
}

// writeIndex writes the index and the trailer, and flushes.
func writeIndex(cw *archiveWriter, idx *indexData, zenc *zstd.Encoder) error {
	raw := idx.marshal()
	ix := zenc.EncodeAll(raw, nil)
	if n := cw.n + int64(len(ix)) + trailerLen; int64(len(raw)) > maxIndexRawFor(n) {
		// millions of tensors without data: a reader would refuse the index
		return fmt.Errorf("codec: an index of %d bytes (%d tensors) for an archive of %d bytes is more than a reader accepts", len(raw), countTensors(idx), n)
	}
	indexOff := cw.n
	if err := cw.write(ix); err != nil {
		return err
	}
	var tr [trailerLen]byte
	binary.LittleEndian.PutUint64(tr[0:], uint64(indexOff))
	binary.LittleEndian.PutUint64(tr[8:], uint64(len(ix)))
	binary.LittleEndian.PutUint32(tr[16:], uint32(len(raw)))
	binary.LittleEndian.PutUint32(tr[20:], crc32c(ix))
	copy(tr[24:], TrailerMagic[:])
	if err := cw.write(tr[:]); err != nil {
		return err
	}
	return cw.w.Flush()
}

// archiveWriter counts the bytes written through it.
type archiveWriter struct {
	w interface {
		io.Writer
		Flush() error
	}
	n int64
}

func (c *archiveWriter) write(p []byte) error {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return err
}

// nopFlusher is a bytes.Buffer with the Flush of a bufio.Writer.
type nopFlusher struct{ *bytes.Buffer }

func (nopFlusher) Flush() error { return nil }

// loadTask gives a task its input: a slice of an in-memory input (the
// coders and the hasher only read it) or a pooled buffer read from r.
func loadTask(r io.ReaderAt, t *encTask) error {
	first, last := t.plans[0], t.plans[len(t.plans)-1]
	lo, hi := first.off, last.off+last.length
	if s, ok := inPlace(r, lo, hi-lo); ok {
		t.in, t.inMem = &s, true
		return nil
	}
	t.in, t.inMem = getBuf(int(hi-lo)), false
	return readFull(r, *t.in, first.off)
}

// encodeTask codes the blocks of a loaded task one by one.
func encodeTask(be *blockEncoder, ref *Reference, t *encTask) error {
	first := t.plans[0]
	t.out = getBuf(0)
	out := (*t.out)[:0]
	t.info = t.info[:0]
	be.run = runMemo{}
	be.lzFew, be.lzTryLost = false, false
	var cut []blockPlan // t.plans with opaque blocks cut where floats start (encodeFoundLead)
	for i, p := range t.plans {
		in := (*t.in)[p.off-first.off : p.off-first.off+p.length]
		mark := len(out)
		var kind byte
		if p.float && p.ref == 0 {
			be.startRun(p, int(p.length)/p.dtype.Size())
		} else {
			be.run = runMemo{}
		}
		if p.force != ProgramAuto {
			// the tensor's chosen program (choice.go)
			out, kind = be.encodeProgram(out, in, p)
			if cut != nil {
				cut = append(cut, p)
			}
			d := p.dtype
			if kind != kindFloat {
				d = 0
			}
			t.info = append(t.info, blockInfo{kind: kind, dtype: d, origLen: p.length, compLen: int64(len(out) - mark), crc: crc32c(in)})
			continue
		}
		if p.ref != 0 {
			var info blockInfo
			var err error
			if out, info, err = be.encodeWithRef(out, in, ref, p); err != nil {
				return err
			}
			t.info = append(t.info, info)
			if cut != nil {
				cut = append(cut, p)
			}
			continue
		}
		if p.parts > 0 {
			// a whole tensor whose words repeat: its blocks, or one
			// zstd block of it, whichever is smaller
			var parts []blockPlan
			var infos []blockInfo
			if out, parts, infos, kind = be.encodeLZWhole(out, in, p); parts != nil {
				if cut == nil {
					cut = append(make([]blockPlan, 0, len(t.plans)+len(parts)), t.plans[:i]...)
				}
				cut = append(cut, parts...)
				t.info = append(t.info, infos...)
				continue
			}
		} else if p.float {
			out, kind = be.encodeFloatPlan(out, in, p, i+1 < len(t.plans) && t.plans[i+1].cont)
		} else if p.rec != nil {
			out, kind = be.encodeRecords(out, in, p.rec)
		} else {
			out, kind = be.encodeGeneric(out, in)
			// floats in opaque bytes, kept where they code smaller
			if flt, fd, ok := be.encodeFound(out[:mark], in, len(out)-mark); ok {
				out, kind, p.dtype = flt, kindFloat, fd
			} else if _, lead := foundFloatAt(in); lead > 0 {
				// floats after a header of odd length: the block is cut
				// into the lead, the floats and the bytes after them
				if o, parts, ok := be.encodeFoundLead(out[:mark], in, lead, len(out)-mark); ok {
					out = o
					if cut == nil {
						cut = append(make([]blockPlan, 0, len(t.plans)+2), t.plans[:i]...)
					}
					off := p.off
					for _, q := range parts {
						b := in[off-p.off : off-p.off+q.origLen]
						cut = append(cut, blockPlan{off: off, length: q.origLen})
						t.info = append(t.info, blockInfo{kind: q.kind, dtype: q.dtype, origLen: q.origLen, compLen: q.compLen, crc: crc32c(b)})
						off += q.origLen
					}
					continue
				}
			} else {
				out, kind = be.encodeCM(out, mark, in, kind)
			}
		}
		if cut != nil {
			cut = append(cut, p)
		}
		d := p.dtype
		if kind != kindFloat {
			d = 0
		}
		t.info = append(t.info, blockInfo{kind: kind, dtype: d, origLen: p.length, compLen: int64(len(out) - mark), crc: crc32c(in)})
	}
	*t.out = out
	if cut != nil {
		t.plans = cut
	}
	return nil
}

// encodeFloatPlan appends the float block in (plan p, not a reference
// block) and returns its kind: the float coder's form (dense or sparse),
// stored, or zstd. more says a block of the same tensor follows.
func (be *blockEncoder) encodeFloatPlan(out, in []byte, p blockPlan, more bool) ([]byte, byte) {
	mark := len(out)
	out = be.encodeFloatBlock(out, in, p)
	kind := byte(kindFloat)
	// A float block never stores more than the raw bytes plus a
	// small header; if it would, store it.
	if len(out)-mark >= len(in)+1 {
		out = append(out[:mark], in...)
		kind = kindStored
	}
	// Never worse than zstd: a block whose words repeat enough that zstd
	// may code it smaller (lzRepeats; the blocks of a tensor whose probe
	// found repeated words, lzTry, too large for one block: all where its
	// first block (in the task) found zstd smaller, lzTryLost) is also
	// coded by zstd at the archive's level, and as byte planes coded by
	// zstd where that may pay (lzTryPlanes), and the smallest kept.
	force := p.lzTry && (!p.cont || !be.lzTryLost)
	if force || be.lzWorth(in, len(out)-mark, p.cont, more) {
		coded := len(out) - mark
		be.lz = be.zstd.EncodeAll(in, be.lz[:0])
		fast := len(be.lz)
		if fast < coded {
			out = append(out[:mark], be.lz...)
			kind = kindZstd
		}
		if be.lzPlanes && p.dtype.Size() > 1 && len(in) >= lzPlanesMinBytes && lzTryPlanes(fast, coded) {
			be.lz = be.encodeLZPlanes(be.lz[:0], in, p.dtype.Size())
			if len(be.lz) < len(out)-mark {
				out = append(out[:mark], be.lz...)
				kind = kindFloat
			}
		}
		if p.lzTry && !p.cont {
			be.lzTryLost = len(out)-mark == coded
		}
	}
	return out, kind
}

// encodeLZWhole appends the coding of a whole tensor p (parts > 0,
// mergeLZTensors): its float blocks as encodeFloatPlan codes them (each
// tried through zstd where lzWorth says so), or one
// zstd block of all its bytes where that is smaller: at the archive's
// level, and at zstdWholeLevel where that already wins or ties (its lazy matching finds the short repeats of formula-made tables: the
// windowed 512-point DFT basis, 444,687 bytes at level 3, is 300,710 at
// this level). It returns the blocks' plans and infos when they are kept,
// nil when the zstd block is.
func (be *blockEncoder) encodeLZWhole(out, in []byte, p blockPlan) ([]byte, []blockPlan, []blockInfo, byte) {
	mark := len(out)
	be.whole = splitParts(p, be.whole[:0])
	be.wholeInfo = be.wholeInfo[:0]
	for k, q := range be.whole {
		m := len(out)
		b := in[q.off-p.off : q.off-p.off+q.length]
		be.startRun(q, int(q.length)/q.dtype.Size())
		var kind byte
		out, kind = be.encodeFloatPlan(out, b, q, k+1 < len(be.whole))
		d := q.dtype
		if kind != kindFloat {
			d = 0
		}
		be.wholeInfo = append(be.wholeInfo, blockInfo{kind: kind, dtype: d, origLen: q.length, compLen: int64(len(out) - m), crc: crc32c(b)})
	}
	coded := len(out) - mark
	be.lz = be.zstd.EncodeAll(in, be.lz[:0])
	if be.zstdWhole != nil && len(in) >= zstdWholeMinBytes && len(be.lz) <= coded {
		be.lzAlt = be.zstdWhole.EncodeAll(in, be.lzAlt[:0])
		if len(be.lzAlt) < len(be.lz) {
			be.lz, be.lzAlt = be.lzAlt, be.lz
		}
	}
	// the repeat block (repeat.go) where the archive may hold it: kept
	// where it saves at least 1/gain of the smaller of the two (on the
	// tables it is made for it saves half or more; sparse activations,
	// whose zeros it matches too, gain 0.1 %; a trained F32 filter
	// widened from F16 in an unseen model 6.7 %, for a tenth of its
	// decoding speed) and, on the default path, enough for its slower
	// decoding
	if be.repeat && p.repeatTry && repeatType(p.dtype, p.tensorRow, p.length) {
		be.repOut = be.encodeRepeat(be.repOut[:0], in, p)
		alt := min(coded, len(be.lz))
		gain := repeatMinGain
		if be.best {
			gain = repeatMinGainBest
		}
		if r := len(be.repOut); gain*r <= (gain-1)*alt && (be.best || slowerPays(alt-r, len(in)/p.dtype.Size(), costRepeatPs)) {
			return append(out[:mark], be.repOut...), nil, nil, kindRepeat
		}
	}
	if len(be.lz) < coded {
		return append(out[:mark], be.lz...), nil, nil, kindZstd
	}
	return out, be.whole, be.wholeInfo, 0
}

// repeatMinGain: on the default path a repeat block must save
// 1/repeatMinGain of a whole tensor's other coding (encodeLZWhole), so
// that only tables made of repeats take its ~150 MB/s decoding (the DFT
// and DCT bases save 53-73 %); repeatMinGainBest: the same under Best.
const (
	repeatMinGain     = 4
	repeatMinGainBest = 16
)

// zstdWholeLevel is the zstd level also tried on whole tensors whose
// words repeat (encodeLZWhole) where the archive's level is lower.
const zstdWholeLevel = 11

// zstdWholeMinBytes: smaller tensors are not tried at zstdWholeLevel,
// whose encoder clears its tables for every call (about 0.2 ms: a 12,800
// byte DCT basis takes 0.3 ms at that level, 4,008 bytes against 6,178).
const zstdWholeMinBytes = 4 << 10

// readFull reads len(p) bytes at off; a short read is an error even when the
// reader reports io.EOF.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	return readFullAt(r, p, off, 0)
}

// readFullAt is readFull of an archive that starts at base in the file
// its errors name (NewSectionReader).
func readFullAt(r io.ReaderAt, p []byte, off, base int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("codec: read %d bytes at offset %d: %w", len(p), base+off, err)
}

func countTensors(x *indexData) int {
	n := 0
	for _, f := range x.files {
		n += len(f.Tensors)
	}
	return n
}
