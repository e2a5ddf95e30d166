package trajectory

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"neuralzip/codec"
)

// Stream is frame i of a trajectory opened for reading with bounded
// memory (Archive.Stream): a codec.Reader of the frame's .nzip archive
// whose reference frame — and that frame's reference, down to the
// keyframe — is decoded from the trajectory block by block as the reader
// asks for it. Decoding a block of frame i decodes the block of its
// reference frame that it is coded against, and so on down the chain, so
// a whole step goes through memory a few blocks at a time per thread
// instead of as two whole frames (Extract). Every block's CRC-32C is
// checked on the way; WriteFile checks the file's SHA-256 too.
type Stream struct {
	*codec.Reader                 // frame i
	chain         []*codec.Reader // keyframe first; the last is Reader
	files         []*frameFile    // the chain's lazily decoded files
}

// Close closes the readers of the chain.
func (s *Stream) Close() error {
	var err error
	for _, rd := range s.chain {
		err = errors.Join(err, rd.Close())
	}
	s.chain, s.files = nil, nil
	return err
}

// WriteFile writes file k of the frame (codec.Reader.WriteFile), then
// lets go of the blocks of the chain kept for reads that straddle them.
func (s *Stream) WriteFile(ctx context.Context, w io.Writer, k int, opt codec.DecodeOptions) error {
	err := s.Reader.WriteFile(ctx, w, k, opt)
	for _, ff := range s.files {
		ff.dropCache()
	}
	return err
}

// wholeAbove: a chain (Stream) or keyframe group (Verify) whose blocks in
// memory could take more than this is read block by block only when
// decoding its frames whole would take more.
var wholeAbove int64 = 256 << 20 // tests lower it

// Stream opens frame i for reading with bounded memory (see Stream). The
// trajectory's reader must stay open until the stream is closed.
//
// Each level of the chain holds a few blocks per thread while a block of
// frame i decodes, so a long chain of small steps would take more memory
// streamed than decoded whole: when the blocks in flight could take more
// than 256 MiB and more than two of the chain's steps, frame i's reference
// frame is decoded whole (Extract: two steps in memory) and frame i is
// read against it instead.
func (a *Archive) Stream(i int) (*Stream, error) {
	return a.StreamWith(context.Background(), i, codec.DecodeOptions{})
}

// StreamWith is Stream with the options the whole decode of a reference
// frame takes, when Stream falls back to it: ctx cancels it and
// opt.Threads bounds its threads (and the blocks in flight Stream counts
// when it decides).
func (a *Archive) StreamWith(ctx context.Context, i int, opt codec.DecodeOptions) (*Stream, error) {
	chain, err := a.Chain(i)
	if err != nil {
		return nil, err
	}
	s := &Stream{}
	var step, block int64 // the chain's largest step and block
	for _, j := range chain {
		rd, err := a.FrameReader(j)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.chain = append(s.chain, rd)
		step = max(step, a.Frames[j].Size)
		for _, fi := range rd.Files() {
			for _, b := range fi.Blocks() {
				block = max(block, b.Length)
			}
		}
	}
	// per level: two buffers per thread decoding, the cached blocks
	inFlight := int64(len(chain)) * int64(2*opt.ThreadCount()+frameCacheBlocks) * max(block, 64<<10)
	if len(chain) > 2 && inFlight > max(wholeAbove, 2*step) {
		return a.streamWhole(ctx, s, chain, opt)
	}
	var prev *codec.Reader
	for k, j := range chain {
		f, rd := a.Frames[j], s.chain[k]
		if f.Ref >= 0 {
			if k == 0 || f.Ref != chain[k-1] {
				s.Close()
				return nil, fmt.Errorf("trajectory: internal error: frame %d opened without its reference", j)
			}
			ins, ffs := lazyInputs(prev, a.Frames, f.Ref)
			s.files = append(s.files, ffs...)
			ref, err := codec.NewReferenceSums(ins, fileSums(a.Frames[f.Ref]))
			if err == nil {
				err = rd.UseRef(ref)
			}
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("frame %d (%s): %w", j, f.Name, err)
			}
		}
		prev = rd
	}
	s.Reader = prev
	return s, nil
}

