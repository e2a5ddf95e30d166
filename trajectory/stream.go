package trajectory

import (
	"errors"
	"fmt"
	"io"
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
}

// Close closes the readers of the chain.
func (s *Stream) Close() error {
	var err error
	for _, rd := range s.chain {
		err = errors.Join(err, rd.Close())
	}
	s.chain = nil
	return err
}

// Stream opens frame i for reading with bounded memory (see Stream). The
// trajectory's reader must stay open until the stream is closed.
func (a *Archive) Stream(i int) (*Stream, error) {
	chain, err := a.Chain(i)
	if err != nil {
		return nil, err
	}
	s := &Stream{}
	var prev *codec.Reader
	for k, j := range chain {
		f := a.Frames[j]
		rd, err := a.FrameReader(j)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.chain = append(s.chain, rd)
		if f.Ref >= 0 {
			if k == 0 || f.Ref != chain[k-1] {
				s.Close()
				return nil, fmt.Errorf("trajectory: internal error: frame %d opened without its reference", j)
			}
			ref, err := lazyReference(prev, a.Frames[f.Ref])
			if err != nil {
				s.Close()
				return nil, err
			}
			if err := rd.UseRef(ref); err != nil {
				s.Close()
				return nil, fmt.Errorf("frame %d (%s): %w", j, f.Name, err)
			}
		}
		prev = rd
	}
	s.Reader = prev
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
	ins := make([]codec.Input, len(files))
	for k, ff := range files {
		ins[k] = codec.Input{Name: ff.Name, R: ref[k], Size: ff.Size}
	}
	cr, err := codec.NewReferenceSums(ins, fileSums(rf))
	if err == nil {
		err = rd.UseRef(cr)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("frame %d (%s): %w", i, f.Name, err)
	}
	return s, nil
}

// lazyReference is the codec reference of frame f (open as rd) whose
// files are read by decoding their blocks on demand.
func lazyReference(rd *codec.Reader, f Frame) (*codec.Reference, error) {
	return codec.NewReferenceSums(lazyInputs(rd, f), fileSums(f))
}

// lazyInputs are the files of frame f (open as rd, its reference set) as
// inputs whose bytes are decoded block by block as they are read.
func lazyInputs(rd *codec.Reader, f Frame) []codec.Input {
	fs := rd.Files()
	ins := make([]codec.Input, len(fs))
	for k, fi := range fs {
		ff := &frameFile{rd: rd, fi: k, size: fi.Size}
		for _, b := range fi.Blocks() {
			ff.offs = append(ff.offs, b.Offset)
			ff.lens = append(ff.lens, b.Length)
		}
		ins[k] = codec.Input{Name: f.files()[k].Name, R: ff, Size: fi.Size, Format: fi.Format, Segments: tensorSegments(fi)}
	}
	return ins
}

// frameFile is file fi of an open frame as an io.ReaderAt that decodes the
// blocks a read covers (with their CRC-32C checked), straight into the
// caller's buffer where a block lies wholly inside the read — as the blocks
// of a frame coded against it do when both frames have the same layout
// and chunk size. A block a read covers only in part is kept in a small
// cache: reads that straddle blocks (frames of other layouts or chunk
// sizes) would otherwise decode each block twice, and through a chain of
// such frames 2^depth times. It is safe for concurrent use:
// codec.Reader.DecodeBlock gives each call its own decoding state.
type frameFile struct {
	rd         *codec.Reader
	fi         int
	size       int64
	offs, lens []int64 // the blocks, in order, covering [0, size)

	mu    sync.Mutex
	cache [frameCacheBlocks]cachedBlock // the blocks read in part lately
	next  int                           // the slot to fill next
}

type cachedBlock struct {
	bi  int
	buf []byte // nil: empty
}

// frameCacheBlocks is how many partly read blocks a frameFile keeps: the
// two a straddling read needs, for a few threads at a time.
const frameCacheBlocks = 8

// frameDecodes counts the blocks frameFiles decode (tests).
var frameDecodes atomic.Int64

func (f *frameFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > f.size {
		return 0, fmt.Errorf("trajectory: offset %d outside a frame's file of %d bytes", off, f.size)
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
			frameDecodes.Add(1)
			if err := f.rd.DecodeBlock(f.fi, bi, p[bo-off:bo-off+bl]); err != nil {
				return int(pos - off), err
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
		return int(pos - off), fmt.Errorf("trajectory: a frame's blocks end at %d, before %d", pos, end)
	}
	if end-off < int64(len(p)) {
		return int(end - off), io.EOF
	}
	return len(p), nil
}

// block returns block bi (of bl bytes) decoded, from the cache or decoded
// into it. The slice stays valid after it leaves the cache.
func (f *frameFile) block(bi int, bl int64) ([]byte, error) {
	f.mu.Lock()
	for _, c := range f.cache {
		if c.buf != nil && c.bi == bi {
			f.mu.Unlock()
			return c.buf, nil
		}
	}
	f.mu.Unlock()
	frameDecodes.Add(1)
	b := make([]byte, bl)
	if err := f.rd.DecodeBlock(f.fi, bi, b); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.cache[f.next] = cachedBlock{bi: bi, buf: b}
	f.next = (f.next + 1) % frameCacheBlocks
	f.mu.Unlock()
	return b, nil
}
