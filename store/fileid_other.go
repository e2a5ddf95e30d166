//go:build !unix && !js

package store

import (
	"fmt"
	"os"
)

// fileID names the file st describes (no inodes here: its modification
// time and size, which a file renamed over the index changes).
func fileID(st os.FileInfo) string {
	return fmt.Sprintf("%x.%x", st.ModTime().UnixNano(), st.Size())
}
