package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"neuralzip/dtype"
)

func kvArray(key string, et uint32, n int, elem func(g *gbuf, i int)) ggKV {
	return ggKV{key, ggufArray, func(g *gbuf) {
		g.u32(et)
		g.u64(uint64(n))
		for i := range n {
			elem(g, i)
		}
	}}
}

// fullKVs has one key/value of every GGUF value type, short and long arrays
// and a nested array.
func fullKVs() []ggKV {
	return []ggKV{
		kvStr("general.architecture", "llama"),
		{"u8", ggufUint8, func(g *gbuf) { g.u8(200) }},
		{"i8", ggufInt8, func(g *gbuf) { g.u8(0xff) }},
		{"u16", ggufUint16, func(g *gbuf) { g.u16(65535) }},
		{"i16", ggufInt16, func(g *gbuf) { g.u16(0x8000) }},
		kvU32("u32", 4000000000),
		{"i32", ggufInt32, func(g *gbuf) { g.u32(0xfffffffe) }},
		{"f32", ggufFloat32, func(g *gbuf) { g.u32(math.Float32bits(0.5)) }},
		{"bool", ggufBool, func(g *gbuf) { g.u8(1) }},
		{"u64", ggufUint64, func(g *gbuf) { g.u64(1 << 40) }},
		{"i64", ggufInt64, func(g *gbuf) { g.u64(math.MaxUint64) }},
		{"f64", ggufFloat64, func(g *gbuf) { g.u64(math.Float64bits(1e-300)) }},
		kvArray("short", ggufInt32, 3, func(g *gbuf, i int) { g.u32(uint32(i)) }),
		kvArray("names", ggufString, 2, func(g *gbuf, i int) { g.str([]string{"a", "b\"c"}[i]) }),
		kvArray("tokens", ggufString, 1000, func(g *gbuf, i int) { g.str("tok") }),
		kvArray("scores", ggufFloat32, 1000, func(g *gbuf, i int) { g.u32(0) }),
		kvArray("nested", ggufArray, 2, func(g *gbuf, i int) {
			g.u32(ggufUint8)
			g.u64(2)
			g.u8(1)
			g.u8(2)
		}),
		kvArray("empty", ggufUint64, 0, nil),
	}
}

func TestGGUFLayout(t *testing.T) {
	for _, version := range []uint32{2, 3} {
		for _, align := range []int{32, 64} {
			kvs := fullKVs()
			if align != 32 {
				kvs = append(kvs, kvU32("general.alignment", uint32(align)))
			}
			q4k := bytes.Repeat([]byte{0x44}, 2*144) // 512 elements = 2 blocks of 144 bytes
			q80 := bytes.Repeat([]byte{0x80}, 3*34)  // 96 elements = 3 blocks of 34 bytes
			ts := []ggTensor{
				{name: "f32", dims: []uint64{4, 3}, typ: 0, data: make([]byte, 48)},
				{name: "q4k", dims: []uint64{256, 2}, typ: 12, data: q4k},
				{name: "q80", dims: []uint64{32, 3}, typ: 8, data: q80}, // 102 bytes: padding follows
				{name: "bf16", dims: []uint64{5, 1, 2}, typ: 30, data: make([]byte, 20)},
				{name: "scalar", dims: nil, typ: 0, data: make([]byte, 4)},
				{name: "empty", dims: []uint64{0, 4}, typ: 1, data: nil},
				{name: "i64", dims: []uint64{3}, typ: 27, data: make([]byte, 24)},
			}
			file, abs := makeGGUF(version, kvs, ts, align)
			file = append(file, "trailer"...)
			l := openBytes(t, file)
			if l.Format != "gguf" {
				t.Fatalf("format %q", l.Format)
			}
			want := []struct {
				dt    dtype.DType
				typ   string
				shape []int64
				n     int64
			}{
				{dtype.F32, "F32", []int64{3, 4}, 48},
				{dtype.Invalid, "Q4_K", []int64{2, 256}, 288},
				{dtype.Invalid, "Q8_0", []int64{3, 32}, 102},
				{dtype.BF16, "BF16", []int64{2, 1, 5}, 20},
				{dtype.F32, "F32", []int64{}, 4},
				{dtype.F16, "F16", []int64{4, 0}, 0},
				{dtype.I64, "I64", []int64{3}, 24},
			}
			got := byName(l)
			for i, w := range want {
				s, ok := got[ts[i].name]
				if !ok {
					t.Fatalf("v%d: tensor %q missing", version, ts[i].name)
				}
				if s.DType != w.dt || s.Type != w.typ || !equalShape(s.Shape, w.shape) || s.Length != w.n || s.Offset != abs[i] {
					t.Errorf("v%d align %d: %q = %v %s %v %d bytes at %d; want %v %s %v %d at %d",
						version, align, s.Name, s.DType, s.Type, s.Shape, s.Length, s.Offset, w.dt, w.typ, w.shape, w.n, abs[i])
				}
				if s.Offset%int64(align) != 0 {
					t.Errorf("%q at %d is not aligned to %d", s.Name, s.Offset, align)
				}
			}
			// Header, alignment padding, padding after q80 and others, trailer.
			var pads int
			for _, s := range l.Segments[1:] {
				if !s.IsTensor() {
					pads++
				}
			}
			if pads < 3 {
				t.Errorf("only %d opaque segments after the header", pads)
			}
			last := l.Segments[len(l.Segments)-1]
			if last.IsTensor() || last.End() != int64(len(file)) {
				t.Errorf("last segment %+v, want the trailer", last)
			}
			meta := map[string]string{
				"general.architecture": "llama", "u8": "200", "i8": "-1", "u16": "65535", "i16": "-32768",
				"u32": "4000000000", "i32": "-2", "f32": "0.5", "bool": "true", "u64": "1099511627776", "i64": "-1",
				"f64": "1e-300", "short": "[0, 1, 2]", "names": `["a", "b\"c"]`, "tokens": "<array of 1000 string>",
				"scores": "<array of 1000 float32>", "nested": "<array of 2 array>", "empty": "[]",
			}
			for k, v := range meta {
				if l.Metadata[k] != v {
					t.Errorf("metadata %q = %q, want %q", k, l.Metadata[k], v)
				}
			}
		}
	}
}

