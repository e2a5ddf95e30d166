package checkpoint

import (
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"neuralzip/dtype"
)

// NumPy .npy and .npz files (numpy.lib.format).
//
// .npy: the magic "\x93NUMPY", a major and a minor version byte, the header
// length (u16 in version 1.0, u32 in 2.0 and 3.0), the header, then the
// array data. The header is a Python dict literal {'descr': '<f4',
// 'fortran_order': False, 'shape': (3, 4), } padded with spaces and ended by
// a newline; it is Latin-1 text in versions 1 and 2 and UTF-8 in version 3.
// It is parsed as a literal by a small bounded parser, never evaluated.
//
// The layout is an opaque segment for the magic and header, then one tensor
// segment for the data, numel × itemsize bytes; trailing bytes are opaque,
// missing ones an ErrTruncated error. Type is the descr ("<f4"). Little-endian
// descrs ('<', and '|' for one-byte types) map to package dtype: f2 f4 f8, i1
// to i8, u1 to u8, b1, c8, and M8/m8 (datetime64, timedelta64) as I64. '='
// (native order, which numpy itself never writes) is taken as little-endian,
// the order of every machine this package runs on. Big-endian descrs of
// multi-byte types ('>f4'), long doubles, c16, strings (S, U) and void (V)
// keep their descr in Type with dtype.Invalid, so the bytes are compressed
// as plain bytes. Object arrays ('|O', pickled Python objects) and structured
// dtypes (a list descr) have no tensor: everything after the header is
// opaque. A Fortran-order array's bytes are its transpose in C order, so its
// Shape is the header's shape reversed. Metadata holds the version and the
// header text.
//
// .npz (numpy.savez, savez_compressed): a zip archive of .npy members. Each
// stored member that starts with the .npy magic gives a tensor segment named
// after the member without ".npy"; its zip header and .npy header are part
// of the opaque bytes around it. Deflated members (savez_compressed) and
// other members are opaque. Metadata["fortran_order:<name>"] marks the
// Fortran-order arrays.

func init() {
	Register(Format{
		Name:       formatNPY,
		Extensions: []string{".npy"},
		Match:      matchNPY,
		Open:       openNPY,
	})
	Register(Format{
		Name:       formatNPZ,
		Extensions: []string{".npz"},
		Match:      matchNPZ,
		Open:       openNPZ,
	})
}

const (
	formatNPY = "npy"
	formatNPZ = "npz"

	npyMagic     = "\x93NUMPY"
	npyMaxHeader = 1 << 20 // numpy itself refuses headers over 10000 bytes by default
	npyMaxDims   = 64      // NPY_MAXDIMS of numpy 2
	npyMaxDepth  = 32      // nesting of literals in a header
)

func matchNPY(head []byte, _ int64) bool {
	return len(head) >= len(npyMagic) && string(head[:len(npyMagic)]) == npyMagic
}

// matchNPZ wants a zip file whose first member is a .npy file; when that
// member is stored and its data starts inside head, it must start with the
// .npy magic.
func matchNPZ(head []byte, _ int64) bool {
	name, method, off, ok := zipFirstEntry(head)
	if !ok || !strings.HasSuffix(name, ".npy") {
		return false
	}
	if method == zipStored && off+len(npyMagic) <= len(head) {
		return string(head[off:off+len(npyMagic)]) == npyMagic
	}
	return true
}

func openNPY(r io.ReaderAt, size int64) (*Layout, error) {
	a, err := readNPY(r, 0, size, formatNPY, "")
	if err != nil {
		return nil, err
	}
	var ts []Segment
	if a.Tensor != nil {
		a.Tensor.Name = "array"
		ts = append(ts, *a.Tensor)
	}
	l, err := build(formatNPY, size, a.HeaderLen, ts)
	if err != nil {
		return nil, err
	}
	l.Metadata = map[string]string{"version": a.Version, "header": a.Header}
	return l, nil
}

