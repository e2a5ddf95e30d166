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
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// Reader reads an archive: its index, whole files (streamed, in parallel)
// and any byte range or tensor of a file (random access).
type Reader struct {
	r       io.ReaderAt
	size    int64
	idx     *indexData
	setup   *Setup
	refR    []io.ReaderAt // the reference files (UseRef), as the index lists them
	usesRef bool          // a block is coded against a reference (UsesRef)
	mu      sync.Mutex
	bd      *blockDecoder // for ReadAt
	base    int64         // where the archive starts in the file errors name (NewSectionReader)
	skipCRC bool          // decodeBlock does not check blocks' CRCs (ArchiveDecoder.SkipCRC)
}

// NewReader opens an archive of the given size. It reads and checks the
// header, trailer and index; block payloads are read on demand.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	return newReader(r, size, 0)
}

// NewSectionReader opens the archive that occupies bytes [off, off+size)
// of r, such as a frame of a trajectory archive. It is NewReader of that
// section, except that the offsets of its CorruptErrors are positions in
// r, so that they point at the damage in the file the user holds; the
// offsets the index reports (BlockInfo.Payload) stay relative to the
// archive.
func NewSectionReader(r io.ReaderAt, off, size int64) (*Reader, error) {
	if off < 0 || size < 0 || size > math.MaxInt64-off {
		return nil, fmt.Errorf("%w: section at %d of %d bytes", ErrNotArchive, off, size)
	}
	return newReader(io.NewSectionReader(r, off, size), size, off)
}

func newReader(r io.ReaderAt, size, base int64) (*Reader, error) {
	rd, _, err := openArchive(r, size, base, nil)
	return rd, err
}

// openArchive is newReader decoding the index into scratch (a new slice
// when it is too small), which it returns for the next call: the index's
// decoded bytes are parsed into the Reader's own memory, so scratch may
// be reused once the Reader is set up. An archive in memory (memArchive)
// has its compressed index read in place.
func openArchive(r io.ReaderAt, size, base int64, scratch []byte) (*Reader, []byte, error) {
	rd, err := openArchiveScratch(r, size, base, &scratch)
	return rd, scratch, err
}

