package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// ---- a pickle writer for fixtures ----
//
// It writes the opcodes that CPython's pickler writes for the same objects
// at protocol 2 (GLOBAL, BINUNICODE, BINPUT) or protocol 4 (FRAME,
// STACK_GLOBAL, SHORT_BINUNICODE, MEMOIZE): containers are memoized, strings
// and globals are memoized and fetched again with BINGET.

type (
	pkGlobal struct{ Mod, Name string }
	pkTuple  []any
	pkList   []any
	// pkDict is a dict in insertion order.
	pkDict struct{ Keys, Vals []any }
	// pkCall is fn(*args) by REDUCE, then BUILD with State when not nil.
	pkCall struct {
		Fn    any
		Args  pkTuple
		State any
	}
	// pkOrderedDict is collections.OrderedDict() with items and attributes,
	// as torch pickles a state dict.
	pkOrderedDict struct {
		Keys, Vals []any
		State      any
	}
	// pkObject is NEWOBJ of Cls with a dict state given by BUILD, as the
	// TorchScript pickler writes modules.
	pkObject struct {
		Cls   pkGlobal
		Attrs *pkDict
	}
	pkPID struct{ PID any } // a persistent id
	pkRaw []byte            // opcodes written as they are
)

type pkWriter struct {
	b     []byte
	proto int
	memo  map[any]int
}

// pickleOf writes v as a pickle of the given protocol (2 or 4).
func pickleOf(proto int, v any) []byte {
	w := &pkWriter{proto: proto, memo: make(map[any]int)}
	w.b = append(w.b, 0x80, byte(proto))
	if proto >= 4 {
		w.b = append(w.b, 0x95) // one frame of everything
		w.b = binary.LittleEndian.AppendUint64(w.b, 0)
	}
	start := len(w.b)
	w.save(v)
	w.b = append(w.b, '.')
	if proto >= 4 {
		binary.LittleEndian.PutUint64(w.b[start-8:], uint64(len(w.b)-start))
	}
	return w.b
}

func (w *pkWriter) put(key any) {
	i := len(w.memo)
	w.memo[key] = i
	switch {
	case w.proto >= 4:
		w.b = append(w.b, 0x94)
	case i < 256:
		w.b = append(w.b, 'q', byte(i))
	default:
		w.b = append(w.b, 'r')
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(i))
	}
}

// get writes a memo fetch of key and reports whether key was memoized.
func (w *pkWriter) get(key any) bool {
	i, ok := w.memo[key]
	if !ok {
		return false
	}
	if i < 256 {
		w.b = append(w.b, 'h', byte(i))
	} else {
		w.b = append(w.b, 'j')
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(i))
	}
	return true
}

func (w *pkWriter) items(ks, vs []any) {
	switch len(ks) {
	case 0:
	case 1:
		w.save(ks[0])
		w.save(vs[0])
		w.b = append(w.b, 's')
	default:
		w.b = append(w.b, '(')
		for i := range ks {
			w.save(ks[i])
			w.save(vs[i])
		}
		w.b = append(w.b, 'u')
	}
}

