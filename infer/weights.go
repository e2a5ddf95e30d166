package infer

import (
	"fmt"
	"runtime"
	"sort"
	"time"

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
	uses   []int   // the steps that use it, ascending
}

// archiveStore keeps an archive in memory and decodes each step's unit
// into an arena just before use. The arena is as large as the largest
// unit (with prefetching: the largest sum of two consecutive units) and
// holds as many decoded units as fit: a unit still resident when the
// schedule comes back to it (the block of small tensors of all layers that
// the encoder merged, the tied embedding between the classifier and the
// next token) is not decoded again. When a unit must make room, the units
// it overwrites are chosen by when the schedule needs them next (the
// latest first, as Belady's rule), which the static schedule tells
// exactly. With prefetching, the next unit of the schedule that is not
// resident decodes on a worker goroutine while the current one is used,
// where it overwrites neither the current unit, nor a unit needed before
// it, nor a shared unit (so prefetching never decodes more bytes); a job
// the worker has not started when its unit is needed is taken back and
// decoded inline (worker).
type archiveStore struct {
	rd       *codec.Reader
	sched    []*tensor
	units    []*unit        // per step
	nextStep []int          // per step: the next step (cyclically) whose unit differs from this step's
	shared   map[*unit]bool // units used in more than one run of steps per token
	arena    []byte
	res      []resident // the units in the arena
	cur      *unit      // the unit get last returned
	cands    []int64    // place's candidate offsets (reused: no allocation per tensor)

	prefetch bool    // a worker decodes ahead (Options.Prefetch and GOMAXPROCS ≥ 2)
	pending  *unit   // the unit posted to the worker, nil when none
	worker   *worker // with prefetch
	mem      Memory
	decoded  int64 // bytes decoded so far
	byWorker int64 // of which by the worker
	backoff  int   // after a job taken back: units to decode inline before the next post, doubling
	skip     int   // units left to decode inline before the next post
}

// maxBackoff bounds the units decoded inline after jobs the worker did not
// start (it had no core of its own): a post costs the forward pass a
// wake-up of the worker, worth it only when the worker runs.
const maxBackoff = 64

// resident is a unit decoded at arena[lo:lo+u.length].
type resident struct {
	u  *unit
	lo int64
}

func (r resident) hi() int64 { return r.lo + r.u.length }

// prefetchMin: units smaller than this decode when needed; handing them to
// the worker costs more than it saves.
const prefetchMin = 4096