func openNPZ(r io.ReaderAt, size int64) (*Layout, error) {
	z, err := readZip(r, size, formatNPZ)
	if err != nil {
		return nil, err
	}
	var ts []Segment
	var meta map[string]string
	used := make(map[string]struct{})
	for i := range z.Entries {
		e := &z.Entries[i]
		off, ok, err := z.storedData(e)
		if err != nil {
			return nil, err
		}
		if !ok || e.Size < int64(len(npyMagic)) {
			continue
		}
		magic, err := readExact(r, off, int64(len(npyMagic)), size, formatNPZ, "member "+e.Name)
		if err != nil {
			return nil, err
		}
		if string(magic) != npyMagic {
			continue // a member that is not an array: opaque
		}
		a, err := readNPY(r, off, e.Size, formatNPZ, e.Name)
		if err != nil {
			return nil, err
		}
		if a.Tensor == nil {
			continue
		}
		name := strings.TrimSuffix(e.Name, ".npy")
		for n := 2; ; n++ {
			if _, taken := used[name]; !taken && name != "" {
				break
			}
			name = e.Name + "#" + strconv.Itoa(n)
		}
		used[name] = struct{}{}
		a.Tensor.Name = name
		ts = append(ts, *a.Tensor)
		if a.Fortran {
			if meta == nil {
				meta = make(map[string]string)
			}
			meta["fortran_order:"+name] = "true"
		}
	}
	l, err := build(formatNPZ, size, 0, ts)
	if err != nil {
		return nil, err
	}
	l.Metadata = meta
	return l, nil
}

// An npyArray is the header of one .npy file or member.
type npyArray struct {
	Version   string   // "1.0"
	Header    string   // the header dict, without padding
	HeaderLen int64    // bytes before the data
	Fortran   bool     // fortran_order
	Tensor    *Segment // the data (no name yet), or nil for object and structured arrays
}

