package infer

import (
	"fmt"
	"sort"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// tensor is one weight tensor of the model as its file stores it.
type tensor struct {
	name   string
	dt     dtype.DType
	shape  []int64
	offset int64 // in the original file
	length int64
}

// numel is the number of elements of t.
func (t *tensor) numel() int64 {
	n := int64(1)
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// Memory is what a model holds of its weights.
type Memory struct {
	// Weights is the size of the model's tensors as stored (uncompressed).
	Weights int64
	// Compressed is the archive bytes held in memory (0 from an original
	// file).
	Compressed int64
	// Buffers is the capacity of the decoded-weight buffers (from an
	// archive) or of the tensors held as stored (from an original file),
	// including the float32 copies of small vectors (norms, biases).
	Buffers int64
	// Peak is the most weight bytes held at once: Compressed + Buffers at
	// their largest.
	Peak int64
	// Decoded is the number of bytes decoded from the archive so far.
	Decoded int64
}

// store hands the forward pass its tensors in schedule order. get(i)
// returns the bytes of schedule step i's tensor; they stay valid until
// the next call to get or stream. stream(i) is get that may return before
// the tensor is decoded: ready(n) then waits until its first n bytes are
// (a decode error surfaces there), so a matmul can start on the rows that
// have arrived.
type store interface {
	get(step int) ([]byte, error)
	stream(step int) ([]byte, error)
	ready(n int64) error
	memory() Memory
	close()
}

// fileStore holds the tensors of an original file as stored.
type fileStore struct {
	sched []*tensor
	data  map[*tensor][]byte
	mem   Memory
}

func newFileStore(sched []*tensor, read func(t *tensor) ([]byte, error)) (*fileStore, error) {
	s := &fileStore{sched: sched, data: make(map[*tensor][]byte)}
	for _, t := range sched {
		if _, ok := s.data[t]; ok {
			continue
		}
		b, err := read(t)
		if err != nil {
			return nil, err
		}
		s.data[t] = b
		s.mem.Weights += t.length
		s.mem.Buffers += int64(cap(b))
	}
	s.mem.Peak = s.mem.Buffers
	return s, nil
}

func (s *fileStore) get(step int) ([]byte, error)    { return s.data[s.sched[step]], nil }
func (s *fileStore) stream(step int) ([]byte, error) { return s.get(step) }
func (s *fileStore) ready(int64) error               { return nil }
func (s *fileStore) memory() Memory                  { return s.mem }
func (s *fileStore) close()                          {}

// readStore reads each tensor when it is asked for (Options.ReadEach)
// into one buffer; asking for the tensor read last reads nothing.
type readStore struct {
	sched []*tensor
	read  func(t *tensor, b []byte) error
	buf   []byte
	last  *tensor
	mem   Memory
}

func newReadStore(sched []*tensor, read func(t *tensor, b []byte) error) *readStore {
	s := &readStore{sched: sched, read: read}
	seen := map[*tensor]bool{}
	var largest int64
	for _, t := range sched {
		largest = max(largest, t.length)
		if !seen[t] {
			seen[t] = true
			s.mem.Weights += t.length
		}
	}
	s.buf = make([]byte, largest)
	s.mem.Buffers, s.mem.Peak = largest, largest
	return s
}

func (s *readStore) get(step int) ([]byte, error) {
	t := s.sched[step]
	b := s.buf[:t.length]
	if t != s.last {
		s.last = nil
		if err := s.read(t, b); err != nil {
			return nil, err
		}
		s.last = t
		s.mem.Decoded += t.length
	}
	return b, nil
}

func (s *readStore) stream(step int) ([]byte, error) { return s.get(step) }
func (s *readStore) ready(int64) error               { return nil }
func (s *readStore) memory() Memory                  { return s.mem }
func (s *readStore) close()                          {}

// blocks is what an archiveStore decodes: the blocks of an archive's file
// (codec.Reader), or the tiles of a Tiled file (a lossy archive's).
type blocks interface {
	// spans is each block's offset and length in the file, in order.
	spans() []span
	// decode writes block b into dst (its length); safe for concurrent use.
	decode(b int, dst []byte) error
	close()
}

// span is a block's place in the file.
type span struct{ off, length int64 }

// archiveBlocks are the blocks of file fi of an archive.
type archiveBlocks struct {
	rd *codec.Reader
	fi int
}

func (a archiveBlocks) spans() []span {
	bs := a.rd.Files()[a.fi].Blocks()
	out := make([]span, len(bs))
	for i, b := range bs {
		out[i] = span{b.Offset, b.Length}
	}
	return out
}

func (a archiveBlocks) decode(b int, dst []byte) error { return a.rd.DecodeBlock(a.fi, b, dst) }
func (a archiveBlocks) close()                         { _ = a.rd.Close() }

// tiledBlocks are the tiles of a Tiled file.
type tiledBlocks struct{ f Tiled }

func (t tiledBlocks) spans() []span {
	ends := t.f.TileEnds()
	out := make([]span, len(ends))
	var off int64
	for i, e := range ends {
		out[i] = span{off, e - off}
		off = e
	}
	return out
}

func (t tiledBlocks) decode(b int, dst []byte) error { return t.f.DecodeTile(b, dst) }
func (t tiledBlocks) close()                         {}

// unit is the run of consecutive blocks that covers a tensor: its own
// blocks for a large tensor, the one shared block for small tensors that
// the encoder merged (or a lossy archive's run of raw bytes). A unit
// decodes as a whole, block after block.
type unit struct {
	b0, b1 int   // blocks [b0, b1)
	off    int64 // original offset of block b0
	length int64
	lens   []int64 // each block's length
	uses   []int   // the steps that use it, ascending
}

// archiveStore keeps an archive in memory and decodes each step's unit
// into an arena just before use. The arena is as large as the largest
// unit and holds as many decoded units as fit: a unit still resident when the
// schedule comes back to it (the block of small tensors of all layers that
// the encoder merged, the tied embedding between the classifier and the
// next token) is not decoded again. When a unit must make room, the units
// it overwrites are chosen by when the schedule needs them next (the
// latest first, as Belady's rule), which the static schedule tells
// exactly. With prefetching a pipeStore takes its units and decodes them
// in a ring instead.
type archiveStore struct {
	src     blocks
	sched   []*tensor
	units   []*unit // per step
	arena   []byte
	res     []resident // the units in the arena
	cur     *unit      // the unit get last returned
	cands   []int64    // place's candidate offsets (reused: no allocation per tensor)
	mem     Memory
	decoded int64 // bytes decoded so far
}

// resident is a unit decoded at arena[lo:lo+u.length].
type resident struct {
	u  *unit
	lo int64
}

func (r resident) hi() int64 { return r.lo + r.u.length }

// newArchiveStore plans the units of every step. compressed is the
// archive's size in memory.
func newArchiveStore(src blocks, sched []*tensor, compressed int64) (*archiveStore, error) {
	blocks := src.spans()
	s := &archiveStore{src: src, sched: sched}
	s.mem.Compressed = compressed
	byRange := map[[2]int]*unit{}
	seen := map[*tensor]bool{}
	var size int64
	for step, t := range sched {
		if !seen[t] {
			seen[t] = true
			s.mem.Weights += t.length
		}
		// first block ending after t.offset
		b0 := sort.Search(len(blocks), func(i int) bool { return blocks[i].off+blocks[i].length > t.offset })
		b1 := b0
		for b1 < len(blocks) && blocks[b1].off < t.offset+t.length {
			b1++
		}
		if b0 >= len(blocks) || blocks[b0].off > t.offset || b1 == b0 || blocks[b1-1].off+blocks[b1-1].length < t.offset+t.length {
			return nil, fmt.Errorf("%w: tensor %q [%d,+%d) is not covered by the archive's blocks", ErrArchitecture, t.name, t.offset, t.length)
		}
		key := [2]int{b0, b1}
		u := byRange[key]
		if u == nil {
			u = &unit{b0: b0, b1: b1, off: blocks[b0].off}
			for b := b0; b < b1; b++ {
				u.lens = append(u.lens, blocks[b].length)
				u.length += blocks[b].length
			}
			byRange[key] = u
		}
		s.units = append(s.units, u)
		u.uses = append(u.uses, step)
		size = max(size, u.length)
	}
	s.arena = make([]byte, size)
	s.mem.Buffers = size
	s.mem.Peak = s.mem.Compressed + s.mem.Buffers
	return s, nil
}

// progresser is told how many bytes of a unit are decoded, block by block.
type progresser interface{ progress(n int64) }

// decodeInto decodes a unit into its place in arena, block by block;
// after each block, pr (if not nil) is told the bytes decoded so far.
func (s *archiveStore) decodeInto(arena []byte, r resident, pr progresser) error {
	dst := arena[r.lo:r.hi()]
	pos := int64(0)
	for k, l := range r.u.lens {
		if err := s.src.decode(r.u.b0+k, dst[pos:pos+l]); err != nil {
			return err
		}
		pos += l
		if pr != nil {
			pr.progress(pos)
		}
	}
	return nil
}

func (s *archiveStore) find(u *unit) int {
	for i, r := range s.res {
		if r.u == u {
			return i
		}
	}
	return -1
}

func (s *archiveStore) drop(u *unit) {
	if i := s.find(u); i >= 0 {
		s.res = append(s.res[:i], s.res[i+1:]...)
	}
}

// nextUse is how many steps after step the schedule next uses u
// (cyclically: the next token's steps follow the last).
func (s *archiveStore) nextUse(u *unit, step int) int {
	us := u.uses
	k := sort.SearchInts(us, step+1)
	if k < len(us) {
		return us[k] - step
	}
	return len(s.units) - step + us[0]
}

// place reserves room for u, overwriting the residents the schedule needs
// last. ok is false only when u is larger than the arena.
func (s *archiveStore) place(u *unit, step int) (lo int64, ok bool) {
	l, size := u.length, int64(len(s.arena))
	cands := append(s.cands[:0], 0, size-l)
	for _, r := range s.res {
		cands = append(cands, r.hi(), r.lo-l)
	}
	s.cands = cands
	bestLo, bestScore, bestBytes := int64(-1), -1, int64(0)
	for _, c := range cands {
		if c < 0 || c+l > size {
			continue
		}
		score, bytes := 1<<30, int64(0)
		for _, r := range s.res {
			if r.lo < c+l && c < r.hi() { // overwritten
				score = min(score, s.nextUse(r.u, step))
				bytes += r.u.length
			}
		}
		if score > bestScore || (score == bestScore && bytes < bestBytes) {
			bestLo, bestScore, bestBytes = c, score, bytes
		}
	}
	if bestLo < 0 {
		return 0, false
	}
	kept := s.res[:0]
	for _, r := range s.res {
		if !(r.lo < bestLo+l && bestLo < r.hi()) {
			kept = append(kept, r)
		}
	}
	s.res = append(kept, resident{u, bestLo})
	return bestLo, true
}

func (s *archiveStore) get(step int) ([]byte, error) {
	u := s.units[step]
	if u != s.cur {
		s.cur = nil
		if s.find(u) < 0 {
			lo, ok := s.place(u, step)
			if !ok { // cannot happen: the arena holds the largest unit
				return nil, fmt.Errorf("infer: no room for %d bytes in an arena of %d", u.length, len(s.arena))
			}
			s.decoded += u.length
			if err := s.decodeInto(s.arena, resident{u, lo}, nil); err != nil {
				s.drop(u)
				return nil, err
			}
		}
		s.cur = u
	}
	r := s.res[s.find(u)]
	t := s.sched[step]
	lo := r.lo + t.offset - u.off
	return s.arena[lo : lo+t.length : lo+t.length], nil
}

func (s *archiveStore) stream(step int) ([]byte, error) { return s.get(step) }
func (s *archiveStore) ready(int64) error               { return nil }

func (s *archiveStore) memory() Memory {
	m := s.mem
	m.Decoded = s.decoded
	return m
}

func (s *archiveStore) close() { s.src.close() }
