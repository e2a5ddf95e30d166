package checkpoint

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"neuralzip/dtype"
)

// ---- a TFLite writer for fixtures, on the FlatBuffers Go runtime ----

// tflTensor is a Tensor of a generated model.
type tflTensor struct {
	name    string
	typ     int8
	shape   []int32 // nil: no shape vector
	hasRank bool
	buffer  uint32
	scale   []float32 // quantisation scales
	sparse  bool
}

// tflBuffer is a Buffer: data in the FlatBuffer, or ext after it (the
// offset/size form of models larger than 2 GB).
type tflBuffer struct {
	data []byte
	ext  []byte
}

type tflModel struct {
	description string
	subgraphs   [][]tflTensor
	buffers     []tflBuffer
	metadata    map[string]uint32
	// aliasSub repeats subgraph 0 this many times in Model.subgraphs and its
	// tensor 0 as many times in its tensors (a hostile file).
	alias int
}

// bytes writes the model. Buffers with ext data get offsets after the
// FlatBuffer, 16-aligned, and the data is appended there.
func (m tflModel) bytes() []byte {
	offsets := make([]uint64, len(m.buffers))
	for i := range offsets {
		offsets[i] = 1 << 40 // placeholder of the same width
	}
	fb := m.encode(offsets)
	pos := uint64(len(fb))
	for i, b := range m.buffers {
		if b.ext != nil {
			pos = (pos + 15) &^ 15
			offsets[i] = pos
			pos += uint64(len(b.ext))
		}
	}
	out := m.encode(offsets)
	if len(out) != len(fb) {
		panic("tflite fixture: FlatBuffer size changed with the offsets")
	}
	for i, b := range m.buffers {
		if b.ext != nil {
			out = append(out, make([]byte, int(offsets[i])-len(out))...)
			out = append(out, b.ext...)
		}
	}
	return out
}

