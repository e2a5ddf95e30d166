package checkpoint

import (
	"encoding/binary"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// GGUF (llama.cpp, ggml): the magic "GGUF", a u32 version, u64 tensor and
// key/value counts, the key/values, the tensor infos, padding up to the
// alignment, then the data section. Versions 2 and 3 share this layout;
// version 1 (u32 counts and lengths) is not supported.
//
// Tensor shapes are reported in row-major order, the reverse of the ggml
// dims in the file (ne[0], the innermost dimension, comes last), so a GGUF
// tensor and its safetensors twin have the same Shape. F32, F16, BF16, F64
// and the integer types map to package dtype; quantised types have DType
// dtype.Invalid and their ggml name ("Q4_K") in Type.

func init() {
	Register(Format{
		Name:       "gguf",
		Extensions: []string{".gguf"},
		Match:      matchGGUF,
		Open:       openGGUF,
	})
}

const (
	ggufAlignment   = 32       // default of general.alignment
	ggufMaxDims     = 8        // ggml itself allows 4 (GGML_MAX_DIMS)
	ggufMaxDepth    = 8        // nesting of arrays in key/values
	ggufShortArray  = 16       // arrays up to this length are listed in Metadata
	ggufMaxName     = 64 << 10 // longest key or tensor name read
	ggufMaxString   = 64 << 10 // longer string values are summarised, not read
	ggufMinKV       = 8 + 4 + 1
	ggufMinTensor   = 8 + 4 + 4 + 8
	ggufStringBytes = 8 // a string takes at least its u64 length
	ggufArrayBytes  = 4 + 8
)

// GGUF value types.
const (
	ggufUint8 = iota
	ggufInt8
	ggufUint16
	ggufInt16
	ggufUint32
	ggufInt32
	ggufFloat32
	ggufBool
	ggufString
	ggufArray
	ggufUint64
	ggufInt64
	ggufFloat64
)

var ggufTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// ggufScalarSize returns the size of a fixed-size value type, or 0.
func ggufScalarSize(t uint32) int64 {
	switch t {
	case ggufUint8, ggufInt8, ggufBool:
		return 1
	case ggufUint16, ggufInt16:
		return 2
	case ggufUint32, ggufInt32, ggufFloat32:
		return 4
	case ggufUint64, ggufInt64, ggufFloat64:
		return 8
	}
	return 0
}

func ggufTypeName(t uint32) string {
	if t < uint32(len(ggufTypeNames)) {
		return ggufTypeNames[t]
	}
	return "type " + strconv.FormatUint(uint64(t), 10)
}

// matchGGUF wants the magic and a version field whose high half is zero in
// either byte order, so that text starting with "GGUF" stays unknown while
// every GGUF version, supported or not, reaches openGGUF and its errors.
func matchGGUF(head []byte, size int64) bool {
	if len(head) < 8 || string(head[:4]) != "GGUF" {
		return false
	}
	v := binary.LittleEndian.Uint32(head[4:])
	return v < 1<<16 || bits.ReverseBytes32(v) < 1<<16
}

func openGGUF(r io.ReaderAt, size int64) (*Layout, error) {
	c := newCursor(r, size, "gguf")
	magic, err := c.next(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != "GGUF" {
		return nil, c.errorf(0, ErrMalformed, "missing GGUF magic")
	}
	version, err := c.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 2 || version == 3:
	case bits.ReverseBytes32(version) >= 1 && bits.ReverseBytes32(version) <= 3:
		return nil, c.errorf(4, ErrUnsupported, "big-endian GGUF (version %d) is not supported", bits.ReverseBytes32(version))
	default:
		return nil, c.errorf(4, ErrUnsupported, "unsupported GGUF version %d", version)
	}
	nTensors, err := c.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := c.u64("key/value count")
	if err != nil {
		return nil, err
	}
	rest := c.remaining()
	if nKV > uint64(rest/ggufMinKV) {
		return nil, c.errorf(16, ErrTooLarge, "key/value count %d needs at least %d bytes each, but only %d bytes follow", nKV, ggufMinKV, rest)
	}
	if nTensors > uint64((rest-int64(nKV)*ggufMinKV)/ggufMinTensor) {
		return nil, c.errorf(8, ErrTooLarge, "tensor count %d needs at least %d bytes each, but only %d bytes follow", nTensors, ggufMinTensor, rest)
	}

	var meta map[string]string
	alignment := int64(ggufAlignment)
	for range nKV {
		keyOff := c.off
		key, err := ggufName(c, "key")
		if err != nil {
			return nil, err
		}
		if _, dup := meta[key]; dup {
			return nil, c.errorf(keyOff, ErrMalformed, "duplicate key %q", key)
		}
		typ, err := c.u32("value type")
		if err != nil {
			return nil, err
		}
		valOff := c.off
		val, err := ggufValue(c, typ, 0)
		if err != nil {
			return nil, err
		}
		if key == "general.alignment" {
			if typ != ggufUint32 {
				return nil, c.errorf(valOff, ErrMalformed, "general.alignment is %s, want uint32", ggufTypeName(typ))
			}
			a, _ := strconv.ParseInt(val, 10, 64)
			if a <= 0 || a&(a-1) != 0 {
				return nil, c.errorf(valOff, ErrOutOfRange, "alignment %d is not a power of two", a)
			}
			alignment = a
		}
		if meta == nil {
			meta = make(map[string]string)
		}
		meta[key] = val
	}

	segs := make([]Segment, 0, min(nTensors, 1<<12))
	rel := make([]uint64, 0, min(nTensors, 1<<12)) // offsets relative to the data section
	info := make([]int64, 0, min(nTensors, 1<<12)) // offsets of the tensor infos, for errors
	names := make(map[string]struct{})
	for range nTensors {
		infoOff := c.off
		name, err := ggufName(c, "tensor name")
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, c.errorf(infoOff, ErrMalformed, "empty tensor name")
		}
		if _, dup := names[name]; dup {
			return nil, c.errorf(infoOff, ErrMalformed, "duplicate tensor %q", name)
		}
		names[name] = struct{}{}
		nd, err := c.u32("dimension count")
		if err != nil {
			return nil, err
		}
		if nd > ggufMaxDims {
			return nil, c.errorf(c.off-4, ErrTooLarge, "tensor %q has %d dimensions, more than %d", name, nd, ggufMaxDims)
		}
		shape := make([]int64, nd)
		for i := range shape {
			d, err := c.u64("dimension")
			if err != nil {
				return nil, err
			}
			if d > maxInt64 {
				return nil, c.errorf(c.off-8, ErrTooLarge, "tensor %q: dimension %d overflows int64", name, d)
			}
			shape[len(shape)-1-i] = int64(d) // row-major: ne[0] last
		}
		typOff := c.off
		typ, err := c.u32("tensor type")
		if err != nil {
			return nil, err
		}
		gt, ok := lookupGGML(typ)
		if !ok {
			return nil, c.errorf(typOff, ErrUnsupported, "tensor %q has unknown ggml type %d", name, typ)
		}
		off, err := c.u64("tensor offset")
		if err != nil {
			return nil, err
		}
		numel, ok := numElements(shape)
		if !ok {
			return nil, c.errorf(infoOff, ErrTooLarge, "tensor %q: element count of shape %v overflows int64", name, shape)
		}
		ne0 := int64(1)
		if nd > 0 {
			ne0 = shape[nd-1]
		}
		if ne0%gt.blck != 0 {
			return nil, c.errorf(infoOff, ErrMalformed, "tensor %q: innermost dimension %d is not a multiple of the %s block size %d", name, ne0, gt.name, gt.blck)
		}
		n, ok := gt.nbytes(numel)
		if !ok {
			return nil, c.errorf(infoOff, ErrTooLarge, "tensor %q: size of %d %s elements overflows int64", name, numel, gt.name)
		}
		segs = append(segs, Segment{Name: name, DType: gt.dt, Type: gt.name, Shape: shape, Length: n})
		rel = append(rel, off)
		info = append(info, infoOff)
	}

	headerEnd := c.off
	dataStart := uint64(headerEnd) + uint64(alignment) - 1
	dataStart -= dataStart % uint64(alignment)
	for i := range segs {
		abs := dataStart + rel[i]
		if rel[i] > maxInt64 || abs > maxInt64 || abs < dataStart {
			return nil, c.errorf(info[i], ErrTooLarge, "tensor %q: data offset %d overflows int64", segs[i].Name, rel[i])
		}
		segs[i].Offset = int64(abs)
	}
	l, err := build("gguf", size, headerEnd, segs)
	if err != nil {
		return nil, err
	}
	l.Metadata = meta
	return l, nil
}

