package store

import "testing"

// TestBufs: buffers come in power-of-two capacities within the pools'
// range, others are plain allocations that putBuf drops; a unit record
// whose length is out of the pools' range or far beyond what its payload
// could hold gets no pooled buffer (the codec then allocates only what
// its archive makes plausible).
func TestBufs(t *testing.T) {
	for _, c := range []struct{ n, cap int }{{1, 1}, {2048, 2048}, {2049, 4096}, {4096, 4096}, {4097, 8192}, {1 << 26, 1 << 26}, {1<<26 + 1, 1<<26 + 1}} {
		b := getBuf(c.n)
		if len(b) != c.n || cap(b) != c.cap {
			t.Fatalf("getBuf(%d): len %d cap %d, want cap %d", c.n, len(b), cap(b), c.cap)
		}
		putBuf(b)
	}
	b := getBuf(5000)
	b[0] = 42
	putBuf(b)
	putBuf(make([]byte, 3000, 6000)) // not a pool's capacity: dropped
	if c := getBuf(6000); cap(c) != 8192 {
		t.Fatalf("getBuf(6000) after a foreign slice: cap %d", cap(c))
	}
	for _, c := range []struct {
		raw, pay int64
		pooled   bool
	}{{0, 10, false}, {-5, 10, false}, {1 << 20, 1 << 19, true}, {1<<26 + 1, 1 << 26, false}, {1 << 26, 10, false}, {64*10 + 1<<16, 10, true}} {
		if got := outBuf(unit{RawLen: c.raw, Len: c.pay}) != nil; got != c.pooled {
			t.Fatalf("outBuf(raw %d, payload %d): pooled %v, want %v", c.raw, c.pay, got, c.pooled)
		}
	}
}