func (m tflModel) encode(offsets []uint64) []byte {
	b := flatbuffers.NewBuilder(1024)
	tables := func(offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		b.StartVector(4, len(offs), 4)
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		return b.EndVector(len(offs))
	}
	bufs := make([]flatbuffers.UOffsetT, len(m.buffers))
	for i, buf := range m.buffers {
		var data flatbuffers.UOffsetT
		if buf.data != nil {
			b.StartVector(1, len(buf.data), 16) // force_align: 16
			for j := len(buf.data) - 1; j >= 0; j-- {
				b.PrependByte(buf.data[j])
			}
			data = b.EndVector(len(buf.data))
		}
		b.StartObject(3)
		if buf.data != nil {
			b.PrependUOffsetTSlot(fbBufferData, data, 0)
		}
		if buf.ext != nil {
			b.PrependUint64Slot(fbBufferOffset, offsets[i], 0)
			b.PrependUint64Slot(fbBufferSize, uint64(len(buf.ext)), 0)
		}
		bufs[i] = b.EndObject()
	}
	buffers := tables(bufs)
	var subs []flatbuffers.UOffsetT
	for si, sg := range m.subgraphs {
		var ts []flatbuffers.UOffsetT
		for _, t := range sg {
			name := b.CreateString(t.name)
			var shape, quant, sparsity flatbuffers.UOffsetT
			if t.shape != nil {
				b.StartVector(4, len(t.shape), 4)
				for j := len(t.shape) - 1; j >= 0; j-- {
					b.PrependInt32(t.shape[j])
				}
				shape = b.EndVector(len(t.shape))
			}
			if t.scale != nil {
				b.StartVector(4, len(t.scale), 4)
				for j := len(t.scale) - 1; j >= 0; j-- {
					b.PrependFloat32(t.scale[j])
				}
				scale := b.EndVector(len(t.scale))
				b.StartObject(6)
				b.PrependUOffsetTSlot(fbQuantScale, scale, 0)
				quant = b.EndObject()
			}
			if t.sparse {
				b.StartObject(3)
				sparsity = b.EndObject()
			}
			b.StartObject(10)
			if t.shape != nil {
				b.PrependUOffsetTSlot(fbTensorShape, shape, 0)
			}
			b.PrependInt8Slot(fbTensorType, t.typ, 0)
			b.PrependUint32Slot(fbTensorBuffer, t.buffer, 0)
			b.PrependUOffsetTSlot(fbTensorName, name, 0)
			if quant != 0 {
				b.PrependUOffsetTSlot(fbTensorQuantization, quant, 0)
			}
			if sparsity != 0 {
				b.PrependUOffsetTSlot(fbTensorSparsity, sparsity, 0)
			}
			b.PrependBoolSlot(fbTensorHasRank, t.hasRank, false)
			ts = append(ts, b.EndObject())
		}
		if si == 0 && m.alias > 0 {
			ts = slices.Repeat(ts[:1], m.alias)
		}
		tensors := tables(ts)
		name := b.CreateString("main")
		b.StartObject(5)
		b.PrependUOffsetTSlot(fbSubgraphTensors, tensors, 0)
		b.PrependUOffsetTSlot(4, name, 0)
		subs = append(subs, b.EndObject())
	}
	if m.alias > 0 {
		subs = slices.Repeat(subs[:1], m.alias)
	}
	subgraphs := tables(subs)
	var metas []flatbuffers.UOffsetT
	names := make([]string, 0, len(m.metadata))
	for k := range m.metadata {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		name := b.CreateString(k)
		b.StartObject(2)
		b.PrependUOffsetTSlot(fbMetadataName, name, 0)
		b.PrependUint32Slot(fbMetadataBuffer, m.metadata[k], 0)
		metas = append(metas, b.EndObject())
	}
	metadata := tables(metas)
	desc := b.CreateString(m.description)
	b.StartObject(8)
	b.PrependUint32Slot(fbModelVersion, 3, 0)
	b.PrependUOffsetTSlot(fbModelSubgraphs, subgraphs, 0)
	b.PrependUOffsetTSlot(fbModelDescription, desc, 0)
	b.PrependUOffsetTSlot(fbModelBuffers, buffers, 0)
	b.PrependUOffsetTSlot(fbModelMetadata, metadata, 0)
	b.FinishWithFileIdentifier(b.EndObject(), []byte("TFL3"))
	return slices.Clone(b.FinishedBytes())
}

// tfliteFixture returns model.tflite, which covers fp32, fp16, int8
// (quantised), uint8, int32 and string buffers, a buffer shared by three
// tensors, the empty sentinel buffer, an empty data vector, an offset/size
// buffer after the FlatBuffer, a tensor without a shape or a name, a
// duplicate name in a second subgraph and a metadata buffer; and its tensor
// segments, in any order.
func tfliteFixture() (tflModel, []wantTensor) {
	w32 := f32Bytes(1, -2, 3, -4, 5, -6)
	w16 := u16Bytes(0x3c00, 0xbc00, 0x3800, 0x0000)
	w8 := []byte{0x81, 0xff, 0x00, 0x01, 0x7f}
	sh := f32Bytes(0.25, 0.75)
	big := f32Bytes(100, 200, 300)
	w32b := f32Bytes(9, 10)
	i32 := []byte{7, 0, 0, 0}
	u8 := []byte{1, 2, 3}
	str := []byte{1, 0, 0, 0, 12, 0, 0, 0, 13, 0, 0, 0, 'x'}
	m := tflModel{
		description: "neuralzip test model",
		buffers: []tflBuffer{
			{}, {data: w32}, {data: w16}, {data: w8}, {data: sh}, {data: []byte{}}, {ext: big},
			{data: w32b}, {data: i32}, {data: []byte("1.5.0\x00\x00\x00")}, {data: u8}, {data: str},
		},
		subgraphs: [][]tflTensor{{
			{name: "act", shape: []int32{1, 2}},
			{name: "w_f32", shape: []int32{2, 3}, buffer: 1},
			{name: "w_f16", typ: 1, shape: []int32{4}, buffer: 2},
			{name: "w_i8", typ: 9, shape: []int32{5}, buffer: 3, scale: []float32{0.5}},
			{name: "shared_a", shape: []int32{2}, buffer: 4},
			{name: "shared_b", shape: []int32{1, 2}, buffer: 4},
			{name: "empty", shape: []int32{0}, buffer: 5},
			{name: "big", shape: []int32{3}, buffer: 6},
			{typ: 2, shape: []int32{}, hasRank: true, buffer: 8},
			{name: "u8", typ: 3, buffer: 10},
			{name: "str", typ: 5, shape: []int32{1}, buffer: 11},
		}, {
			{name: "w_f32", shape: []int32{-1}, buffer: 7},
			{name: "shared_c", shape: []int32{2}, buffer: 4},
		}},
		metadata: map[string]uint32{"min_runtime_version": 9},
	}
	want := []wantTensor{
		{"w_f32", "FLOAT32", dtype.F32, []int64{2, 3}, w32},
		{"w_f16", "FLOAT16", dtype.F16, []int64{4}, w16},
		{"w_i8", "INT8", dtype.I8, []int64{5}, w8},
		{"shared_a", "FLOAT32", dtype.F32, []int64{2}, sh},
		{"big", "FLOAT32", dtype.F32, []int64{3}, big},
		{"subgraph0/tensor8", "INT32", dtype.I32, []int64{}, i32},
		{"u8", "UINT8", dtype.U8, []int64{3}, u8},
		{"str", "STRING", dtype.Invalid, []int64{1}, str},
		{"w_f32#2", "FLOAT32", dtype.F32, []int64{2}, w32b},
	}
	return m, want
}

