//go:build windows

package main

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive lock on f (released when f is closed), or
// fails at once when another process holds one: two appends to one
// trajectory would write their frames over each other. Windows locks are
// mandatory for the bytes they cover, so the lock is on one byte far past
// the end of any archive, where it stops other appends but no reader.
func lockFile(f *os.File) error {
	ol := &windows.Overlapped{Offset: 0xffffffff, OffsetHigh: 0x7fffffff}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_SHARING_VIOLATION) {
		return fmt.Errorf("another process (an nzip trajectory append?) is writing to it; try again when it is done")
	}
	if err != nil && !errors.Is(err, windows.ERROR_NOT_SUPPORTED) && !errors.Is(err, windows.ERROR_INVALID_FUNCTION) {
		return fmt.Errorf("locking it: %w", err)
	}
	return nil // locked, or a file system without locks
}
