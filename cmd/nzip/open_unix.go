//go:build unix

package main

import (
	"os"
	"syscall"
)

// openRegular opens path (flag: os.O_RDONLY or os.O_RDWR) and fails unless
// it is a regular file. The open itself never blocks: a named pipe with
// no writer would hold open(2) forever, deaf to Ctrl-C, so it is opened
// with O_NONBLOCK and refused by fstat before anything reads it (the
// flag is cleared again on a regular file).
func openRegular(path string, flag int) (*os.File, os.FileInfo, error) {
	if err := statRegular(path); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := checkOpened(f, path)
	if err != nil {
		return nil, nil, err
	}
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
	}
	return f, st, nil
}
