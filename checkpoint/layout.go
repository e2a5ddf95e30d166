package checkpoint

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"neuralzip/dtype"
	"neuralzip/segment"
)

// A Segment is a byte range of a file: the data of one tensor (Name set) or
// opaque bytes. It is [segment.Segment], the one type the loaders and the
// codec share: a layout's segments go to codec.Encode as they are.
type Segment = segment.Segment

// A Layout is the map of one file.
type Layout struct {
	// Format is the name of the format that read the file ("safetensors",
	// "safetensors-index", "gguf", "rwkv", "onnx", "tflite", "tfjs",
	// "pytorch", "npy", "npz"), of the format that described a companion
	// ("tfjs-weights", "onnx-external-data"), or "unknown".
	Format string

	// Size is the file size in bytes.
	Size int64

	// Segments covers [0, Size) in order, without gaps or overlaps. Only
	// tensors with zero elements have zero length. An empty file has none.
	Segments []Segment

	// Metadata holds the file's free-form key/value pairs: the safetensors
	// __metadata__ object, the GGUF key/values (arrays of more than a few
	// elements summarised as "<array of N type>") or the "metadata" object of
	// a sharded index. It is nil when the file has none.
	Metadata map[string]string

	// Shards lists, for a sharded index, the shard file names it references,
	// sorted and without duplicates. It is nil for other formats.
	Shards []string

	// Companions lists the other files this file refers to and needs, sorted
	// by name without duplicates: the shards of a sharded index, the weight
	// files of a TF.js model.json, the external data of an ONNX model.
	// OpenPath opens them; Open alone only describes them.
	Companions []Companion
}

// A Companion is a file that another file of a model refers to.
//
// Name is relative to the referring file's directory, with "/" separators;
// it is never absolute and never leaves that directory.
//
// When Segments is nil the companion describes itself: OpenPath reads it
// with Open and requires Format (unless Format is empty). Otherwise the
// companion holds bare bytes that the referring file describes (TF.js weight
// shards, ONNX external data): Segments are its tensors, in any order, with
// gaps allowed; OpenPath checks them against the file's size, fills the gaps
// with opaque segments and names the result DataFormat.
type Companion struct {
	Name       string
	Format     string
	Segments   []Segment
	DataFormat string
}