func openArchiveScratch(r io.ReaderAt, size, base int64, scratch *[]byte) (*Reader, error) {
	if size < headerLen+trailerLen {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrNotArchive, size)
	}
	var hdr [headerLen]byte
	if err := readFullAt(r, hdr[:], 0, base); err != nil {
		return nil, err
	}
	if bytes.Equal(hdr[:8], LossyMagic[:]) {
		return nil, fmt.Errorf("%w (%w)", ErrLossy, ErrNotArchive)
	}
	if !bytes.Equal(hdr[:8], Magic[:]) {
		return nil, ErrNotArchive
	}
	version := int(binary.LittleEndian.Uint16(hdr[8:]))
	if version < 1 || version > Version {
		return nil, fmt.Errorf("%w %d (this build reads versions 1 to %d)", ErrVersion, version, Version)
	}
	flags := binary.LittleEndian.Uint16(hdr[10:])
	if flags&^flagRef != 0 {
		return nil, &CorruptError{Offset: base + 10, Block: -1, Msg: fmt.Sprintf("unknown header flags %#x", flags), Err: ErrCorrupt}
	}
	var tr [trailerLen]byte
	if err := readFullAt(r, tr[:], size-trailerLen, base); err != nil {
		return nil, err
	}
	if !bytes.Equal(tr[24:], TrailerMagic[:]) {
		return nil, &CorruptError{Offset: base + size - 8, Block: -1, Msg: "trailer magic missing (truncated archive?)", Err: ErrCorrupt}
	}
	indexOff := int64(binary.LittleEndian.Uint64(tr[0:]))
	indexLen := int64(binary.LittleEndian.Uint64(tr[8:]))
	rawLen := int64(binary.LittleEndian.Uint32(tr[16:]))
	indexCRC := binary.LittleEndian.Uint32(tr[20:])
	if indexOff < headerLen || indexLen < 0 || indexOff > size-trailerLen || indexLen != size-trailerLen-indexOff {
		return nil, &CorruptError{Offset: base + size - trailerLen, Block: -1, Msg: fmt.Sprintf("index at %d (+%d) does not end at the trailer", indexOff, indexLen), Err: ErrCorrupt}
	}
	if rawLen > maxIndexRawFor(size) {
		return nil, &CorruptError{Offset: base + size - trailerLen + 16, Block: -1, Msg: fmt.Sprintf("index size %d is implausible", rawLen), Err: ErrTooLarge}
	}
	ix, ok := inPlace(r, indexOff, indexLen)
	if !ok {
		ix = make([]byte, indexLen)
		if err := readFullAt(r, ix, indexOff, base); err != nil {
			return nil, err
		}
	}
	if crc32c(ix) != indexCRC {
		return nil, &CorruptError{Offset: base + indexOff, Block: -1, Msg: "index checksum mismatch", Err: ErrChecksum}
	}
	if int64(cap(*scratch)) < rawLen {
		*scratch = make([]byte, 0, rawLen)
	}
	raw, err := zstdDecode((*scratch)[:0:rawLen], ix, int(rawLen), true)
	if err != nil {
		return nil, &CorruptError{Offset: base + indexOff, Block: -1, Msg: fmt.Sprintf("index does not decompress: %v", err), Err: ErrCorrupt}
	}
	x, err := unmarshalIndexFlags(raw, indexOff-headerLen, version, flags)
	if err != nil {
		return nil, &CorruptError{Offset: base + indexOff, Block: -1, Msg: err.Error(), Err: ErrCorrupt}
	}
	rd := &Reader{r: r, size: size, idx: x, usesRef: x.usesRef(), base: base}
	if x.setupMode == setupEmbedded {
		x.setupRaw = bytes.Clone(x.setupRaw) // not scratch's: it may be reused
		s, err := ParseSetup(x.setupRaw)
		if err != nil {
			return nil, &CorruptError{Offset: base + indexOff, Block: -1, Msg: fmt.Sprintf("embedded setup: %v", err), Err: ErrCorrupt}
		}
		rd.setup = s
	}
	if x.setupMode == setupExternal && x.setupID == GaussianSetup().ID() {
		rd.setup = GaussianSetup() // built in: every reader has it
	}
	return rd, nil
}

// SetupID returns the ID of the setup the archive was written with and how
// it holds it: "embedded", "external" (the caller must supply it with
// UseSetup), "built-in" (it references the Gaussian setup, which every
// Reader has) or "" when the archive uses none.
func (r *Reader) SetupID() (id [16]byte, how string) {
	switch r.idx.setupMode {
	case setupEmbedded:
		return r.idx.setupID, "embedded"
	case setupExternal:
		if r.idx.setupID == GaussianSetup().ID() {
			return r.idx.setupID, "built-in"
		}
		return r.idx.setupID, "external"
	}
	return id, ""
}

// Setup returns the setup the reader decodes with (embedded, or given to
// UseSetup), or nil.
func (r *Reader) Setup() *Setup { return r.setup }

// UseSetup supplies the setup of an archive that references it externally.
// It must be the setup the archive was written with.
func (r *Reader) UseSetup(s *Setup) error {
	switch r.idx.setupMode {
	case setupNone:
		return nil // not needed; harmless
	case setupEmbedded:
		if s.ID() != r.idx.setupID {
			return fmt.Errorf("%w: the archive embeds setup %x, not %s", ErrSetupMismatch, r.idx.setupID, s.IDString())
		}
		return nil
	}
	if s.ID() != r.idx.setupID {
		return fmt.Errorf("%w: the archive needs setup %x, not %s", ErrSetupMismatch, r.idx.setupID, s.IDString())
	}
	r.setup = s
	return nil
}

// needSetup reports a missing external setup.
func (r *Reader) needSetup() error {
	if r.idx.setupMode == setupExternal && r.setup == nil {
		return fmt.Errorf("%w %x (pass it with -setup / Reader.UseSetup)", ErrSetupMissing, r.idx.setupID)
	}
	return nil
}

// Close releases the reader's resources (it does not close the
// underlying io.ReaderAt).
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bd != nil {
		blockDecoders.Put(r.bd)
		r.bd = nil
	}
	return nil
}

// Files returns the files in the archive, in the order they were stored.
func (r *Reader) Files() []*FileInfo { return r.idx.files }

