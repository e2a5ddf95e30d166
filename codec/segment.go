package codec

import "neuralzip/dtype"

// Segment is a byte range of an input file as a checkpoint loader sees it:
// either a tensor (Name set) or opaque bytes (headers, JSON, padding).
// The segments of a file are handed to the encoder in file order and must
// cover the file exactly; the encoder fills any gap with opaque bytes.
//
// Only DType decides the coding: float dtypes go through the float pipeline,
// everything else through zstd. Name, Shape and Type are recorded in the
// archive index so tensors can be listed and extracted by name.
type Segment struct {
	Offset int64
	Length int64
	Name   string      // tensor name; empty for opaque bytes
	DType  dtype.DType // element type; dtype.Invalid for opaque bytes or unknown types
	Type   string      // the format's own type name when DType is Invalid (e.g. GGUF "Q4_K")
	Shape  []int64
}

// IsTensor reports whether s is a named tensor.
func (s Segment) IsTensor() bool { return s.Name != "" }
