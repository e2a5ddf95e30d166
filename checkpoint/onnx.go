package checkpoint

import (
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"neuralzip/dtype"
)

// ONNX (onnx.proto): the file is one protobuf ModelProto, with no magic
// bytes. Weights are TensorProto messages: graph initializers, and the
// tensor attributes of nodes (AttributeProto.t and .tensors, above all of
// Constant nodes, where exporters such as paddle2onnx and spox keep every
// weight), in the graphs of If/Loop/Scan attributes at any depth, in
// sparse tensors, in model-local functions and in training graphs.
//
// The wire format is walked with protowire, field by field, keeping file
// offsets; tensor data is skipped, never read. A tensor whose data is one
// contiguous run of little-endian values becomes a tensor segment over
// exactly those bytes: raw_data for every fixed-width element type, and a
// packed float_data (FLOAT, COMPLEX64) or double_data (DOUBLE). Varint-coded
// data (int32_data, int64_data, uint64_data), strings, tensors that split
// their data over several fields and chunked tensors (TensorProto.segment)
// stay in the opaque protobuf framing around them.
//
// Names: an initializer keeps its name; the tensor of a Constant node is
// named after the node's output; other tensors use TensorProto.name, or a
// path "<graph>/<node>/<attribute>" when they have none. A name met again
// (subgraphs may reuse names) gets the suffix "#2", "#3", ... in file order.
//
// Tensors with data_location EXTERNAL live in other files: each file named
// by an external_data "location" is a Companion whose Segments place those
// tensors (offset and length from external_data, or the whole file from 0).
//
// Metadata holds ir_version, producer_name, producer_version, domain,
// model_version, opset ("ai.onnx 17, ai.onnx.ml 3"), the top graph's name,
// metadata_props (as "metadata_props.<key>") and counts: nodes,
// initializers, graphs, functions, tensors (every TensorProto) and
// external_tensors.
//
// Matching: a ModelProto has no magic, so matchONNX wants ir_version as the
// first field (every serializer writes fields in number order) and checks
// that the fields that follow in the head are well-formed ModelProto fields.
// Graph nesting, names, dimensions and the number of tensors are bounded
// (onnxMax*), and so are the bytes of the names built from graph and node
// names (a nameBudget), so hostile input cannot recurse or allocate without
// limit.

func init() {
	Register(Format{
		Name:       "onnx",
		Extensions: []string{".onnx"},
		Match:      matchONNX,
		Open:       openONNX,
	})
}

// FormatONNXExternalData is the Layout.Format of the external data files of
// an ONNX model, as OpenPath reads them.
const FormatONNXExternalData = "onnx-external-data"

const (
	onnxMaxDepth   = 32       // graphs nested in node attributes
	onnxMaxString  = 64 << 10 // longest name or metadata string read
	onnxMaxDims    = 64       // dimensions of one tensor
	onnxMaxTensors = 1 << 18  // tensors with data in one model
	onnxSkipReset  = 64 << 10 // skipping more than this restarts the read window small
)

// ModelProto fields and their wire types, for matching.
var onnxModelFields = map[protowire.Number]protowire.Type{
	1:  protowire.VarintType, // ir_version
	2:  protowire.BytesType,  // producer_name
	3:  protowire.BytesType,  // producer_version
	4:  protowire.BytesType,  // domain
	5:  protowire.VarintType, // model_version
	6:  protowire.BytesType,  // doc_string
	7:  protowire.BytesType,  // graph
	8:  protowire.BytesType,  // opset_import
	14: protowire.BytesType,  // metadata_props
	20: protowire.BytesType,  // training_info
	25: protowire.BytesType,  // functions
	26: protowire.BytesType,  // configuration
}

// onnxType describes a TensorProto.DataType: its name, its DType (Invalid
// when package dtype has none) and its element size in bits (0 when the
// elements are not fixed-width raw values).
type onnxType struct {
	name string
	dt   dtype.DType
	bits int64
}