// ChunkValues is the chunk size the archive was written with.
func (r *Reader) ChunkValues() int { return r.idx.chunkValues }

// File returns the index of the file with the given name.
func (r *Reader) File(name string) (int, error) {
	for i, f := range r.idx.files {
		if f.Name == name {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%w: file %q", ErrNotFound, name)
}

func (r *Reader) newBlockDecoder() *blockDecoder {
	bd := blockDecoders.Get().(*blockDecoder)
	r.initBlockDecoder(bd)
	return bd
}

// initBlockDecoder sets what bd needs of r to decode r's blocks.
func (r *Reader) initBlockDecoder(bd *blockDecoder) {
	bd.setup = r.setup
	bd.methods = refMethodsFor(r.idx.version)
	bd.sp.on = r.idx.version >= sparseVersion
	bd.st.lz = r.idx.version >= lzPlanesVersion
}

// startWorkers runs fn on n goroutines, each with its own block decoder
// and payload buffer; the returned function waits for them.
func (r *Reader) startWorkers(n int, fn func(bd *blockDecoder, comp *[]byte)) (wait func()) {
	var wg sync.WaitGroup
	for t := 0; t < n; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bd := r.newBlockDecoder()
			defer blockDecoders.Put(bd)
			comp := getBuf(0)
			defer putBuf(comp)
			fn(bd, comp)
		}()
	}
	return wg.Wait
}

// runWorker runs fn as startWorkers' only worker would, in the calling
// goroutine.
func (r *Reader) runWorker(fn func(bd *blockDecoder, comp *[]byte)) {
	bd := r.newBlockDecoder()
	defer blockDecoders.Put(bd)
	comp := getBuf(0)
	defer putBuf(comp)
	fn(bd, comp)
}

// decodeBlock reads and decodes block bi of file fi into dst (len origLen),
// checking its CRC (unless r.skipCRC).
func (r *Reader) decodeBlock(bd *blockDecoder, fi, bi int, dst []byte, comp *[]byte) error {
	f := r.idx.files[fi]
	b := f.blocks[bi]
	if b.kind == kindDup {
		// the source is an earlier block of the same length, never a copy
		// itself (checked when the index was read)
		if err := r.decodeBlock(bd, b.ref, int(b.refOff), dst, comp); err != nil {
			return err
		}
		if !r.skipCRC && crc32c(dst) != b.crc {
			return &CorruptError{Offset: r.base + b.compOff, File: f.Name, Block: bi, FileOffset: b.origOff, Msg: "CRC-32C mismatch", Err: ErrChecksum}
		}
		return nil
	}
	c, ok := inPlace(r.r, b.compOff, b.compLen) // in memory: no copy (decoders only read it)
	if !ok {
		if cap(*comp) < int(b.compLen) {
			*comp = make([]byte, b.compLen)
		}
		c = (*comp)[:b.compLen]
		if err := readFullAt(r.r, c, b.compOff, r.base); err != nil {
			return err
		}
	}
	mk := func(msg string, e error) error {
		return &CorruptError{Offset: r.base + b.compOff, File: f.Name, Block: bi, FileOffset: b.origOff, Msg: msg, Err: e}
	}
	if b.kind == kindRef {
		if r.refR == nil {
			return r.needRef()
		}
		rb, pooled, err := r.readRef(b)
		if err != nil {
			return err
		}
		if len(c) == 0 {
			copy(dst, rb)
		} else if err := bd.decodeRefFloat(dst, c, rb, b.dtype); err != nil {
			putBuf(pooled)
			return mk(err.Error(), ErrCorrupt)
		}
		putBuf(pooled)
	} else if err := bd.decode(dst, c, b.kind, b.dtype); err != nil {
		return mk(err.Error(), ErrCorrupt)
	}
	if !r.skipCRC && crc32c(dst) != b.crc {
		return mk("CRC-32C mismatch", ErrChecksum)
	}
	return nil
}

// decTask is a run of consecutive blocks of one file, decoded by one
// worker (see encTask).
type decTask struct {
	first, end int // blocks [first, end)
	out        *[]byte
	err        error
	done       chan struct{}
	part       treePart // BLAKE3: what the worker computed of out
}