// checkTensorSet compares tensors with want, in any order.
func checkTensorSet(t *testing.T, b []byte, ts []Segment, want []wantTensor) {
	t.Helper()
	ts = slices.Clone(ts)
	want = slices.Clone(want)
	slices.SortFunc(ts, func(a, b Segment) int { return compareStrings(a.Name, b.Name) })
	slices.SortFunc(want, func(a, b wantTensor) int { return compareStrings(a.name, b.name) })
	checkTensors(t, b, ts, want)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestTFLiteFixtures(t *testing.T) {
	m, want := tfliteFixture()
	b := m.bytes()
	checkFixture(t, "testdata/tflite/model.tflite", b)
	l := openBytes(t, b)
	if l.Format != "tflite" {
		t.Fatalf("format %q", l.Format)
	}
	checkTensorSet(t, b, l.Tensors(), want)
	for k, v := range map[string]string{"version": "3", "description": "neuralzip test model", "subgraphs": "2",
		"tensors": "13", "buffers": "12", "shared_buffers": "1", "shared.shared_a": "shared_b, shared_c",
		"quantized_weights": "1", "metadata.min_runtime_version": "1.5.0"} {
		if l.Metadata[k] != v {
			t.Errorf("metadata %q = %q, want %q", k, l.Metadata[k], v)
		}
	}
	// The offset/size buffer lies after the FlatBuffer, the others inside it.
	for _, s := range l.Tensors() {
		inline := s.Offset >= 4 && binary.LittleEndian.Uint32(b[s.Offset-4:]) == uint32(s.Length)
		if inline == (s.Name == "big") {
			t.Errorf("tensor %q at %d: inline %v", s.Name, s.Offset, inline)
		}
	}
	if last := l.Tensors()[len(l.Tensors())-1]; last.Name != "big" || last.End() != l.Size {
		t.Errorf("last tensor %q ends at %d of %d", last.Name, last.End(), l.Size)
	}
}

func TestTFLiteMatch(t *testing.T) {
	m, _ := tfliteFixture()
	b := m.bytes()
	if !matchTFLite(b[:min(len(b), HeadSize)], int64(len(b))) {
		t.Error("fixture does not match")
	}
	for _, x := range [][]byte{nil, []byte("TFL3"), []byte("\x00\x00\x00\x00TFL2"), make([]byte, 100)} {
		if matchTFLite(x, int64(len(x))) {
			t.Errorf("%q matches", x)
		}
	}
}

func TestTFLiteRealFiles(t *testing.T) {
	dir := sharedDir(t)
	cases := []struct {
		file           string
		f16, f16Values int
	}{
		{"pose_landmark_full.tflite", 192, 3169489},
		{"pose_landmark_lite.tflite", 176, 1363089},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(dir, "models/original", c.file)
			m, err := OpenPath(path)
			if err != nil {
				t.Fatal(err)
			}
			if m.Format != "tflite" || len(m.Files) != 1 {
				t.Fatalf("format %q, %d files", m.Format, len(m.Files))
			}
			l := m.Files[0].Layout
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var f16s []Segment
			values, i32s := 0, 0
			for _, s := range l.Tensors() {
				n, _ := s.NumElements()
				switch s.DType {
				case dtype.F16:
					f16s = append(f16s, s)
					values += int(n)
				case dtype.I32:
					i32s++
				default:
					t.Errorf("tensor %q has type %s", s.Name, s.Type)
				}
				if binary.LittleEndian.Uint32(b[s.Offset-4:]) != uint32(s.Length) {
					t.Errorf("tensor %q at %d is not a whole data vector", s.Name, s.Offset)
				}
			}
			if len(f16s) != c.f16 || values != c.f16Values || i32s != 10 {
				t.Errorf("%d F16 tensors of %d values and %d INT32 tensors, want %d, %d and 10", len(f16s), values, i32s, c.f16, c.f16Values)
			}
			if l.Metadata["version"] != "3" || l.Metadata["subgraphs"] != "1" || l.Metadata["metadata.min_runtime_version"] == "" {
				t.Errorf("metadata %v", l.Metadata)
			}
			checkFloats(t, b, f16s, nil)
			// Cut copies open or fail cleanly (the last bytes may be
			// padding that nothing refers to).
			for _, n := range []int{len(b) / 3, len(b) / 2, len(b) - 1} {
				l, err := Open(bytes.NewReader(b[:n]), int64(n))
				checkOpenResult(t, b[:n], l, err)
			}
		})
	}
}