// TestGGMLTypeSizes checks the block table against sizes worked out by hand
// from the block_* structs of ggml-common.h.
func TestGGMLTypeSizes(t *testing.T) {
	want := map[string][2]int64{ // name: {block elements, block bytes}
		"F32": {1, 4}, "F16": {1, 2}, "BF16": {1, 2}, "F64": {1, 8}, "I8": {1, 1}, "I16": {1, 2}, "I32": {1, 4}, "I64": {1, 8},
		"Q4_0": {32, 18}, "Q4_1": {32, 20}, "Q5_0": {32, 22}, "Q5_1": {32, 24}, "Q8_0": {32, 34}, "Q8_1": {32, 36},
		"Q2_K": {256, 84}, "Q3_K": {256, 110}, "Q4_K": {256, 144}, "Q5_K": {256, 176}, "Q6_K": {256, 210}, "Q8_K": {256, 292},
		"IQ2_XXS": {256, 66}, "IQ2_XS": {256, 74}, "IQ3_XXS": {256, 98}, "IQ1_S": {256, 50}, "IQ4_NL": {32, 18},
		"IQ3_S": {256, 110}, "IQ2_S": {256, 82}, "IQ4_XS": {256, 136}, "IQ1_M": {256, 56},
		"TQ1_0": {256, 54}, "TQ2_0": {256, 66}, "MXFP4": {32, 17}, "NVFP4": {64, 36}, "Q1_0": {128, 18},
	}
	ids := map[string]uint32{"F32": 0, "Q4_K": 12, "BF16": 30, "TQ1_0": 34, "MXFP4": 39, "Q1_0": 41, "IQ1_M": 29}
	seen := 0
	for id := range uint32(len(ggmlTypes)) {
		gt, ok := lookupGGML(id)
		if !ok {
			continue
		}
		seen++
		w, known := want[gt.name]
		if !known || gt.blck != w[0] || gt.size != w[1] {
			t.Errorf("type %d %s: block %d × %d bytes, want %v", id, gt.name, gt.blck, gt.size, w)
		}
		if want, ok := ids[gt.name]; ok && want != id {
			t.Errorf("%s has id %d, want %d", gt.name, id, want)
		}
	}
	if seen != len(want) {
		t.Errorf("table has %d types, want %d", seen, len(want))
	}
	for _, id := range []uint32{4, 5, 31, 32, 33, 36, 37, 38, 42, 1 << 31} {
		if _, ok := lookupGGML(id); ok {
			t.Errorf("type %d should be unknown", id)
		}
	}
}

