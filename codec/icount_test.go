package codec

import (
	"os"
	"testing"
)

// TestICount compresses a file once; run under callgrind for instruction counts.
func TestICount(t *testing.T) {
	f := os.Getenv("NZ_ICOUNT_FILE")
	if f == "" {
		t.Skip("set NZ_ICOUNT_FILE")
	}
	src, _ := os.ReadFile(f)
	segs := safetensorsSegments(src)
	arc, _ := CompressBytes(src, segs, Options{Threads: 1})
	if os.Getenv("NZ_ICOUNT_DECODE") != "" {
		for i := 0; i < 3; i++ {
			DecompressBytes(arc, Options{Threads: 1, SkipHash: true})
		}
	}
}
