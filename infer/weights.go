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
// into an arena just before use. Without prefetching the arena is the
// largest unit. With it, the next distinct unit of the schedule decodes on
// a worker goroutine while the current one is used, at the other end of
// the arena: the arena is the largest sum of two consecutive units, so
// they never overlap (and barely more than without prefetching when the
// largest unit's neighbours are small).
type archiveStore struct {
	rd    *codec.Reader
	sched []*tensor
	units []*unit // per step
	next  []*unit // per step: the next unit after this step's that differs from it
	arena []byte
	cur   *unit // the unit in the arena that get last returned
	curLo int64 // where it starts in the arena

	prefetch bool
	pending  *unit // the unit the worker is decoding, nil when none
	pendLo   int64
	req      chan prefetchReq
	done     chan error
	mem      Memory
}

type prefetchReq struct {
	u   *unit
	dst []byte
}

// prefetchMin: units smaller than this decode when needed; handing them to
// the worker costs more than it saves.
const prefetchMin = 4096

// newArchiveStore plans the units of every step. compressed is the
// archive's size in memory.
func newArchiveStore(rd *codec.Reader, fi int, sched []*tensor, compressed int64, prefetch bool) (*archiveStore, error) {
	f := rd.Files()[fi]
	blocks := f.Blocks()
	s := &archiveStore{rd: rd, sched: sched, prefetch: prefetch}
	s.mem.Compressed = compressed
	byRange := map[[2]int]*unit{}
	seen := map[*tensor]bool{}
	var size int64
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
		size = max(size, u.length)
	}
	s.next = make([]*unit, len(s.units))
	for i, u := range s.units {
		for k := 1; k <= len(s.units); k++ {
			if v := s.units[(i+k)%len(s.units)]; v != u {
				s.next[i] = v
				if prefetch && v.length >= prefetchMin {
					size = max(size, u.length+v.length)
				}
				break
			}
		}
	}
	s.arena = make([]byte, size)
	s.mem.Buffers = size
	s.mem.Peak = s.mem.Compressed + s.mem.Buffers
	if prefetch {
		s.req = make(chan prefetchReq)
		s.done = make(chan error, 1)
		go func() {
			for r := range s.req {
				s.done <- s.decode(r.u, r.dst)
			}
		}()
	}
	return s, nil
}

// decode decodes unit u into dst.
func (s *archiveStore) decode(u *unit, dst []byte) error {
	pos := int64(0)
	for k, l := range u.lens {
		if err := s.rd.DecodeBlock(u.fi, u.b0+k, dst[pos:pos+l]); err != nil {
			return err
		}
		pos += l
	}
	return nil
}

// place returns where in the arena unit u goes: at the end away from the
// current unit.
func (s *archiveStore) place(u *unit) int64 {
	if s.cur != nil && s.curLo == 0 {
		return int64(len(s.arena)) - u.length
	}
	return 0
}

// wait collects the prefetch in flight; its unit becomes resident.
func (s *archiveStore) wait() (*unit, int64, error) {
	if s.pending == nil {
		return nil, 0, nil
	}
	err := <-s.done
	u, lo := s.pending, s.pendLo
	s.pending = nil
	if err != nil {
		return nil, 0, err
	}
	return u, lo, nil
}

func (s *archiveStore) get(step int) ([]byte, error) {
	u := s.units[step]
	if u != s.cur {
		pu, plo, err := s.wait()
		if err != nil {
			return nil, err
		}
		if pu == u {
			s.cur, s.curLo = u, plo
		} else {
			lo := s.place(u)
			s.cur = nil // overwritten from here
			if err := s.decode(u, s.arena[lo:lo+u.length]); err != nil {
				return nil, err
			}
			s.cur, s.curLo = u, lo
		}
		if s.prefetch {
			if v := s.next[step]; v.length >= prefetchMin {
				s.pending, s.pendLo = v, s.place(v)
				s.req <- prefetchReq{v, s.arena[s.pendLo : s.pendLo+v.length]}
			}
		}
	}
	t := s.sched[step]
	lo := s.curLo + t.offset - u.off
	return s.arena[lo : lo+t.length : lo+t.length], nil
}

func (s *archiveStore) memory() Memory { return s.mem }

func (s *archiveStore) close() {
	_, _, _ = s.wait()
	if s.req != nil {
		close(s.req)
		s.req = nil
	}
	_ = s.rd.Close()
}
