package checkpoint

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
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
	wantFormatError(t, err, ErrTooLarge, -1, "keys hashed exceed")

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

// hostileTorch opens a PyTorch archive and checks its allocations.
func hostileTorch(t *testing.T, b []byte) error {
	t.Helper()
	var err error
	alloc := hostileAlloc(func() { _, err = openPyTorch(bytes.NewReader(b), int64(len(b))) })
	t.Logf("%d bytes: %d bytes allocated (%v)", len(b), alloc, err)
	if alloc > hostileBound(len(b)) {
		t.Errorf("%d bytes allocated %d bytes, more than %d", len(b), alloc, hostileBound(len(b)))
	}
	return err
}

// TestHostileDeflatedPickle: a deflated data.pkl was inflated up to
// torchMaxPickle (64 MiB) however small the file; deflate compresses a
// thousand times.
func TestHostileDeflatedPickle(t *testing.T) {
	p := hostilePickle(2, "B\x00\x00\x80\x00", "\x00", 8<<20, "0N") // 8 MiB of bytes
	b, _ := ztBuild(ztOptions{}, []ztMember{{Name: "x/data.pkl", Data: p, Deflate: true}})
	z, err := readZip(bytes.NewReader(b), int64(len(b)), formatPyTorch)
	if err != nil {
		t.Fatal(err)
	}
	err = hostileTorch(t, b)
	wantFormatError(t, err, ErrTooLarge, z.Entries[0].RecordOff,
		fmt.Sprintf(`entry "x/data.pkl" of %d bytes exceeds the limit of %d bytes for a pickle in a file of %d bytes`, len(p), pickleBudget(int64(len(b))), len(b)))

	// A deflated pickle that fits still loads, and costs its size once.
	d := &pkOrderedDict{}
	for i := range 2000 {
		d.Keys, d.Vals = append(d.Keys, "layer."+strconv.Itoa(i)+".weight"), append(d.Vals, ptDense("FloatStorage", "0", 4))
	}
	b, _ = ztBuild(ztOptions{}, []ztMember{{Name: "x/data.pkl", Data: pickleOf(2, d), Deflate: true}, {Name: "x/data/0", Data: make([]byte, 16)}})
	if err := hostileTorch(t, b); err != nil {
		t.Fatal(err)
	}
}

// TestHostileTorchHooks: work that the PyTorch hooks did for each opcode
// in proportion to a string that the pickle memoized once.
func TestHostileTorchHooks(t *testing.T) {
	// REDUCE of a global with a 1 MiB module name (BINGET, BINGET, REDUCE)
	// joined module and name: 1 MiB per 5 bytes.
	t.Run("global name", func(t *testing.T) {
		p := hostilePickle(2, "c"+strings.Repeat("k", 1<<20)+"\nf\nq\x00)q\x01(", "h\x00h\x01R", 1000, "l")
		if err := hostileTorch(t, ptEdit(p)); err != nil {
			t.Fatal(err)
		}
	})

	// A persistent id naming a storage with a 60000-byte key (BINGET,
	// BINPERSID, POP) built and hashed the member name: 60 KB per 4 bytes.
	t.Run("storage key", func(t *testing.T) {
		key := strings.Repeat("7", 60000)
		w := &pkWriter{proto: 2, memo: map[any]int{}}
		w.b = append(w.b, 0x80, 2, '(')
		w.save(pkTuple{"storage", pkGlobal{"torch", "FloatStorage"}, key, "cpu", 0})
		w.b = append(w.b, 'q', 0)
		for range 3000 {
			w.b = append(w.b, "h\x00Q0"...)
		}
		w.b = append(w.b, 'l', '.')
		b, _ := ztBuild(ztOptions{}, []ztMember{{Name: "x/data.pkl", Data: w.b}, {Name: "x/data/" + key}})
		err := hostileTorch(t, b)
		wantFormatError(t, err, ErrTooLarge, -1, "keys hashed exceed")
	})

	// A rebuild with 64 dimensions (BINGET, BINGET, REDUCE) allocated its
	// size and stride: 1 KB per 5 bytes.
	t.Run("dimensions", func(t *testing.T) {
		w := &pkWriter{proto: 2, memo: map[any]int{}}
		ones := make(pkTuple, torchMaxDims)
		for i := range ones {
			ones[i] = 1
		}
		w.b = append(w.b, 0x80, 2)
		w.save(ptRebuild)
		w.b = append(w.b, 'q', 0, '0')
		w.save(pkTuple{ptStorage("FloatStorage", "0", 4), 0, ones, ones})
		w.b = append(w.b, 'q', 1, '0', '(')
		for range 50000 {
			w.b = append(w.b, "h\x00h\x01R"...)
		}
		w.b = append(w.b, 'l', '.')
		err := hostileTorch(t, ptEdit(w.b))
		wantFormatError(t, err, ErrTooLarge, -1, "values exceed")
	})
}

// TestHostileTorchNames: the path to a tensor under a long key is built
// into a name at every view of it.
func TestHostileTorchNames(t *testing.T) {
	w := &pkWriter{proto: 2, memo: map[any]int{}}
	w.b = append(w.b, 0x80, 2, '}')
	w.save(strings.Repeat("k", 60000))
	w.save(ptDense("FloatStorage", "0", 4))
	w.b = append(w.b, 'q', 0, '0', '(')
	for range 500 {
		w.b = append(w.b, 'h', 0)
	}
	w.b = append(w.b, 'l', 's', '.')
	err := hostileTorch(t, ptEdit(w.b))
	wantFormatError(t, err, ErrTooLarge, -1, "tensor names exceed")
}