// readNPY reads the .npy file that occupies n bytes at off: the whole file,
// or the npz member named member. Errors are FormatErrors of the named
// format at absolute offsets.
func readNPY(r io.ReaderAt, off, n int64, format, member string) (*npyArray, error) {
	prefix := ""
	if member != "" {
		prefix = "member " + strconv.Quote(member) + ": "
	}
	fail := func(at int64, sentinel error, msg string, args ...any) (*npyArray, error) {
		return nil, formatErr(format, at, sentinel, prefix+msg, args...)
	}
	if n < 10 {
		return fail(off, ErrTruncated, "%d bytes are too few for a .npy header", n)
	}
	pre, err := readExact(r, off, min(n, 12), off+n, format, "npy preamble")
	if err != nil {
		return nil, err
	}
	if string(pre[:6]) != npyMagic {
		return fail(off, ErrMalformed, "missing \\x93NUMPY magic")
	}
	major, minor := pre[6], pre[7]
	a := &npyArray{Version: strconv.Itoa(int(major)) + "." + strconv.Itoa(int(minor))}
	var hlen, start int64
	switch major {
	case 1:
		hlen, start = int64(binary.LittleEndian.Uint16(pre[8:])), 10
	case 2, 3:
		if n < 12 {
			return fail(off, ErrTruncated, "%d bytes are too few for a version %d .npy header", n, major)
		}
		hlen, start = int64(binary.LittleEndian.Uint32(pre[8:])), 12
	default:
		return fail(off+6, ErrUnsupported, "unsupported .npy version %s", a.Version)
	}
	if minor != 0 {
		return fail(off+7, ErrUnsupported, "unsupported .npy version %s", a.Version)
	}
	if hlen > n-start {
		return fail(off+8, ErrTooLarge, "header length %d exceeds the %d bytes that follow", hlen, n-start)
	}
	if hlen > npyMaxHeader {
		return fail(off+8, ErrTooLarge, "header length %d exceeds the limit of %d bytes", hlen, npyMaxHeader)
	}
	hdr, err := readExact(r, off+start, hlen, off+n, format, "npy header")
	if err != nil {
		return nil, err
	}
	a.HeaderLen = start + hlen
	if major == 3 && !utf8.Valid(hdr) {
		return fail(off+start, ErrMalformed, "version 3 header is not valid UTF-8")
	}
	if major < 3 {
		hdr = []byte(latin1(hdr))
	}
	a.Header = strings.TrimRight(string(hdr), " \n")
	p := &pyLitParser{s: string(hdr), base: off + start, format: format, prefix: prefix}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		_, err := p.fail(ErrMalformed, "unexpected text after the header dict")
		return nil, err
	}
	d, ok := v.(pyLitDict)
	if !ok {
		return fail(off+start, ErrMalformed, "header is not a dict")
	}
	if len(d) != 3 {
		return fail(off+start, ErrMalformed, "header has %d keys, want descr, fortran_order and shape", len(d))
	}
	fortran, ok := d["fortran_order"].(bool)
	if !ok {
		return fail(off+start, ErrMalformed, "fortran_order is missing or not a bool")
	}
	a.Fortran = fortran
	shapeV, ok := d["shape"].(pyLitTuple)
	if !ok {
		return fail(off+start, ErrMalformed, "shape is missing or not a tuple")
	}
	if len(shapeV) > npyMaxDims {
		return fail(off+start, ErrTooLarge, "shape has %d dimensions, more than %d", len(shapeV), npyMaxDims)
	}
	shape := make([]int64, len(shapeV))
	for i, x := range shapeV {
		v, ok := x.(int64)
		if !ok || v < 0 {
			return fail(off+start, ErrMalformed, "shape[%d] is not a non-negative int", i)
		}
		shape[i] = v
	}
	numel, ok := numElements(shape)
	if !ok {
		return fail(off+start, ErrTooLarge, "element count of shape %v overflows int64", shape)
	}
	descrV, ok := d["descr"]
	if !ok {
		return fail(off+start, ErrMalformed, "descr is missing")
	}
	descr, ok := descrV.(string)
	if !ok {
		if _, isList := descrV.(pyLitList); isList {
			return a, nil // structured dtype: opaque data
		}
		return fail(off+start, ErrMalformed, "descr is neither a string nor a list")
	}
	dt, itemsize, ok := npyDType(descr)
	if !ok {
		return fail(off+start, ErrUnsupported, "unsupported descr %q", descr)
	}
	if itemsize == 0 {
		return a, nil // objects, or zero-sized items: opaque data
	}
	if numel > maxInt64/itemsize {
		return fail(off+start, ErrTooLarge, "%d elements of %d bytes overflow int64", numel, itemsize)
	}
	nbytes := numel * itemsize
	if nbytes > n-a.HeaderLen {
		return fail(off+a.HeaderLen, ErrTruncated, "data of %d elements of %q needs %d bytes, %d remain", numel, descr, nbytes, n-a.HeaderLen)
	}
	if fortran {
		for i, j := 0, len(shape)-1; i < j; i, j = i+1, j-1 {
			shape[i], shape[j] = shape[j], shape[i]
		}
	}
	a.Tensor = &Segment{DType: dt, Type: descr, Shape: shape, Offset: off + a.HeaderLen, Length: nbytes}
	return a, nil
}

