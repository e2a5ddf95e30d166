package codec

import (
	"fmt"
	"strings"

	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// Programs, for inspection (nzip inspect -programs; issue 48): how a
// block's bytes are coded, as a tree of the operators its headers name —
// float → fields (exponent, sign and mantissa planes), sparse → mask and
// nonzero values, records → one stream per field of the ggml layout —
// down to each stream's terminal coder, with the payload bytes of every
// node. BlockProgram reads headers, mode bytes and lengths only; the one
// part it decodes is a sparse block's zero mask, whose count of nonzero
// values sizes the packed streams after it.

// ProgramNode is one node of a block's program. A node with parts has
// Bytes equal to the sum of theirs; a block's root has the block's
// payload bytes.
type ProgramNode struct {
	Op     string        `json:"op"`               // what it codes: "float fields", "exponent", "mantissa bits 0-7", "records Q4_K", "d.hi", "header", ...
	Coder  string        `json:"coder,omitempty"`  // "huffman 4-stream", "huffman 1-stream", "packed", "constant", "zstd", "raw", "cm", "range coder", "header"; pair and shared streams "pairs" or "shared table N" over two parts, their codes and exceptions
	Values int64         `json:"values,omitempty"` // the values (roots of float, records and difference blocks) or symbols (streams) it codes; 0 for opaque bytes
	Width  int           `json:"width,omitempty"`  // a stream's symbol width in bits
	Bytes  int64         `json:"bytes"`
	Nodes  []ProgramNode `json:"nodes,omitempty"`
}

// BitsPerValue is the node's coded bits per value or symbol (0 when it
// codes none).
func (n ProgramNode) BitsPerValue() float64 {
	if n.Values <= 0 {
		return 0
	}
	return 8 * float64(n.Bytes) / float64(n.Values)
}

// Shape is the node's tree without its sizes (op, coder and width of
// every node): blocks of one shape may be merged into one tree.
func (n ProgramNode) Shape() string {
	var b strings.Builder
	n.shape(&b)
	return b.String()
}

func (n *ProgramNode) shape(b *strings.Builder) {
	fmt.Fprintf(b, "(%s|%s|%d", n.Op, n.Coder, n.Width)
	for i := range n.Nodes {
		n.Nodes[i].shape(b)
	}
	b.WriteByte(')')
}

// AddSizes adds the bytes and values of q, a node of the same Shape, to
// n and its parts.
func (n *ProgramNode) AddSizes(q ProgramNode) {
	n.Bytes += q.Bytes
	n.Values += q.Values
	for i := range n.Nodes {
		n.Nodes[i].AddSizes(q.Nodes[i])
	}
}

// maxProgramLen bounds the original length BlockProgram accepts: the
// longest block a reader accepts.
const maxProgramLen = 1 << 22

// BlockProgram reads the program of a block from its index entry (Kind,
// DType, Length, Compressed) and its payload (Compressed bytes; only
// float and records blocks are read whole, a difference block's first
// byte only, the others may pass nil). Malformed
// headers are an error, never a panic.
func BlockProgram(b BlockInfo, payload []byte) (ProgramNode, error) {
	root := ProgramNode{Op: b.Kind.String(), Bytes: b.Compressed}
	leaf := func(coder string) (ProgramNode, error) { root.Coder = coder; return root, nil }
	switch b.Kind {
	case KindStored:
		return leaf("raw")
	case KindZstd:
		return leaf("zstd")
	case KindCM:
		return leaf("cm")
	case KindDuplicate:
		root.Op = "duplicate of an earlier block"
		return leaf("copy")
	case KindRef:
		root.Op = "reference"
		if b.Compressed == 0 {
			return leaf("copy")
		}
		if len(payload) == 0 {
			return root, errf("reference block: empty payload")
		}
		root.Op = "difference to the reference"
		if sz := int64(b.DType.Size()); sz > 0 {
			root.Values = b.Length / sz
		}
		return leaf(fmt.Sprintf("method %d", payload[0]))
	case KindFloat, KindRecords, KindRepeat:
	default:
		return root, errf("unknown block kind %d", b.Kind)
	}
	if int64(len(payload)) != b.Compressed {
		return root, errf("%v block: payload of %d bytes, index says %d", b.Kind, len(payload), b.Compressed)
	}
	if b.Length < 0 || b.Length > maxProgramLen {
		return root, errf("%v block of %d bytes", b.Kind, b.Length)
	}
	if b.Kind == KindRecords {
		return recordsProgram(root, payload, int(b.Length))
	}
	if b.Kind == KindRepeat {
		return repeatProgram(root, payload, int(b.Length))
	}
	return floatProgram(root, payload, b.DType, int(b.Length))
}

func recordsProgram(root ProgramNode, src []byte, length int) (ProgramNode, error) {
	s, ls, err := prog.Layout(src, length)
	if err != nil {
		return root, errf("records block: %v", err)
	}
	root.Op = "records " + s.Name
	root.Values = int64(length / s.Bytes * s.Values)
	root.Nodes = append(root.Nodes, ProgramNode{Op: "type", Coder: "header", Bytes: 1})
	for _, l := range ls {
		root.Nodes = append(root.Nodes, ProgramNode{Op: l.Field.Name, Coder: coderName(StreamMode(l.Mode)),
			Values: int64(l.Symbols), Width: int(l.Field.Width), Bytes: int64(l.End - l.Start)})
	}
	return root, nil
}

func floatProgram(root ProgramNode, src []byte, d dtype.DType, length int) (ProgramNode, error) {
	sz := d.Size()
	if sz <= 0 || length%sz != 0 {
		return root, errf("float block: %d bytes of %v", length, d)
	}
	n := length / sz
	root.Values = int64(n)
	h, err := ReadFloatHeader(src, d)
	if err != nil {
		return root, err
	}
	switch h.Form {
	case FormSparse:
		return sparseProgram(root, src, d, n)
	case FormPlanes:
		root.Op = "float byte planes " + d.String()
		root.Nodes = append(root.Nodes, ProgramNode{Op: "form", Coder: "header", Bytes: 1})
	default:
		root.Op = "float fields " + d.String()
		root.Nodes = append(root.Nodes, ProgramNode{Op: "form, join, zero bits", Coder: "header", Bytes: int64(h.Len)})
	}
	nodes, end, err := streamsProgram(src, h, n)
	if err != nil {
		return root, err
	}
	if end != len(src) {
		return root, errf("float block: %d trailing bytes", len(src)-end)
	}
	root.Nodes = append(root.Nodes, nodes...)
	return root, nil
}

// streamsProgram reads the streams of n values after header h (at
// src[h.Len:]) and returns their nodes and where the last ends.
func streamsProgram(src []byte, h FloatHeader, n int) ([]ProgramNode, int, error) {
	var out []ProgramNode
	pos := h.Len
	for i := 0; i < h.Streams(); i++ {
		s, err := ReadStream(src, pos, n, h.Width(i), h.Symbols(i))
		if err != nil {
			return nil, 0, err
		}
		out = append(out, streamNode(src, fieldName(h, i), s, n, h.Width(i)))
		pos = s.End
	}
	return out, pos, nil
}

// fieldName names stream i of a float block: what bits of the value it
// holds.
func fieldName(h FloatHeader, i int) string {
	if h.Form == FormPlanes {
		return fmt.Sprintf("byte plane %d", i)
	}
	W := h.Sign + h.Mant // residual bits: sign above mantissa
	if i == 0 {
		name := "exponent"
		if h.Join > 0 {
			name += " + " + residualBits(h, W-h.Join, W-1)
		}
		return name
	}
	lo := h.Zero + 8*uint(i-1)
	return residualBits(h, lo, lo+h.Width(i)-1)
}

// residualBits names residual bits lo..hi (the mantissa's, and the sign
// at bit Mant where the dtype has one).
func residualBits(h FloatHeader, lo, hi uint) string {
	sign := h.Sign == 1 && hi >= h.Mant
	if sign {
		hi--
	}
	var m string
	switch {
	case hi+1 == lo:
	case hi == lo:
		m = fmt.Sprintf("mantissa bit %d", lo)
	default:
		m = fmt.Sprintf("mantissa bits %d-%d", lo, hi)
	}
	switch {
	case sign && m != "":
		return "sign + " + m
	case sign:
		return "sign"
	}
	return m
}

// coderName names a stream mode as a terminal coder.
func coderName(m StreamMode) string {
	switch m {
	case StreamPacked:
		return "packed"
	case StreamConst:
		return "constant"
	case StreamHuff1:
		return "huffman 1-stream"
	case StreamHuff4:
		return "huffman 4-stream"
	case StreamPair1:
		return "pairs, huffman 1-stream"
	case StreamPair4:
		return "pairs, huffman 4-stream"
	case StreamShared1:
		return "shared table 1-stream"
	case StreamShared4:
		return "shared table 4-stream"
	case StreamZstd:
		return "zstd"
	}
	return m.String()
}

// streamNode is the node of stream s of n symbols of width w; pair and
// shared streams have two parts, their codes and their exceptions.
func streamNode(src []byte, op string, s Stream, n int, w uint) ProgramNode {
	nd := ProgramNode{Op: op, Coder: coderName(s.Mode), Values: int64(n), Width: int(w), Bytes: int64(s.End - s.Start)}
	switch s.Mode {
	case StreamPair1, StreamPair4, StreamShared1, StreamShared4:
		codes := ProgramNode{Op: "codes", Coder: "huffman 1-stream", Values: int64(n), Bytes: int64(s.Exc - s.Start)}
		if s.Mode.X4() {
			codes.Coder = "huffman 4-stream"
		}
		nd.Coder = "pairs"
		if s.Mode == StreamShared1 || s.Mode == StreamShared4 {
			nd.Coder = fmt.Sprintf("shared table %d", s.Table)
		}
		if s.Mode == StreamPair1 || s.Mode == StreamPair4 || s.Pairs {
			codes.Op, codes.Values = fmt.Sprintf("pair codes of %d symbols", s.K), int64(n/2)
		}
		exc := ProgramNode{Op: "exceptions", Values: int64(s.X), Width: int(w), Bytes: int64(s.End - s.Exc)}
		if s.Exc < s.End {
			exc.Coder = coderName(StreamMode(src[s.Exc]))
		}
		nd.Nodes = []ProgramNode{codes, exc}
	}
	return nd
}

func sparseProgram(root ProgramNode, src []byte, d dtype.DType, n int) (ProgramNode, error) {
	root.Op = "sparse " + d.String()
	h, err := ReadSparseHeader(src, n, d)
	if err != nil {
		return root, err
	}
	root.Nodes = append(root.Nodes, ProgramNode{Op: "form, flags, mask method", Coder: "header", Bytes: 3})
	switch h.Mask {
	case MaskBitmap:
		root.Nodes = append(root.Nodes, streamNode(src, "zero mask (bitmap)", h.Stream, (n+7)/8, 8))
	case MaskGaps:
		m := streamNode(src, "zero mask (gaps)", h.Stream, h.Gaps, 8)
		m.Bytes = int64(h.Stream.End - 3) // with the count before the stream
		root.Nodes = append(root.Nodes, m)
	case MaskColumns:
		root.Nodes = append(root.Nodes, ProgramNode{Op: fmt.Sprintf("zero mask (columns of %d)", h.Row), Coder: "range coder", Values: int64(n), Bytes: int64(h.DataEnd - 3)})
	}
	mask := make([]byte, (n+7)/8)
	m, err := SparseMask(mask, src, h, n)
	if err != nil {
		return root, err
	}
	if m == 0 {
		return root, nil
	}
	vh, err := ReadSparseValues(src, h, d)
	if err != nil {
		return root, err
	}
	vals := ProgramNode{Op: "nonzero values", Values: int64(m), Bytes: int64(len(src) - h.Values)}
	vals.Nodes = append(vals.Nodes, ProgramNode{Op: "join, zero bits", Coder: "header", Bytes: 2})
	nodes, end, err := streamsProgram(src, vh, m)
	if err != nil {
		return root, err
	}
	if end != len(src) {
		return root, errf("sparse block: %d trailing bytes", len(src)-end)
	}
	vals.Nodes = append(vals.Nodes, nodes...)
	root.Nodes = append(root.Nodes, vals)
	return root, nil
}

// BlockProgram reads the program of block bi of file fi (see the
// function BlockProgram): it reads the payloads of float and records
// blocks and a difference block's first byte, nothing else.
func (r *Reader) BlockProgram(fi, bi int) (ProgramNode, error) {
	if fi < 0 || fi >= len(r.idx.files) || bi < 0 || bi >= len(r.idx.files[fi].blocks) {
		return ProgramNode{}, fmt.Errorf("codec: no block %d of file %d", bi, fi)
	}
	f := r.idx.files[fi]
	b := f.blocks[bi]
	info := f.Blocks()[bi]
	var p []byte
	switch b.kind {
	case kindFloat, kindRecords, kindRepeat:
		p = make([]byte, b.compLen)
	case kindRef:
		p = make([]byte, min(b.compLen, 1))
	}
	if len(p) > 0 {
		if err := readFullAt(r.r, p, b.compOff, r.base); err != nil {
			return ProgramNode{}, err
		}
	}
	nd, err := BlockProgram(info, p)
	if err != nil {
		return nd, &CorruptError{Offset: b.compOff + r.base, File: f.Name, Block: bi, FileOffset: b.origOff, Msg: err.Error(), Err: ErrCorrupt}
	}
	return nd, nil
}

// ShapeValues is the number of values of a tensor of shape shape: the
// product of its dimensions, 0 for no dimensions, a dimension ≤ 0 or a
// product past 2^62 (a program's root counts a tensor's values by it).
func ShapeValues(shape []int64) int64 {
	if len(shape) == 0 {
		return 0
	}
	n := int64(1)
	for _, d := range shape {
		if d <= 0 || n > (1<<62)/d {
			return 0
		}
		n *= d
	}
	return n
}
