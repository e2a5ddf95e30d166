//go:build unix

package store

import (
	"fmt"
	"os"
	"syscall"
)

// fileID names the file st describes (device and inode): a file renamed
// over the index (nzip store migrate) has another.
func fileID(st os.FileInfo) string {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%x.%x", uint64(s.Dev), uint64(s.Ino))
	}
	return fmt.Sprintf("%x.%x", st.ModTime().UnixNano(), st.Size())
}
