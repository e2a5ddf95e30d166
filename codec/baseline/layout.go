package baseline

import (
	"fmt"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// span is a byte range of the input and the dtype it is coded as
// (dtype.Invalid for opaque bytes).
type span struct {
	off, n int
	dt     dtype.DType
}

// spans turns a segment list into ordered, non-empty spans that cover
// [0, size) exactly: gaps and the tail become opaque spans. mode maps a dtype
// to the coding a codec uses for it; consecutive spans whose mode is opaque
// (mode returns dtype.Invalid) are merged into one.
func spans(size int, segs []codec.Segment, mode func(dtype.DType) dtype.DType) ([]span, error) {
	var out []span
	add := func(off, n int, dt dtype.DType) {
		if n == 0 {
			return
		}
		dt = mode(dt)
		if k := len(out) - 1; k >= 0 && dt == dtype.Invalid && out[k].dt == dtype.Invalid && out[k].off+out[k].n == off {
			out[k].n += n
			return
		}
		out = append(out, span{off: off, n: n, dt: dt})
	}
	pos := int64(0)
	for i, s := range segs {
		if s.Offset < pos || s.Length < 0 || s.Offset > int64(size) || s.Length > int64(size)-s.Offset {
			return nil, fmt.Errorf("%w: segment %d (%q) covers [%d, %d) of a %d-byte file after byte %d",
				ErrLayout, i, s.Name, s.Offset, s.Offset+s.Length, size, pos)
		}
		add(int(pos), int(s.Offset-pos), dtype.Invalid)
		add(int(s.Offset), int(s.Length), s.DType)
		pos = s.Offset + s.Length
	}
	add(int(pos), size-int(pos), dtype.Invalid)
	return out, nil
}

// opaqueOnly is the span mode of codecs that see every byte as opaque.
func opaqueOnly(dtype.DType) dtype.DType { return dtype.Invalid }
