package store

import (
	"math/bits"
	"sync"
)

// Buffers for payloads, decoded units and casts while a model is
// restored: a unit's bytes are written out and dropped, so restoring many
// units reuses the same few buffers instead of leaving the garbage
// collector to clear and scan each of them. Buffers come in power-of-two
// capacities from 4 KiB (smaller ones are plain allocations) to 64 MiB.
const (
	minPoolShift = 12
	maxPoolShift = 26
)

var bufPools [maxPoolShift - minPoolShift + 1]sync.Pool // of *[]byte

// getBuf returns a slice of length n, from a pool where n is in range.
// Its bytes are not cleared.
func getBuf(n int) []byte {
	k := poolClass(n)
	if k < 0 {
		return make([]byte, n)
	}
	if p, ok := bufPools[k].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<(k+minPoolShift))
}

// putBuf gives b back for reuse; the caller must not use it afterwards.
// Slices that did not come from getBuf's pools are dropped.
func putBuf(b []byte) {
	c := cap(b)
	if c < 1<<minPoolShift || c > 1<<maxPoolShift || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	bufPools[bits.Len(uint(c))-1-minPoolShift].Put(&b)
}

// poolClass is the pool of buffers for n bytes, or -1.
func poolClass(n int) int {
	if n <= 1<<minPoolShift/2 || n > 1<<maxPoolShift {
		return -1
	}
	k := bits.Len(uint(n - 1))
	return max(k, minPoolShift) - minPoolShift
}

// bufSet is a free list of getBuf's buffers for one restore: the units'
// payloads and decoded bytes come back to it once written and are reused
// by the next units, whatever the garbage collector does meanwhile (a
// collection empties sync.Pools, and a get of thousands of units, which
// allocates as it decodes, went through several: its buffers were fresh
// memory, page faults and all, many times over). A nil *bufSet is the
// shared pools. release hands its buffers to the shared pools.
type bufSet struct {
	mu   sync.Mutex
	free [maxPoolShift - minPoolShift + 1][][]byte
}

func (s *bufSet) get(n int) []byte {
	if s == nil {
		return getBuf(n)
	}
	k := poolClass(n)
	if k < 0 {
		return make([]byte, n)
	}
	s.mu.Lock()
	// the smallest free buffer that holds n: a larger one rather than
	// fresh memory (the units of a model come in every size class, and
	// a working set per class would be many times the decoding window)
	for ; k < len(s.free); k++ {
		if l := len(s.free[k]); l > 0 {
			b := s.free[k][l-1]
			s.free[k] = s.free[k][:l-1]
			s.mu.Unlock()
			return b[:n]
		}
	}
	s.mu.Unlock()
	return getBuf(n)
}

func (s *bufSet) put(b []byte) {
	if s == nil {
		putBuf(b)
		return
	}
	c := cap(b)
	if c < 1<<minPoolShift || c > 1<<maxPoolShift || c&(c-1) != 0 {
		return
	}
	k := bits.Len(uint(c)) - 1 - minPoolShift
	s.mu.Lock()
	s.free[k] = append(s.free[k], b[:0])
	s.mu.Unlock()
}

func (s *bufSet) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, l := range s.free {
		for _, b := range l {
			putBuf(b)
		}
		s.free[k] = nil
	}
}