// WriteFile decodes file fi and writes it to w in order, decoding blocks in
// parallel. It checks every block's CRC-32C and, unless opt.SkipHash, the
// file's digest (BLAKE3: each worker hashes the blocks it decoded).
func (r *Reader) WriteFile(ctx context.Context, w io.Writer, fi int, opt DecodeOptions) error {
	if fi < 0 || fi >= len(r.idx.files) {
		return fmt.Errorf("%w: file %d", ErrNotFound, fi)
	}
	f := r.idx.files[fi]
	return r.writeRange(ctx, w, fi, 0, f.Size, opt, !opt.SkipHash)
}

// WriteTensor finds a tensor by name (in any file) and writes its bytes to
// w in order, decoding only the blocks that hold it, in parallel, a few at
// a time: memory is bounded by the threads, not by the tensor's size (a
// tiny archive can hold a huge tensor of duplicate blocks). It checks
// every block's CRC-32C; the file's digest covers the whole file and is
// not checked.
func (r *Reader) WriteTensor(ctx context.Context, w io.Writer, name string, opt DecodeOptions) (TensorInfo, error) {
	for fi, f := range r.idx.files {
		for _, t := range f.Tensors {
			if t.Name == name {
				return t, r.writeRange(ctx, w, fi, t.Offset, t.Length, opt, false)
			}
		}
	}
	return TensorInfo{}, fmt.Errorf("%w: tensor %q", ErrNotFound, name)
}

// writeRange writes bytes [off, off+n) of file fi to w in order, decoding
// the blocks that cover them in parallel; check (only for the whole file)
// checks the file's digest.
func (r *Reader) writeRange(ctx context.Context, w io.Writer, fi int, off, n int64, opt DecodeOptions, check bool) error {
	if opt.Threads < 0 {
		return fmt.Errorf("codec: negative thread count %d", opt.Threads)
	}
	if err := r.needSetup(); err != nil {
		return err
	}
	if err := r.needRef(); err != nil {
		return err
	}
	f := r.idx.files[fi]
	if off < 0 || n < 0 || off > f.Size || n > f.Size-off {
		return fmt.Errorf("codec: bytes %d (+%d) outside file %q of %d bytes", off, n, f.Name, f.Size)
	}
	if check && (off != 0 || n != f.Size) {
		return errors.New("codec: the digest covers whole files only")
	}
	end := off + n
	// the blocks that hold [off, end)
	first := sort.Search(len(f.blocks), func(i int) bool { return f.blocks[i].origOff+f.blocks[i].origLen > off })
	last := sort.Search(len(f.blocks), func(i int) bool { return f.blocks[i].origOff >= end })
	if n == 0 {
		last = first
	}
	threads := min(opt.ThreadCount(), max(1, last-first))
	ctx, cancel := context.WithCancel(ctxOr(ctx))
	defer cancel()
	window := 2*threads + 2
	order := make(chan *decTask, window)
	work := make(chan *decTask, window)
	tree := check && f.Digest == DigestBLAKE3
	wait := r.startWorkers(threads, func(bd *blockDecoder, comp *[]byte) {
		for t := range work {
			base := f.blocks[t.first].origOff
			last := f.blocks[t.end-1]
			t.out = getBuf(int(last.origOff + last.origLen - base))
			for b := t.first; b < t.end && t.err == nil; b++ {
				k := f.blocks[b]
				t.err = r.decodeBlock(bd, fi, b, (*t.out)[k.origOff-base:k.origOff-base+k.origLen], comp)
			}
			if tree && t.err == nil {
				t.part.hash(*t.out, base, f.Size)
			}
			close(t.done)
		}
	})
	go func() {
		defer close(work)
		defer close(order)
		for i := first; i < last; {
			j := taskEnd(last, i, f.blockLen)
			t := &decTask{first: i, end: j, done: make(chan struct{})}
			i = j
			select {
			case order <- t:
			case <-ctx.Done():
				return
			}
			select {
			case work <- t:
			case <-ctx.Done():
				close(t.done)
				return
			}
		}
	}()
	var h hash.Hash // SHA-256, in order
	if check && !tree {
		h = sha256.New()
	}
	var th treeHash
	var werr error
	var done int64
	for t := range order {
		<-t.done
		if werr == nil {
			werr = t.err
		}
		if werr == nil && ctx.Err() != nil {
			werr = ctx.Err()
		}
		if werr == nil {
			// the part of the task's blocks inside [off, end)
			base := f.blocks[t.first].origOff
			out := (*t.out)[max(off, base)-base : min(end, base+int64(len(*t.out)))-base]
			if h != nil {
				h.Write(out)
			} else if tree {
				werr = th.add(&t.part)
			}
			if werr == nil {
				if _, err := w.Write(out); err != nil {
					werr = err
				}
			}
			done += int64(len(out))
			if opt.Progress != nil {
				opt.Progress(done, n)
			}
		}
		if werr != nil {
			cancel()
		}
		putBuf(t.out)
	}
	wait()
	if werr != nil {
		return werr
	}
	switch {
	case h != nil:
		return checkSum(f, [32]byte(h.Sum(nil)))
	case tree:
		return checkSum(f, th.sum())
	}
	return nil
}

