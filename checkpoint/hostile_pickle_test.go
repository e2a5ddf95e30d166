package checkpoint

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
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

// TestHostileMemoize: MEMOIZE is one byte and adds a memo entry without
// pushing a value; a map entry cost ~110 bytes and was not counted.
func TestHostileMemoize(t *testing.T) {
	p := hostilePickle(4, "N", "\x94", 1<<20, "")
	var err error
	alloc := hostileAlloc(func() { _, err = unpickle(p) })
	t.Logf("%d bytes: %d bytes allocated (%v)", len(p), alloc, err)
	if alloc > hostileBound(len(p)) {
		t.Errorf("%d bytes of MEMOIZE allocated %d bytes, more than %d", len(p), alloc, hostileBound(len(p)))
	}
}

// TestUnpickleMemoOrder checks memo entries put out of order, and MEMOIZE
// taking the number of entries as its index, as in Python.
func TestUnpickleMemoOrder(t *testing.T) {
	p := "\x80\x04" +
		"K\x01r\x05\x00\x00\x000" + // memo[5] = 1
		"K\x02\x940" + // memo[1] = 2 (one entry)
		"K\x03q\x000" + // memo[0] = 3
		"K\x04\x940" + // memo[3] = 4 (three entries)
		"K\x05q\x020" + // memo[2] = 5
		"K\x06\x940" + // memo[5] = 6 (five entries)
		"K\x07r\x00\x00\x00\x800" + // memo[1<<31] = 7
		"(h\x00h\x01h\x02h\x03h\x05j\x00\x00\x00\x80l."
	v, err := unpickle([]byte(p))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(3), int64(2), int64(5), int64(4), int64(6), int64(7)}
	if l, ok := v.(*pyList); !ok || !slices.Equal(l.Items, want) {
		t.Errorf("got %v, want %v", v, want)
	}
	if _, err := unpickle([]byte("\x80\x02K\x01q\x02h\x01.")); err == nil {
		t.Error("GET of an entry never put succeeded")
	}
}

// TestHostileLongKey: a 64 KiB string key, memoized once, then SETITEM
// with it again and again (BINGET 0, NONE, SETITEM: 4 bytes) hashed 64 KiB
// for every 4 bytes of pickle.
func TestHostileLongKey(t *testing.T) {
	const keyLen = 64 << 10
	head := "}X\x00\x00\x01\x00" + strings.Repeat("k", keyLen) + "q\x000"
	p := hostilePickle(2, head, "h\x00Ns", 4096, "")
	_, err := unpickle(p)
	wantFormatError(t, err, ErrTooLarge, -1, "dict keys hashed exceed")

	// Keys that are not strings hash in constant time; equal keys still
	// replace each other.
	v, err := unpickle(hostilePickle(2, "}K\x07q\x000", "h\x00Ns", 4096, "h\x00K\x01s"))
	if err != nil {
		t.Fatal(err)
	}
	if d := v.(*pyDict); len(d.Keys) != 1 || d.Vals[0] != int64(1) {
		t.Errorf("dict %v", d)
	}
}
