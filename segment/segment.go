// Package segment defines the contract between the checkpoint loaders and
// the codec: a file is a list of segments, byte ranges that are either the
// data of one tensor or opaque bytes. Package checkpoint produces them
// (checkpoint.Layout.Segments), package codec consumes them (codec.Encode);
// both name this one type, checkpoint.Segment and codec.Segment being
// aliases of it, so a layout goes to the encoder as it is.
//
// It sits on the ground floor of the house beside package dtype, the only
// package it imports.
package segment

import "neuralzip/dtype"

// A Segment is the byte range [Offset, Offset+Length) of a file, either the
// data of one tensor or opaque bytes (headers, JSON, protobuf framing,
// padding, gaps, trailing bytes, data a loader could not read as a tensor).
//
// The name decides which: a segment is a tensor exactly when Name is not
// empty ([Segment.IsTensor]). There is no separate kind, so a loader and
// the codec cannot disagree about one. Loaders give every tensor a name (one the
// format lacks is made up, e.g. "storage:…" for PyTorch), unique in its
// file, and leave Name, Type and Shape empty and DType dtype.Invalid on
// opaque bytes. Only tensors may have Length 0 (a tensor of no elements).
//
// For a tensor, Type is the format's own name for its element type ("F32",
// "BF16", "Q4_K", "float16"), DType the same type in the shared vocabulary
// of package dtype, or dtype.Invalid for types that package does not cover
// (quantised GGUF blocks, big-endian or mixed PyTorch storages). Shape is in
// row-major order, the outermost dimension first, for every format; an
// empty shape is a scalar. A tensor whose DType is known is exactly as long
// as its shape requires.
//
// The codec decides the coding by DType alone: float dtypes go through the
// float pipeline, everything else through its byte coders. A tensor's Name, DType,
// Shape and range, and its Type where DType is dtype.Invalid, are recorded
// in the archive's index so that tensors can be listed, matched against a
// reference and extracted by name; opaque segments are not listed.
//
// The segments of a file are handed to the encoder in file order and cover
// it exactly (checkpoint.Layout.Validate checks a layout's); the encoder
// fills any gap with opaque bytes.
type Segment struct {
	Offset int64
	Length int64
	Name   string      // tensor name; empty for opaque bytes
	DType  dtype.DType // element type; dtype.Invalid for opaque bytes or types dtype lacks
	Type   string      // the format's own element type name; empty for opaque bytes
	Shape  []int64     // row-major, outermost first; nil for opaque bytes
}

// IsTensor reports whether s is a tensor, that is whether it has a name.
func (s Segment) IsTensor() bool { return s.Name != "" }

// End returns Offset+Length.
func (s Segment) End() int64 { return s.Offset + s.Length }

// NumElements returns the product of the shape (1 for a scalar). ok is false
// when a dimension is negative or the product overflows int64; a zero
// dimension makes it 0 even when the other dimensions would overflow.
func (s Segment) NumElements() (n int64, ok bool) { return NumElements(s.Shape) }

// NumElements returns the product of dims, as [Segment.NumElements].
func NumElements(dims []int64) (n int64, ok bool) {
	zero := false
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		zero = zero || d == 0
	}
	if zero {
		return 0, true
	}
	n = 1
	for _, d := range dims {
		if n > maxInt64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

const maxInt64 = 1<<63 - 1
