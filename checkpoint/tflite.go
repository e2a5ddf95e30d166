package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"neuralzip/dtype"
)

// TFLite (tensorflow/lite/schema/schema.fbs): a FlatBuffer whose root table
// is a Model, with the file identifier "TFL3" at offset 4. Model.buffers
// holds the constant data: each Buffer has a data vector of bytes inside the
// FlatBuffer or, in models larger than 2 GB, an absolute offset and size of
// bytes that follow the FlatBuffer. Tensors of the subgraphs refer to
// buffers by index; buffer 0 is by convention empty.
//
// Every non-empty buffer that a tensor refers to becomes a tensor segment,
// named after the first tensor (by subgraph, then tensor index) that refers
// to it and typed by that tensor's TensorType; quantised int8/uint8 weights
// are integer tensors. The data must be as long as the tensor's shape
// requires; sparse tensors and tensors of unknown shape get a 1-D shape. A
// buffer that several tensors share is listed in Metadata under
// "shared.<name>". Buffers that no tensor refers to (model metadata) stay in
// the opaque bytes around the tensors. Repeated names get the suffix "#2",
// "#3", ... in that order.
//
// The FlatBuffer is read through its offsets, not loaded: tables, vtables,
// vectors and strings are read on demand through a small page cache, and
// every offset, vtable and vector length is checked against the file before
// it is followed. Tensor data is never read. Strings are read once per
// offset, and the bytes of the strings read and of the names built (suffixes,
// Metadata keys) are bounded by a budget proportional to the file size (see
// nameBudget).

func init() {
	Register(Format{
		Name:       "tflite",
		Extensions: []string{".tflite"},
		Match:      matchTFLite,
		Open:       openTFLite,
	})
}

const (
	tfliteMaxDims    = 64       // dimensions of one tensor
	tfliteMaxString  = 64 << 10 // longest name or description read
	tfliteShortValue = 256      // metadata buffers up to this size are shown when printable
	tfliteMaxShared  = 8        // names listed per shared buffer
	fbPageSize       = 4 << 10  // read unit of the FlatBuffer reader
	fbMaxCache       = 64 << 20 // cached pages, at most
)

// tfliteType is a TensorType: its name and DType (Invalid when package dtype
// has none).
type tfliteType struct {
	name string
	dt   dtype.DType
}

var tfliteTypes = [...]tfliteType{
	0:  {"FLOAT32", dtype.F32},
	1:  {"FLOAT16", dtype.F16},
	2:  {"INT32", dtype.I32},
	3:  {"UINT8", dtype.U8},
	4:  {"INT64", dtype.I64},
	5:  {"STRING", dtype.Invalid},
	6:  {"BOOL", dtype.Bool},
	7:  {"INT16", dtype.I16},
	8:  {"COMPLEX64", dtype.C64},
	9:  {"INT8", dtype.I8},
	10: {"FLOAT64", dtype.F64},
	11: {"COMPLEX128", dtype.Invalid},
	12: {"UINT64", dtype.U64},
	13: {"RESOURCE", dtype.Invalid},
	14: {"VARIANT", dtype.Invalid},
	15: {"UINT32", dtype.U32},
	16: {"UINT16", dtype.U16},
	17: {"INT4", dtype.Invalid},
	18: {"BFLOAT16", dtype.BF16},
	19: {"INT2", dtype.Invalid},
	20: {"UINT4", dtype.Invalid},
}

func lookupTFLiteType(t int8) tfliteType {
	if t >= 0 && int(t) < len(tfliteTypes) {
		return tfliteTypes[t]
	}
	return tfliteType{name: "TENSORTYPE_" + strconv.Itoa(int(t))}
}

// Fields (vtable slots) of the tables read.
const (
	fbModelVersion     = 0
	fbModelSubgraphs   = 2
	fbModelDescription = 3
	fbModelBuffers     = 4
	fbModelMetadata    = 6

	fbSubgraphTensors = 0

	fbTensorShape        = 0
	fbTensorType         = 1
	fbTensorBuffer       = 2
	fbTensorName         = 3
	fbTensorQuantization = 4
	fbTensorSparsity     = 6
	fbTensorHasRank      = 8

	fbQuantScale = 2

	fbBufferData   = 0
	fbBufferOffset = 1
	fbBufferSize   = 2

	fbMetadataName   = 0
	fbMetadataBuffer = 1
)