// tflitePositions finds, in a generated model, the places that the hostile
// tests corrupt.
type tflitePositions struct {
	root, vt         int64 // Model table and its vtable
	buffersField     int64 // the offset field Model.buffers
	buffersVec       int64 // the length of the buffers vector
	subgraphsVtEntry int64 // the vtable entry of Model.subgraphs
	tensorName       int64 // length of the name of subgraph 0, tensor 1
}

func findTFLite(t *testing.T, b []byte) tflitePositions {
	t.Helper()
	f := newFBReader(bytes.NewReader(b), int64(len(b)))
	var p tflitePositions
	p.root = int64(binary.LittleEndian.Uint32(b))
	model, err := f.table(p.root, "Model")
	if err != nil {
		t.Fatal(err)
	}
	p.vt = model.vt
	p.subgraphsVtEntry = model.vt + 4 + 2*fbModelSubgraphs
	p.buffersField, _, _ = f.field(model, fbModelBuffers, 4)
	start, _, _, _ := f.vector(model, fbModelBuffers, 4, "")
	p.buffersVec = start - 4
	subs, _, _, _ := f.vector(model, fbModelSubgraphs, 4, "")
	sub, _ := f.tableAt(subs, 0, "")
	ts, _, _, _ := f.vector(sub, fbSubgraphTensors, 4, "")
	tensor, _ := f.tableAt(ts, 1, "")
	name, _, _, _ := f.vector(tensor, fbTensorName, 1, "")
	p.tensorName = name - 4
	return p
}

