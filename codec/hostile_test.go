package codec

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// setupFile wraps a setup payload in the file header and checksum.
func setupFile(payload []byte) []byte {
	b := append([]byte(nil), setupMagic[:]...)
	b = binary.LittleEndian.AppendUint16(b, setupVersion)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A setup table takes a few bytes of the file but kilobytes in memory:
// repeated sections, sections of a type without a field split and empty
// tables are refused as they are read, before the tables are allocated.
func TestParseSetupHostile(t *testing.T) {
	table := []byte{0, 0, 0, 0, 0} // alphabet size 0, one nibble, no pairs, 0 chunks, no centroid
	section := func(d dtype.DType, a byte) []byte {
		s := []byte{byte(d), 0, 0, 0x80, 0x02} // join 0, no plane cuts, 256 tables
		tab := append([]byte{a}, bytes.Repeat([]byte{0x70}, int(a))...)
		tab = append(tab, bytes.Repeat([]byte{0x11}, (int(a)+2)/2)...)
		tab = append(tab, 0, 0, 0)
		if a == 0 {
			tab = table
		}
		return append(s, bytes.Repeat(tab, 256)...)
	}
	for _, c := range []struct {
		name, want string
		payload    []byte
	}{
		{"repeated sections", "two sections for BF16", func() []byte {
			p := []byte{1, 0, 0, 40}
			for range 40 {
				p = append(p, section(dtype.BF16, 1)...)
			}
			return p
		}()},
		{"no field split", "no field split", append([]byte{1, 0, 0, 40}, bytes.Repeat(section(dtype.I32, 1), 40)...)},
		{"empty tables", "empty alphabet", append([]byte{1, 0, 0, 1}, section(dtype.BF16, 0)...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setupFile(c.payload)
			var err error
			n := allocated(func() { _, err = ParseSetup(f) })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error with %q, got %v", c.want, err)
			}
			if limit := 64*uint64(len(f)) + 4<<20; n > limit {
				t.Fatalf("a %d-byte setup allocated %d bytes (limit %d)", len(f), n, limit)
			}
		})
	}
}