// ValidCompanionName reports whether name is a relative path that stays in
// its directory: no empty, "." or ".." elements, no leading "/", no "\" or
// NUL.
func ValidCompanionName(name string) bool {
	if name == "" || strings.ContainsAny(name, "\\\x00") || strings.HasPrefix(name, "/") {
		return false
	}
	for _, e := range strings.Split(name, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// Tensors returns the tensor segments of l in file order.
func (l *Layout) Tensors() []Segment {
	var ts []Segment
	for _, s := range l.Segments {
		if s.IsTensor() {
			ts = append(ts, s)
		}
	}
	return ts
}

// Validate checks the invariants of a layout: the segments are contiguous and
// cover [0, Size) exactly, lengths are not negative, only tensors have zero
// length, opaque segments (no name) carry no tensor fields, tensor names are
// unique, shapes have no negative dimensions, and a tensor whose DType is
// known is exactly as long as its shape requires. Shards must be sorted and
// unique.
func (l *Layout) Validate() error {
	if l == nil {
		return errors.New("checkpoint: nil layout")
	}
	if l.Format == "" {
		return errors.New("checkpoint: layout has no format name")
	}
	if l.Size < 0 {
		return fmt.Errorf("checkpoint: negative size %d", l.Size)
	}
	names := make(map[string]struct{})
	var pos int64
	for i, s := range l.Segments {
		if s.Offset != pos {
			return fmt.Errorf("checkpoint: segment %d starts at %d, want %d", i, s.Offset, pos)
		}
		if s.Length < 0 || s.Length > l.Size-pos {
			return fmt.Errorf("checkpoint: segment %d at %d has length %d, beyond size %d", i, s.Offset, s.Length, l.Size)
		}
		pos += s.Length
		if !s.IsTensor() {
			if s.Length == 0 {
				return fmt.Errorf("checkpoint: opaque segment %d at %d is empty", i, s.Offset)
			}
			if s.Type != "" || s.DType != dtype.Invalid || s.Shape != nil {
				return fmt.Errorf("checkpoint: opaque segment %d at %d has tensor fields", i, s.Offset)
			}
			continue
		}
		if _, dup := names[s.Name]; dup {
			return fmt.Errorf("checkpoint: tensor %q appears twice", s.Name)
		}
		names[s.Name] = struct{}{}
		n, ok := numElements(s.Shape)
		if !ok {
			return fmt.Errorf("checkpoint: tensor %q has invalid shape %v", s.Name, s.Shape)
		}
		if s.Length == 0 && n != 0 {
			return fmt.Errorf("checkpoint: tensor %q with %d elements is empty", s.Name, n)
		}
		if s.DType != dtype.Invalid {
			want, ok := s.DType.ByteLen(n)
			if !ok || want != s.Length {
				return fmt.Errorf("checkpoint: tensor %q: %d bytes for shape %v of %v", s.Name, s.Length, s.Shape, s.DType)
			}
		}
	}
	if pos != l.Size {
		return fmt.Errorf("checkpoint: segments end at %d, size is %d", pos, l.Size)
	}
	for i := 1; i < len(l.Shards); i++ {
		if l.Shards[i-1] >= l.Shards[i] {
			return fmt.Errorf("checkpoint: shards not sorted and unique at %q", l.Shards[i])
		}
	}
	for i, c := range l.Companions {
		if !ValidCompanionName(c.Name) {
			return fmt.Errorf("checkpoint: companion name %q leaves its directory", c.Name)
		}
		if i > 0 && l.Companions[i-1].Name >= c.Name {
			return fmt.Errorf("checkpoint: companions not sorted and unique at %q", c.Name)
		}
		for _, s := range c.Segments {
			if !s.IsTensor() || s.Offset < 0 || s.Length < 0 {
				return fmt.Errorf("checkpoint: companion %q: bad segment %+v", c.Name, s)
			}
		}
	}
	return nil
}

// numElements returns the product of dims; a zero dimension makes it zero
// even when the other dimensions would overflow.
func numElements(dims []int64) (int64, bool) { return segment.NumElements(dims) }

const maxInt64 = 1<<63 - 1

// build returns the layout of a file of the given size whose header occupies
// [0, headerEnd) and whose tensors are ts (absolute offsets, any order).
// Tensors are placed in offset order, zero-length ones before a tensor that
// starts at the same offset and otherwise in the order given; gaps and the
// bytes after the last tensor become opaque segments. A tensor that overlaps
// another or runs past the end of the file is an error naming its offset.
func build(format string, size, headerEnd int64, ts []Segment) (*Layout, error) {
	slices.SortStableFunc(ts, func(a, b Segment) int {
		if a.Offset != b.Offset {
			if a.Offset < b.Offset {
				return -1
			}
			return 1
		}
		if a.Length != b.Length {
			if a.Length < b.Length {
				return -1
			}
			return 1
		}
		return 0
	})
	l := &Layout{Format: format, Size: size, Segments: make([]Segment, 0, 2*len(ts)+2)}
	if headerEnd > 0 {
		l.Segments = append(l.Segments, Segment{Offset: 0, Length: headerEnd})
	}
	pos := headerEnd
	prev := -1 // index in ts of the last non-empty tensor, which ends at pos
	for i := range ts {
		t := &ts[i]
		if t.Offset < 0 || t.Length < 0 {
			return nil, formatErr(format, max(t.Offset, 0), ErrOutOfRange, "tensor %q has negative range [%d,+%d)", t.Name, t.Offset, t.Length)
		}
		if t.Offset > size || t.Length > size-t.Offset {
			return nil, formatErr(format, t.Offset, ErrTruncated, "tensor %q data [%d,%d) runs past end of file (size %d)", t.Name, t.Offset, uint64(t.Offset)+uint64(t.Length), size)
		}
		if t.Offset < pos {
			if prev < 0 {
				return nil, formatErr(format, t.Offset, ErrOverlap, "tensor %q data at %d overlaps the header, which ends at %d", t.Name, t.Offset, pos)
			}
			p := &ts[prev]
			return nil, formatErr(format, t.Offset, ErrOverlap, "tensor %q [%d,%d) overlaps tensor %q [%d,%d)", t.Name, t.Offset, t.End(), p.Name, p.Offset, p.End())
		}
		if t.Offset > pos {
			l.Segments = append(l.Segments, Segment{Offset: pos, Length: t.Offset - pos})
		}
		l.Segments = append(l.Segments, *t)
		if t.Length > 0 {
			prev = i
		}
		pos = t.End()
	}
	if pos < size {
		l.Segments = append(l.Segments, Segment{Offset: pos, Length: size - pos})
	}
	return l, nil
}