// ggufName reads a key or tensor name, which may be at most ggufMaxName
// bytes long.
func ggufName(c *cursor, what string) (string, error) {
	at := c.off
	n, err := c.length(1, what)
	if err != nil {
		return "", err
	}
	if n > ggufMaxName {
		return "", c.errorf(at, ErrTooLarge, "%s length %d exceeds the limit of %d bytes", what, n, ggufMaxName)
	}
	b, err := c.next(n, what)
	return string(b), err
}

// ggufValue reads a value of type typ and returns it as text; arrays longer
// than ggufShortArray are summarised.
func ggufValue(c *cursor, typ uint32, depth int) (string, error) {
	at := c.off
	switch typ {
	case ggufUint8:
		v, err := c.u8("uint8")
		return strconv.FormatUint(uint64(v), 10), err
	case ggufInt8:
		v, err := c.u8("int8")
		return strconv.FormatInt(int64(int8(v)), 10), err
	case ggufUint16:
		v, err := c.u16("uint16")
		return strconv.FormatUint(uint64(v), 10), err
	case ggufInt16:
		v, err := c.u16("int16")
		return strconv.FormatInt(int64(int16(v)), 10), err
	case ggufUint32:
		v, err := c.u32("uint32")
		return strconv.FormatUint(uint64(v), 10), err
	case ggufInt32:
		v, err := c.u32("int32")
		return strconv.FormatInt(int64(int32(v)), 10), err
	case ggufFloat32:
		v, err := c.u32("float32")
		return strconv.FormatFloat(float64(math.Float32frombits(v)), 'g', -1, 32), err
	case ggufBool:
		v, err := c.u8("bool")
		return strconv.FormatBool(v != 0), err
	case ggufString:
		n, err := c.length(1, "string")
		if err != nil {
			return "", err
		}
		if n > ggufMaxString {
			return "<string of " + strconv.FormatInt(n, 10) + " bytes>", c.skip(n, "string")
		}
		b, err := c.next(n, "string")
		return string(b), err
	case ggufUint64:
		v, err := c.u64("uint64")
		return strconv.FormatUint(v, 10), err
	case ggufInt64:
		v, err := c.u64("int64")
		return strconv.FormatInt(int64(v), 10), err
	case ggufFloat64:
		v, err := c.u64("float64")
		return strconv.FormatFloat(math.Float64frombits(v), 'g', -1, 64), err
	case ggufArray:
		return ggufArrayValue(c, depth)
	}
	return "", c.errorf(at-4, ErrMalformed, "unknown value type %d", typ)
}

