package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOpen opens the real files from memory. Throughput is reported in
// header bytes (the first segment), the part Open actually reads.
func BenchmarkOpen(b *testing.B) {
	dir := sharedDir(b)
	for _, c := range realCases() {
		data, err := os.ReadFile(filepath.Join(dir, c.path))
		if err != nil {
			continue
		}
		b.Run(filepath.Base(c.path), func(b *testing.B) {
			l, err := Open(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(l.Segments[0].Length)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Open(bytes.NewReader(data), int64(len(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
