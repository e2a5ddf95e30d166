//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f (released when f is closed), or
// fails at once when another process holds one: two appends to one
// trajectory would write their frames over each other.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("another process (an nzip trajectory append?) is writing to it; try again when it is done")
	}
	if err != nil && !errors.Is(err, syscall.ENOTSUP) && !errors.Is(err, syscall.ENOSYS) {
		return fmt.Errorf("locking it: %w", err)
	}
	return nil // locked, or a file system without locks
}