// npyDType maps a descr to an element type and its size in bytes. itemsize
// is 0 for object arrays. ok is false for descrs it cannot size.
func npyDType(descr string) (dt dtype.DType, itemsize int64, ok bool) {
	if descr == "|O" || descr == "O" || descr == "<O" || descr == ">O" || descr == "=O" {
		return dtype.Invalid, 0, true
	}
	if len(descr) < 3 || !strings.ContainsRune("<>|=", rune(descr[0])) {
		return dtype.Invalid, 0, false
	}
	order, kind, rest := descr[0], descr[1], descr[2:]
	if i := strings.IndexByte(rest, '['); i >= 0 && (kind == 'M' || kind == 'm') && strings.HasSuffix(rest, "]") {
		rest = rest[:i] // datetime unit, "<M8[ns]"
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || n < 0 || n > 1<<30 || rest[0] == '+' {
		return dtype.Invalid, 0, false
	}
	switch kind {
	case 'f', 'i', 'u', 'b', 'c', 'M', 'm', 'S', 'a', 'V':
		itemsize = n
	case 'U':
		itemsize = 4 * n
	default:
		return dtype.Invalid, 0, false
	}
	little := order == '<' || order == '=' || (order == '|' && itemsize == 1) || (order == '>' && itemsize == 1)
	if !little {
		return dtype.Invalid, itemsize, true
	}
	switch string(kind) + rest {
	case "f2":
		dt = dtype.F16
	case "f4":
		dt = dtype.F32
	case "f8":
		dt = dtype.F64
	case "i1":
		dt = dtype.I8
	case "i2":
		dt = dtype.I16
	case "i4":
		dt = dtype.I32
	case "i8", "M8", "m8":
		dt = dtype.I64
	case "u1":
		dt = dtype.U8
	case "u2":
		dt = dtype.U16
	case "u4":
		dt = dtype.U32
	case "u8":
		dt = dtype.U64
	case "b1":
		dt = dtype.Bool
	case "c8":
		dt = dtype.C64
	}
	return dt, itemsize, true
}

// latin1 decodes Latin-1 bytes to a string.
func latin1(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

// Values of a Python literal: str, int64, bool, nil (None), and these.
type (
	pyLitTuple []any
	pyLitList  []any
	pyLitDict  map[string]any
)

// pyLitParser parses the Python literals of a .npy header: strings, ints,
// True, False, None, tuples, lists and dicts with string keys, nested at
// most npyMaxDepth deep.
type pyLitParser struct {
	s      string
	i      int
	base   int64 // file offset of s[0] (approximate after Latin-1 decoding)
	format string
	prefix string // for errors
}

func (p *pyLitParser) fail(sentinel error, msg string, args ...any) (any, error) {
	return nil, formatErr(p.format, p.base+int64(p.i), sentinel, p.prefix+"header: "+msg, args...)
}

func (p *pyLitParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyLitParser) value(depth int) (any, error) {
	if depth > npyMaxDepth {
		return p.fail(ErrTooLarge, "literals nested deeper than %d", npyMaxDepth)
	}
	p.space()
	if p.i >= len(p.s) {
		return p.fail(ErrMalformed, "unexpected end of header")
	}
	switch c := p.s[p.i]; {
	case c == '\'' || c == '"':
		return p.str()
	case c == '(' || c == '[':
		p.i++
		close := byte(')')
		if c == '[' {
			close = ']'
		}
		var items []any
		comma := false // the last item was followed by a comma
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == close {
				p.i++
				break
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
			p.space()
			comma = p.i < len(p.s) && p.s[p.i] == ','
			if comma {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == close {
				p.i++
				break
			}
			return p.fail(ErrMalformed, "expected ',' or %q", close)
		}
		if c == '[' {
			return pyLitList(items), nil
		}
		if len(items) == 1 && !comma {
			return items[0], nil // (x) is x, not a tuple
		}
		return pyLitTuple(items), nil
	case c == '{':
		p.i++
		d := pyLitDict{}
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return d, nil
			}
			if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
				return p.fail(ErrMalformed, "dict key is not a string")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return p.fail(ErrMalformed, "expected ':'")
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			d[k.(string)] = v
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return d, nil
			}
			return p.fail(ErrMalformed, "expected ',' or '}'")
		}
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		j := p.i + 1
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		v, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return p.fail(ErrTooLarge, "integer %s overflows int64", p.s[p.i:j])
			}
			return p.fail(ErrMalformed, "bad integer")
		}
		if j < len(p.s) && (p.s[j] == 'L' || p.s[j] == 'l') {
			j++ // Python 2 long
		}
		p.i = j
		return v, nil
	}
	for _, w := range []struct {
		word string
		v    any
	}{{"True", true}, {"False", false}, {"None", nil}} {
		if strings.HasPrefix(p.s[p.i:], w.word) {
			p.i += len(w.word)
			return w.v, nil
		}
	}
	return p.fail(ErrMalformed, "unexpected %q", p.s[p.i])
}

// str parses a quoted string with simple backslash escapes.
func (p *pyLitParser) str() (any, error) {
	q := p.s[p.i]
	var sb strings.Builder
	for j := p.i + 1; j < len(p.s); j++ {
		c := p.s[j]
		switch {
		case c == q:
			p.i = j + 1
			return sb.String(), nil
		case c == '\n':
			j = len(p.s)
		case c == '\\' && j+1 < len(p.s):
			j++
			if k := strings.IndexByte("nrt", p.s[j]); k >= 0 {
				sb.WriteByte("\n\r\t"[k])
			} else {
				sb.WriteByte(p.s[j])
			}
		default:
			sb.WriteByte(c)
		}
	}
	return p.fail(ErrMalformed, "unterminated string")
}
