package codec

import "neuralzip/segment"

// Segment is a byte range of an input file as a checkpoint loader sees it:
// a tensor (Name set) or opaque bytes. It is [segment.Segment], the one
// type the loaders and the codec share (its documentation is the contract).
// Only DType decides the coding; Name, Shape and Type are recorded in the
// archive index so tensors can be listed and extracted by name.
type Segment = segment.Segment