// threadsOf is the number of threads opt asks for: opt.Threads (at most
// codec.MaxThreads), or GOMAXPROCS when it is 0 (as the codec counts them).
// streamWhole makes s (the chain's readers open) read the last frame of
// chain against its reference frame decoded whole.
func (a *Archive) streamWhole(ctx context.Context, s *Stream, chain []int, opt codec.DecodeOptions) (*Stream, error) {
	n := len(chain)
	rd := s.chain[n-1]
	for _, r := range s.chain[:n-1] {
		r.Close()
	}
	s.chain = []*codec.Reader{rd}
	wholeReads.Add(1)
	i, j := chain[n-1], chain[n-2]
	d, err := a.Extract(ctx, j, codec.DecodeOptions{Threads: opt.Threads})
	if err == nil {
		var ref *codec.Reference
		if ref, err = d.reference(a.Frames[j]); err == nil {
			err = rd.UseRef(ref)
		}
		if err != nil {
			err = fmt.Errorf("frame %d (%s): %w", i, a.Frames[i].Name, err)
		}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Reader = rd
	return s, nil
}

// StreamFrom opens frame i with the files of its reference frame given as
// ref (in the order of that frame's files; none for a keyframe): e.g. the
// files just written by a walk through the frames in order, which then
// decodes each frame once with bounded memory. The files are taken to be
// the reference frame's (their SHA-256 is not computed again); if they
// are not, decoding fails its CRC-32C and SHA-256 checks.
func (a *Archive) StreamFrom(i int, ref []io.ReaderAt) (*Stream, error) {
	if i < 0 || i >= len(a.Frames) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, i)
	}
	f := a.Frames[i]
	rd, err := a.FrameReader(i)
	if err != nil {
		return nil, err
	}
	s := &Stream{Reader: rd, chain: []*codec.Reader{rd}}
	if f.Ref < 0 {
		if len(ref) != 0 {
			s.Close()
			return nil, fmt.Errorf("trajectory: frame %d is a keyframe; no reference files", i)
		}
		return s, nil
	}
	rf := a.Frames[f.Ref]
	files := rf.files()
	if len(ref) != len(files) {
		s.Close()
		return nil, fmt.Errorf("trajectory: frame %d is coded against frame %d (%d files); %d reference files given", i, f.Ref, len(files), len(ref))
	}
	if err := useRefFiles(rd, a.Frames, i, ref); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// useRefFiles gives rd, frame i of frames, its reference frame's files as
// ref (in that frame's order, taken to be its files: their SHA-256 is the
// index's, not computed again).
func useRefFiles(rd *codec.Reader, frames []Frame, i int, ref []io.ReaderAt) error {
	f := frames[i]
	rf := frames[f.Ref]
	ins := make([]codec.Input, len(ref))
	for k, ff := range rf.files() {
		ins[k] = codec.Input{Name: ff.Name, R: ref[k], Size: ff.Size}
	}
	cr, err := codec.NewReferenceSums(ins, fileSums(rf))
	if err == nil {
		err = rd.UseRef(cr)
	}
	if err != nil {
		return fmt.Errorf("frame %d (%s): %w", i, f.Name, err)
	}
	return nil
}

// lazyInputs are the files of frame j of frames (open as rd, its
// reference set) as inputs whose bytes are decoded block by block as they
// are read, and those files.
func lazyInputs(rd *codec.Reader, frames []Frame, j int) ([]codec.Input, []*frameFile) {
	f := frames[j]
	fs := rd.Files()
	ins := make([]codec.Input, len(fs))
	ffs := make([]*frameFile, len(fs))
	for k, fi := range fs {
		ffs[k] = newFrameFile(rd, k, fi, frameLabel(frames, j, k))
		ins[k] = codec.Input{Name: f.files()[k].Name, R: ffs[k], Size: fi.Size, Format: fi.Format, Segments: tensorSegments(fi)}
	}
	return ins, ffs
}

