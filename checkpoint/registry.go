package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// A Format is one checkpoint format known to [Open].
type Format struct {
	// Name is the value of Layout.Format for files of this format.
	Name string

	// Extensions lists the usual file name endings, with the dot
	// (".safetensors"). They are informative (for file dialogs and listings);
	// Open never decides by extension.
	Extensions []string

	// Match reports whether a file starts like this format. head holds the
	// first min(size, HeadSize) bytes of the file. Match must be cheap and
	// must not retain head.
	Match func(head []byte, size int64) bool

	// Open reads the header and returns the layout. It is called only when
	// Match returned true, but must not trust that: it is also called directly
	// on arbitrary input (by fuzzers, for example).
	Open func(r io.ReaderAt, size int64) (*Layout, error)
}

// HeadSize is the number of leading bytes handed to Format.Match.
const HeadSize = 4096

var (
	formatsMu sync.Mutex
	formats   []Format
)

// Register adds a format to the registry that [Open] consults. Formats are
// tried in the order they were registered; the first whose Match succeeds
// reads the file. Register is meant to be called from init functions; it
// panics when the name is empty or already taken, or Match or Open is nil.
func Register(f Format) {
	if f.Name == "" || f.Match == nil || f.Open == nil {
		panic("checkpoint: Register of incomplete format " + f.Name)
	}
	formatsMu.Lock()
	defer formatsMu.Unlock()
	for _, g := range formats {
		if g.Name == f.Name {
			panic("checkpoint: Register called twice for format " + f.Name)
		}
	}
	formats = append(formats, f)
}

// Formats returns the registered formats in the order Open tries them. The
// "unknown" fallback is not among them.
func Formats() []Format {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	out := make([]Format, len(formats))
	copy(out, formats)
	return out
}

// Open sniffs the format of the size bytes readable from r and returns the
// file's layout. The format is decided by content alone. A file that no
// format matches has Format "unknown" and one opaque segment (none when size
// is 0); that is not an error. A file that matches a format but is malformed
// returns a [*FormatError]; a read error from r is returned wrapped.
func Open(r io.ReaderAt, size int64) (*Layout, error) {
	if size < 0 {
		return nil, fmt.Errorf("checkpoint: negative size %d", size)
	}
	head, err := readHead(r, size)
	if err != nil {
		return nil, err
	}
	for _, f := range Formats() {
		if f.Match(head, size) {
			return f.Open(r, size)
		}
	}
	return openUnknown(r, size)
}

// readHead reads the first min(size, HeadSize) bytes.
func readHead(r io.ReaderAt, size int64) ([]byte, error) {
	head := make([]byte, min(size, HeadSize))
	n, err := r.ReadAt(head, 0)
	if n == len(head) {
		return head, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("checkpoint: file shorter than its size %d: %w", size, ErrTruncated)
	}
	return nil, fmt.Errorf("checkpoint: reading header: %w", err)
}
