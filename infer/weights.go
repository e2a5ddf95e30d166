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
}

// store hands the forward pass its tensors in schedule order. get(i)
// returns the bytes of schedule step i's tensor; they stay valid until
// the next call to get.
type store interface {
	get(step int) ([]byte, error)
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

func (s *fileStore) get(step int) ([]byte, error) { return s.data[s.sched[step]], nil }
func (s *fileStore) memory() Memory               { return s.mem }
func (s *fileStore) close()                       {}

// unit is the run of consecutive archive blocks that covers a tensor: its
// own blocks for a large tensor, the one shared block for small tensors
// that the encoder merged. A unit decodes as a whole.
type unit struct {
	fi     int
	b0, b1 int   // blocks [b0, b1)
	off    int64 // original offset of block b0
	length int64
	lens   []int64 // each block's length
}

// archiveStore keeps an archive in memory and decodes each step's unit
// into one of its buffers: one buffer, or two when prefetching (the next
// step's unit decodes into the other while the current one is used).
type archiveStore struct {
	rd    *codec.Reader
	sched []*tensor
	units []*unit // per step
	bufs  [][]byte
	held  []*unit // the unit each buffer holds (nil: none)
	// prefetch state: the buffer being filled and its result
	prefetch bool
	pending  int // buffer index being filled, -1 when none
	done     chan error
	cur      int // buffer the last get returned
	mem      Memory
}

// newArchiveStore plans the units of every step. compressed is the
// archive's size in memory.
func newArchiveStore(rd *codec.Reader, fi int, sched []*tensor, compressed int64, prefetch bool) (*archiveStore, error) {
	f := rd.Files()[fi]
	blocks := f.Blocks()
	s := &archiveStore{rd: rd, sched: sched, prefetch: prefetch, pending: -1, cur: -1}
	s.mem.Compressed = compressed
	byRange := map[[2]int]*unit{}
	seen := map[*tensor]bool{}
	var maxUnit int64
	for _, t := range sched {
		if !seen[t] {
			seen[t] = true
			s.mem.Weights += t.length
		}
		// first block ending after t.offset
		b0 := sort.Search(len(blocks), func(i int) bool { return blocks[i].Offset+blocks[i].Length > t.offset })
		b1 := b0
		for b1 < len(blocks) && blocks[b1].Offset < t.offset+t.length {
			b1++
		}
		if b0 >= len(blocks) || blocks[b0].Offset > t.offset || b1 == b0 || blocks[b1-1].Offset+blocks[b1-1].Length < t.offset+t.length {
			return nil, fmt.Errorf("%w: tensor %q [%d,+%d) is not covered by the archive's blocks", ErrArchitecture, t.name, t.offset, t.length)
		}
		key := [2]int{b0, b1}
		u := byRange[key]
		if u == nil {
			u = &unit{fi: fi, b0: b0, b1: b1, off: blocks[b0].Offset}
			for b := b0; b < b1; b++ {
				u.lens = append(u.lens, blocks[b].Length)
				u.length += blocks[b].Length
			}
			byRange[key] = u
		}
		s.units = append(s.units, u)
		maxUnit = max(maxUnit, u.length)
	}
	n := 1
	if prefetch {
		n = 2
	}
	for range n {
		s.bufs = append(s.bufs, make([]byte, maxUnit))
		s.held = append(s.held, nil)
		s.mem.Buffers += maxUnit
	}
	s.mem.Peak = s.mem.Compressed + s.mem.Buffers
	return s, nil
}

// decode fills buffer bi with unit u.
func (s *archiveStore) decode(bi int, u *unit) error {
	s.held[bi] = nil
	buf := s.bufs[bi]
	pos := int64(0)
	for k, l := range u.lens {
		if err := s.rd.DecodeBlock(u.fi, u.b0+k, buf[pos:pos+l]); err != nil {
			return err
		}
		pos += l
	}
	s.held[bi] = u
	return nil
}

// wait collects a prefetch in flight.
func (s *archiveStore) wait() error {
	if s.pending < 0 {
		return nil
	}
	err := <-s.done
	s.pending = -1
	return err
}

func (s *archiveStore) get(step int) ([]byte, error) {
	u := s.units[step]
	t := s.sched[step]
	if err := s.wait(); err != nil {
		return nil, err
	}
	bi := -1
	for i, h := range s.held {
		if h == u {
			bi = i
		}
	}
	if bi < 0 {
		// not resident: decode into a buffer other than the one in use
		bi = 0
		if len(s.bufs) > 1 && s.cur == 0 {
			bi = 1
		}
		if err := s.decode(bi, u); err != nil {
			return nil, err
		}
	}
	s.cur = bi
	if s.prefetch {
		s.startPrefetch(step)
	}
	lo := t.offset - u.off
	return s.bufs[bi][lo : lo+t.length : lo+t.length], nil
}

// startPrefetch decodes the unit of the next step (cyclically: after the
// last step comes the next token's first) into the buffer not in use,
// unless it is already resident.
func (s *archiveStore) startPrefetch(step int) {
	next := s.units[(step+1)%len(s.units)]
	for _, h := range s.held {
		if h == next {
			return
		}
	}
	bi := 1 - s.cur
	if s.done == nil {
		s.done = make(chan error, 1)
	}
	s.pending = bi
	s.held[bi] = nil
	go func() { s.done <- s.decode(bi, next) }()
}

func (s *archiveStore) memory() Memory { return s.mem }

func (s *archiveStore) close() {
	_ = s.wait()
	_ = s.rd.Close()
}