// frameLabel names file k of frame j in errors: the frame, and the file
// for a step of several.
func frameLabel(frames []Frame, j, k int) string {
	f := frames[j]
	if fs := f.files(); len(fs) > 1 && k < len(fs) {
		return fmt.Sprintf("frame %d (%s), file %s", j, f.Name, fs[k].Name)
	}
	return fmt.Sprintf("frame %d (%s)", j, f.Name)
}

// newFrameFile is file k (fi) of the open frame rd as a frameFile whose
// errors begin with label.
func newFrameFile(rd *codec.Reader, k int, fi *codec.FileInfo, label string) *frameFile {
	ff := &frameFile{rd: rd, fi: k, size: fi.Size, label: label}
	for _, b := range fi.Blocks() {
		ff.offs = append(ff.offs, b.Offset)
		ff.lens = append(ff.lens, b.Length)
	}
	return ff
}

// frameFile is file fi of an open frame as an io.ReaderAt that decodes the
// blocks a read covers (with their CRC-32C checked), straight into the
// caller's buffer where a block lies wholly inside the read — as the blocks
// of a frame coded against it do when both frames have the same layout
// and chunk size. A block a read covers only in part, or that Verify
// reads, is kept in a small cache, which every read looks in first:
// reads that straddle blocks (frames of other layouts or chunk sizes)
// would otherwise decode each block twice, and through a chain of such
// frames 2^depth times. It is safe for concurrent use:
// codec.Reader.DecodeBlock gives each call its own decoding state.
type frameFile struct {
	rd         *codec.Reader
	fi         int
	size       int64
	offs, lens []int64 // the blocks, in order, covering [0, size)
	label      string  // the frame (and file) in errors

	mu       sync.Mutex
	cache    map[int][]byte // decoded blocks by index
	order    []int          // their indices, oldest first
	bytes    int64          // their bytes
	maxBytes int64          // Verify's budget; 0: frameCacheBlocks blocks
}

// frameCacheBlocks is how many blocks a frameFile of Stream keeps: the two
// a straddling read needs, for a few threads at a time.
const frameCacheBlocks = 8

// frameDecodes counts the blocks frameFiles decode, wholeReads the chains
// and groups read whole instead of block by block (tests).
var frameDecodes, wholeReads atomic.Int64

func (f *frameFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > f.size {
		return 0, fmt.Errorf("trajectory: %s: offset %d outside its file of %d bytes", f.label, off, f.size)
	}
	end := min(off+int64(len(p)), f.size)
	bi := sort.Search(len(f.offs), func(k int) bool { return f.offs[k]+f.lens[k] > off })
	pos := off
	for ; pos < end && bi < len(f.offs); bi++ {
		bo, bl := f.offs[bi], f.lens[bi]
		if bo > pos {
			break // a gap: reported below
		}
		if bo == pos && bo+bl <= end {
			if c := f.cached(bi); c != nil {
				copy(p[bo-off:], c)
			} else {
				frameDecodes.Add(1)
				if err := f.rd.DecodeBlock(f.fi, bi, p[bo-off:bo-off+bl]); err != nil {
					return int(pos - off), fmt.Errorf("%s: %w", f.label, err)
				}
			}
			pos = bo + bl
			continue
		}
		b, err := f.block(bi, bl)
		if err != nil {
			return int(pos - off), err
		}
		pos += int64(copy(p[pos-off:end-off], b[pos-bo:]))
	}
	if pos < end {
		return int(pos - off), fmt.Errorf("trajectory: %s: its blocks end at %d, before %d", f.label, pos, end)
	}
	if end-off < int64(len(p)) {
		return int(end - off), io.EOF
	}
	return len(p), nil
}

// dropCache empties the cache.
func (f *frameFile) dropCache() {
	f.mu.Lock()
	f.cache, f.order, f.bytes = nil, nil, 0
	f.mu.Unlock()
}

// cached returns block bi from the cache, or nil.
func (f *frameFile) cached(bi int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cache[bi]
}

// decodeTo decodes block bi into b (its length), without the cache.
func (f *frameFile) decodeTo(bi int, b []byte) error {
	frameDecodes.Add(1)
	if err := f.rd.DecodeBlock(f.fi, bi, b); err != nil {
		return fmt.Errorf("%s: %w", f.label, err)
	}
	return nil
}

