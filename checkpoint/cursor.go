package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A cursor reads the file in windows that start at cursorMinChunk bytes and
// double with each refill up to cursorMaxChunk, so small headers cost one
// small read and large ones few reads.
const (
	cursorMinChunk = 4 << 10
	cursorMaxChunk = 1 << 20
)

// A cursor reads little-endian header fields in sequence from an
// io.ReaderAt, through a window of the file. Every read is checked against
// the file size first, so a field that runs past the end is an ErrTruncated
// FormatError, and nothing larger than the rest of the file is allocated.
type cursor struct {
	r      io.ReaderAt
	size   int64
	format string
	off    int64 // absolute offset of the next field
	buf    []byte
	bufOff int64 // absolute offset of buf[0]
	chunk  int64 // size of the next window
}

func newCursor(r io.ReaderAt, size int64, format string) *cursor {
	return &cursor{r: r, size: size, format: format, chunk: cursorMinChunk}
}

// remaining returns the number of bytes after the cursor.
func (c *cursor) remaining() int64 { return c.size - c.off }

// errorf returns a FormatError at the given offset.
func (c *cursor) errorf(off int64, sentinel error, msg string, args ...any) error {
	return formatErr(c.format, off, sentinel, msg, args...)
}

// next returns the n bytes at the cursor and advances past them. The slice
// is valid until the next call.
func (c *cursor) next(n int64, what string) ([]byte, error) {
	if n < 0 || n > c.remaining() {
		return nil, c.errorf(c.off, ErrTruncated, "%s (%d bytes) runs past end of file (size %d)", what, n, c.size)
	}
	if c.off < c.bufOff || c.off+n > c.bufOff+int64(len(c.buf)) {
		want := min(max(n, c.chunk), c.remaining())
		c.chunk = min(2*c.chunk, cursorMaxChunk)
		if int64(cap(c.buf)) >= want {
			c.buf = c.buf[:want]
		} else {
			c.buf = make([]byte, want)
		}
		m, err := c.r.ReadAt(c.buf, c.off)
		if int64(m) < want {
			c.buf = c.buf[:0]
			if err == nil || errors.Is(err, io.EOF) {
				return nil, c.errorf(c.off+int64(m), ErrTruncated, "file ends at %d, before its size %d", c.off+int64(m), c.size)
			}
			return nil, fmt.Errorf("checkpoint: %s: reading at %d: %w", c.format, c.off, err)
		}
		c.bufOff = c.off
	}
	b := c.buf[c.off-c.bufOff : c.off-c.bufOff+n]
	c.off += n
	return b, nil
}

// skip advances past n bytes without reading them.
func (c *cursor) skip(n int64, what string) error {
	if n < 0 || n > c.remaining() {
		return c.errorf(c.off, ErrTruncated, "%s (%d bytes) runs past end of file (size %d)", what, n, c.size)
	}
	c.off += n
	return nil
}

func (c *cursor) u8(what string) (uint8, error) {
	b, err := c.next(1, what)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (c *cursor) u16(what string) (uint16, error) {
	b, err := c.next(2, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (c *cursor) u32(what string) (uint32, error) {
	b, err := c.next(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (c *cursor) u64(what string) (uint64, error) {
	b, err := c.next(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// length reads a u64 length of a run of elements of elemSize bytes each and
// checks that the run fits in the rest of the file.
func (c *cursor) length(elemSize int64, what string) (int64, error) {
	at := c.off
	n, err := c.u64(what + " length")
	if err != nil {
		return 0, err
	}
	if elemSize > 0 && n > uint64(c.remaining()/elemSize) {
		return 0, c.errorf(at, ErrTooLarge, "%s length %d exceeds the %d bytes left in the file", what, n, c.remaining())
	}
	return int64(n), nil
}

// skipStr skips a string stored as a u64 byte length followed by the bytes.
func (c *cursor) skipStr(what string) error {
	n, err := c.length(1, what)
	if err != nil {
		return err
	}
	return c.skip(n, what)
}
