package codec

import (
	"encoding/binary"
	"strconv"

	"neuralzip/dtype"
)

// The layout of a block (doc.go: "Blocks", "Float blocks", "Streams"),
// defined once: the kinds of the index, the forms of a float block, the
// streams that follow its header and how each is coded. The CPU decoder,
// Census and inspect read blocks through these definitions, and so does
// the GPU planner (package gpu), which must accept exactly what the CPU
// decodes. ReadFloatHeader and ReadStream find where the parts of a block
// lie and check what can be checked without decoding; what a decoder does
// with them is its own.

// Block kinds as stored in the index.
const (
	kindStored  = 0 // payload is the original bytes
	kindZstd    = 1 // payload is one zstd frame
	kindFloat   = 2 // payload is a float block (see doc.go)
	kindRef     = 3 // a copy of, or difference to, reference bytes (ref.go)
	kindDup     = 4 // the same bytes as an earlier block of the archive (dedup.go)
	kindCM      = 5 // bytes coded by package bytecm (format version 10; cm.go)
	kindRecords = 6 // quantised records as field streams, package prog (format version 11; records.go)
	kindRepeat  = 7 // a float tensor's rows as matches of each other, package prog (format version 13; repeat.go)
)

// Float block forms.
const (
	formFields = 0 // symbol stream + residual planes
	formPlanes = 1 // one stream per byte of the value
	formSparse = 2 // zero mask + the nonzero values (format version 8; sparse.go)
)

// Zero-mask methods of a sparse float block (doc.go, "Sparse blocks").
const (
	maskBitmap  = 0 // a stream of ceil(n/8) bytes, one bit per value
	maskGaps    = 1 // a stream of zero-run symbols
	maskColumns = 2 // range-coded bits, each with its column's context
)

// Stream modes: the first byte of every stream.
const (
	smPacked  = 0 // packedLen(n, w) bytes, LSB-first
	smConst   = 1 // one byte, the symbol repeated n times
	smHuff1   = 2 // uvarint L, L bytes of a huff0 1X block (table + data)
	smHuff4   = 3 // uvarint L, L bytes of a huff0 4X block (table + data)
	smPair1   = 4 // pairs of symbols coded as one (doc.go), codes in a 1X block
	smPair4   = 5 // the same, codes in a 4X block
	smShared1 = 6 // a table of the archive's setup (doc.go), 1 stream
	smShared4 = 7 // the same, 4 streams
	smZstd    = 8 // uvarint L, L bytes of one zstd frame of the n symbols, a byte each (format version 9)
)

// maxPairK is the largest alphabet of a pair stream.
const maxPairK = 15

// BlockKind is how a block is stored (the kind byte of the index).
type BlockKind byte

const (
	KindStored    BlockKind = kindStored  // the original bytes
	KindZstd      BlockKind = kindZstd    // one zstd frame
	KindFloat     BlockKind = kindFloat   // a float block: a header and streams (ReadFloatHeader)
	KindRef       BlockKind = kindRef     // a copy of, or difference to, reference bytes
	KindDuplicate BlockKind = kindDup     // the same bytes as an earlier block of the archive
	KindCM        BlockKind = kindCM      // bytes coded bit by bit with adaptive models (package bytecm)
	KindRecords   BlockKind = kindRecords // quantised records (ggml blocks) as field streams (package prog)
	KindRepeat    BlockKind = kindRepeat  // a float tensor's rows as matches of each other and literals (package prog)
)

// String names the kind: "stored", "zstd", "float", "ref", "duplicate",
// "cm", "records" or "repeat".
func (k BlockKind) String() string { return kindName(byte(k)) }

