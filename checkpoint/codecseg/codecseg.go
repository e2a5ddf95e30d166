// Package codecseg hands a checkpoint's layout to the codec: it converts
// checkpoint.Segment to codec.Segment, field by field, in one place. It
// sits above both packages (codec never imports checkpoint: the file
// layout is handed to it as a list of segments), for the CLI, the
// workbench and the browser tests.
package codecseg

import (
	"neuralzip/checkpoint"
	"neuralzip/codec"
)

// Of returns the codec's segments of a loader's segments.
func Of(segs []checkpoint.Segment) []codec.Segment {
	out := make([]codec.Segment, len(segs))
	for i, s := range segs {
		out[i] = codec.Segment{Offset: s.Offset, Length: s.Length, Name: s.Name, DType: s.DType, Type: s.Type, Shape: s.Shape}
	}
	return out
}
