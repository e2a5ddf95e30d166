//go:build !unix

package main

import "os"

// openRegular opens path (flag: os.O_RDONLY or os.O_RDWR) and fails unless
// it is a regular file, checked before it is opened (an open of a pipe may
// block) and again after.
func openRegular(path string, flag int) (*os.File, os.FileInfo, error) {
	if err := statRegular(path); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := checkOpened(f, path)
	if err != nil {
		return nil, nil, err
	}
	return f, st, nil
}
