package checkpoint

import (
	"bytes"
	"runtime"
	"testing"
)

// Hostile pickles and PyTorch archives that cost far more memory or time
// than their size: each must be refused with an error, or cost at most
// hostileBound of its size.

// hostileAlloc returns the bytes allocated while f runs.
func hostileAlloc(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// hostileBound is the most an input of n bytes may allocate: 64 bytes per
// byte and a few MiB.
func hostileBound(n int) uint64 { return 64*uint64(n) + 4<<20 }

// hostilePickle is PROTO proto, head, n times op, tail and STOP.
func hostilePickle(proto byte, head string, op string, n int, tail string) []byte {
	p := append([]byte{0x80, proto}, head...)
	p = append(p, bytes.Repeat([]byte(op), n)...)
	return append(append(p, tail...), '.')
}

// TestHostileEmptyDicts: a byte of EMPTY_DICT makes a pyDict and a stack
// slot, over 100 bytes.
func TestHostileEmptyDicts(t *testing.T) {
	p := hostilePickle(2, "", "}", 1<<20, "")
	var err error
	alloc := hostileAlloc(func() { _, err = unpickle(p) })
	t.Logf("%d bytes: %d bytes allocated", len(p), alloc)
	if alloc > hostileBound(len(p)) {
		t.Errorf("%d bytes of EMPTY_DICT allocated %d bytes, more than %d", len(p), alloc, hostileBound(len(p)))
	}
	wantFormatError(t, err, ErrTooLarge, -1, "p.pkl byte ", "values exceed 68157632 bytes of memory in all")
}
