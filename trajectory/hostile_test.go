package trajectory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// A file of nothing but fake trailers, each pointing at an index that
// spans everything before it with a wrong checksum: checking them all
// would read and checksum a quadratic number of bytes. Open gives up once
// the indexes it checked total twice the file.
func TestOpenFakeTrailers(t *testing.T) {
	const size = 256 << 10
	b := make([]byte, size)
	copy(b, Magic[:])
	binary.LittleEndian.PutUint16(b[8:], Version)
	for end := headerLen + trailerLen; end <= size; end += trailerLen {
		tr := b[end-trailerLen : end]
		binary.LittleEndian.PutUint64(tr[0:], headerLen)
		binary.LittleEndian.PutUint64(tr[8:], uint64(end-trailerLen-headerLen))
		binary.LittleEndian.PutUint32(tr[16:], 0xdeadbeef)
		copy(tr[24:], TrailerMagic[:])
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := Open(bytes.NewReader(b), size)
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("want ErrCorrupt, got %v", err)
	}
	if n, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(64*size+4<<20); n > limit {
		t.Fatalf("a %d-byte file allocated %d bytes (limit %d)", size, n, limit)
	}
}
