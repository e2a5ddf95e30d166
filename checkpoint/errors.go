package checkpoint

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every [*FormatError] wraps exactly one of them.
var (
	// ErrTruncated means the file ends inside a header field or inside the
	// data of a tensor.
	ErrTruncated = errors.New("checkpoint: truncated")

	// ErrOverlap means two tensors claim the same bytes.
	ErrOverlap = errors.New("checkpoint: overlapping tensors")

	// ErrOutOfRange means a value lies outside its valid range: a negative
	// dimension or offset, an end before its begin, an alignment that is not
	// a power of two.
	ErrOutOfRange = errors.New("checkpoint: value out of range")

	// ErrTooLarge means a declared length, count or size exceeds what the
	// rest of the file can hold or a fixed limit of this package, or
	// overflows int64.
	ErrTooLarge = errors.New("checkpoint: too large")

	// ErrMalformed means the header does not have the structure its format
	// requires: invalid JSON, a field of the wrong type, a duplicate or empty
	// name, a byte range that does not match the tensor's shape.
	ErrMalformed = errors.New("checkpoint: malformed header")

	// ErrUnsupported means the header is well formed but uses a version or
	// an element type that this package does not know.
	ErrUnsupported = errors.New("checkpoint: unsupported")
)

// A FormatError reports a file that matches a format's signature but cannot
// be read as that format. Offset is the byte offset in the file where the
// problem lies: the field at fault, or for tensor data that overlaps or runs
// past the end of the file, the offset where that data starts (which may lie
// beyond the end). It is -1 when no single offset applies.
type FormatError struct {
	Format string // format name, e.g. "safetensors"
	Offset int64  // byte offset in the file, or -1
	Msg    string // what is wrong
	Err    error  // the sentinel error this one belongs to
}

func (e *FormatError) Error() string {
	if e.Offset < 0 {
		return "checkpoint: " + e.Format + ": " + e.Msg
	}
	return fmt.Sprintf("checkpoint: %s: offset %d: %s", e.Format, e.Offset, e.Msg)
}

// Unwrap returns the sentinel error, so errors.Is(err, ErrTruncated) works.
func (e *FormatError) Unwrap() error { return e.Err }

// formatErr builds a *FormatError.
func formatErr(format string, off int64, sentinel error, msg string, args ...any) *FormatError {
	return &FormatError{Format: format, Offset: off, Msg: fmt.Sprintf(msg, args...), Err: sentinel}
}