func matchTFLite(head []byte, size int64) bool {
	return len(head) >= 8 && string(head[4:8]) == "TFL3"
}

// tfliteBuffer is what is known of a buffer that a tensor refers to.
type tfliteBuffer struct {
	off    int64
	length int64
	owner  int // index in owners, or -1 when empty
}

// tfliteOwner is the first tensor that refers to a non-empty buffer.
type tfliteOwner struct {
	at     int64 // offset of the tensor table
	buffer uint32
	name   string
	typ    tfliteType
	shape  []int64 // nil when unknown
	sparse bool
	quant  bool // has quantisation scales
	shared []string
	nShare int
}

func openTFLite(r io.ReaderAt, size int64) (*Layout, error) {
	f := newFBReader(r, size)
	if size < 8 {
		return nil, f.errorf(0, ErrTruncated, "file of %d bytes is shorter than a FlatBuffer header", size)
	}
	id, err := f.read(4, 4, "file identifier")
	if err != nil {
		return nil, err
	}
	if string(id) != "TFL3" {
		return nil, f.errorf(4, ErrMalformed, "file identifier %q, want \"TFL3\"", id)
	}
	root, err := f.u32(0, "root offset")
	if err != nil {
		return nil, err
	}
	if int64(root) > size-4 {
		return nil, f.errorf(0, ErrOutOfRange, "root offset %d points outside the file (size %d)", root, size)
	}
	model, err := f.table(int64(root), "Model")
	if err != nil {
		return nil, err
	}
	meta := make(map[string]string)
	if v, ok, err := f.u32Field(model, fbModelVersion, "Model.version"); err != nil {
		return nil, err
	} else if ok {
		meta["version"] = strconv.FormatUint(uint64(v), 10)
	}
	if s, ok, err := f.str(model, fbModelDescription, "Model.description"); err != nil {
		return nil, err
	} else if ok && s != "" {
		meta["description"] = s
	}
	bufVec, nBuf, _, err := f.vector(model, fbModelBuffers, 4, "Model.buffers")
	if err != nil {
		return nil, err
	}
	subVec, nSub, _, err := f.vector(model, fbModelSubgraphs, 4, "Model.subgraphs")
	if err != nil {
		return nil, err
	}

	bufs := make(map[uint32]*tfliteBuffer) // the buffers tensors refer to
	var owners []tfliteOwner
	nTensors := 0
	for s := range nSub {
		sub, err := f.tableAt(subVec, s, "SubGraph")
		if err != nil {
			return nil, err
		}
		tVec, nT, _, err := f.vector(sub, fbSubgraphTensors, 4, "SubGraph.tensors")
		if err != nil {
			return nil, err
		}
		nTensors += int(nT)
		for j := range nT {
			t, err := f.tableAt(tVec, j, "Tensor")
			if err != nil {
				return nil, err
			}
			bi, _, err := f.u32Field(t, fbTensorBuffer, "Tensor.buffer")
			if err != nil {
				return nil, err
			}
			if int64(bi) >= nBuf {
				return nil, f.errorf(t.pos, ErrOutOfRange, "tensor %d of subgraph %d refers to buffer %d of %d", j, s, bi, nBuf)
			}
			b := bufs[bi]
			if b == nil {
				b = new(tfliteBuffer)
				if err := f.buffer(bufVec, int64(bi), b); err != nil {
					return nil, err
				}
				bufs[bi] = b
			}
			if b.length == 0 {
				continue // no data
			}
			if b.owner >= 0 && owners[b.owner].nShare >= tfliteMaxShared {
				owners[b.owner].nShare++ // not listed: its name is not needed
				continue
			}
			name, _, err := f.str(t, fbTensorName, "Tensor.name")
			if err != nil {
				return nil, err
			}
			if name == "" {
				name = "subgraph" + strconv.FormatInt(s, 10) + "/tensor" + strconv.FormatInt(j, 10)
				if !f.names.take(len(name)) {
					return nil, f.names.err("tflite", t.pos)
				}
			}
			if b.owner >= 0 {
				o := &owners[b.owner]
				o.shared = append(o.shared, name)
				o.nShare++
				continue
			}
			o, err := f.owner(t, name, bi)
			if err != nil {
				return nil, err
			}
			b.owner = len(owners)
			owners = append(owners, o)
		}
	}

	used := make(map[string]int, len(owners))
	segs := make([]Segment, 0, len(owners))
	nShared, nQuant := 0, 0
	for i := range owners {
		o := &owners[i]
		b := bufs[o.buffer]
		name, ok := dedupName(used, o.name, &f.names)
		if !ok {
			return nil, f.names.err("tflite", o.at)
		}
		seg, err := o.segment(name, b)
		if err != nil {
			return nil, err
		}
		segs = append(segs, seg)
		if o.quant {
			nQuant++
		}
		if o.nShare > 0 {
			nShared++
			v := strings.Join(o.shared, ", ")
			if o.nShare > len(o.shared) {
				v += ", and " + strconv.Itoa(o.nShare-len(o.shared)) + " more"
			}
			if !f.names.take(len(v) + len("shared.") + len(seg.Name)) {
				return nil, f.names.err("tflite", o.at)
			}
			meta["shared."+seg.Name] = v
		}
	}
	if err := f.metadata(model, bufVec, nBuf, meta); err != nil {
		return nil, err
	}
	l, err := build("tflite", size, 0, segs)
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]int{"subgraphs": int(nSub), "tensors": nTensors, "buffers": int(nBuf),
		"shared_buffers": nShared, "quantized_weights": nQuant} {
		meta[k] = strconv.Itoa(v)
	}
	l.Metadata = meta
	return l, nil
}

