package checkpoint

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// npyFile writes a .npy file of the given version with a header as numpy
// writes it: the dict, spaces, a newline, padded to a multiple of 64.
func npyFile(major int, descr string, fortran bool, shape []int64, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.FormatInt(d, 10)
	}
	sh := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	sh += ")"
	f := "False"
	if fortran {
		f = "True"
	}
	return npyRaw(major, "{'descr': '"+descr+"', 'fortran_order': "+f+", 'shape': "+sh+", }", data)
}

// npyRaw writes a .npy file with the given header dict text.
func npyRaw(major int, dict string, data []byte) []byte {
	pre := 10
	if major >= 2 {
		pre = 12
	}
	h := dict + " "
	for (pre+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := []byte("\x93NUMPY")
	b = append(b, byte(major), 0)
	if major >= 2 {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	} else {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	}
	b = append(b, h...)
	return append(b, data...)
}

// npFixtures returns the generated files of testdata/numpy.
func npFixtures() []ptCase {
	var cs []ptCase
	add := func(file, descr string, fortran bool, shape []int64, data []byte, w ptWant, major int) {
		c := ptCase{File: file, B: npyFile(major, descr, fortran, shape, data)}
		if w.Name != "" {
			w.Data = data
			c.Tensors = []ptWant{w}
		}
		cs = append(cs, c)
	}
	f32 := ptBytes(24, 4, 30)
	add("f32_v1.npy", "<f4", false, []int64{2, 3}, f32, ptWant{"array", dtype.F32, "<f4", []int64{2, 3}, nil}, 1)
	add("f64_v2.npy", "<f8", false, []int64{3}, ptBytes(24, 8, 31), ptWant{"array", dtype.F64, "<f8", []int64{3}, nil}, 2)
	add("f16_v3.npy", "<f2", false, []int64{2, 2}, ptBytes(8, 2, 32), ptWant{"array", dtype.F16, "<f2", []int64{2, 2}, nil}, 3)
	add("be_f4.npy", ">f4", false, []int64{4}, ptBytes(16, 4, 33), ptWant{"array", dtype.Invalid, ">f4", []int64{4}, nil}, 1)
	add("be_i8.npy", ">i8", false, []int64{2}, ptBytes(16, 8, 34), ptWant{"array", dtype.Invalid, ">i8", []int64{2}, nil}, 1)
	add("fortran.npy", "<f4", true, []int64{2, 3}, f32, ptWant{"array", dtype.F32, "<f4", []int64{3, 2}, nil}, 1)
	add("scalar.npy", "<f8", false, []int64{}, ptBytes(8, 8, 35), ptWant{"array", dtype.F64, "<f8", []int64{}, nil}, 1)
	add("empty.npy", "<f4", false, []int64{3, 0}, nil, ptWant{"array", dtype.F32, "<f4", []int64{3, 0}, nil}, 1)
	add("bool.npy", "|b1", false, []int64{5}, []byte{1, 0, 0, 1, 1}, ptWant{"array", dtype.Bool, "|b1", []int64{5}, nil}, 1)
	add("u8.npy", "|u1", false, []int64{3}, []byte{1, 2, 3}, ptWant{"array", dtype.U8, "|u1", []int64{3}, nil}, 1)
	add("c8.npy", "<c8", false, []int64{2}, ptBytes(16, 4, 36), ptWant{"array", dtype.C64, "<c8", []int64{2}, nil}, 1)
	add("datetime.npy", "<M8[ns]", false, []int64{2}, ptBytes(16, 8, 37), ptWant{"array", dtype.I64, "<M8[ns]", []int64{2}, nil}, 1)
	add("unicode.npy", "<U3", false, []int64{2}, []byte("a\x00\x00\x00b\x00\x00\x00c\x00\x00\x00d\x00\x00\x00e\x00\x00\x00f\x00\x00\x00"), ptWant{"array", dtype.Invalid, "<U3", []int64{2}, nil}, 1)
	add("object.npy", "|O", false, []int64{1}, pickleOf(2, pkList{"not an array"}), ptWant{}, 1)
	cs = append(cs, ptCase{File: "structured_v3.npy", B: npyRaw(3, "{'descr': [('é', '<f4'), ('n', '<i4', (2,))], 'fortran_order': False, 'shape': (2,), }", make([]byte, 24))})
	py2 := ptBytes(12, 4, 38)
	cs = append(cs, ptCase{File: "py2.npy", B: npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }", py2),
		Tensors: []ptWant{{"array", dtype.F32, "<f4", []int64{3}, py2}}})
	trailing := append(npyFile(1, "<i4", false, []int64{2}, []byte{1, 0, 0, 0, 2, 0, 0, 0}), "trailing"...)
	cs = append(cs, ptCase{File: "trailing.npy", B: trailing, Tensors: []ptWant{{"array", dtype.I32, "<i4", []int64{2}, []byte{1, 0, 0, 0, 2, 0, 0, 0}}}})

	// np.savez: stored members with zip64 local extras (force_zip64).
	w, b, s := ptBytes(32, 4, 39), ptBytes(8, 8, 40), ptBytes(4, 4, 41)
	npz, _ := ztBuild(ztOptions{LocalZip64: true}, []ztMember{
		{Name: "weight.npy", Data: npyFile(1, "<f4", false, []int64{2, 4}, w)},
		{Name: "bias.npy", Data: npyFile(1, "<f8", true, []int64{1, 1}, b)},
		{Name: "arr_0.npy", Data: npyFile(1, "<f4", false, []int64{}, s)},
		{Name: "objects.npy", Data: npyFile(1, "|O", false, []int64{1}, pickleOf(2, pkList{1}))},
		{Name: "notes.txt", Data: []byte("not an array")},
	})
	cs = append(cs, ptCase{File: "stored.npz", B: npz, Tensors: []ptWant{
		{"weight", dtype.F32, "<f4", []int64{2, 4}, w}, {"bias", dtype.F64, "<f8", []int64{1, 1}, b}, {"arr_0", dtype.F32, "<f4", []int64{}, s}},
		Meta: map[string]string{"fortran_order:bias": "true"}})
	// np.savez_compressed: deflated members are opaque.
	npz, _ = ztBuild(ztOptions{LocalZip64: true}, []ztMember{
		{Name: "weight.npy", Data: npyFile(1, "<f4", false, []int64{2, 4}, w), Deflate: true},
		{Name: "bias.npy", Data: npyFile(1, "<f8", false, []int64{1}, b), Deflate: true},
	})
	cs = append(cs, ptCase{File: "compressed.npz", B: npz})
	return cs
}