// checkSum compares a decoded file's digest with the stored one.
func checkSum(f *FileInfo, sum [32]byte) error {
	if sum != f.Sum {
		return &CorruptError{Offset: -1, File: f.Name, Block: -1, Msg: fmt.Sprintf("file %q: %v %x does not match the stored %x", f.Name, f.Digest, sum, f.Sum), Err: ErrChecksum}
	}
	return nil
}

// Verify decodes every file and checks every checksum, without writing
// anything. It returns the first problem found.
func (r *Reader) Verify(ctx context.Context, opt DecodeOptions) error {
	opt.SkipHash = false
	for i := range r.idx.files {
		if err := r.WriteFile(ctx, io.Discard, i, opt); err != nil {
			return err
		}
	}
	return nil
}

// ReadAt reads len(p) bytes of file fi at offset off, decoding only the
// blocks that cover them. It is safe for concurrent use (calls are
// serialised).
func (r *Reader) ReadAt(fi int, p []byte, off int64) (int, error) {
	if fi < 0 || fi >= len(r.idx.files) {
		return 0, fmt.Errorf("%w: file %d", ErrNotFound, fi)
	}
	f := r.idx.files[fi]
	if off < 0 || off > f.Size {
		return 0, fmt.Errorf("codec: offset %d outside file %q of %d bytes", off, f.Name, f.Size)
	}
	if err := r.needSetup(); err != nil {
		return 0, err
	}
	if err := r.needRef(); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bd == nil {
		r.bd = r.newBlockDecoder()
	}
	r.bd.setup = r.setup
	n := 0
	end := min(off+int64(len(p)), f.Size)
	// first block containing off
	bi := sort.Search(len(f.blocks), func(i int) bool { return f.blocks[i].origOff+f.blocks[i].origLen > off })
	comp := getBuf(0)
	defer putBuf(comp)
	for pos := off; pos < end && bi < len(f.blocks); bi++ {
		b := f.blocks[bi]
		buf := getBuf(int(b.origLen))
		if err := r.decodeBlock(r.bd, fi, bi, *buf, comp); err != nil {
			putBuf(buf)
			return n, err
		}
		c := copy(p[n:], (*buf)[pos-b.origOff:min(b.origLen, end-b.origOff)])
		putBuf(buf)
		n += c
		pos += int64(c)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// memArchive is an archive (or a reference file) held in memory: the
// reader takes block payloads and reference bytes as slices of it instead
// of copying them.
type memArchive []byte

// inPlace returns bytes [off, off+n) of r without copying them when r holds
// them in memory (Bytes, NewMemReader, CompressBytes); callers only read
// them.
func inPlace(r io.ReaderAt, off, n int64) ([]byte, bool) {
	m, ok := r.(memArchive)
	if !ok || off < 0 || n < 0 || off > int64(len(m)) || n > int64(len(m))-off {
		return nil, false
	}
	return m[off : off+n : off+n], true
}

// Bytes returns an io.ReaderAt over b that the codec reads in place where it
// can: used as a reference file (Input.R of NewReference), decoding takes
// the reference's bytes without copying them. b must not change while it is
// used.
func Bytes(b []byte) io.ReaderAt { return memArchive(b) }

func (m memArchive) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m)) {
		return 0, fmt.Errorf("codec: offset %d outside the data", off)
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// NewMemReader opens an archive held in memory; decoding reads the block
// payloads in place, without copying them.
func NewMemReader(archive []byte) (*Reader, error) {
	return NewReader(memArchive(archive), int64(len(archive)))
}

// DecodeBlock decodes block bi of file fi (see FileInfo.Blocks) into dst,
// whose length must be the block's Length, and checks its CRC-32C. It is
// safe for concurrent use: each call has its own decoding state, so other
// decoders (package gpu) can hand the blocks they do not handle to it in
// parallel.
func (r *Reader) DecodeBlock(fi, bi int, dst []byte) error {
	if fi < 0 || fi >= len(r.idx.files) {
		return fmt.Errorf("%w: file %d", ErrNotFound, fi)
	}
	f := r.idx.files[fi]
	if bi < 0 || bi >= len(f.blocks) {
		return fmt.Errorf("%w: block %d of file %q", ErrNotFound, bi, f.Name)
	}
	if int64(len(dst)) != f.blocks[bi].origLen {
		return fmt.Errorf("codec: block %d of %q is %d bytes, buffer %d", bi, f.Name, f.blocks[bi].origLen, len(dst))
	}
	if err := r.needSetup(); err != nil {
		return err
	}
	if err := r.needRef(); err != nil {
		return err
	}
	bd := r.newBlockDecoder()
	defer blockDecoders.Put(bd)
	comp := getBuf(0)
	defer putBuf(comp)
	return r.decodeBlock(bd, fi, bi, dst, comp)
}

// Tensor finds a tensor by name (in any file) and returns its bytes,
// decoding only the blocks that hold it.
func (r *Reader) Tensor(name string) ([]byte, TensorInfo, error) {
	for fi, f := range r.idx.files {
		for _, t := range f.Tensors {
			if t.Name == name {
				buf, err := r.readTensor(fi, t)
				return buf, t, err
			}
		}
	}
	return nil, TensorInfo{}, fmt.Errorf("%w: tensor %q", ErrNotFound, name)
}

// plausibleOutput is the most output bytes that are allocated up front for
// an archive of r.size bytes (ReadFileTo, Tensor); beyond it, output grows
// as blocks decode. An archive of all-zero tensors decodes to far more
// than its size, legitimately; allocating that much on the index's word
// alone would let a tiny archive claim terabytes.
func (r *Reader) plausibleOutput() int64 { return 4096*r.size + plausibleFloor }

// PlausibleOutput is the most output bytes worth allocating up front for
// this archive: 4096 × its size + 64 MiB. An archive of all-zero tensors
// legitimately decodes to more; a decoder should then grow its output as
// blocks decode, so that a tiny archive cannot claim terabytes of memory.
func (r *Reader) PlausibleOutput() int64 { return r.plausibleOutput() }

// plausibleFloor: outputs up to this size are allocated up front whatever
// the archive's size (a variable for tests).
var plausibleFloor int64 = 64 << 20

// readTensor reads tensor t of file fi. A tiny archive can describe a huge
// tensor of zeros (duplicate blocks), so beyond what a sane archive could
// hold (as in ReadFileTo) the buffer grows a block at a time as the blocks
// decode, instead of being allocated up front.
func (r *Reader) readTensor(fi int, t TensorInfo) ([]byte, error) {
	if t.Length <= r.plausibleOutput() {
		buf := make([]byte, t.Length)
		if _, err := r.ReadAt(fi, buf, t.Offset); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return buf, nil
	}
	var buf []byte
	piece := make([]byte, 4<<20)
	for off := t.Offset; off < t.Offset+t.Length; {
		n := min(int64(len(piece)), t.Offset+t.Length-off)
		k, err := r.ReadAt(fi, piece[:n], off)
		buf = append(buf, piece[:k]...)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if int64(k) < n {
			return nil, fmt.Errorf("codec: tensor %q: %w", t.Name, io.ErrUnexpectedEOF)
		}
		off += n
	}
	return buf, nil
}

// Decode writes the single file of an archive to w. Archives of several
// files need Reader.WriteFile.
func Decode(ctx context.Context, w io.Writer, r io.ReaderAt, size int64, opt DecodeOptions) error {
	rd, err := NewReader(r, size)
	if err != nil {
		return err
	}
	defer rd.Close()
	if len(rd.idx.files) != 1 {
		return fmt.Errorf("codec: archive holds %d files; use Reader.WriteFile", len(rd.idx.files))
	}
	if opt.Setup != nil {
		if err := rd.UseSetup(opt.Setup); err != nil {
			return err
		}
	}
	if err := rd.UseRef(opt.Ref); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := rd.WriteFile(ctx, bw, 0, opt); err != nil {
		return err
	}
	return bw.Flush()
}

// CompressBytes is Encode for one in-memory file.
func CompressBytes(ctx context.Context, src []byte, segs []Segment, opt EncodeOptions) ([]byte, error) {
	// Archives are at most slightly larger than the input. The buffer is
	// only appended to, so it need not be cleared first (clearing it took
	// ~6 % of one-thread compression).
	buf := bytes.NewBuffer(makeNoZero(len(src) + len(src)/64 + 4096)[:0])
	_, err := Encode(ctx, buf, []Input{{Name: "model.bin", R: memArchive(src), Size: int64(len(src)), Segments: segs}}, opt)
	return buf.Bytes(), err
}

// DecompressBytes is Decode for an in-memory archive of one file.
func DecompressBytes(ctx context.Context, archive []byte, opt DecodeOptions) ([]byte, error) {
	return DecompressBytesTo(ctx, nil, archive, opt)
}

// DecompressBytesTo is DecompressBytes decoding into dst when it has the
// capacity (as Reader.ReadFileTo).
func DecompressBytesTo(ctx context.Context, dst, archive []byte, opt DecodeOptions) ([]byte, error) {
	rd, err := NewReader(memArchive(archive), int64(len(archive)))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if err := rd.prepareOne(opt); err != nil {
		return nil, err
	}
	return rd.ReadFileTo(ctx, dst, 0, opt)
}

// prepareOne readies an archive of one file for decoding with opt: its
// file count checked, opt's setup and reference taken (DecompressBytesTo
// and ArchiveDecoder alike, so that both give the same errors).
func (rd *Reader) prepareOne(opt DecodeOptions) error {
	if len(rd.idx.files) != 1 {
		return errFileCount(len(rd.idx.files))
	}
	if opt.Setup != nil {
		if err := rd.UseSetup(opt.Setup); err != nil {
			return err
		}
	}
	return rd.UseRef(opt.Ref)
}

// errFileCount is the error of an archive of n files where one was due.
func errFileCount(n int) error { return fmt.Errorf("codec: archive holds %d files", n) }

// ReadFile decodes file fi into memory, decoding its blocks in parallel
// straight into the result. It checks every block's CRC-32C and, unless
// opt.SkipHash, the file's digest.
func (r *Reader) ReadFile(ctx context.Context, fi int, opt DecodeOptions) ([]byte, error) {
	return r.ReadFileTo(ctx, nil, fi, opt)
}

// ReadFileTo is ReadFile decoding into dst when it has the capacity (the
// blocks cover every byte, so it is not cleared first; nothing else may
// use it meanwhile), into a new slice otherwise. It returns the decoded
// file, which shares dst's memory when dst was used.
func (r *Reader) ReadFileTo(ctx context.Context, dst []byte, fi int, opt DecodeOptions) ([]byte, error) {
	if fi < 0 || fi >= len(r.idx.files) {
		return nil, fmt.Errorf("%w: file %d", ErrNotFound, fi)
	}
	if opt.Threads < 0 {
		return nil, fmt.Errorf("codec: negative thread count %d", opt.Threads)
	}
	if err := r.needSetup(); err != nil {
		return nil, err
	}
	if err := r.needRef(); err != nil {
		return nil, err
	}
	f := r.idx.files[fi]
	// The size comes from the index, whose blocks were checked against the
	// archive; still, a tiny archive can describe a huge file of zeros.
	// Allocate up front only what a sane archive could hold and stream
	// the rest.
	if f.Size > r.plausibleOutput() {
		var buf bytes.Buffer
		if err := r.WriteFile(ctx, &buf, fi, opt); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	var out []byte
	if int64(cap(dst)) >= f.Size {
		out = dst[:f.Size]
	} else {
		out = makeNoZero(int(f.Size))
	}
	threads := opt.ThreadCount()
	ctx, cancel := context.WithCancel(ctxOr(ctx))
	defer cancel()
	var next int64 // next block, taken atomically in task-sized runs
	var mu sync.Mutex
	var firstErr error
	var firstBlock = len(f.blocks)
	// The SHA-256 runs alongside decoding: a worker that finishes a run
	// of blocks hashes the decoded prefix of the file unless another
	// worker is at it (hmu), so the hash does not wait for the last block.
	var (
		hmu    sync.Mutex
		h      hash.Hash
		hashed int   // blocks hashed (hmu)
		hOff   int64 // bytes hashed (hmu)
	)
	var done []bool // decoded blocks (mu), for the hash
	// BLAKE3: each worker hashes the run it decoded; parts[i] is the run
	// that starts with block i
	var parts []*treePart
	switch {
	case opt.SkipHash:
	case f.Digest == DigestBLAKE3:
		parts = make([]*treePart, len(f.blocks))
	default:
		h = sha256.New()
		done = make([]bool, len(f.blocks))
	}
	hashPrefix := func() {
		for {
			mu.Lock()
			k := hashed
			for k < len(done) && done[k] {
				k++
			}
			mu.Unlock()
			if k == hashed {
				return
			}
			end := f.blocks[k-1].origOff + f.blocks[k-1].origLen
			h.Write(out[hOff:end])
			hashed, hOff = k, end
		}
	}
	worker := func(bd *blockDecoder, comp *[]byte) {
		for ctx.Err() == nil {
			mu.Lock()
			i := int(next)
			j := taskEnd(len(f.blocks), i, f.blockLen)
			next = int64(j)
			mu.Unlock()
			if i >= len(f.blocks) {
				return
			}
			for b := i; b < j; b++ {
				k := f.blocks[b]
				if err := r.decodeBlock(bd, fi, b, out[k.origOff:k.origOff+k.origLen], comp); err != nil {
					mu.Lock()
					if b < firstBlock { // report the first damaged block
						firstBlock, firstErr = b, err
					}
					mu.Unlock()
					cancel()
					return
				}
			}
			if parts != nil {
				base, end := f.blocks[i].origOff, f.blocks[j-1].origOff+f.blocks[j-1].origLen
				p := &treePart{}
				p.hash(out[base:end], base, f.Size)
				parts[i] = p
				continue
			}
			if h == nil {
				continue
			}
			mu.Lock()
			for b := i; b < j; b++ {
				done[b] = true
			}
			mu.Unlock()
			if hmu.TryLock() {
				hashPrefix()
				hmu.Unlock()
			}
		}
	}
	if nw := min(threads, max(1, len(f.blocks))); nw > 1 {
		r.startWorkers(nw, worker)()
	} else {
		// one worker: this goroutine (a goroutine started for each call
		// grew a new stack each time, ~10 % of restoring a store's small
		// units one after another)
		r.runWorker(worker)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if parts != nil {
		var th treeHash
		for i := 0; i < len(f.blocks); i = taskEnd(len(f.blocks), i, f.blockLen) {
			if parts[i] == nil {
				return nil, errTreeOrder
			}
			if err := th.add(parts[i]); err != nil {
				return nil, err
			}
		}
		if err := checkSum(f, th.sum()); err != nil {
			return nil, err
		}
		return out, nil
	}
	if h == nil {
		return out, nil
	}
	hmu.Lock() // the workers have stopped: the rest
	hashPrefix()
	h.Write(out[hOff:])
	hmu.Unlock()
	if err := checkSum(f, [32]byte(h.Sum(nil))); err != nil {
		return nil, err
	}
	return out, nil
}

// makeNoZero returns a slice of n bytes whose contents are undefined, for
// an output every byte of which is then written (ReadFile: the blocks tile
// the file, and every decoder writes all of its block, as WriteFile's
// reused buffers already require). Clearing 10 MB took 13 % of an
// in-memory decode, serially before the workers start. The memory is a
// strings.Builder's buffer, which the runtime allocates without clearing;
// the guard falls back to make if String ever stopped sharing it.
func makeNoZero(n int) []byte {
	if n < 1<<16 {
		return make([]byte, n)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte(0)
	s1, s2 := b.String(), b.String()
	p := unsafe.StringData(s1)
	if p != unsafe.StringData(s2) || b.Cap() < n {
		return make([]byte, n)
	}
	return unsafe.Slice(p, n)
}