var onnxTypes = map[int64]onnxType{
	0:  {"UNDEFINED", dtype.Invalid, 0},
	1:  {"FLOAT", dtype.F32, 32},
	2:  {"UINT8", dtype.U8, 8},
	3:  {"INT8", dtype.I8, 8},
	4:  {"UINT16", dtype.U16, 16},
	5:  {"INT16", dtype.I16, 16},
	6:  {"INT32", dtype.I32, 32},
	7:  {"INT64", dtype.I64, 64},
	8:  {"STRING", dtype.Invalid, 0},
	9:  {"BOOL", dtype.Bool, 8},
	10: {"FLOAT16", dtype.F16, 16},
	11: {"DOUBLE", dtype.F64, 64},
	12: {"UINT32", dtype.U32, 32},
	13: {"UINT64", dtype.U64, 64},
	14: {"COMPLEX64", dtype.C64, 64},
	15: {"COMPLEX128", dtype.Invalid, 128},
	16: {"BFLOAT16", dtype.BF16, 16},
	17: {"FLOAT8E4M3FN", dtype.F8E4M3, 8},
	18: {"FLOAT8E4M3FNUZ", dtype.Invalid, 8},
	19: {"FLOAT8E5M2", dtype.F8E5M2, 8},
	20: {"FLOAT8E5M2FNUZ", dtype.Invalid, 8},
	21: {"UINT4", dtype.Invalid, 4},
	22: {"INT4", dtype.Invalid, 4},
	23: {"FLOAT4E2M1", dtype.F4, 4},
	24: {"FLOAT8E8M0", dtype.F8E8M0, 8},
	25: {"UINT2", dtype.Invalid, 2},
	26: {"INT2", dtype.Invalid, 2},
}

func lookupONNXType(t int64) onnxType {
	if ot, ok := onnxTypes[t]; ok {
		return ot
	}
	return onnxType{name: "DATATYPE_" + strconv.FormatInt(t, 10)}
}

// matchONNX wants a ModelProto that starts, as every serializer writes it,
// with ir_version (field 1) and whose following fields, as far as the head
// reaches, are well-formed ModelProto fields.
func matchONNX(head []byte, size int64) bool {
	if len(head) < 3 || head[0] != 0x08 || head[1] == 0 || head[1] >= 0x80 {
		return false
	}
	b := head[2:]
	cut := int64(len(head)) < size // the head ends before the file does
	for fields := 1; ; fields++ {
		if len(b) == 0 {
			return fields >= 2
		}
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return cut && fields >= 2 && errors.Is(protowire.ParseError(n), io.ErrUnexpectedEOF)
		}
		if want, known := onnxModelFields[num]; known && typ != want {
			return false
		}
		switch typ {
		case protowire.VarintType, protowire.Fixed32Type, protowire.Fixed64Type, protowire.BytesType:
		default:
			return false // groups (ONNX has none) and wire types 6 and 7 (invalid)
		}
		b = b[n:]
		var v uint64
		switch typ {
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(b)
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeVarint(b)
		}
		if n < 0 {
			return cut && errors.Is(protowire.ParseError(n), io.ErrUnexpectedEOF)
		}
		b = b[n:]
		if typ == protowire.BytesType {
			if v > uint64(len(b)) {
				return true // the field runs past the head (or the file: Open says so)
			}
			b = b[v:]
		}
	}
}

// ---- protobuf wire reading over the file ----

// A pbField is one decoded field: its key at At, a scalar value V (varint
// and fixed types), or for length-delimited fields the value's byte range
// [Start, End).
type pbField struct {
	Num        protowire.Number
	Typ        protowire.Type
	At         int64
	V          uint64
	Start, End int64
}

func (f pbField) Len() int64 { return f.End - f.Start }

// A pbReader walks protobuf messages in a file through a cursor.
type pbReader struct {
	c *cursor
}

