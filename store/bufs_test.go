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
		if got := outBuf(unit{RawLen: c.raw, Len: c.pay}, nil) != nil; got != c.pooled {
			t.Fatalf("outBuf(raw %d, payload %d): pooled %v, want %v", c.raw, c.pay, got, c.pooled)
		}
	}
}

// TestBufSet: a restore's buffer set reuses what came back to it, the
// smallest free buffer that holds the length asked for (a larger class
// rather than fresh memory), drops foreign slices, and hands its buffers
// to the shared pools on release.
func TestBufSet(t *testing.T) {
	var s bufSet
	big := s.get(100_000) // 128 KiB
	small := s.get(5000)  // 8 KiB
	if cap(big) != 1<<17 || cap(small) != 1<<13 {
		t.Fatalf("caps %d and %d", cap(big), cap(small))
	}
	big[0], small[0] = 1, 2
	s.put(big)
	s.put(small)
	s.put(make([]byte, 3000, 6000)) // not a pool's capacity: dropped
	if b := s.get(6000); cap(b) != 1<<13 || b[0] != 2 {
		t.Fatalf("get(6000): cap %d, first byte %d: want the 8 KiB buffer back", cap(b), b[0])
	}
	if b := s.get(6000); cap(b) != 1<<17 || b[0] != 1 {
		t.Fatalf("get(6000) with only a 128 KiB buffer free: cap %d, first byte %d", cap(b), b[0])
	}
	if b := s.get(100); len(b) != 100 || cap(b) != 100 {
		t.Fatalf("get(100): len %d cap %d, want a plain allocation", len(b), cap(b))
	}
	s.put(s.get(1 << 20))
	s.release()
	for k, l := range s.free {
		if len(l) != 0 {
			t.Fatalf("class %d: %d buffers kept after release", k, len(l))
		}
	}
	var nilSet *bufSet
	if b := nilSet.get(5000); cap(b) != 1<<13 {
		t.Fatalf("nil set: cap %d", cap(b))
	}
}