// MarshalText writes the kind's name (JSON shows "float", not 2).
func (k BlockKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// FloatForm is the first byte of a float block.
type FloatForm byte

const (
	FormFields FloatForm = formFields // a symbol stream (exponents) and residual byte planes
	FormPlanes FloatForm = formPlanes // one stream of width 8 per byte of the value
	FormSparse FloatForm = formSparse // a zero mask and the nonzero values (ReadSparseHeader)
)

// StreamMode is how a stream is coded (its first byte).
type StreamMode byte

const (
	StreamPacked  StreamMode = smPacked
	StreamConst   StreamMode = smConst
	StreamHuff1   StreamMode = smHuff1
	StreamHuff4   StreamMode = smHuff4
	StreamPair1   StreamMode = smPair1
	StreamPair4   StreamMode = smPair4
	StreamShared1 StreamMode = smShared1
	StreamShared4 StreamMode = smShared4
	StreamZstd    StreamMode = smZstd
)

// MaxPairK is the largest alphabet of a pair stream.
const MaxPairK = maxPairK

var streamModeNames = [...]string{"packed", "const", "huff1", "huff4", "pair1", "pair4", "shared1", "shared4", "zstd"}

func (m StreamMode) String() string {
	if int(m) < len(streamModeNames) {
		return streamModeNames[m]
	}
	return "mode" + strconv.Itoa(int(m))
}

// X4 reports whether the mode's Huffman data has four streams.
func (m StreamMode) X4() bool { return m == StreamHuff4 || m == StreamPair4 || m == StreamShared4 }

// FloatHeader is the header of a float block: its form and, for the
// fields form, how the dtype's values split (doc.go, "Form 0").
type FloatHeader struct {
	Form FloatForm
	Size int // bytes per value
	// fields form: the dtype's exponent, mantissa and sign bits, the
	// residual bits joined into the symbol and the trailing zero bits
	// dropped from the planes
	Exp, Mant, Sign uint
	Join, Zero      uint
	Len             int // header bytes; the first stream starts here
}

// ReadFloatHeader reads the header of a float block of dtype d.
func ReadFloatHeader(src []byte, d dtype.DType) (FloatHeader, error) {
	if len(src) < 1 {
		return FloatHeader{}, errf("float block: empty payload")
	}
	h := FloatHeader{Form: FloatForm(src[0]), Size: d.Size(), Len: 1}
	switch h.Form {
	case FormFields:
		f, ok := specFor(d)
		if !ok {
			return FloatHeader{}, errf("float block: fields form is not defined for %v", d)
		}
		if len(src) < 3 {
			return FloatHeader{}, errf("float block: short header")
		}
		f.j, f.tz = uint(src[1]), uint(src[2])
		if f.j > f.maxJoin() || f.tz > f.w()-f.j {
			return FloatHeader{}, errf("float block: bad join %d / zero bits %d for %v", f.j, f.tz, d)
		}
		h.Exp, h.Mant, h.Sign, h.Join, h.Zero, h.Len = f.e, f.m, f.s, f.j, f.tz, 3
	case FormPlanes, FormSparse:
	default:
		return FloatHeader{}, errf("float block: unknown form %d", h.Form)
	}
	return h, nil
}

// spec is the fields form's split.
func (h FloatHeader) spec() fieldSpec {
	return fieldSpec{size: h.Size, e: h.Exp, m: h.Mant, s: h.Sign, j: h.Join, tz: h.Zero}
}

// Streams is the number of streams after the header: the symbol stream
// and the residual planes (fields form), or one stream per byte of the
// value (planes form).
func (h FloatHeader) Streams() int {
	switch h.Form {
	case FormPlanes:
		return h.Size
	case FormSparse:
		return 0 // ReadSparseHeader
	}
	return 1 + h.spec().planes()
}

// Width is the symbol width of stream i.
func (h FloatHeader) Width(i int) uint {
	switch {
	case h.Form == FormPlanes:
		return 8
	case i == 0:
		return h.spec().symW()
	}
	return h.spec().planeW(i - 1)
}

// Symbols reports whether stream i is a fields-form symbol stream, the
// only stream that may use pair and shared modes.
func (h FloatHeader) Symbols(i int) bool { return h.Form == FormFields && i == 0 }

// Stream is where the parts of one stream lie in a block's payload, as
// ReadStream finds them; positions index the payload.
type Stream struct {
	Mode       StreamMode
	Start, End int // from the mode byte to the byte after the stream
	// Data to DataEnd: the packed symbols (packed); the huff0 block,
	// table and data (huff1, huff4); the huff0 block of the floor(n/2)
	// pair codes (pair1, pair4); the huff0 data without a table (shared1,
	// shared4); the zstd frame (zstd)
	Data, DataEnd int
	Symbol        byte // const: every symbol
	K             int  // pair1, pair4: the alphabet size; its symbols at Top
	Top           int
	Table         uint64 // shared1, shared4: the table's index in the setup section
	Shift         int    // shared1, shared4: the alignment shift
	Pairs         bool   // shared1, shared4: the table's pairs code
	// pair and shared modes: X exception symbols of the same width in a
	// stream (modes 0 to 3) whose mode byte is at Exc
	X   int
	Exc int
}

// ReadStream reads the layout of the stream of n symbols of width w at
// src[pos:]. Pair and shared modes are allowed only where symbols is set
// (the symbol stream of a fields-form block). What can be checked without
// decoding is checked: lengths, a constant's or a pair alphabet's symbols
// against the width, the exception count against n. A shared stream's
// table index, its shift and its kind against the setup are the
// decoder's to check.
func ReadStream(src []byte, pos, n int, w uint, symbols bool) (Stream, error) {
	if pos >= len(src) {
		return Stream{}, errf("missing stream")
	}
	s := Stream{Mode: StreamMode(src[pos]), Start: pos}
	pos++
	switch s.Mode {
	case StreamPacked:
		l := packedLen(n, w)
		if len(src)-pos < l {
			return Stream{}, errf("packed stream: need %d bytes, have %d", l, len(src)-pos)
		}
		s.Data, s.DataEnd = pos, pos+l
		s.End = s.DataEnd
		return s, nil
	case StreamConst:
		if pos >= len(src) {
			return Stream{}, errf("const stream: missing symbol")
		}
		s.Symbol = src[pos]
		if w < 8 && s.Symbol >= 1<<w {
			return Stream{}, errf("const stream: symbol %d out of range", s.Symbol)
		}
		s.End = pos + 1
		return s, nil
	case StreamHuff1, StreamHuff4, StreamZstd:
		var err error
		if s.Data, s.DataEnd, err = lenAt(src, pos); err != nil {
			return Stream{}, err
		}
		s.End = s.DataEnd
		return s, nil
	case StreamPair1, StreamPair4:
		if !symbols {
			return Stream{}, errf("pair stream not allowed here")
		}
		if pos >= len(src) {
			return Stream{}, errf("pair stream: short header")
		}
		s.K = int(src[pos])
		if s.K < 1 || s.K > maxPairK || len(src)-pos < 1+s.K {
			return Stream{}, errf("pair stream: bad alphabet size %d", s.K)
		}
		s.Top = pos + 1
		if w < 8 && !symbolsFit(src[s.Top:s.Top+s.K], w) {
			return Stream{}, errf("pair stream: symbol out of range")
		}
		var err error
		if s.Data, s.DataEnd, err = lenAt(src, s.Top+s.K); err != nil {
			return Stream{}, err
		}
	case StreamShared1, StreamShared4:
		if !symbols {
			return Stream{}, errf("shared stream not allowed here")
		}
		t, k := binary.Uvarint(src[pos:])
		if k <= 0 {
			return Stream{}, errf("setup table index: bad varint")
		}
		s.Table, pos = t, pos+k
		sh, k := binary.Varint(src[pos:])
		if k <= 0 || sh < -255 || sh > 255 {
			return Stream{}, errf("bad alignment shift")
		}
		s.Shift, pos = int(sh), pos+k
		if pos >= len(src) || src[pos] > 1 {
			return Stream{}, errf("bad shared code kind")
		}
		s.Pairs = src[pos] == 1
		var err error
		if s.Data, s.DataEnd, err = lenAt(src, pos+1); err != nil {
			return Stream{}, err
		}
	default:
		return Stream{}, errf("unknown stream mode %d", s.Mode)
	}
	// pair and shared modes: the exceptions
	x, rest, err := readUvarint(src[s.DataEnd:], uint64(n))
	if err != nil {
		return Stream{}, err
	}
	s.X, s.Exc = int(x), len(src)-len(rest)
	exc, err := ReadStream(src, s.Exc, s.X, w, false)
	if err != nil {
		return Stream{}, err
	}
	if exc.Mode == StreamZstd {
		return Stream{}, errf("zstd stream not allowed here")
	}
	s.End = exc.End
	return s, nil
}

// lenAt reads the uvarint length at src[pos:] of the bytes that follow it
// and returns where they lie.
func lenAt(src []byte, pos int) (start, end int, err error) {
	l, rest, err := readLen(src[pos:])
	if err != nil {
		return 0, 0, err
	}
	start = len(src) - len(rest)
	return start, start + int(l), nil
}

// MaskMethod is how a sparse block codes its zero mask.
type MaskMethod byte

const (
	MaskBitmap  MaskMethod = maskBitmap  // one bit per value, as a stream of bytes
	MaskGaps    MaskMethod = maskGaps    // zero runs before each nonzero value, as a stream
	MaskColumns MaskMethod = maskColumns // range-coded, a context per column of the tensor
)

var maskNames = [...]string{"bitmap", "gaps", "columns"}

func (m MaskMethod) String() string {
	if int(m) < len(maskNames) {
		return maskNames[m]
	}
	return "mask" + strconv.Itoa(int(m))
}

// sparseSignDropped is flag bit 0 of a sparse block: every nonzero value
// has sign bit 0, which is not coded.
const sparseSignDropped = 1

// maxSparseRow is the longest row a column-context mask may name.
const maxSparseRow = 1 << 16

// SparseHeader is where the parts of a sparse float block (form 2) lie,
// as ReadSparseHeader finds them; positions index the payload.
type SparseHeader struct {
	Size        int        // bytes per value
	SignDropped bool       // the nonzero values' sign bit is 0 and not coded
	Mask        MaskMethod // how the zero mask is coded
	// MaskBitmap: the stream of ceil(n/8) bytes; MaskGaps: the stream of
	// Gaps zero-run symbols
	Stream Stream
	Gaps   int
	// MaskColumns: the row length, the column of the block's first value
	// and the range-coded bytes
	Row, Col      int
	Data, DataEnd int
	Values        int // where the nonzero values' part starts (its u8 join)
}

// ReadSparseHeader reads the header and zero mask layout of a sparse
// float block of n values of dtype d.
func ReadSparseHeader(src []byte, n int, d dtype.DType) (SparseHeader, error) {
	f, ok := specFor(d)
	if !ok || f.size > 4 {
		return SparseHeader{}, errf("sparse block: not defined for %v", d)
	}
	if len(src) < 3 || FloatForm(src[0]) != FormSparse {
		return SparseHeader{}, errf("sparse block: short header")
	}
	h := SparseHeader{Size: f.size, SignDropped: src[1]&sparseSignDropped != 0, Mask: MaskMethod(src[2])}
	if src[1]&^sparseSignDropped != 0 || (h.SignDropped && f.s == 0) {
		return SparseHeader{}, errf("sparse block: bad flags %#x for %v", src[1], d)
	}
	pos := 3
	switch h.Mask {
	case MaskBitmap:
		s, err := ReadStream(src, pos, (n+7)/8, 8, false)
		if err != nil {
			return SparseHeader{}, err
		}
		h.Stream, pos = s, s.End
	case MaskGaps:
		k, rest, err := readUvarint(src[pos:], uint64(n))
		if err != nil {
			return SparseHeader{}, err
		}
		h.Gaps, pos = int(k), len(src)-len(rest)
		s, err := ReadStream(src, pos, h.Gaps, 8, false)
		if err != nil {
			return SparseHeader{}, err
		}
		h.Stream, pos = s, s.End
	case MaskColumns:
		// a row no longer than the block: the model's size (and the work
		// of clearing it) stays proportional to the block
		row, rest, err := readUvarint(src[pos:], uint64(min(max(n, 1), maxSparseRow)))
		if err != nil || row == 0 {
			return SparseHeader{}, errf("sparse block: bad row length")
		}
		col, rest, err := readUvarint(rest, row-1)
		if err != nil {
			return SparseHeader{}, errf("sparse block: bad first column")
		}
		h.Row, h.Col = int(row), int(col)
		if h.Data, h.DataEnd, err = lenAt(src, len(src)-len(rest)); err != nil {
			return SparseHeader{}, err
		}
		pos = h.DataEnd
	default:
		return SparseHeader{}, errf("sparse block: unknown mask method %d", h.Mask)
	}
	h.Values = pos
	return h, nil
}

// spec is the split of the nonzero values: the dtype's, without the sign
// bit where it is dropped.
func (h SparseHeader) spec(d dtype.DType) fieldSpec {
	f, _ := specFor(d)
	if h.SignDropped {
		f.s = 0
	}
	return f
}

// ReadSparseValues reads the header of the nonzero values' part of a
// sparse block (there is one only when the mask has a nonzero value): a
// fields-form header whose Streams and Width describe the m values that
// follow, with Sign 0 where the block drops the sign. Len is where its
// first stream starts in src.
func ReadSparseValues(src []byte, h SparseHeader, d dtype.DType) (FloatHeader, error) {
	f := h.spec(d)
	pos := h.Values
	if len(src)-pos < 2 {
		return FloatHeader{}, errf("sparse block: short values header")
	}
	f.j, f.tz = uint(src[pos]), uint(src[pos+1])
	if f.j > f.maxJoin() || f.tz > f.w()-f.j {
		return FloatHeader{}, errf("sparse block: bad join %d / zero bits %d for %v", f.j, f.tz, d)
	}
	return FloatHeader{Form: FormFields, Size: f.size, Exp: f.e, Mant: f.m, Sign: f.s, Join: f.j, Zero: f.tz, Len: pos + 2}, nil
}
