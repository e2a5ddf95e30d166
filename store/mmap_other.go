//go:build !unix

package store

import (
	"io"
	"os"
)

// mapInput maps nothing here: inputs are read (mmap_unix.go maps files).
func mapInput(io.ReaderAt, int64) ([]byte, func(), bool) { return nil, nil, false }

// mappable: nothing is mapped here.
func mappable(io.ReaderAt, int64) (*os.File, bool) { return nil, false }
