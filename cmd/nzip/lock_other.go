//go:build !unix && !windows

package main

import "os"

// lockFile does nothing where neither flock nor LockFileEx is available:
// appends to one trajectory must not run at once.
func lockFile(f *os.File) error { return nil }