func (w *pkWriter) save(v any) {
	le := binary.LittleEndian
	switch x := v.(type) {
	case nil:
		w.b = append(w.b, 'N')
	case bool:
		if x {
			w.b = append(w.b, 0x88)
		} else {
			w.b = append(w.b, 0x89)
		}
	case int:
		switch {
		case x >= 0 && x < 256:
			w.b = append(w.b, 'K', byte(x))
		case x >= 0 && x < 65536:
			w.b = append(w.b, 'M')
			w.b = le.AppendUint16(w.b, uint16(x))
		case x >= math.MinInt32 && x <= math.MaxInt32:
			w.b = append(w.b, 'J')
			w.b = le.AppendUint32(w.b, uint32(int32(x)))
		default:
			w.b = append(w.b, 0x8a, 8)
			w.b = le.AppendUint64(w.b, uint64(x))
		}
	case float64:
		w.b = append(w.b, 'G')
		w.b = binary.BigEndian.AppendUint64(w.b, math.Float64bits(x))
	case string:
		if w.get("s:" + x) {
			return
		}
		if w.proto >= 4 && len(x) < 256 {
			w.b = append(w.b, 0x8c, byte(len(x)))
		} else {
			w.b = append(w.b, 'X')
			w.b = le.AppendUint32(w.b, uint32(len(x)))
		}
		w.b = append(w.b, x...)
		w.put("s:" + x)
	case pkGlobal:
		if w.get(x) {
			return
		}
		if w.proto >= 4 {
			w.save(x.Mod)
			w.save(x.Name)
			w.b = append(w.b, 0x93)
		} else {
			w.b = append(w.b, 'c')
			w.b = append(w.b, x.Mod+"\n"+x.Name+"\n"...)
		}
		w.put(x)
	case pkTuple:
		switch len(x) {
		case 0:
			w.b = append(w.b, ')')
			return
		case 1, 2, 3:
			for _, e := range x {
				w.save(e)
			}
			w.b = append(w.b, 0x85+byte(len(x)-1))
		default:
			w.b = append(w.b, '(')
			for _, e := range x {
				w.save(e)
			}
			w.b = append(w.b, 't')
		}
		w.put(new(int)) // tuples are memoized but never shared here
	case pkList:
		w.b = append(w.b, ']')
		w.put(new(int))
		if len(x) == 1 {
			w.save(x[0])
			w.b = append(w.b, 'a')
		} else if len(x) > 1 {
			w.b = append(w.b, '(')
			for _, e := range x {
				w.save(e)
			}
			w.b = append(w.b, 'e')
		}
	case *pkDict:
		if w.get(x) {
			return
		}
		w.b = append(w.b, '}')
		w.put(x)
		w.items(x.Keys, x.Vals)
	case *pkOrderedDict:
		if w.get(x) {
			return
		}
		w.save(pkGlobal{"collections", "OrderedDict"})
		w.b = append(w.b, ')', 'R')
		w.put(x)
		w.items(x.Keys, x.Vals)
		if x.State != nil {
			w.save(x.State)
			w.b = append(w.b, 'b')
		}
	case *pkCall:
		if w.get(x) {
			return
		}
		w.save(x.Fn)
		w.save(x.Args)
		w.b = append(w.b, 'R')
		w.put(x)
		if x.State != nil {
			w.save(x.State)
			w.b = append(w.b, 'b')
		}
	case *pkObject:
		if w.get(x) {
			return
		}
		w.save(x.Cls)
		w.b = append(w.b, ')', 0x81)
		w.put(x)
		w.save(x.Attrs)
		w.b = append(w.b, 'b')
	case pkPID:
		w.save(x.PID)
		w.b = append(w.b, 'Q')
	case pkRaw:
		w.b = append(w.b, x...)
	default:
		panic("pickleOf: cannot pickle a " + pyTypeName(v))
	}
}

// ---- tests of the unpickler ----

// unpickle runs the unpickler on b with persistent ids passed through as
// their values.
func unpickle(b []byte) (any, error) {
	u := &unpickler{b: b, format: "test", what: "p.pkl", exact: true,
		persistentLoad: func(pid any, _ int) (any, error) { return &pyObject{Class: "pid", Args: pid}, nil }}
	return u.load()
}

func TestUnpickleValues(t *testing.T) {
	sd := &pkOrderedDict{Keys: []any{"a", "b"}, Vals: []any{1, "x"}, State: &pkDict{Keys: []any{"_metadata"}, Vals: []any{&pkDict{}}}}
	for _, proto := range []int{2, 4} {
		v, err := unpickle(pickleOf(proto, pkTuple{nil, true, false, 7, 300, 70000, -5, 1 << 40, 2.5, "é", pkList{1, 2}, sd, sd, pkGlobal{"m", "n"}}))
		if err != nil {
			t.Fatalf("protocol %d: %v", proto, err)
		}
		it := v.(*pyTuple).Items
		want := []any{nil, true, false, int64(7), int64(300), int64(70000), int64(-5), int64(1 << 40), 2.5, "é"}
		for i, w := range want {
			if it[i] != w {
				t.Errorf("protocol %d: item %d = %#v, want %#v", proto, i, it[i], w)
			}
		}
		if l := it[10].(*pyList); len(l.Items) != 2 || l.Items[1] != int64(2) {
			t.Errorf("list %v", l.Items)
		}
		od := it[11].(*pyObject)
		if g := od.Class.(*pyGlobal); g.Module != "collections" || g.Name != "OrderedDict" || od.Dict == nil || len(od.Dict.Keys) != 2 || od.State == nil {
			t.Errorf("ordered dict %+v", od)
		}
		if it[12] != it[11] {
			t.Error("memoized object fetched as a copy")
		}
		if g := it[13].(*pyGlobal); *g != (pyGlobal{"m", "n"}) {
			t.Errorf("global %+v", g)
		}
	}
}

