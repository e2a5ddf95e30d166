package checkpoint

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// TestSafetensorsEveryDType writes one tensor of each safetensors dtype,
// packed back to back with unaligned offsets, and checks type and size.
func TestSafetensorsEveryDType(t *testing.T) {
	types := []struct {
		name string
		dt   dtype.DType
		size int64 // bytes for shape [3,5]
	}{
		{"F64", dtype.F64, 120}, {"F32", dtype.F32, 60}, {"F16", dtype.F16, 30}, {"BF16", dtype.BF16, 30},
		{"F8_E4M3", dtype.F8E4M3, 15}, {"F8_E5M2", dtype.F8E5M2, 15}, {"F8_E8M0", dtype.F8E8M0, 15},
		{"I8", dtype.I8, 15}, {"I16", dtype.I16, 30}, {"I32", dtype.I32, 60}, {"I64", dtype.I64, 120},
		{"U8", dtype.U8, 15}, {"U16", dtype.U16, 30}, {"U32", dtype.U32, 60}, {"U64", dtype.U64, 120},
		{"BOOL", dtype.Bool, 15}, {"C64", dtype.C64, 120},
		{"F4", dtype.F4, 8}, {"F6_E2M3", dtype.F6E2M3, 12}, {"F6_E3M2", dtype.F6E3M2, 12},
	}
	var specs []stSpec
	var off int64
	for _, ty := range types {
		specs = append(specs, stSpec{Name: "t_" + ty.name, DType: ty.name, Shape: []int64{3, 5}, Begin: off, End: off + ty.size})
		off += ty.size
	}
	data := bytes.Repeat([]byte{0x5a}, int(off))
	file := makeST(map[string]string{"format": "pt"}, specs, data)
	l := openBytes(t, file)
	if l.Format != "safetensors" || l.Metadata["format"] != "pt" {
		t.Fatalf("format %q metadata %v", l.Format, l.Metadata)
	}
	ts := l.Tensors()
	if len(ts) != len(types) || len(l.Segments) != len(types)+1 {
		t.Fatalf("%d tensors in %d segments, want %d in %d", len(ts), len(l.Segments), len(types), len(types)+1)
	}
	dataStart := int64(len(file)) - off
	for i, ty := range types {
		s := ts[i]
		if s.Name != "t_"+ty.name || s.DType != ty.dt || s.Type != ty.name || s.Length != ty.size || s.Offset != dataStart+specs[i].Begin {
			t.Errorf("tensor %d = %+v, want %s %v %d bytes at %d", i, s, ty.name, ty.dt, ty.size, dataStart+specs[i].Begin)
		}
		if !equalShape(s.Shape, []int64{3, 5}) {
			t.Errorf("%s: shape %v", s.Name, s.Shape)
		}
	}
}

func TestSafetensorsLayout(t *testing.T) {
	// Entries in header order differ from data order; the data has a gap,
	// an unaligned F32, 0-d and empty tensors, and trailing bytes.
	specs := []stSpec{
		{Name: "late", DType: "F32", Shape: []int64{2}, Begin: 24, End: 32},         // after a gap [13,24)
		{Name: "byte", DType: "U8", Shape: []int64{1}, Begin: 0, End: 1},            // first
		{Name: "unaligned", DType: "F32", Shape: []int64{3}, Begin: 1, End: 13},     // starts at data offset 1
		{Name: "empty_mid", DType: "F16", Shape: []int64{0, 7}, Begin: 13, End: 13}, // empty, at the start of the gap
		{Name: "scalar", DType: "BF16", Shape: []int64{}, Begin: 32, End: 34},       // 0-d
		{Name: "empty_end", DType: "F32", Shape: []int64{0}, Begin: 34, End: 34},    // empty, last
		{Name: "empty_huge", DType: "F64", Shape: []int64{1 << 62, 0, 1 << 62}, Begin: 24, End: 24},
	}
	data := make([]byte, 34+5) // 5 trailing bytes
	file := makeST(nil, specs, data)
	l := openBytes(t, file)
	if l.Metadata != nil {
		t.Errorf("metadata %v, want nil", l.Metadata)
	}
	ds := int64(len(file) - len(data))
	type seg struct {
		tensor bool
		name   string
		off, n int64
	}
	want := []seg{
		{false, "", 0, ds},
		{true, "byte", ds, 1},
		{true, "unaligned", ds + 1, 12},
		{true, "empty_mid", ds + 13, 0},
		{false, "", ds + 13, 11},
		{true, "empty_huge", ds + 24, 0},
		{true, "late", ds + 24, 8},
		{true, "scalar", ds + 32, 2},
		{true, "empty_end", ds + 34, 0},
		{false, "", ds + 34, 5},
	}
	if len(l.Segments) != len(want) {
		t.Fatalf("got %d segments %+v, want %d", len(l.Segments), l.Segments, len(want))
	}
	for i, w := range want {
		s := l.Segments[i]
		if s.IsTensor() != w.tensor || s.Name != w.name || s.Offset != w.off || s.Length != w.n {
			t.Errorf("segment %d = tensor %v %q [%d,+%d), want tensor %v %q [%d,+%d)", i, s.IsTensor(), s.Name, s.Offset, s.Length, w.tensor, w.name, w.off, w.n)
		}
	}
	if s := l.Segments[7]; s.Shape == nil || len(s.Shape) != 0 {
		t.Errorf("scalar shape %#v, want empty", s.Shape)
	}
	if got := len(l.Tensors()); got != 7 {
		t.Errorf("%d tensors, want 7", got)
	}
	// The segments reassemble the file.
	var re []byte
	for _, s := range l.Segments {
		re = append(re, file[s.Offset:s.End()]...)
	}
	if !bytes.Equal(re, file) {
		t.Error("segments do not reassemble the file")
	}
}

