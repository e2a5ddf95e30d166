package checkpoint

import (
	"encoding/binary"
	"io"
	"strconv"
)

// rwkv.cpp model files ("ggmf", github.com/RWKV/rwkv.cpp, rwkv_file_format):
// a header of six little-endian int32 — magic 0x67676d66, version (100 or
// 101), n_vocab, n_embed, n_layer, data_type — then tensors back to back,
// each an int32 dimension count, an int32 name length, an int32 data type,
// the dimensions (ggml order: innermost first), the name bytes and the raw
// data, without padding. Shapes are reported row-major (dimensions
// reversed). Data types: 0 F32, 1 F16, and rwkv.cpp's quantised types
// 2 Q4_0, 3 Q4_1, 7 Q5_0, 8 Q5_1, 9 Q8_0 (opaque tensor segments).

func init() {
	Register(Format{
		Name:       formatRWKV,
		Extensions: []string{".bin"},
		Match:      matchRWKV,
		Open:       openRWKV,
	})
}

const (
	formatRWKV    = "rwkv"
	rwkvMagic     = 0x67676d66
	rwkvMaxDims   = 8
	rwkvMaxName   = 64 << 10
	rwkvMinTensor = 12 // dims, name length, type
)

// rwkvTypes maps rwkv.cpp's data type values to ggml types.
var rwkvTypes = map[uint32]uint32{0: 0, 1: 1, 2: 2, 3: 3, 7: 6, 8: 7, 9: 8}

func matchRWKV(head []byte, size int64) bool {
	if len(head) < 8 || binary.LittleEndian.Uint32(head) != rwkvMagic {
		return false
	}
	// any plausible version reaches openRWKV, which names unsupported ones
	return binary.LittleEndian.Uint32(head[4:]) < 1000
}

func openRWKV(r io.ReaderAt, size int64) (*Layout, error) {
	c := newCursor(r, size, formatRWKV)
	var hdr [6]uint32
	for i := range hdr {
		v, err := c.u32("header")
		if err != nil {
			return nil, err
		}
		hdr[i] = v
	}
	if hdr[0] != rwkvMagic {
		return nil, c.errorf(0, ErrMalformed, "missing ggmf magic")
	}
	if hdr[1] != 100 && hdr[1] != 101 {
		return nil, c.errorf(4, ErrUnsupported, "unsupported rwkv.cpp file version %d", hdr[1])
	}
	l := &Layout{Format: formatRWKV, Size: size, Metadata: map[string]string{
		"version": strconv.Itoa(int(hdr[1])), "n_vocab": strconv.Itoa(int(hdr[2])),
		"n_embed": strconv.Itoa(int(hdr[3])), "n_layer": strconv.Itoa(int(hdr[4])),
		"data_type": strconv.Itoa(int(hdr[5])),
	}}
	opaqueStart := int64(0)
	names := map[string]bool{}
	for c.remaining() > 0 {
		at := c.off
		if c.remaining() < rwkvMinTensor {
			return nil, c.errorf(at, ErrTruncated, "%d trailing bytes are not a tensor header", c.remaining())
		}
		nd, _ := c.u32("dimension count")
		nameLen, _ := c.u32("name length")
		typ, _ := c.u32("data type")
		if nd > rwkvMaxDims {
			return nil, c.errorf(at, ErrOutOfRange, "tensor with %d dimensions (at most %d)", nd, rwkvMaxDims)
		}
		if nameLen == 0 || nameLen > rwkvMaxName {
			return nil, c.errorf(at+4, ErrOutOfRange, "tensor name length %d", nameLen)
		}
		gt, ok := rwkvTypes[typ]
		if !ok {
			return nil, c.errorf(at+8, ErrUnsupported, "unknown rwkv.cpp data type %d", typ)
		}
		t, _ := lookupGGML(gt)
		shape := make([]int64, nd)
		for i := int(nd) - 1; i >= 0; i-- {
			d, err := c.u32("dimension")
			if err != nil {
				return nil, err
			}
			shape[i] = int64(d)
		}
		nameB, err := c.next(int64(nameLen), "tensor name")
		if err != nil {
			return nil, err
		}
		name := string(nameB)
		if names[name] {
			return nil, c.errorf(at, ErrMalformed, "duplicate tensor %q", name)
		}
		names[name] = true
		n, ok := numElements(shape)
		if !ok || n%t.blck != 0 {
			return nil, c.errorf(at, ErrOutOfRange, "tensor %q: shape %v does not fit type %s", name, shape, t.name)
		}
		nb, ok := t.nbytes(n)
		if !ok {
			return nil, c.errorf(at, ErrTooLarge, "tensor %q: size overflows", name)
		}
		dataOff := c.off
		if err := c.skip(nb, "tensor "+strconv.Quote(name)+" data"); err != nil {
			return nil, err
		}
		if dataOff > opaqueStart {
			l.Segments = append(l.Segments, Segment{Offset: opaqueStart, Length: dataOff - opaqueStart})
		}
		l.Segments = append(l.Segments, Segment{Name: name, DType: t.dt, Type: t.name, Shape: shape, Offset: dataOff, Length: nb})
		opaqueStart = dataOff + nb
	}
	if opaqueStart < size {
		l.Segments = append(l.Segments, Segment{Offset: opaqueStart, Length: size - opaqueStart})
	}
	return l, nil
}