func TestTFLiteHostile(t *testing.T) {
	fixture, _ := tfliteFixture()
	good := fixture.bytes()
	p := findTFLite(t, good)
	size := int64(len(good))
	patch := func(off int64, v ...byte) []byte {
		b := slices.Clone(good)
		copy(b[off:], v)
		return b
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	u16 := func(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

	build := func(f func(m *tflModel)) []byte {
		m, _ := tfliteFixture()
		f(&m)
		return m.bytes()
	}
	badIndex := build(func(m *tflModel) { m.subgraphs[0][1].buffer = 99 })
	badShape := build(func(m *tflModel) { m.subgraphs[0][1].shape = []int32{2, 2} })
	extPast := build(func(m *tflModel) { m.buffers[6].ext = f32Bytes(1, 2, 3) })
	extPast = extPast[:len(extPast)-4]
	alias := tflModel{buffers: []tflBuffer{{}}, subgraphs: [][]tflTensor{{{name: "x"}}}, alias: 1000}.bytes()

	cases := []struct {
		name     string
		b        []byte
		sentinel error
		off      int64
		subs     []string
	}{
		{"short", []byte("\x08\x00\x00\x00TFL"), ErrTruncated, 0, []string{"shorter than a FlatBuffer header"}},
		{"identifier", patch(4, 'T', 'F', 'L', '2'), ErrMalformed, 4, []string{`"TFL2"`}},
		{"root offset out of range", patch(0, u32(uint32(size))...), ErrOutOfRange, 0, []string{"root offset", "outside the file"}},
		{"vtable out of range", patch(p.root, u32(uint32(p.root+8))...), ErrOutOfRange, p.root, []string{"Model", "vtable at -8 lies outside the file"}},
		{"vtable beyond end", patch(p.root, u32(0xffff0000)...), ErrOutOfRange, p.root, []string{"vtable at"}},
		{"vtable size odd", patch(p.vt, u16(7)...), ErrOutOfRange, p.vt, []string{"vtable", "size 7"}},
		{"vtable size huge", patch(p.vt, u16(0xfffe)...), ErrOutOfRange, p.vt, []string{"size 65534"}},
		{"table size past end", patch(p.vt+2, u16(0xffff)...), ErrOutOfRange, p.vt, []string{"table size 65535"}},
		{"field outside table", patch(p.subgraphsVtEntry, u16(0xfff0)...), ErrOutOfRange, p.subgraphsVtEntry, []string{"field 2", "outside the table"}},
		{"offset out of range", patch(p.buffersField, u32(uint32(size))...), ErrOutOfRange, p.buffersField, []string{"Model.buffers", "points outside the file"}},
		{"vector length negative", patch(p.buffersVec, u32(0x80000000)...), ErrTooLarge, p.buffersVec, []string{"Model.buffers", "2147483648 elements"}},
		{"vector length huge", patch(p.buffersVec, u32(0xffffffff)...), ErrTooLarge, p.buffersVec, []string{"4294967295 elements"}},
		{"string length huge", patch(p.tensorName, u32(0x7fffffff)...), ErrTooLarge, p.tensorName, []string{"Tensor.name"}},
		{"buffer index", badIndex, ErrOutOfRange, -1, []string{"tensor 1 of subgraph 0 refers to buffer 99 of 12"}},
		{"data size", badShape, ErrMalformed, -1, []string{`tensor "w_f32"`, "holds 24 bytes", "needs 16"}},
		{"offset/size past end", extPast, ErrTruncated, int64(len(extPast) - 8), []string{`tensor "big"`, "runs past end of file"}},
		{"aliased tables", alias, ErrTooLarge, -1, []string{"more table references"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := openTFLite(bytes.NewReader(c.b), int64(len(c.b)))
			wantFormatError(t, err, c.sentinel, c.off, append([]string{"tflite"}, c.subs...)...)
		})
	}
}

func FuzzTFLite(f *testing.F) {
	fuzzSeeds(f, ".tflite")
	m, _ := tfliteFixture()
	f.Add(m.bytes())
	f.Add(tflModel{buffers: []tflBuffer{{}, {data: f32Bytes(1)}}, subgraphs: [][]tflTensor{{{name: "x", shape: []int32{1}, buffer: 1}}}}.bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := openTFLite(bytes.NewReader(b), int64(len(b)))
		checkOpenResult(t, b, l, err)
		if err == nil && l.Format != "tflite" {
			t.Fatalf("format %q", l.Format)
		}
	})
}