// wireErr turns a protowire error code for the item at off of a message
// ending at end into a FormatError.
func (p *pbReader) wireErr(off, end int64, code int, what string) error {
	err := protowire.ParseError(code)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return p.overrun(off, end, what)
	}
	return p.c.errorf(off, ErrMalformed, "%s: %v", what, err)
}

// overrun reports an item at off that runs past the end of its message,
// which ends at end.
func (p *pbReader) overrun(off, end int64, what string) error {
	if end == p.c.size {
		return p.c.errorf(off, ErrTruncated, "%s runs past end of file (size %d)", what, p.c.size)
	}
	return p.c.errorf(off, ErrMalformed, "%s runs past the end of its message at %d", what, end)
}

// varint reads a varint at the cursor of a message ending at end.
func (p *pbReader) varint(end int64, what string) (uint64, error) {
	at := p.c.off
	b, err := p.c.next(min(end-at, int64(protowire.SizeVarint(1<<63))), what)
	if err != nil {
		return 0, err
	}
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, p.wireErr(at, end, n, what)
	}
	p.c.off = at + int64(n)
	return v, nil
}

// fields calls fn with each field of the message that ends at end, starting
// at the cursor. Scalars are decoded; for a length-delimited field fn finds
// the cursor at Start and may read the value (a string, a sub-message); the
// cursor moves to End after fn returns, whatever fn read.
func (p *pbReader) fields(end int64, fn func(f pbField) error) error {
	c := p.c
	for c.off < end {
		f := pbField{At: c.off}
		b, err := c.next(min(end-f.At, int64(protowire.SizeTag(protowire.MaxValidNumber))), "field key")
		if err != nil {
			return err
		}
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return p.wireErr(f.At, end, n, "field key")
		}
		c.off = f.At + int64(n)
		f.Num, f.Typ = num, typ
		what := "field " + strconv.Itoa(int(num))
		switch typ {
		case protowire.VarintType:
			f.V, err = p.varint(end, what)
		case protowire.Fixed32Type, protowire.Fixed64Type:
			w := int64(4)
			if typ == protowire.Fixed64Type {
				w = 8
			}
			if w > end-c.off {
				return p.overrun(f.At, end, what)
			}
			var v []byte
			v, err = c.next(w, what)
			for i := len(v) - 1; i >= 0; i-- {
				f.V = f.V<<8 | uint64(v[i])
			}
		case protowire.BytesType:
			var l uint64
			l, err = p.varint(end, what+" length")
			if err == nil && l > uint64(end-c.off) {
				return p.overrun(f.At, end, what+" (length "+strconv.FormatUint(l, 10)+")")
			}
			f.Start, f.End = c.off, c.off+int64(l)
		default:
			return c.errorf(f.At, ErrUnsupported, "%s uses the group wire type, which ONNX does not use", what)
		}
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
		if typ == protowire.BytesType {
			if f.End > c.bufOff+int64(len(c.buf)) && f.Len() > onnxSkipReset {
				c.chunk = cursorMinChunk // past a large value: start small again
			}
			c.off = f.End
		}
	}
	if c.off != end {
		return c.errorf(c.off, ErrMalformed, "message overruns its end at %d", end)
	}
	return nil
}

// want checks the wire type of a known field.
func (p *pbReader) want(f pbField, typ protowire.Type, what string) error {
	if f.Typ != typ {
		return p.c.errorf(f.At, ErrMalformed, "%s (field %d) has wire type %d, want %d", what, f.Num, f.Typ, typ)
	}
	return nil
}

// str reads a length-delimited field as a string of at most onnxMaxString
// bytes.
func (p *pbReader) str(f pbField, what string) (string, error) {
	if err := p.want(f, protowire.BytesType, what); err != nil {
		return "", err
	}
	if f.Len() > onnxMaxString {
		return "", p.c.errorf(f.At, ErrTooLarge, "%s is %d bytes long, more than the limit of %d", what, f.Len(), onnxMaxString)
	}
	b, err := p.c.next(f.Len(), what)
	return string(b), err
}