func TestGGUFHostile(t *testing.T) {
	header := func(version uint32, nt, nkv uint64) *gbuf {
		g := &gbuf{b: []byte("GGUF")}
		g.u32(version)
		g.u64(nt)
		g.u64(nkv)
		return g
	}
	withKV := func(kv ggKV) []byte {
		f, _ := makeGGUF(3, []ggKV{kv}, nil, 32)
		return f
	}
	withTensors := func(ts ...ggTensor) []byte {
		f, _ := makeGGUF(3, nil, ts, 32)
		return f
	}
	u64p := func(v uint64) *uint64 { return &v }
	nested := func(depth int) ggKV {
		var w func(g *gbuf, d int)
		w = func(g *gbuf, d int) {
			if d == 0 {
				g.u32(ggufUint8)
				g.u64(0)
				return
			}
			g.u32(ggufArray)
			g.u64(1)
			w(g, d-1)
		}
		return ggKV{"deep", ggufArray, func(g *gbuf) { w(g, depth) }}
	}
	big := header(3, 0, 1)
	big.str("k")
	big.u32(ggufArray)
	big.u32(ggufUint32)
	big.u64(1 << 62)
	hugeKey := header(3, 0, 1)
	hugeKey.u64(1 << 50)
	hugeKey.b = append(hugeKey.b, make([]byte, 16)...)
	strArr := header(3, 0, 1)
	strArr.str("k")
	strArr.u32(ggufArray)
	strArr.u32(ggufString)
	strArr.u64(1 << 40)
	strArr.b = append(strArr.b, make([]byte, 64)...)
	longStr := header(3, 0, 1)
	longStr.str("k")
	longStr.u32(ggufString)
	longStr.u64(100)
	longStr.b = append(longStr.b, "short"...)
	tests := []struct {
		name     string
		file     []byte
		sentinel error
		off      int64
		subs     []string
	}{
		{"version 1", header(1, 0, 0).b, ErrUnsupported, 4, []string{"unsupported GGUF version 1"}},
		{"version 4", header(4, 0, 0).b, ErrUnsupported, 4, []string{"version 4"}},
		{"big-endian", header(3<<24, 0, 0).b, ErrUnsupported, 4, []string{"big-endian"}},
		{"huge tensor count", header(3, 1<<60, 0).b, ErrTooLarge, 8, []string{"tensor count"}},
		{"huge kv count", header(3, 0, math.MaxUint64).b, ErrTooLarge, 16, []string{"key/value count"}},
		{"huge key length", hugeKey.b, ErrTooLarge, 24, []string{"key length"}},
		{"huge array length", big.b, ErrTooLarge, 24 + 9 + 4 + 4, []string{"array length"}},
		{"huge string array", strArr.b, ErrTooLarge, 24 + 9 + 4 + 4, []string{"array length"}},
		{"string past EOF", longStr.b, ErrTooLarge, 24 + 9 + 4, []string{"string length 100"}},
		{"truncated header", header(3, 1, 1).b[:20], ErrTruncated, 16, nil},
		{"key over the limit", withKV(kvStr(strings.Repeat("k", ggufMaxName+1), "v")), ErrTooLarge, 24, []string{"limit"}},
		{"tensor name over the limit", withTensors(ggTensor{name: strings.Repeat("t", ggufMaxName+1), dims: []uint64{1}, typ: 0, data: make([]byte, 4)}), ErrTooLarge, 24, []string{"limit"}},
		{"truncated kv", withKV(kvStr("key", "value"))[:40], ErrTruncated, 39, []string{"string length"}},
		{"alignment zero", withKV(kvU32("general.alignment", 0)), ErrOutOfRange, 24 + 25 + 4, []string{"not a power of two"}},
		{"alignment 48", withKV(kvU32("general.alignment", 48)), ErrOutOfRange, -1, []string{"alignment 48"}},
		{"alignment as u64", withKV(ggKV{"general.alignment", ggufUint64, func(g *gbuf) { g.u64(32) }}), ErrMalformed, -1, []string{"uint32"}},
		{"deep nesting", withKV(nested(9)), ErrTooLarge, -1, []string{"nested"}},
		{"unknown value type", withKV(ggKV{"k", 13, func(g *gbuf) {}}), ErrMalformed, -1, []string{"unknown value type 13"}},
		{"unknown element type", withKV(kvArray("k", 99, 0, nil)), ErrMalformed, -1, []string{"element type 99"}},
		{"duplicate key", func() []byte { f, _ := makeGGUF(3, []ggKV{kvStr("a", "1"), kvStr("a", "2")}, nil, 32); return f }(), ErrMalformed, -1, []string{`duplicate key "a"`}},
		{"too many dims", withTensors(ggTensor{name: "t", dims: make([]uint64, 9), typ: 0}), ErrTooLarge, -1, []string{"9 dimensions"}},
		{"dim overflows int64", withTensors(ggTensor{name: "t", dims: []uint64{1 << 63}, typ: 0}), ErrTooLarge, -1, []string{"overflows"}},
		{"numel overflow", withTensors(ggTensor{name: "t", dims: []uint64{1 << 32, 1 << 32}, typ: 0}), ErrTooLarge, -1, []string{"overflows"}},
		{"bytes overflow", withTensors(ggTensor{name: "t", dims: []uint64{1 << 31, 1 << 31}, typ: 0}), ErrTooLarge, -1, []string{"overflows"}},
		{"unknown ggml type", withTensors(ggTensor{name: "t", dims: []uint64{1}, typ: 4}), ErrUnsupported, -1, []string{"unknown ggml type 4"}},
		{"partial block", withTensors(ggTensor{name: "t", dims: []uint64{100, 2}, typ: 12, data: make([]byte, 144)}), ErrMalformed, -1, []string{"block size 256"}},
		{"empty name", withTensors(ggTensor{name: "", dims: []uint64{1}, typ: 0, data: make([]byte, 4)}), ErrMalformed, 24, []string{"empty tensor name"}},
		{"duplicate tensor", withTensors(ggTensor{name: "t", dims: []uint64{1}, typ: 0, data: make([]byte, 4)}, ggTensor{name: "t", dims: []uint64{1}, typ: 0, data: make([]byte, 4)}),
			ErrMalformed, -1, []string{`duplicate tensor "t"`}},
		{"offset overflow", withTensors(ggTensor{name: "t", dims: []uint64{1}, typ: 0, off: u64p(math.MaxInt64)}), ErrTooLarge, 24, []string{"offset"}},
		{"past EOF", withTensors(ggTensor{name: "t", dims: []uint64{64}, typ: 0, data: make([]byte, 16)}), ErrTruncated, 64, []string{`"t"`, "past end of file"}},
		{"overlap", withTensors(ggTensor{name: "a", dims: []uint64{16}, typ: 0, data: make([]byte, 64)}, ggTensor{name: "b", dims: []uint64{8}, typ: 0, off: u64p(32)}),
			ErrOverlap, 96 + 32, []string{`"b"`, `"a"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openGGUF(bytes.NewReader(tc.file), int64(len(tc.file)))
			wantFormatError(t, err, tc.sentinel, tc.off, tc.subs...)
			if _, err2 := Open(bytes.NewReader(tc.file), int64(len(tc.file))); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("Open: %v, want %v", err2, err)
			}
		})
	}
}

// TestGGUFLongString: string values longer than ggufMaxString are
// summarised in Metadata instead of being read.
func TestGGUFLongString(t *testing.T) {
	long := strings.Repeat("x", ggufMaxString+1)
	f, _ := makeGGUF(3, []ggKV{kvStr("tokenizer.huggingface.json", long), kvStr("short", "s")}, nil, 32)
	l := openBytes(t, f)
	if got, want := l.Metadata["tokenizer.huggingface.json"], "<string of 65537 bytes>"; got != want || l.Metadata["short"] != "s" {
		t.Errorf("metadata %q, want %q", got, want)
	}
}

// TestGGUFNoTensors: a GGUF file with only key/values ends right after
// them, without alignment padding.
func TestGGUFNoTensors(t *testing.T) {
	g := gbuf{b: []byte("GGUF")}
	g.u32(3)
	g.u64(0)
	g.u64(1)
	g.str("general.name")
	g.u32(ggufString)
	g.str("x")
	l := openBytes(t, g.b)
	if len(l.Segments) != 1 || l.Metadata["general.name"] != "x" {
		t.Errorf("got %+v", l)
	}
	if binary.LittleEndian.Uint32(g.b[4:]) != 3 {
		t.Fatal("builder")
	}
}
