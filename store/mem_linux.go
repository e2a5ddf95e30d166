//go:build linux

package store

import "syscall"

// physMem is the machine's memory in bytes (0: unknown).
func physMem() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
