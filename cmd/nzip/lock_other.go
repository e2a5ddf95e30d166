//go:build !unix

package main

import "os"

// lockFile does nothing where flock is not available: appends to one
// trajectory must not run at once.
func lockFile(f *os.File) error { return nil }