// message parses a length-delimited field as a sub-message.
func (p *pbReader) message(f pbField, what string, fn func(f pbField) error) error {
	if err := p.want(f, protowire.BytesType, what); err != nil {
		return err
	}
	return p.fields(f.End, fn)
}

// ---- the ONNX model ----

// An onnxGraph is a GraphProto (or a function body), for naming.
type onnxGraph struct {
	name   string    // GraphProto.name
	root   string    // label of a top-level graph without a name
	node   *onnxNode // the node whose attribute holds this graph
	attr   *string   // that attribute's name, known once it is read
	listAt int       // position in AttributeProto.graphs, or -1
	path   string    // label built from node, attr and listAt, once built
}

// An onnxNode is a NodeProto, for naming.
type onnxNode struct {
	graph  *onnxGraph
	index  int
	name   string
	opType string
	output string // first output
	path   string // label, once built
}

// An onnxTensor is a TensorProto whose data becomes a segment, here or in
// an external file.
type onnxTensor struct {
	at       int64 // offset of the field key that holds it
	name     string
	dims     []int64
	dataType int64
	chunked  bool // TensorProto.segment is set
	ndata    int  // data fields seen
	data     pbField
	external bool
	extKV    [][2]string

	// origin, for naming
	graph  *onnxGraph
	node   *onnxNode // nil for an initializer
	attr   *string   // attribute name, for node tensors
	index  int       // initializer index, or position in AttributeProto.tensors (-1 for .t)
	sparse string    // "values" or "indices" inside a SparseTensorProto, else ""
	init   bool      // an initializer (sparse or dense)
}

// onnxModel collects what openONNX finds.
type onnxModel struct {
	pb      pbReader
	tensors []*onnxTensor
	meta    map[string]string
	opsets  []string
	names   nameBudget // names built by layout

	nTensors, nNodes, nInits, nGraphs, nFuncs int
}