// newArchiveStore plans the units of every step. compressed is the
// archive's size in memory.
func newArchiveStore(rd *codec.Reader, fi int, sched []*tensor, compressed int64, prefetch bool) (*archiveStore, error) {
	f := rd.Files()[fi]
	blocks := f.Blocks()
	s := &archiveStore{rd: rd, sched: sched}
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
		u.uses = append(u.uses, step)
		size = max(size, u.length)
	}
	s.shared = map[*unit]bool{}
	for i, u := range s.units {
		if prev := s.units[(i+len(s.units)-1)%len(s.units)]; prev != u && u.uses[0] != i {
			s.shared[u] = true // a second run starts at i
		}
	}
	s.nextStep = make([]int, len(s.units))
	for i, u := range s.units {
		for k := 1; k <= len(s.units); k++ {
			j := (i + k) % len(s.units)
			if v := s.units[j]; v != u {
				s.nextStep[i] = j
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
	// With one processor (or WebAssembly's one thread) the worker could
	// only run between the forward pass's own steps: the arena stays as
	// planned, the decoding inline.
	if prefetch && runtime.GOMAXPROCS(0) >= 2 && runtime.GOOS != "js" && runtime.GOOS != "wasip1" {
		s.prefetch = true
		s.worker = newWorker(s.decode, prefetchSpin)
	}
	return s, nil
}

// prefetchSpin is how long the forward pass and the worker spin waiting
// for each other before they sleep: longer than decoding or computing
// one tensor of a small model, so that in a run neither sleeps.
var prefetchSpin = 50 * time.Microsecond

// decode decodes a unit into its place.
func (s *archiveStore) decode(r resident) error {
	dst := s.arena[r.lo:r.hi()]
	pos := int64(0)
	for k, l := range r.u.lens {
		if err := s.rd.DecodeBlock(r.u.fi, r.u.b0+k, dst[pos:pos+l]); err != nil {
			return err
		}
		pos += l
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
// last; it never overwrites pinned units (nil: none) nor, when within ≥ 0
// (a prefetch), a unit the schedule needs within that many steps or a
// shared unit (one that the schedule without prefetching keeps resident
// between its uses: evicting it early would decode it again). ok is false
// when no place avoids them.
func (s *archiveStore) place(u *unit, step int, pinned [2]*unit, within int) (lo int64, ok bool) {
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
		score, bytes, blocked := 1<<30, int64(0), false
		for _, r := range s.res {
			if r.lo < c+l && c < r.hi() { // overwritten
				next := s.nextUse(r.u, step)
				if r.u == pinned[0] || r.u == pinned[1] || (within >= 0 && (next <= within || s.shared[r.u])) {
					blocked = true
					break
				}
				score = min(score, next)
				bytes += r.u.length
			}
		}
		if blocked {
			continue
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

// wait collects the job posted to the worker: its unit is decoded, or
// dropped when the decode failed (decoding it again when it is needed
// reports the error) or when the worker had not started it.
func (s *archiveStore) wait() {
	if s.pending == nil {
		return
	}
	taken, err := s.worker.collect()
	if taken {
		// the worker got no core in time: post less often for a while
		s.backoff = min(max(1, 2*s.backoff), maxBackoff)
		s.skip = s.backoff
	}
	if taken || err != nil {
		s.drop(s.pending)
	} else {
		s.decoded += s.pending.length
		s.byWorker += s.pending.length
		s.backoff = 0
	}
	s.pending = nil
}

func (s *archiveStore) get(step int) ([]byte, error) {
	u := s.units[step]
	if u != s.cur {
		s.cur = nil
		if s.pending == u {
			s.wait()
		}
		if s.find(u) < 0 {
			lo, ok := s.place(u, step, [2]*unit{s.pending}, -1)
			if !ok { // the prefetch in flight is in the way
				s.wait()
				lo, ok = s.place(u, step, [2]*unit{}, -1)
			}
			if !ok { // cannot happen: the arena holds the largest unit
				return nil, fmt.Errorf("infer: no room for %d bytes in an arena of %d", u.length, len(s.arena))
			}
			s.decoded += u.length
			if err := s.decode(resident{u, lo}); err != nil {
				s.drop(u)
				return nil, err
			}
		}
		s.cur = u
		if s.prefetch && s.pending == nil {
			if s.skip > 0 {
				s.skip--
			} else {
				s.ahead(step)
			}
		}
	}
	r := s.res[s.find(u)]
	t := s.sched[step]
	lo := r.lo + t.offset - u.off
	return s.arena[lo : lo+t.length : lo+t.length], nil
}

// ahead hands the worker the first unit after step that is not resident
// and not small, if it has room without overwriting the current unit or
// any unit needed before it.
func (s *archiveStore) ahead(step int) {
	for j, dist := step, 0; ; {
		next := s.nextStep[j]
		dist += (next - j + len(s.units)) % len(s.units)
		j = next
		v := s.units[j]
		if v == s.cur || dist >= len(s.units) {
			return
		}
		if v.length < prefetchMin || s.find(v) >= 0 {
			continue
		}
		lo, ok := s.place(v, step, [2]*unit{s.cur}, dist-1)
		if ok {
			s.pending = v
			s.worker.post(resident{v, lo})
		}
		return
	}
}

func (s *archiveStore) memory() Memory {
	m := s.mem
	m.Decoded = s.decoded
	return m
}

func (s *archiveStore) close() {
	if s.prefetch {
		s.wait()
		s.worker.quit()
		s.prefetch = false
	}
	_ = s.rd.Close()
}
