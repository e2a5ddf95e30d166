package checkpoint

import (
	"encoding/binary"
	"io"
	"strconv"
	"unicode/utf8"

	"neuralzip/dtype"
)

// safetensors (Hugging Face): an 8-byte little-endian header length N, N
// bytes of JSON, then the data section. The JSON maps tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]}, offsets relative to the
// data section, plus an optional "__metadata__" object of strings. Writers
// pad the JSON with spaces.
//
// The layout is one opaque segment [0, 8+N) for the length and the JSON,
// then the tensors in offset order. Unlike the reference implementation,
// gaps between tensors and bytes after the last one are accepted; they
// become opaque segments.

func init() {
	Register(Format{
		Name:       "safetensors",
		Extensions: []string{".safetensors"},
		Match:      matchSafetensors,
		Open:       openSafetensors,
	})
}

// safetensorsMaxHeader is the largest JSON header accepted (the reference
// implementation allows 100 MB).
const safetensorsMaxHeader = 100 << 20

func matchSafetensors(head []byte, size int64) bool {
	return len(head) >= 9 && binary.LittleEndian.Uint64(head) < uint64(size) && head[8] == '{'
}

func openSafetensors(r io.ReaderAt, size int64) (*Layout, error) {
	const format = "safetensors"
	c := newCursor(r, size, format)
	n, err := c.u64("header length")
	if err != nil {
		return nil, err
	}
	if n > uint64(size-8) {
		return nil, formatErr(format, 0, ErrTooLarge, "header length %d exceeds file size %d", n, size)
	}
	if n > safetensorsMaxHeader {
		return nil, formatErr(format, 0, ErrTooLarge, "header length %d exceeds the limit of %d bytes", n, safetensorsMaxHeader)
	}
	hdr, err := c.next(int64(n), "header")
	if err != nil {
		return nil, err
	}
	headerEnd := 8 + int64(n) // where the data section starts
	if n == 0 || hdr[0] != '{' {
		return nil, formatErr(format, 8, ErrMalformed, "header does not start with '{'")
	}
	if !utf8.Valid(hdr) {
		return nil, formatErr(format, 8, ErrMalformed, "header is not valid UTF-8")
	}

	sc := &jsonScanner{b: hdr, base: 8, format: format}
	sc.i = 1 // the '{' checked above
	var meta map[string]string
	seenMeta := false
	var ts []Segment
	names := make(map[string]struct{})
	err = sc.members(func(name string, at int64) error {
		if name == "__metadata__" {
			if seenMeta {
				return formatErr(format, at, ErrMalformed, "duplicate __metadata__")
			}
			seenMeta = true
			var err error
			meta, err = stMetadata(sc)
			return err
		}
		if name == "" {
			return formatErr(format, at, ErrMalformed, "empty tensor name")
		}
		if _, dup := names[name]; dup {
			return formatErr(format, at, ErrMalformed, "duplicate tensor %q", name)
		}
		names[name] = struct{}{}
		t, err := stTensor(sc, name, at, headerEnd)
		ts = append(ts, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	sc.skipSpace()
	if sc.i < len(hdr) {
		return nil, sc.errorf(ErrMalformed, "unexpected data after the JSON header")
	}
	l, err := build(format, size, headerEnd, ts)
	if err != nil {
		return nil, err
	}
	l.Metadata = meta
	return l, nil
}

// stMetadata reads the __metadata__ object: strings to strings, or null.
func stMetadata(sc *jsonScanner) (map[string]string, error) {
	if sc.peek() == 'n' {
		return nil, sc.literal("null")
	}
	if err := sc.consume('{'); err != nil {
		return nil, err
	}
	meta := map[string]string{}
	err := sc.members(func(k string, _ int64) error {
		if sc.peek() != '"' {
			return sc.errorf(ErrMalformed, "__metadata__ value of %q is not a string", k)
		}
		v, err := sc.str()
		meta[k] = v
		return err
	})
	return meta, err
}

// stTensor reads one tensor entry {"dtype", "shape", "data_offsets"} (other
// fields are skipped) and checks it; at is the offset of its key, for
// errors, and dataStart the offset of the data section. build checks the
// returned segment against the end of the file.
func stTensor(sc *jsonScanner, name string, at, dataStart int64) (Segment, error) {
	const format = "safetensors"
	fail := func(sentinel error, msg string, args ...any) (Segment, error) {
		return Segment{}, formatErr(format, at, sentinel, "tensor "+strconv.Quote(name)+": "+msg, args...)
	}
	if sc.peek() != '{' {
		return fail(ErrMalformed, "entry is not a JSON object")
	}
	sc.i++
	var dtName string
	var shape, offsets []int64
	err := sc.members(func(key string, keyAt int64) error {
		var dup bool
		var err error
		switch key {
		case "dtype":
			dup = dtName != ""
			if sc.peek() != '"' {
				return formatErr(format, at, ErrMalformed, "tensor %q: dtype is not a string", name)
			}
			if dtName, err = sc.str(); err == nil && dtName == "" {
				return formatErr(format, at, ErrUnsupported, "tensor %q: unknown dtype \"\"", name)
			}
		case "shape":
			dup = shape != nil
			shape, err = sc.counts(func() string { return "tensor " + strconv.Quote(name) + ": shape" })
		case "data_offsets":
			dup = offsets != nil
			offsets, err = sc.counts(func() string { return "tensor " + strconv.Quote(name) + ": data_offsets" })
		default:
			err = sc.skipValue(0)
		}
		if err == nil && dup {
			err = formatErr(format, keyAt, ErrMalformed, "tensor %q: duplicate field %q", name, key)
		}
		return err
	})
	if err != nil {
		return Segment{}, err
	}
	if dtName == "" {
		return fail(ErrMalformed, "missing dtype")
	}
	dt, ok := dtype.Parse(dtName)
	if !ok {
		return fail(ErrUnsupported, "unknown dtype %q", dtName)
	}
	if shape == nil {
		return fail(ErrMalformed, "missing shape")
	}
	if offsets == nil {
		return fail(ErrMalformed, "missing data_offsets")
	}
	numel, ok := numElements(shape)
	if !ok {
		return fail(ErrTooLarge, "element count of shape %v overflows int64", shape)
	}
	want, ok := dt.ByteLen(numel)
	if !ok {
		return fail(ErrTooLarge, "size of %d %v elements overflows int64", numel, dt)
	}
	if len(offsets) != 2 {
		return fail(ErrMalformed, "data_offsets has %d values, want 2", len(offsets))
	}
	begin, end := offsets[0], offsets[1]
	if end < begin {
		return fail(ErrOutOfRange, "data_offsets end %d is before begin %d", end, begin)
	}
	if end-begin != want {
		return fail(ErrMalformed, "data_offsets [%d,%d) hold %d bytes, but shape %v of %v needs %d", begin, end, end-begin, shape, dt, want)
	}
	if end > maxInt64-dataStart {
		return fail(ErrTooLarge, "data_offsets end %d overflows the file offset", end)
	}
	return Segment{Name: name, DType: dt, Type: dt.String(), Shape: shape, Offset: dataStart + begin, Length: want}, nil
}

func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
