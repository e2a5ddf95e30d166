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