// TestUnpickleText covers the protocol 0 and 1 opcodes.
func TestUnpickleText(t *testing.T) {
	src := "(lp0\nI1\naI01\naL12345678901234567890L\naF2.5\naS'a\\'b\\x41'\naVcaf\\u00e9\na(dp1\nS'k'\np2\nNsa(i__main__\nC\np3\nI5\nba."
	v, err := unpickle([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	it := v.(*pyList).Items
	if len(it) != 8 || it[0] != int64(1) || it[1] != true || it[2] != (pyBigInt{Len: 20}) || it[3] != 2.5 || it[4] != "a'bA" || it[5] != "café" {
		t.Fatalf("items %#v", it)
	}
	if d := it[6].(*pyDict); len(d.Keys) != 1 || d.Keys[0] != "k" || d.Vals[0] != nil {
		t.Errorf("dict %+v", d)
	}
	if o := it[7].(*pyObject); o.Class.(*pyGlobal).Name != "C" || o.State != int64(5) {
		t.Errorf("object %+v", o)
	}
}

func TestUnpickleStackOps(t *testing.T) {
	// MARK 1 2 POP_MARK; 3 DUP TUPLE2; EMPTY_SET MARK 4 ADDITEMS POP; LONG1 -1; STOP
	v, err := unpickle([]byte("\x80\x02(K\x01K\x021K\x032\x86\x8f(K\x04\x900\x8a\x01\xff\x86."))
	if err != nil {
		t.Fatal(err)
	}
	it := v.(*pyTuple).Items
	if len(it) != 2 || it[1] != int64(-1) {
		t.Fatalf("%#v", it)
	}
	if in := it[0].(*pyTuple).Items; in[0] != int64(3) || in[1] != int64(3) {
		t.Fatalf("%#v", in)
	}
	// LONG1 of 9 bytes, LONG4, BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
	b := []byte("\x80\x04(\x8a\x09123456789\x8b\x02\x00\x00\x00\x00\x80B\x01\x00\x00\x00xC\x01y\x8e\x01\x00\x00\x00\x00\x00\x00\x00z\x96\x00\x00\x00\x00\x00\x00\x00\x00t.")
	v, err = unpickle(b)
	if err != nil {
		t.Fatal(err)
	}
	it = v.(*pyTuple).Items
	want := []any{pyBigInt{Len: 9}, int64(-32768), pyBytes("x"), pyBytes("y"), pyBytes("z"), pyBytes("")}
	for i := range want {
		if it[i] != want[i] {
			t.Errorf("item %d: %#v, want %#v", i, it[i], want[i])
		}
	}
}

func TestUnpickleErrors(t *testing.T) {
	cases := []struct {
		name     string
		b        string
		sentinel error
		off      int64
		sub      string
	}{
		{"unknown opcode", "\x80\x02K\x01\xff.", ErrMalformed, 4, "unknown pickle opcode 0xff"},
		{"no stop", "\x80\x02K\x01", ErrTruncated, 4, "without STOP"},
		{"empty", "", ErrTruncated, 0, "without STOP"},
		{"protocol", "\x80\x06N.", ErrUnsupported, 0, "protocol 6"},
		{"huge BINUNICODE", "\x80\x02X\xf0\xff\xff\xffabc.", ErrTooLarge, 2, "length 4294967280"},
		{"huge BINBYTES8", "\x80\x04\x8e\xff\xff\xff\xff\xff\xff\xff\x7fabc.", ErrTooLarge, 2, "BINBYTES8"},
		{"huge LONG4", "\x80\x02\x8b\xff\xff\xff\x7f.", ErrTooLarge, 2, "LONG4"},
		{"huge frame", "\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x01N.", ErrTruncated, 2, "frame"},
		{"short BININT", "\x80\x02J\x01\x02", ErrTruncated, 2, "BININT needs 4 bytes"},
		{"underflow", "\x80\x02R.", ErrMalformed, 2, "stack underflow"},
		{"underflow below mark", "\x80\x02K\x01(\x85.", ErrMalformed, 5, "stack underflow"},
		{"stop on empty", ".", ErrMalformed, 0, "stack underflow"},
		{"no mark", "\x80\x02K\x01t.", ErrMalformed, 4, "no MARK"},
		{"memo miss", "\x80\x02h\x05.", ErrMalformed, 2, "memo key 5"},
		{"put on empty", "\x80\x02q\x00.", ErrMalformed, 2, "stack underflow"},
		{"bad utf-8", "\x80\x02X\x01\x00\x00\x00\xff.", ErrMalformed, 2, "UTF-8"},
		{"reduce non-tuple", "\x80\x02cm\nf\nK\x01R.", ErrMalformed, 9, "not a tuple"},
		{"build on int", "\x80\x02K\x01K\x02b.", ErrMalformed, 6, "BUILD on int"},
		{"append to int", "\x80\x02K\x01K\x02a.", ErrMalformed, 6, "APPEND to int"},
		{"setitem on list", "\x80\x02]K\x01K\x02s.", ErrMalformed, 7, "SETITEM on list"},
		{"odd setitems", "\x80\x02}(K\x01u.", ErrMalformed, 6, "odd number"},
		{"ext", "\x80\x02\x82\x01.", ErrUnsupported, 2, "EXT1"},
		{"buffer", "\x80\x05\x97.", ErrUnsupported, 2, "NEXT_BUFFER"},
		{"global no newline", "\x80\x02cmodule", ErrTruncated, 2, "no newline"},
		{"stack global types", "\x80\x04K\x01K\x02\x93.", ErrMalformed, 6, "STACK_GLOBAL"},
		{"bad int", "I12x\n.", ErrMalformed, 0, "bad integer"},
		{"bad float", "Fx\n.", ErrMalformed, 0, "bad float"},
		{"bad get", "g-1\n.", ErrMalformed, 0, "bad memo index"},
		{"unquoted string", "Sabc\n.", ErrMalformed, 0, "not quoted"},
		{"obj without class", "(o.", ErrMalformed, 1, "OBJ without a class"},
		{"no persistent load", "\x80\x02K\x01Q.", ErrUnsupported, 4, "persistent id"},
		{"additems on list", "](\x90.", ErrMalformed, 2, "ADDITEMS on list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &unpickler{b: []byte(c.b), format: "test", what: "p.pkl", base: 1000, exact: true}
			_, err := u.load()
			wantFormatError(t, err, c.sentinel, 1000+c.off, c.sub)
		})
	}
	// The offset of an inflated pickle is the offset of its compressed data.
	u := &unpickler{b: []byte("\x80\x02\xff"), format: "test", what: "p.pkl", base: 1000}
	_, err := u.load()
	wantFormatError(t, err, ErrMalformed, 1000, "p.pkl byte 2: unknown pickle opcode 0xff")
}

// TestUnpickleBounded checks that hostile pickles cost memory and time in
// proportion to their size: deep nesting, cycles, exponential sharing.
func TestUnpickleBounded(t *testing.T) {
	const n = 200000
	// n nested lists: EMPTY_LIST n times, APPEND n-1 times.
	deep := append([]byte{0x80, 2}, bytes.Repeat([]byte{']'}, n)...)
	deep = append(deep, bytes.Repeat([]byte{'a'}, n-1)...)
	deep = append(deep, '.')
	if _, err := unpickle(deep); err != nil {
		t.Fatal(err)
	}
	// a list that contains itself
	cyc := []byte("\x80\x02]q\x00h\x00a.")
	v, err := unpickle(cyc)
	if err != nil {
		t.Fatal(err)
	}
	if l := v.(*pyList); l.Items[0] != v {
		t.Error("cycle lost")
	}
	// tuples of tuples sharing their halves: 2^60 paths, 60 objects
	var b strings.Builder
	b.WriteString("\x80\x02K\x00q\x00")
	for i := 0; i < 60; i++ {
		b.WriteString("h\x00h\x00\x86q\x00")
	}
	b.WriteString(".")
	if _, err := unpickle([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

func TestPyUnescape(t *testing.T) {
	for in, want := range map[string]string{`a\nb`: "a\nb", `\x41\'`: "A'", `\q`: `\q`, `\`: `\`, `\x4`: `\x4`} {
		if got := pyUnescape(in, false); got != want {
			t.Errorf("pyUnescape(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{`\u00e9\U0001F600`: "é😀", "\xe9": "é", `\n`: `\n`} {
		if got := pyUnescape(in, true); got != want {
			t.Errorf("pyUnescape(%q, unicode) = %q, want %q", in, got, want)
		}
	}
}