func TestSafetensorsNoTensors(t *testing.T) {
	for _, hdr := range []string{"{}", `{"__metadata__":{}}      `, "{ }\n\t\r "} {
		file := makeSTRaw(hdr, []byte("tail"))
		l := openBytes(t, file)
		if l.Format != "safetensors" || len(l.Tensors()) != 0 || len(l.Segments) != 2 || l.Segments[0].Length != int64(8+len(hdr)) {
			t.Errorf("header %q: %+v", hdr, l)
		}
	}
}

// bigFile is a ReaderAt of a given size whose first bytes are head and the
// rest zeros, so a test can declare huge sizes without allocating them.
type bigFile struct {
	head []byte
	size int64
}

func (f bigFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off+int64(n) < f.size {
		i := off + int64(n)
		if i < int64(len(f.head)) {
			p[n] = f.head[i]
		} else {
			p[n] = 0
		}
		n++
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestSafetensorsHostile(t *testing.T) {
	f32 := func(name string, shape []int64, b, e int64) stSpec {
		return stSpec{Name: name, DType: "F32", Shape: shape, Begin: b, End: e}
	}
	raw := func(name, v string) stSpec { return stSpec{Name: name, Raw: v} }
	tests := []struct {
		name     string
		file     []byte
		sentinel error
		off      int64 // -1: not checked; -2: the data start; otherwise absolute
		subs     []string
	}{
		{"overlap", makeST(nil, []stSpec{f32("a", []int64{4}, 0, 16), f32("b", []int64{2}, 8, 16)}, make([]byte, 16)),
			ErrOverlap, -2 - 8, []string{`"b"`, `"a"`, "overlaps"}},
		{"empty inside another", makeST(nil, []stSpec{f32("a", []int64{4}, 0, 16), f32("z", []int64{0}, 4, 4)}, make([]byte, 16)),
			ErrOverlap, -2 - 4, []string{`"z"`}},
		{"past EOF", makeST(nil, []stSpec{f32("a", []int64{4}, 0, 16), f32("b", []int64{4}, 16, 32)}, make([]byte, 20)),
			ErrTruncated, -2 - 16, []string{`"b"`, "past end of file"}},
		{"begin past EOF", makeST(nil, []stSpec{f32("a", []int64{1}, 1<<40, 1<<40+4)}, make([]byte, 4)),
			ErrTruncated, -2 - 1<<40, []string{`"a"`}},
		{"shape overflow", makeST(nil, []stSpec{f32("a", []int64{1 << 32, 1 << 32}, 0, 4)}, make([]byte, 4)),
			ErrTooLarge, -1, []string{"overflow"}},
		{"byte length overflow", makeST(nil, []stSpec{f32("a", []int64{1 << 31, 1 << 31}, 0, 4)}, make([]byte, 4)),
			ErrTooLarge, -1, []string{"overflow"}},
		{"negative dim", makeST(nil, []stSpec{f32("a", []int64{2, -1}, 0, 4)}, make([]byte, 4)),
			ErrOutOfRange, -1, []string{`tensor "a": shape[1] (-1) is negative`}},
		{"huge dim", makeST(nil, []stSpec{raw("a", `{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,4]}`)}, make([]byte, 4)),
			ErrTooLarge, -1, []string{"too large"}},
		{"fractional dim", makeST(nil, []stSpec{raw("a", `{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}`)}, make([]byte, 4)),
			ErrMalformed, -1, []string{"not an integer"}},
		{"wrong byte length", makeST(nil, []stSpec{f32("a", []int64{2, 2}, 0, 12)}, make([]byte, 16)),
			ErrMalformed, -1, []string{"hold 12 bytes", "needs 16"}},
		{"unknown dtype", makeST(nil, []stSpec{{Name: "a", DType: "F12", Shape: []int64{1}, Begin: 0, End: 4}}, make([]byte, 4)),
			ErrUnsupported, -1, []string{`"F12"`}},
		{"missing dtype", makeST(nil, []stSpec{raw("a", `{"shape":[1],"data_offsets":[0,4]}`)}, make([]byte, 4)),
			ErrMalformed, -1, []string{"missing dtype"}},
		{"missing shape", makeST(nil, []stSpec{raw("a", `{"dtype":"F32","data_offsets":[0,4]}`)}, make([]byte, 4)),
			ErrMalformed, -1, []string{"missing shape"}},
		{"three offsets", makeST(nil, []stSpec{raw("a", `{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}`)}, make([]byte, 8)),
			ErrMalformed, -1, []string{"3 values"}},
		{"end before begin", makeST(nil, []stSpec{f32("a", []int64{0}, 8, 4)}, make([]byte, 8)),
			ErrOutOfRange, -1, []string{"before begin"}},
		{"negative begin", makeST(nil, []stSpec{f32("a", []int64{1}, -4, 0)}, make([]byte, 8)),
			ErrOutOfRange, -1, []string{"negative"}},
		{"end overflows offset", makeST(nil, []stSpec{f32("a", []int64{1}, maxInt64-4, maxInt64)}, make([]byte, 8)),
			ErrTooLarge, -1, []string{"overflows"}},
		{"duplicate tensor", makeST(nil, []stSpec{f32("a", []int64{1}, 0, 4), f32("a", []int64{1}, 4, 8)}, make([]byte, 8)),
			ErrMalformed, -1, []string{`duplicate tensor "a"`}},
		{"empty name", makeST(nil, []stSpec{f32("", []int64{1}, 0, 4)}, make([]byte, 4)),
			ErrMalformed, 8 + 1, []string{"empty tensor name"}},
		{"entry not an object", makeST(nil, []stSpec{raw("a", `[1,2]`)}, nil),
			ErrMalformed, 8 + 1, []string{`tensor "a"`}},
		{"metadata not strings", makeSTRaw(`{"__metadata__":{"n":1}}`, nil), ErrMalformed, 8 + 21, []string{`__metadata__ value of "n" is not a string`}},
		{"duplicate metadata", makeSTRaw(`{"__metadata__":{},"__metadata__":{}}`, nil), ErrMalformed, 8 + 19, []string{"duplicate __metadata__"}},
		{"invalid JSON", makeSTRaw(`{"a":{"dtype":"F32",,}}`, nil), ErrMalformed, -1, []string{"invalid JSON"}},
		{"unterminated JSON", makeSTRaw(`{"a":{"dtype":"F32"`, nil), ErrMalformed, -1, []string{"JSON"}},
		{"data after JSON", makeSTRaw(`{} x`, nil), ErrMalformed, 8 + 3, []string{"after the JSON header"}},
		{"not UTF-8", makeSTRaw("{\"\xff\":1}", nil), ErrMalformed, 8, []string{"UTF-8"}},
		{"not an object", makeSTRaw(`[1]`, nil), ErrMalformed, 8, []string{"'{'"}},
		{"deep nesting", makeSTRaw(`{"a":{"x":`+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+`}}`, nil), ErrTooLarge, -1, []string{"nested"}},
		{"header length beyond file", binary.LittleEndian.AppendUint64(nil, 1e12), ErrTooLarge, 0, []string{"header length 1000000000000 exceeds file size 8"}},
		{"short file", []byte{1, 2, 3}, ErrTruncated, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openSafetensors(bytes.NewReader(tc.file), int64(len(tc.file)))
			off := tc.off
			if off <= -2 { // relative to the data start
				n := int64(binary.LittleEndian.Uint64(tc.file))
				off = 8 + n + (-2 - off)
			}
			wantFormatError(t, err, tc.sentinel, off, tc.subs...)
			t.Log(err)
			// Through the registry, a file that matches must fail the same way.
			if matchSafetensors(tc.file[:min(len(tc.file), HeadSize)], int64(len(tc.file))) {
				_, err2 := Open(bytes.NewReader(tc.file), int64(len(tc.file)))
				if err2 == nil || err2.Error() != err.Error() {
					t.Errorf("Open: %v, want %v", err2, err)
				}
			}
		})
	}
}

// TestSafetensorsHugeHeader declares a 150 MiB header in a 200 MiB file that
// is never materialised: the limit is checked before anything is read.
func TestSafetensorsHugeHeader(t *testing.T) {
	head := binary.LittleEndian.AppendUint64(nil, 150<<20)
	head = append(head, '{')
	f := bigFile{head: head, size: 200 << 20}
	_, err := Open(f, f.size)
	wantFormatError(t, err, ErrTooLarge, 0, "limit")
	// A header length beyond the file does not match the signature: the
	// file is unknown bytes, not an error.
	f = bigFile{head: head, size: 100}
	l, err := Open(f, f.size)
	if err != nil || l.Format != FormatUnknown {
		t.Errorf("got %v, %v; want unknown", l, err)
	}
}