func openONNX(r io.ReaderAt, size int64) (*Layout, error) {
	const format = "onnx"
	m := &onnxModel{pb: pbReader{newCursor(r, size, format)}, meta: make(map[string]string), names: newNameBudget(size)}
	if size == 0 {
		return nil, formatErr(format, 0, ErrTruncated, "empty file")
	}
	p := &m.pb
	nTraining := 0
	err := p.fields(size, func(f pbField) error {
		switch f.Num {
		case 1, 5: // ir_version, model_version
			key := [...]string{1: "ir_version", 5: "model_version"}[f.Num]
			if err := p.want(f, protowire.VarintType, key); err != nil {
				return err
			}
			m.meta[key] = strconv.FormatInt(int64(f.V), 10)
		case 2, 3, 4: // producer_name, producer_version, domain
			key := [...]string{2: "producer_name", 3: "producer_version", 4: "domain"}[f.Num]
			s, err := p.str(f, key)
			m.meta[key] = s
			return err
		case 7:
			g := &onnxGraph{root: "graph", listAt: -1}
			if err := m.graph(f, g, 0); err != nil {
				return err
			}
			if _, dup := m.meta["graph"]; !dup && g.name != "" {
				m.meta["graph"] = g.name
			}
		case 8:
			return m.opset(f)
		case 14:
			k, v, err := m.entry(f, "metadata_props", true)
			m.meta["metadata_props."+k] = v
			return err
		case 20:
			i := nTraining
			nTraining++
			return p.message(f, "training_info", func(f pbField) error {
				if f.Num != 1 && f.Num != 2 {
					return nil
				}
				root := "training_info/" + strconv.Itoa(i) + [...]string{1: "/initialization", 2: "/algorithm"}[f.Num]
				return m.graph(f, &onnxGraph{root: root, listAt: -1}, 0)
			})
		case 25:
			return m.function(f)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := m.meta["ir_version"]; !ok {
		return nil, formatErr(format, 0, ErrMalformed, "ModelProto has no ir_version")
	}
	return m.layout()
}

// opset reads an OperatorSetIdProto into the "opset" metadata.
func (m *onnxModel) opset(f pbField) error {
	p := &m.pb
	domain, version := "", ""
	err := p.message(f, "opset_import", func(f pbField) error {
		var err error
		switch f.Num {
		case 1:
			domain, err = p.str(f, "opset domain")
		case 2:
			if err = p.want(f, protowire.VarintType, "opset version"); err == nil {
				version = strconv.FormatInt(int64(f.V), 10)
			}
		}
		return err
	})
	if domain == "" {
		domain = "ai.onnx"
	}
	m.opsets = append(m.opsets, domain+" "+version)
	return err
}

// entry reads a StringStringEntryProto. Long values are summarised when
// summarise is set, an error otherwise.
func (m *onnxModel) entry(f pbField, what string, summarise bool) (k, v string, err error) {
	p := &m.pb
	err = p.message(f, what, func(f pbField) error {
		var err error
		switch f.Num {
		case 1:
			k, err = p.str(f, what+" key")
		case 2:
			if summarise && f.Typ == protowire.BytesType && f.Len() > onnxMaxString {
				v = "<" + strconv.FormatInt(f.Len(), 10) + " bytes>"
				return nil
			}
			v, err = p.str(f, what+" value")
		}
		return err
	})
	return k, v, err
}

// function reads a FunctionProto: its nodes may hold tensors.
func (m *onnxModel) function(f pbField) error {
	p := &m.pb
	m.nFuncs++
	g := &onnxGraph{root: "functions/" + strconv.Itoa(m.nFuncs-1), listAt: -1}
	nodes := 0
	return p.message(f, "function", func(f pbField) error {
		switch f.Num {
		case 1:
			name, err := p.str(f, "function name")
			if name != "" {
				g.root = "functions/" + name
			}
			return err
		case 7:
			nodes++
			return m.node(f, g, nodes-1, 0)
		case 11: // attribute_proto: default values of attributes
			return m.attribute(f, &onnxNode{graph: g, index: -1, name: "attribute_proto"}, 0)
		}
		return nil
	})
}

// graph reads a GraphProto nested depth graphs deep.
func (m *onnxModel) graph(f pbField, g *onnxGraph, depth int) error {
	p := &m.pb
	if depth > onnxMaxDepth {
		return p.c.errorf(f.At, ErrTooLarge, "graphs nested more than %d deep", onnxMaxDepth)
	}
	m.nGraphs++
	nodes, inits, sparse := 0, 0, 0
	return p.message(f, "graph", func(f pbField) error {
		var err error
		switch f.Num {
		case 1:
			nodes++
			err = m.node(f, g, nodes-1, depth)
		case 2:
			g.name, err = p.str(f, "graph name")
		case 5:
			inits++
			m.nInits++
			err = m.tensor(f, &onnxTensor{graph: g, index: inits - 1, init: true})
		case 15:
			sparse++
			m.nInits++
			err = m.sparse(f, onnxTensor{graph: g, index: sparse - 1, init: true})
		}
		return err
	})
}

// node reads a NodeProto.
func (m *onnxModel) node(f pbField, g *onnxGraph, index, depth int) error {
	p := &m.pb
	m.nNodes++
	n := &onnxNode{graph: g, index: index}
	outputs := 0
	return p.message(f, "node", func(f pbField) error {
		var err error
		switch f.Num {
		case 2:
			var s string
			s, err = p.str(f, "node output")
			if outputs == 0 {
				n.output = s
			}
			outputs++
		case 3:
			n.name, err = p.str(f, "node name")
		case 4:
			n.opType, err = p.str(f, "node op_type")
		case 5:
			err = m.attribute(f, n, depth)
		}
		return err
	})
}

// attribute reads an AttributeProto of node n.
func (m *onnxModel) attribute(f pbField, n *onnxNode, depth int) error {
	p := &m.pb
	name := new(string)
	ntensors, ngraphs, nsparse := 0, 0, 0
	return p.message(f, "attribute", func(f pbField) error {
		var err error
		switch f.Num {
		case 1:
			*name, err = p.str(f, "attribute name")
		case 5:
			err = m.tensor(f, &onnxTensor{graph: n.graph, node: n, attr: name, index: -1})
		case 10:
			ntensors++
			err = m.tensor(f, &onnxTensor{graph: n.graph, node: n, attr: name, index: ntensors - 1})
		case 6:
			err = m.graph(f, &onnxGraph{node: n, attr: name, listAt: -1}, depth+1)
		case 11:
			ngraphs++
			err = m.graph(f, &onnxGraph{node: n, attr: name, listAt: ngraphs - 1}, depth+1)
		case 22:
			err = m.sparse(f, onnxTensor{graph: n.graph, node: n, attr: name, index: -1})
		case 23:
			nsparse++
			err = m.sparse(f, onnxTensor{graph: n.graph, node: n, attr: name, index: nsparse - 1})
		}
		return err
	})
}

// sparse reads a SparseTensorProto: its values and indices are tensors.
func (m *onnxModel) sparse(f pbField, origin onnxTensor) error {
	return m.pb.message(f, "sparse tensor", func(f pbField) error {
		if f.Num != 1 && f.Num != 2 {
			return nil
		}
		t := origin
		t.sparse = [...]string{1: "values", 2: "indices"}[f.Num]
		return m.tensor(f, &t)
	})
}

// tensor reads a TensorProto into t and keeps it when its data can become a
// segment.
func (m *onnxModel) tensor(f pbField, t *onnxTensor) error {
	p := &m.pb
	m.nTensors++
	t.at = f.At
	err := p.message(f, "tensor", func(f pbField) error {
		var err error
		switch f.Num {
		case 1:
			err = m.dims(f, t)
		case 2:
			if err = p.want(f, protowire.VarintType, "data_type"); err == nil {
				t.dataType = int64(f.V)
			}
		case 3:
			t.chunked = true
		case 4, 5, 6, 7, 9, 10, 11: // float, int32, string, int64, raw, double, uint64 data
			t.ndata++
			t.data = f
		case 8:
			t.name, err = p.str(f, "tensor name")
		case 13:
			var k, v string
			k, v, err = m.entry(f, "external_data", false)
			t.extKV = append(t.extKV, [2]string{k, v})
		case 14:
			if err = p.want(f, protowire.VarintType, "data_location"); err == nil {
				t.external = f.V == 1
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if t.external || t.rawValues() {
		if len(m.tensors) >= onnxMaxTensors {
			return p.c.errorf(t.at, ErrTooLarge, "more than %d tensors with data", onnxMaxTensors)
		}
		m.tensors = append(m.tensors, t)
	}
	return nil
}

// rawValues reports whether the data of t is one field of fixed-width
// little-endian values: raw_data of a fixed-width type, packed float_data of
// a FLOAT or COMPLEX64 tensor or packed double_data of a DOUBLE tensor.
func (t *onnxTensor) rawValues() bool {
	if t.ndata != 1 || t.chunked || t.data.Typ != protowire.BytesType {
		return false
	}
	switch t.data.Num {
	case 9:
		return lookupONNXType(t.dataType).bits > 0
	case 4:
		return t.dataType == 1 || t.dataType == 14
	case 10:
		return t.dataType == 11
	}
	return false
}

// dims reads TensorProto.dims, packed or not.
func (m *onnxModel) dims(f pbField, t *onnxTensor) error {
	p := &m.pb
	add := func(at int64, v uint64) error {
		if len(t.dims) >= onnxMaxDims {
			return p.c.errorf(at, ErrTooLarge, "tensor has more than %d dimensions", onnxMaxDims)
		}
		if int64(v) < 0 {
			return p.c.errorf(at, ErrOutOfRange, "negative dimension %d", int64(v))
		}
		t.dims = append(t.dims, int64(v))
		return nil
	}
	switch f.Typ {
	case protowire.VarintType:
		return add(f.At, f.V)
	case protowire.BytesType:
		if f.Len() > onnxMaxDims*int64(protowire.SizeVarint(1<<63)) {
			return p.c.errorf(f.At, ErrTooLarge, "packed dims of %d bytes hold more than %d dimensions", f.Len(), onnxMaxDims)
		}
		for p.c.off < f.End {
			at := p.c.off
			v, err := p.varint(f.End, "dimension")
			if err != nil {
				return err
			}
			if err := add(at, v); err != nil {
				return err
			}
		}
		return nil
	}
	return p.want(f, protowire.VarintType, "dims")
}

// layout names the tensors, checks their sizes and builds the layout and
// its companions.
func (m *onnxModel) layout() (*Layout, error) {
	const format = "onnx"
	used := make(map[string]int, len(m.tensors))
	var segs []Segment
	companions := make(map[string][]Segment)
	nExternal := 0
	for _, t := range m.tensors {
		name, ok := t.baseName(&m.names)
		if ok {
			name, ok = dedupName(used, name, &m.names)
		}
		if !ok {
			return nil, m.names.err(format, t.at)
		}
		numel, ok := numElements(t.dims)
		if !ok {
			return nil, formatErr(format, t.at, ErrTooLarge, "tensor %q: element count of shape %v overflows int64", name, t.dims)
		}
		ot := lookupONNXType(t.dataType)
		want := int64(-1) // bytes the shape needs, -1 if unknown
		if ot.bits > 0 {
			if numel > (maxInt64-7)/ot.bits {
				return nil, formatErr(format, t.at, ErrTooLarge, "tensor %q: size of shape %v of %s overflows int64", name, t.dims, ot.name)
			}
			want = (numel*ot.bits + 7) / 8
		}
		seg := Segment{Name: name, DType: ot.dt, Type: ot.name, Shape: t.dims}
		if seg.Shape == nil {
			seg.Shape = []int64{}
		}
		if t.external {
			loc, err := t.externalRange(name, want, &seg)
			if err != nil {
				return nil, err
			}
			companions[loc] = append(companions[loc], seg)
			nExternal++
			continue
		}
		field := map[protowire.Number]string{4: "float_data", 9: "raw_data", 10: "double_data"}[t.data.Num]
		if t.data.Len() != want {
			return nil, formatErr(format, t.data.At, ErrMalformed, "tensor %q: %s holds %d bytes, but shape %v of %s needs %d", name, field, t.data.Len(), t.dims, ot.name, want)
		}
		seg.Offset, seg.Length = t.data.Start, t.data.Len()
		segs = append(segs, seg)
	}
	l, err := build(format, m.pb.c.size, 0, segs)
	if err != nil {
		return nil, err
	}
	locs := make([]string, 0, len(companions))
	for loc := range companions {
		locs = append(locs, loc)
	}
	slices.Sort(locs)
	for _, loc := range locs {
		l.Companions = append(l.Companions, Companion{Name: loc, Segments: companions[loc], DataFormat: FormatONNXExternalData})
	}
	if len(m.opsets) > 0 {
		m.meta["opset"] = strings.Join(m.opsets, ", ")
	}
	for k, v := range map[string]int{"tensors": m.nTensors, "nodes": m.nNodes, "initializers": m.nInits,
		"graphs": m.nGraphs, "functions": m.nFuncs, "external_tensors": nExternal} {
		m.meta[k] = strconv.Itoa(v)
	}
	l.Metadata = m.meta
	return l, nil
}

// externalRange fills seg with the place of an external tensor named name
// (want bytes, or -1 when the type has no fixed width) in its file, whose
// name it returns.
func (t *onnxTensor) externalRange(name string, want int64, seg *Segment) (string, error) {
	const format = "onnx"
	var loc string
	var hasLoc, hasLen bool
	var off, length int64
	for _, kv := range t.extKV {
		var err error
		switch kv[0] {
		case "location":
			loc, hasLoc = kv[1], true
		case "offset":
			off, err = parseONNXInt(kv[1])
		case "length":
			length, err = parseONNXInt(kv[1])
			hasLen = true
		}
		if err != nil {
			return "", formatErr(format, t.at, ErrMalformed, "tensor %q: external_data %s %q is not a non-negative integer", name, kv[0], kv[1])
		}
	}
	switch {
	case !hasLoc:
		return "", formatErr(format, t.at, ErrMalformed, "tensor %q: external data without a location", name)
	case !ValidCompanionName(loc):
		return "", formatErr(format, t.at, ErrMalformed, "tensor %q: external data location %q leaves the model's directory", name, loc)
	case !hasLen && want < 0:
		return "", formatErr(format, t.at, ErrUnsupported, "tensor %q: external data of type %s needs a length", name, seg.Type)
	case !hasLen:
		length = want
	case want >= 0 && length != want:
		return "", formatErr(format, t.at, ErrMalformed, "tensor %q: external data length %d, but shape %v of %s needs %d", name, length, t.dims, seg.Type, want)
	}
	if length > maxInt64-off {
		return "", formatErr(format, t.at, ErrTooLarge, "tensor %q: external data [%d,+%d) overflows int64", name, off, length)
	}
	seg.Offset, seg.Length = off, length
	return loc, nil
}

// parseONNXInt parses an external_data offset or length.
func parseONNXInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err == nil && v < 0 {
		err = strconv.ErrRange
	}
	return v, err
}

// baseName returns the name of t before duplicates are told apart,
// charging the bytes of a name it builds to b; ok is false when b is spent.
func (t *onnxTensor) baseName(b *nameBudget) (_ string, ok bool) {
	suffix := ""
	if t.sparse != "" {
		suffix = "/" + t.sparse
	}
	switch {
	case t.node == nil && t.name != "":
		return t.name, true
	case t.node == nil:
		kind := "/initializer/"
		if t.sparse != "" {
			kind = "/sparse_initializer/"
		}
		g, ok := t.graph.label(b)
		if !ok {
			return "", false
		}
		return onnxJoin(b, g, kind, strconv.Itoa(t.index), suffix)
	case t.node.opType == "Constant" && *t.attr == "value" && t.node.output != "" && t.sparse == "":
		return t.node.output, true
	case t.name != "":
		return t.name, true
	}
	n, ok := t.node.label(b)
	if !ok {
		return "", false
	}
	index := ""
	if t.index >= 0 {
		index = "/" + strconv.Itoa(t.index)
	}
	return onnxJoin(b, n, "/", *t.attr, index, suffix)
}

// label names a graph: its own name, or the path of the attribute that
// holds it. A path is built once and charged to b; ok is false when b is
// spent.
func (g *onnxGraph) label(b *nameBudget) (_ string, ok bool) {
	switch {
	case g.name != "":
		return g.name, true
	case g.node == nil:
		return g.root, true
	case g.path != "":
		return g.path, true
	}
	n, ok := g.node.label(b)
	if !ok {
		return "", false
	}
	list := ""
	if g.listAt >= 0 {
		list = "/" + strconv.Itoa(g.listAt)
	}
	g.path, ok = onnxJoin(b, n, "/", *g.attr, list)
	return g.path, ok
}

// label names a node: its graph's label and its name, or its position in
// its graph. It is built once and charged to b; ok is false when b is spent.
func (n *onnxNode) label(b *nameBudget) (_ string, ok bool) {
	if n.path != "" {
		return n.path, true
	}
	g, ok := n.graph.label(b)
	if !ok {
		return "", false
	}
	if n.name != "" {
		n.path, ok = onnxJoin(b, g, "/", n.name)
	} else {
		n.path, ok = onnxJoin(b, g, "/node", strconv.Itoa(n.index))
	}
	return n.path, ok
}

// onnxJoin concatenates parts into a name, charging its bytes to b first;
// ok is false when b is spent.
func onnxJoin(b *nameBudget, parts ...string) (_ string, ok bool) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if !b.take(n) {
		return "", false
	}
	return strings.Join(parts, ""), true
}