// ggufArrayValue reads an array: a u32 element type, a u64 length and the
// elements. Nested arrays are followed to ggufMaxDepth levels.
func ggufArrayValue(c *cursor, depth int) (string, error) {
	at := c.off
	if depth >= ggufMaxDepth {
		return "", c.errorf(at, ErrTooLarge, "arrays nested more than %d deep", ggufMaxDepth)
	}
	et, err := c.u32("array element type")
	if err != nil {
		return "", err
	}
	var minBytes int64
	switch {
	case ggufScalarSize(et) > 0:
		minBytes = ggufScalarSize(et)
	case et == ggufString:
		minBytes = ggufStringBytes
	case et == ggufArray:
		minBytes = ggufArrayBytes
	default:
		return "", c.errorf(at, ErrMalformed, "unknown array element type %d", et)
	}
	n, err := c.length(minBytes, "array")
	if err != nil {
		return "", err
	}
	if n > ggufShortArray || et == ggufArray {
		if sz := ggufScalarSize(et); sz > 0 {
			if err := c.skip(n*sz, "array"); err != nil {
				return "", err
			}
		} else {
			for range n {
				if et == ggufString {
					err = c.skipStr("string")
				} else {
					_, err = ggufArrayValue(c, depth+1)
				}
				if err != nil {
					return "", err
				}
			}
		}
		return "<array of " + strconv.FormatInt(n, 10) + " " + ggufTypeName(et) + ">", nil
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		v, err := ggufValue(c, et, depth+1)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if et == ggufString {
			v = strconv.Quote(v)
		}
		b.WriteString(v)
	}
	b.WriteByte(']')
	return b.String(), nil
}