func TestNumPyFixtures(t *testing.T) {
	var names []string
	defer func() { ztCheckFixtureDir(t, filepath.Join("testdata", "numpy"), names) }()
	for _, c := range npFixtures() {
		names = append(names, c.File)
		t.Run(c.File, func(t *testing.T) {
			ztCheckFixture(t, filepath.Join("testdata", "numpy", c.File), c.B)
			format := "npy"
			if strings.HasSuffix(c.File, ".npz") {
				format = "npz"
				ztCompare(t, c.B)
			}
			l := checkTorchCase(t, c, format)
			if format == "npy" {
				if !strings.HasPrefix(l.Metadata["header"], "{'descr'") || !strings.HasSuffix(l.Metadata["header"], "}") || l.Metadata["version"] == "" {
					t.Errorf("metadata %q", l.Metadata)
				}
				// the header is one opaque segment, and whatever follows the data another
				if l.Segments[0].IsTensor() || l.Segments[0].Length%64 != 0 {
					t.Errorf("header segment %+v", l.Segments[0])
				}
			}
		})
	}
}

func TestNumPyHostile(t *testing.T) {
	hdr := func(major int, dict string) []byte { return npyRaw(major, dict, nil) }
	cut := func(b []byte, n int) []byte { return b[:len(b)-n] }
	lenField := func(b []byte, v uint32) []byte {
		b = bytes.Clone(b)
		if b[6] == 1 {
			binary.LittleEndian.PutUint16(b[8:], uint16(v))
		} else {
			binary.LittleEndian.PutUint32(b[8:], v)
		}
		return b
	}
	ok := npyFile(1, "<f4", false, []int64{2}, make([]byte, 8))
	cases := []struct {
		name     string
		b        []byte
		sentinel error
		off      int64
		sub      string
	}{
		{"preamble only", []byte("\x93NUMPY\x01\x00"), ErrTruncated, 0, "too few"},
		{"header length beyond file", lenField(ok, 0xffff), ErrTooLarge, 8, "header length 65535 exceeds"},
		{"v2 header length beyond file", lenField(npyFile(2, "<f4", false, nil, nil), 0xffffffff), ErrTooLarge, 8, "header length 4294967295"},
		{"header over the limit", npyRaw(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"+strings.Repeat(" ", npyMaxHeader), make([]byte, 4)), ErrTooLarge, 8, "limit"},
		{"version 4", func() []byte { b := bytes.Clone(ok); b[6] = 4; return b }(), ErrUnsupported, 6, "version 4.0"},
		{"version 1.1", func() []byte { b := bytes.Clone(ok); b[7] = 1; return b }(), ErrUnsupported, 7, "version 1.1"},
		{"short data", cut(ok, 1), ErrTruncated, 128, "needs 8 bytes, 7 remain"},
		{"shape overflow", hdr(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }"), ErrTooLarge, 10, "overflows int64"},
		{"bytes overflow", hdr(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }"), ErrTooLarge, 10, "overflow int64"},
		{"int overflow", hdr(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"), ErrTooLarge, -1, "overflows int64"},
		{"too many dims", hdr(1, "{'descr': '<f4', 'fortran_order': False, 'shape': ("+strings.Repeat("1, ", 65)+"), }"), ErrTooLarge, 10, "65 dimensions"},
		{"deep nesting", hdr(1, "{'descr': "+strings.Repeat("[", 100)+strings.Repeat("]", 100)+", 'fortran_order': False, 'shape': (), }"), ErrTooLarge, -1, "nested deeper"},
		{"not a dict", hdr(1, "['descr']"), ErrMalformed, 10, "not a dict"},
		{"missing key", hdr(1, "{'descr': '<f4', 'shape': (), }"), ErrMalformed, 10, "2 keys"},
		{"extra key", hdr(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"), ErrMalformed, 10, "4 keys"},
		{"fortran not bool", hdr(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (), }"), ErrMalformed, 10, "fortran_order"},
		{"shape list", hdr(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }"), ErrMalformed, 10, "shape is missing or not a tuple"},
		{"negative dim", hdr(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"), ErrMalformed, 10, "shape[0]"},
		{"descr name", hdr(1, "{'descr': 'float32', 'fortran_order': False, 'shape': (), }"), ErrUnsupported, 10, `"float32"`},
		{"descr int", hdr(1, "{'descr': 4, 'fortran_order': False, 'shape': (), }"), ErrMalformed, 10, "neither a string nor a list"},
		{"unterminated string", hdr(1, "{'descr: 1}"), ErrMalformed, -1, "unterminated string"},
		{"key not a string", hdr(1, "{1: 2}"), ErrMalformed, -1, "key is not a string"},
		{"text after dict", hdr(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), } x"), ErrMalformed, -1, "after the header dict"},
		{"bad literal", hdr(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (), }"), ErrMalformed, -1, "unexpected 'M'"},
		{"missing colon", hdr(1, "{'descr' '<f4'}"), ErrMalformed, -1, "expected ':'"},
		{"missing comma", hdr(1, "{'descr': '<f4' 'x': 1}"), ErrMalformed, -1, "expected ',' or '}'"},
		{"v3 not utf-8", hdr(3, "{'descr': '<f4\xff', 'fortran_order': False, 'shape': (), }"), ErrMalformed, 12, "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := openNPY(bytes.NewReader(c.b), int64(len(c.b)))
			wantFormatError(t, err, c.sentinel, c.off, c.sub)
		})
	}

	// A malformed member of an npz is an error at its offset in the file.
	bad := lenField(ok, 0xfff0)
	npz, offs := ztBuild(ztOptions{}, []ztMember{{Name: "a.npy", Data: ok}, {Name: "b.npy", Data: bad}})
	_, err := openNPZ(bytes.NewReader(npz), int64(len(npz)))
	wantFormatError(t, err, ErrTooLarge, offs[1]+8, `member "b.npy": header length 65520`)
	// So is a truncated archive.
	_, err = openNPZ(bytes.NewReader(npz[:len(npz)-30]), int64(len(npz)-30))
	wantFormatError(t, err, ErrTruncated, -1, "end of central directory")
}

// TestNumPyNames checks npz member names that collide once ".npy" is
// dropped.
func TestNumPyNames(t *testing.T) {
	a := npyFile(1, "<f4", false, []int64{1}, make([]byte, 4))
	npz, _ := ztBuild(ztOptions{}, []ztMember{{Name: "x.npy", Data: a}, {Name: "x", Data: a}, {Name: ".npy", Data: a}})
	l := openBytes(t, npz)
	var names []string
	for _, s := range l.Tensors() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"x", "x#2", ".npy#2"}) {
		t.Errorf("names %q", names)
	}
}

func TestNPYDType(t *testing.T) {
	for descr, want := range map[string]struct {
		dt   dtype.DType
		size int64
		ok   bool
	}{
		"<f4": {dtype.F32, 4, true}, "=f8": {dtype.F64, 8, true}, "|i1": {dtype.I8, 1, true}, ">u1": {dtype.U8, 1, true},
		"<u2": {dtype.U16, 2, true}, "<u4": {dtype.U32, 4, true}, "<u8": {dtype.U64, 8, true}, "<i2": {dtype.I16, 2, true},
		"<m8[D]": {dtype.I64, 8, true}, "<f16": {dtype.Invalid, 16, true}, "<c16": {dtype.Invalid, 16, true},
		"|S10": {dtype.Invalid, 10, true}, "|V4": {dtype.Invalid, 4, true}, "|f4": {dtype.Invalid, 4, true},
		"|O": {dtype.Invalid, 0, true}, "f4": {dtype.Invalid, 0, false}, "<x4": {dtype.Invalid, 0, false},
		"<f+4": {dtype.Invalid, 0, false}, "<f": {dtype.Invalid, 0, false}, "<f99999999999": {dtype.Invalid, 0, false},
	} {
		dt, size, ok := npyDType(descr)
		if dt != want.dt || size != want.size || ok != want.ok {
			t.Errorf("npyDType(%q) = %v, %d, %v; want %v", descr, dt, size, ok, want)
		}
	}
}