// block returns block bi (of bl bytes) decoded, from the cache or decoded
// into it. The slice stays valid after it leaves the cache.
func (f *frameFile) block(bi int, bl int64) ([]byte, error) {
	if c := f.cached(bi); c != nil {
		return c, nil
	}
	frameDecodes.Add(1)
	b := make([]byte, bl)
	if err := f.rd.DecodeBlock(f.fi, bi, b); err != nil {
		return nil, fmt.Errorf("%s: %w", f.label, err)
	}
	f.mu.Lock()
	if f.cache == nil {
		f.cache = map[int][]byte{}
	}
	if _, ok := f.cache[bi]; !ok {
		f.cache[bi] = b
		f.order = append(f.order, bi)
		f.bytes += bl
	}
	// the oldest go: beyond frameCacheBlocks blocks, or beyond the byte
	// budget (keeping the newest)
	for len(f.order) > 1 && (f.maxBytes == 0 && len(f.order) > frameCacheBlocks || f.maxBytes > 0 && f.bytes > f.maxBytes) {
		old := f.order[0]
		f.order = f.order[1:]
		f.bytes -= int64(len(f.cache[old]))
		delete(f.cache, old)
	}
	f.mu.Unlock()
	return b, nil
}

// Verify decodes every frame and checks every block's CRC-32C and every
// file's SHA-256 with memory bounded whatever the steps' size: the frames
// of each keyframe's group are decoded in lock-step, verifyStride bytes of
// each file at a time, each frame's recent blocks kept (two strides and a
// block) for the frames coded against it, so that every block is decoded
// about once and memory holds ~2 MiB per file and the index of each frame
// of the groups being verified. Groups are verified in parallel (opt.Threads,
// default all CPUs; one group on one goroutine). done, when not nil, is
// called with each frame once its files have checked (in order within a
// group; groups concurrently, so done must be safe for that).
func (a *Archive) Verify(ctx context.Context, opt codec.DecodeOptions, done func(frame int)) error {
	n := len(a.Frames)
	root := make([]int, n)
	for i, f := range a.Frames {
		if f.Ref >= i {
			return fmt.Errorf("%w: frame %d refers forward", ErrCorrupt, i)
		}
		root[i] = i
		if f.Ref >= 0 {
			root[i] = root[f.Ref]
		}
	}
	var groups [][]int
	at := map[int]int{}
	for i := range a.Frames {
		g, ok := at[root[i]]
		if !ok {
			g = len(groups)
			at[root[i]] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	threads := opt.ThreadCount()
	if ctx == nil {
		ctx = context.Background()
	}
	errs := make([]error, len(groups))
	mem := newBudget(wholeAbove)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(threads, len(groups)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				g := int(next.Add(1)) - 1
				if g >= len(groups) {
					return
				}
				errs[g] = a.verifyGroup(ctx, groups[g], done, mem)
				if errs[g] != nil {
					next.Store(int64(len(groups))) // stop the others after their group
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// verifyStride is how far Verify moves through every file of a group's
// frames at a time; each frame file keeps two strides and a block of its
// latest blocks, so that a block coded against bytes of its reference up
// to a stride away (files of other layouts) still finds them decoded.
const verifyStride = 1 << 20

// verifyGroup decodes the frames of one keyframe's group (in order, each
// coded against an earlier one of the group) in lock-step, a stride of
// file offsets at a time, hashing each file as it goes. Only frames that
// later frames are coded against keep their recent blocks. When those
// could take more memory than wholeAbove and than decoding the group's
// frames whole, one after the other (walkGroup: up to three steps), the
// group is decoded whole instead.
func (a *Archive) verifyGroup(ctx context.Context, frames []int, done func(int), mem *budget) error {
	referenced := map[int]bool{}
	var step int64
	for _, j := range frames {
		if r := a.Frames[j].Ref; r >= 0 {
			referenced[r] = true
		}
		step = max(step, a.Frames[j].Size)
	}
	// the group's frames open (only these: an index per frame), their
	// files as lazily decoded files, cached where a later frame reads them
	files := map[int][]*frameFile{}
	var rds []*codec.Reader
	defer func() {
		for _, rd := range rds {
			rd.Close()
		}
	}()
	var cached int64 // the most the caches may hold
	for _, i := range frames {
		f := a.Frames[i]
		rd, err := a.FrameReader(i)
		if err != nil {
			return err
		}
		rds = append(rds, rd)
		for k, fi := range rd.Files() {
			ff := newFrameFile(rd, k, fi, frameLabel(a.Frames, i, k))
			ff.maxBytes = 2 * verifyStride
			for _, l := range ff.lens {
				ff.maxBytes = max(ff.maxBytes, 2*verifyStride+l)
			}
			if referenced[i] {
				cached += ff.maxBytes
			}
			files[i] = append(files[i], ff)
		}
		if f.Ref >= 0 {
			var ref []io.ReaderAt
			for _, ff := range files[f.Ref] {
				ref = append(ref, ff)
			}
			if err := useRefFiles(rd, a.Frames, i, ref); err != nil {
				return err
			}
		}
	}
	// groups verified at once share wholeAbove (one group may take more)
	if cached > max(wholeAbove, 3*step) {
		for _, rd := range rds {
			rd.Close()
		}
		rds = nil
		defer mem.release(mem.acquire(3 * step))
		return a.walkGroup(ctx, frames, done)
	}
	defer mem.release(mem.acquire(cached))
	hs := make([][]hash.Hash, len(frames))
	next := make([][]int, len(frames)) // each file's next block
	for x, j := range frames {
		for range files[j] {
			hs[x] = append(hs[x], sha256.New())
			next[x] = append(next[x], 0)
		}
	}
	var buf []byte // the blocks of frames no other frame reads
	for end := int64(verifyStride); ; end += verifyStride {
		if err := ctx.Err(); err != nil {
			return err
		}
		left := false
		for x, j := range frames {
			for k, ff := range files[j] {
				for ; next[x][k] < len(ff.offs) && ff.offs[next[x][k]] < end; next[x][k]++ {
					b := next[x][k]
					var data []byte
					var err error
					if referenced[j] {
						data, err = ff.block(b, ff.lens[b])
					} else {
						buf = slices.Grow(buf[:0], int(ff.lens[b]))[:ff.lens[b]]
						data, err = buf, ff.decodeTo(b, buf)
					}
					if err != nil {
						return err // the error names the frame
					}
					hs[x][k].Write(data)
				}
				left = left || next[x][k] < len(ff.offs)
			}
		}
		if !left {
			break
		}
	}
	for x, j := range frames {
		f := a.Frames[j]
		for k, ff := range f.files() {
			if [32]byte(hs[x][k].Sum(nil)) != ff.SHA256 {
				return fmt.Errorf("%w: frame %d (%s), file %s: SHA-256 mismatch", codec.ErrChecksum, j, f.Name, ff.Name)
			}
		}
		if done != nil {
			done(j)
		}
	}
	return nil
}

// walkGroup verifies the frames of one keyframe's group as Walk does: each
// decoded whole, kept while a later frame of the group is coded against
// it (the frame before and the keyframe: ParseIndex).
func (a *Archive) walkGroup(ctx context.Context, frames []int, done func(int)) error {
	wholeReads.Add(1)
	return a.walk(ctx, frames, codec.DecodeOptions{Threads: 1}, func(d *Decoded) error {
		if done != nil {
			done(d.Frame)
		}
		return ctx.Err()
	})
}

// budget is memory shared by the groups Verify checks at once.
type budget struct {
	mu          sync.Mutex
	cond        sync.Cond
	total, left int64
}

func newBudget(total int64) *budget {
	b := &budget{total: total, left: total}
	b.cond.L = &b.mu
	return b
}

// acquire waits until n bytes (at most the whole budget) are free, takes
// them and returns how many it took.
func (b *budget) acquire(n int64) int64 {
	n = min(n, b.total)
	b.mu.Lock()
	for b.left < n {
		b.cond.Wait()
	}
	b.left -= n
	b.mu.Unlock()
	return n
}

// release gives back n bytes.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
	b.cond.Broadcast()
}
