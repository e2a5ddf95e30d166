package trajectory

import (
	"errors"
	"io"
)

// Buffer is a File in memory, for trajectories built without a file system
// (the workbench, the browser). The zero value is an empty file.
type Buffer struct{ b []byte }

// Bytes returns the file's contents (not a copy).
func (m *Buffer) Bytes() []byte { return m.b }

// ReadAt implements io.ReaderAt.
func (m *Buffer) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("trajectory: negative offset")
	}
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt implements io.WriterAt, growing the file as needed.
func (m *Buffer) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("trajectory: negative offset")
	}
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}

// Truncate cuts the file to n bytes (n at most its size).
func (m *Buffer) Truncate(n int64) error {
	if n < 0 || n > int64(len(m.b)) {
		return errors.New("trajectory: truncate out of range")
	}
	m.b = m.b[:n]
	return nil
}

// Sync does nothing: there is nothing to flush.
func (m *Buffer) Sync() error { return nil }