// buffer reads Buffer i of the vector at vec into b.
func (f *fbReader) buffer(vec, i int64, b *tfliteBuffer) error {
	b.owner = -1
	t, err := f.tableAt(vec, i, "Buffer")
	if err != nil {
		return err
	}
	off, _, err := f.u64Field(t, fbBufferOffset, "Buffer.offset")
	if err != nil {
		return err
	}
	if off > 1 { // data outside the FlatBuffer
		n, _, err := f.u64Field(t, fbBufferSize, "Buffer.size")
		if err != nil {
			return err
		}
		if off > maxInt64 || n > maxInt64-off {
			return f.errorf(t.pos, ErrTooLarge, "buffer %d: offset %d and size %d overflow int64", i, off, n)
		}
		b.off, b.length = int64(off), int64(n)
		return nil
	}
	b.off, b.length, _, err = f.vector(t, fbBufferData, 1, "Buffer.data")
	return err
}

// owner reads the tensor t that owns buffer bi.
func (f *fbReader) owner(t fbTable, name string, bi uint32) (tfliteOwner, error) {
	o := tfliteOwner{at: t.pos, buffer: bi, name: name}
	typ, _, err := f.u8Field(t, fbTensorType, "Tensor.type")
	if err != nil {
		return o, err
	}
	o.typ = lookupTFLiteType(int8(typ))
	hasRank, _, err := f.u8Field(t, fbTensorHasRank, "Tensor.has_rank")
	if err != nil {
		return o, err
	}
	_, sparse, err := f.field(t, fbTensorSparsity, 4)
	if err != nil {
		return o, err
	}
	o.sparse = sparse
	if o.quant, err = f.quantised(t); err != nil {
		return o, err
	}
	vec, n, ok, err := f.vector(t, fbTensorShape, 4, "Tensor.shape")
	if err != nil {
		return o, err
	}
	if n > tfliteMaxDims {
		return o, f.errorf(vec-4, ErrTooLarge, "tensor %q has %d dimensions, more than %d", name, n, tfliteMaxDims)
	}
	if !ok && hasRank == 0 {
		return o, nil // shape unknown
	}
	raw, err := f.read(vec, 4*n, "Tensor.shape")
	if err != nil {
		return o, err
	}
	o.shape = make([]int64, n)
	for i := range o.shape {
		o.shape[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		if o.shape[i] < 0 {
			o.shape = nil // a dynamic dimension: unknown
			break
		}
	}
	if o.shape != nil && n == 0 && hasRank == 0 {
		o.shape = []int64{} // a scalar, or a tensor of unknown rank: segment decides
	}
	return o, nil
}

// segment returns the tensor segment of o over buffer b, named name.
func (o *tfliteOwner) segment(name string, b *tfliteBuffer) (Segment, error) {
	seg := Segment{Name: name, DType: o.typ.dt, Type: o.typ.name, Offset: b.off, Length: b.length}
	if o.typ.dt == dtype.Invalid {
		// values nzip does not decode (strings, resources): the shape is
		// only told, but it must still count a number of elements
		if _, ok := numElements(o.shape); !ok {
			return seg, formatErr("tflite", o.at, ErrMalformed, "tensor %q: shape %v has more elements than an int64 counts", name, o.shape)
		}
		seg.Shape = o.shape
		return seg, nil
	}
	sz := int64(o.typ.dt.Size())
	if o.shape != nil && !o.sparse {
		numel, ok := numElements(o.shape)
		want, ok2 := o.typ.dt.ByteLen(numel)
		if ok && ok2 && want == b.length {
			seg.Shape = o.shape
			return seg, nil
		}
		if len(o.shape) > 0 || b.length%sz != 0 {
			return seg, formatErr("tflite", o.at, ErrMalformed, "tensor %q: buffer %d holds %d bytes, but shape %v of %s needs %d", name, o.buffer, b.length, o.shape, o.typ.name, want)
		}
	}
	if b.length%sz != 0 {
		return seg, formatErr("tflite", o.at, ErrMalformed, "tensor %q: buffer %d holds %d bytes, not a whole number of %s values", name, o.buffer, b.length, o.typ.name)
	}
	seg.Shape = []int64{b.length / sz}
	return seg, nil
}

// quantised reports whether tensor t has quantisation scales.
func (f *fbReader) quantised(t fbTable) (bool, error) {
	q, ok, err := f.ref(t, fbTensorQuantization, "Tensor.quantization")
	if err != nil || !ok {
		return false, err
	}
	qt, err := f.table(q, "QuantizationParameters")
	if err != nil {
		return false, err
	}
	_, n, _, err := f.vector(qt, fbQuantScale, 4, "QuantizationParameters.scale")
	return n > 0, err
}

// metadata lists Model.metadata in meta: "metadata.<name>" is the value of
// a short printable buffer, or its size.
func (f *fbReader) metadata(model fbTable, bufVec, nBuf int64, meta map[string]string) error {
	vec, n, _, err := f.vector(model, fbModelMetadata, 4, "Model.metadata")
	if err != nil {
		return err
	}
	for i := range n {
		t, err := f.tableAt(vec, i, "Metadata")
		if err != nil {
			return err
		}
		name, _, err := f.str(t, fbMetadataName, "Metadata.name")
		if err != nil {
			return err
		}
		bi, _, err := f.u32Field(t, fbMetadataBuffer, "Metadata.buffer")
		if err != nil {
			return err
		}
		if int64(bi) >= nBuf {
			return f.errorf(t.pos, ErrOutOfRange, "metadata %q refers to buffer %d of %d", name, bi, nBuf)
		}
		var b tfliteBuffer
		if err := f.buffer(bufVec, int64(bi), &b); err != nil {
			return err
		}
		v := "<" + strconv.FormatInt(b.length, 10) + " bytes>"
		if b.length <= tfliteShortValue && b.off+b.length <= f.size {
			raw, err := f.read(b.off, b.length, "metadata buffer")
			if err != nil {
				return err
			}
			if s := strings.TrimRight(string(raw), "\x00"); utf8.ValidString(s) && printable(s) {
				v = s
			}
		}
		if !f.names.take(len("metadata.") + len(name)) {
			return f.names.err("tflite", t.pos)
		}
		meta["metadata."+name] = v
	}
	return nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// ---- a bounds-checked FlatBuffer reader ----

// An fbReader reads FlatBuffer tables from a file. Every offset it follows
// is checked against the file size first, so a hostile file yields a
// FormatError, never a panic or a read outside the file. Reads go through a
// cache of fbPageSize pages. The number of tables visited is bounded by the
// file size (a table takes at least 4 bytes), so offsets that alias one
// table many times cannot make the reader loop for long. Strings are read
// once per offset, and the bytes of the strings read and the names built
// from them are charged to a nameBudget, so offsets that alias one long
// string, or long strings that overlap, cannot make it allocate without
// limit either.
type fbReader struct {
	r      io.ReaderAt
	size   int64
	pages  map[int64][]byte
	tables int64            // table visits left
	strs   map[int64]string // strings read, by the offset of their length
	names  nameBudget       // bytes of strings read and names built
}

// An fbTable is a table at pos whose vtable at vt is vtLen bytes long and
// whose inline part is tLen bytes long.
type fbTable struct {
	pos, vt     int64
	vtLen, tLen int64
	what        string
}

func newFBReader(r io.ReaderAt, size int64) *fbReader {
	return &fbReader{r: r, size: size, pages: make(map[int64][]byte), tables: size/4 + 16,
		strs: make(map[int64]string), names: newNameBudget(size)}
}

func (f *fbReader) errorf(off int64, sentinel error, msg string, args ...any) error {
	return formatErr("tflite", off, sentinel, msg, args...)
}

// read returns the n bytes at off. The slice may be shared with the cache.
func (f *fbReader) read(off, n int64, what string) ([]byte, error) {
	if off < 0 || n < 0 || off > f.size || n > f.size-off {
		return nil, f.errorf(off, ErrOutOfRange, "%s at %d (%d bytes) lies outside the file (size %d)", what, off, n, f.size)
	}
	first, last := off/fbPageSize, (off+n-1)/fbPageSize
	if n > 0 && first == last {
		p, err := f.page(first)
		if err != nil {
			return nil, err
		}
		return p[off-first*fbPageSize : off-first*fbPageSize+n], nil
	}
	b := make([]byte, n)
	if m, err := f.r.ReadAt(b, off); int64(m) < n {
		return nil, f.ioErr(off+int64(m), err)
	}
	return b, nil
}

// page returns page i of the file, reading it when it is not cached.
func (f *fbReader) page(i int64) ([]byte, error) {
	if p, ok := f.pages[i]; ok {
		return p, nil
	}
	if int64(len(f.pages))*fbPageSize >= fbMaxCache {
		clear(f.pages)
	}
	start := i * fbPageSize
	p := make([]byte, min(fbPageSize, f.size-start))
	if m, err := f.r.ReadAt(p, start); m < len(p) {
		return nil, f.ioErr(start+int64(m), err)
	}
	f.pages[i] = p
	return p, nil
}

func (f *fbReader) ioErr(at int64, err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return f.errorf(at, ErrTruncated, "file ends at %d, before its size %d", at, f.size)
	}
	return fmt.Errorf("checkpoint: tflite: reading at %d: %w", at, err)
}

func (f *fbReader) u32(off int64, what string) (uint32, error) {
	b, err := f.read(off, 4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

// table reads the table at pos and its vtable.
func (f *fbReader) table(pos int64, what string) (fbTable, error) {
	t := fbTable{pos: pos, what: what}
	if f.tables <= 0 {
		return t, f.errorf(pos, ErrTooLarge, "more table references than a file of %d bytes can hold", f.size)
	}
	f.tables--
	so, err := f.u32(pos, what)
	if err != nil {
		return t, err
	}
	t.vt = pos - int64(int32(so))
	if t.vt < 0 || t.vt > f.size-4 {
		return t, f.errorf(pos, ErrOutOfRange, "%s at %d: vtable at %d lies outside the file (size %d)", what, pos, t.vt, f.size)
	}
	h, err := f.read(t.vt, 4, what+" vtable")
	if err != nil {
		return t, err
	}
	t.vtLen = int64(binary.LittleEndian.Uint16(h))
	t.tLen = int64(binary.LittleEndian.Uint16(h[2:]))
	if t.vtLen < 4 || t.vtLen%2 != 0 || t.vtLen > f.size-t.vt {
		return t, f.errorf(t.vt, ErrOutOfRange, "%s at %d: vtable at %d has size %d (file size %d)", what, pos, t.vt, t.vtLen, f.size)
	}
	if t.tLen < 4 || t.tLen > f.size-pos {
		return t, f.errorf(t.vt, ErrOutOfRange, "%s at %d: table size %d runs past end of file (size %d)", what, pos, t.tLen, f.size)
	}
	return t, nil
}

// field returns the position of field slot of t, which is n bytes wide;
// ok is false when the field is absent.
func (f *fbReader) field(t fbTable, slot int, n int64) (pos int64, ok bool, err error) {
	e := 4 + 2*int64(slot)
	if e+2 > t.vtLen {
		return 0, false, nil
	}
	b, err := f.read(t.vt+e, 2, t.what+" vtable")
	if err != nil {
		return 0, false, err
	}
	off := int64(binary.LittleEndian.Uint16(b))
	if off == 0 {
		return 0, false, nil
	}
	if off < 4 || off+n > t.tLen {
		return 0, false, f.errorf(t.vt+e, ErrOutOfRange, "%s at %d: field %d at +%d (%d bytes) lies outside the table (%d bytes)", t.what, t.pos, slot, off, n, t.tLen)
	}
	return t.pos + off, true, nil
}

func (f *fbReader) u8Field(t fbTable, slot int, what string) (uint8, bool, error) {
	p, ok, err := f.field(t, slot, 1)
	if !ok || err != nil {
		return 0, ok, err
	}
	b, err := f.read(p, 1, what)
	if err != nil {
		return 0, false, err
	}
	return b[0], true, nil
}

func (f *fbReader) u32Field(t fbTable, slot int, what string) (uint32, bool, error) {
	p, ok, err := f.field(t, slot, 4)
	if !ok || err != nil {
		return 0, ok, err
	}
	v, err := f.u32(p, what)
	return v, err == nil, err
}

func (f *fbReader) u64Field(t fbTable, slot int, what string) (uint64, bool, error) {
	p, ok, err := f.field(t, slot, 8)
	if !ok || err != nil {
		return 0, ok, err
	}
	b, err := f.read(p, 8, what)
	if err != nil {
		return 0, false, err
	}
	return binary.LittleEndian.Uint64(b), true, nil
}

// ref follows the offset field slot of t to the table, vector or string it
// points to.
func (f *fbReader) ref(t fbTable, slot int, what string) (int64, bool, error) {
	p, ok, err := f.field(t, slot, 4)
	if !ok || err != nil {
		return 0, ok, err
	}
	u, err := f.u32(p, what)
	if err != nil {
		return 0, false, err
	}
	target := p + int64(u)
	if target > f.size-4 {
		return 0, false, f.errorf(p, ErrOutOfRange, "%s: offset %d at %d points outside the file (size %d)", what, u, p, f.size)
	}
	return target, true, nil
}

// vector follows the vector field slot of t, whose elements are elem bytes
// wide, and returns the position of its first element and its length.
func (f *fbReader) vector(t fbTable, slot int, elem int64, what string) (start, n int64, ok bool, err error) {
	v, ok, err := f.ref(t, slot, what)
	if !ok || err != nil {
		return 0, 0, ok, err
	}
	u, err := f.u32(v, what+" length")
	if err != nil {
		return 0, 0, false, err
	}
	if int64(u) > (f.size-v-4)/elem {
		return 0, 0, false, f.errorf(v, ErrTooLarge, "%s: vector of %d elements of %d bytes at %d runs past end of file (size %d)", what, u, elem, v, f.size)
	}
	return v + 4, int64(u), true, nil
}

// tableAt follows element i of the vector of tables that starts at vec.
func (f *fbReader) tableAt(vec, i int64, what string) (fbTable, error) {
	p := vec + 4*i
	u, err := f.u32(p, what+" offset")
	if err != nil {
		return fbTable{}, err
	}
	target := p + int64(u)
	if target > f.size-4 {
		return fbTable{}, f.errorf(p, ErrOutOfRange, "%s %d: offset %d at %d points outside the file (size %d)", what, i, u, p, f.size)
	}
	return f.table(target, what)
}

// str reads the string field slot of t.
func (f *fbReader) str(t fbTable, slot int, what string) (string, bool, error) {
	start, n, ok, err := f.vector(t, slot, 1, what)
	if !ok || err != nil {
		return "", ok, err
	}
	if n > tfliteMaxString {
		return "", false, f.errorf(start-4, ErrTooLarge, "%s is %d bytes long, more than the limit of %d", what, n, tfliteMaxString)
	}
	if s, ok := f.strs[start]; ok {
		return s, true, nil
	}
	if !f.names.take(int(n)) {
		return "", false, f.names.err("tflite", start-4)
	}
	b, err := f.read(start, n, what)
	if err != nil {
		return "", false, err
	}
	s := string(b)
	f.strs[start] = s
	return s, true, nil
}
