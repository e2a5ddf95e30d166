//go:build unix

package store

import (
	"io"
	"os"
	"syscall"
)

// mapInput maps the size bytes of an input read from a file (read-only,
// shared with the page cache: its bytes handed to the hashes and the
// coder in place, neither copied nor faulted into fresh memory); ok is
// false where it cannot (not a file, smaller than mapMin, shorter than
// size now): the caller reads it instead. unmap ends the mapping: no
// slice of it may be used after.
func mapInput(r io.ReaderAt, size int64) (b []byte, unmap func(), ok bool) {
	f, ok := mappable(r, size)
	if !ok {
		return nil, nil, false
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	done := mappedInput(f, size)
	return b, func() { syscall.Munmap(b); done() }, true
}

// mappable is the file of an input that mapInput would map (a regular
// file of at least mapMin bytes, size of which fit an int), without
// mapping it.
func mappable(r io.ReaderAt, size int64) (*os.File, bool) {
	f, isFile := r.(*os.File)
	if !isFile || size < mapMin || int64(int(size)) != size {
		return nil, false
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() < size {
		return nil, false
	}
	return f, true
}
