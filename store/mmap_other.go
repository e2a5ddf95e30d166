//go:build !unix

package store

import "io"

// mapInput maps nothing here: inputs are read (mmap_unix.go maps files).
func mapInput(io.ReaderAt, int64) ([]byte, func(), bool) { return nil, nil, false }
