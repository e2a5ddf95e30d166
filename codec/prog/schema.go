package prog

// A Field is one stream of a schema: Per symbols of Width bits per record.
type Field struct {
	Name  string
	Width uint8 // bits of a coded symbol, 1..8
	Per   int   // symbols per record
	// Elem is the width of one element of the field's order-0 bound
	// (Bound): Width/Elem elements are joined in one symbol, low bits
	// first (two 4-bit quants in a byte); Elem == Width: one element.
	Elem uint8
	// Half marks the high (1) or low (2) byte of an f16 value: their
	// bound is the exponent's entropy plus the raw sign and mantissa bits.
	Half uint8
}

// part is an operator over some bytes of a record: a bijection between
// those bytes and the symbols of its fields (nf of them, in the schema's
// field list from the part's first). split writes the symbols of the n
// records of src (stride bytes apart) into out, record r's at
// out[f][r*Per:]; merge is its inverse and writes every byte the part
// owns.
type part interface {
	fields() []Field
	split(src []byte, stride, n int, out [][]byte)
	merge(dst []byte, stride, n int, in [][]byte)
}

// Schema is a record layout: a ggml block type of Values values in Bytes
// bytes, cut into parts whose bytes cover each record exactly once.
type Schema struct {
	ID     byte   // ggml_type number, written in the payload
	Name   string // ggml's name, as GGUF loaders report it ("Q4_K")
	Bytes  int    // record size
	Values int    // values a record holds
	parts  []part
	fields []Field
	first  []int // index of each part's first field
}

// Fields lists the schema's streams in payload order.
func (s *Schema) Fields() []Field { return s.fields }

func newSchema(id byte, name string, bytes, values int, parts ...part) *Schema {
	s := &Schema{ID: id, Name: name, Bytes: bytes, Values: values, parts: parts}
	for _, p := range parts {
		s.first = append(s.first, len(s.fields))
		s.fields = append(s.fields, p.fields()...)
	}
	return s
}

// split writes the fields of the n records of src into out (one slice per
// field, each at least n·Per long).
func (s *Schema) split(src []byte, n int, out [][]byte) {
	if n == 0 {
		return
	}
	for i, p := range s.parts {
		p.split(src, s.Bytes, n, out[s.first[i]:])
	}
}

// merge is split's inverse.
func (s *Schema) merge(dst []byte, n int, in [][]byte) {
	if n == 0 {
		return
	}
	for i, p := range s.parts {
		p.merge(dst, s.Bytes, n, in[s.first[i]:])
	}
}

var byID [256]*Schema

var byName = map[string]*Schema{}

func register(ss ...*Schema) {
	for _, s := range ss {
		byID[s.ID] = s
		byName[s.Name] = s
	}
}

// ByName returns the schema of a ggml type name, or nil.
func ByName(name string) *Schema { return byName[name] }

// ByID returns the schema of a ggml type number, or nil.
func ByID(id byte) *Schema { return byID[id] }

// Schemas lists every schema, by ggml type number.
func Schemas() []*Schema {
	var out []*Schema
	for _, s := range byID {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}
