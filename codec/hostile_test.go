package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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

// An index of many empty tensors compresses far more than 1024:1; such an
// archive must decode (it once was refused as implausible).
func TestManyEmptyTensors(t *testing.T) {
	segs := make([]Segment, 100000)
	for i := range segs {
		segs[i] = Segment{Name: fmt.Sprintf("t%07d", i), DType: dtype.BF16, Shape: []int64{0}}
	}
	arc, err := CompressBytes(nil, segs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := arc[len(arc)-trailerLen:]
	if raw, n := binary.LittleEndian.Uint32(tr[16:]), binary.LittleEndian.Uint64(tr[8:]); uint64(raw) <= 1024*n+1<<16 {
		t.Fatalf("index %d -> %d bytes: not compressible enough to test", raw, n)
	}
	rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := rd.ReadFile(0, Options{})
	if err != nil || len(out) != 0 {
		t.Fatalf("decoded %d bytes, %v", len(out), err)
	}
	ts := rd.Files()[0].Tensors
	if len(ts) != len(segs) || ts[len(ts)-1].Name != segs[len(segs)-1].Name {
		t.Fatalf("%d tensors read back", len(ts))
	}
}

// A trailer that claims a raw index larger than maxIndexRawFor(size) is
// refused before anything is allocated for it.
func TestIndexRawLimit(t *testing.T) {
	arc, err := CompressBytes([]byte("not a checkpoint"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	limit := maxIndexRawFor(int64(len(arc)))
	for _, c := range []struct {
		raw     int64
		refused bool
	}{{limit + 1, true}, {limit, false}} {
		b := append([]byte(nil), arc...)
		binary.LittleEndian.PutUint32(b[len(b)-trailerLen+16:], uint32(c.raw))
		var err error
		n := allocated(func() { _, err = NewReader(bytes.NewReader(b), int64(len(b))) })
		if err == nil {
			t.Fatalf("raw %d: a wrong raw index length was accepted", c.raw)
		}
		if got := errors.Is(err, ErrTooLarge); got != c.refused {
			t.Fatalf("raw %d (limit %d): ErrTooLarge %v, want %v (%v)", c.raw, limit, got, c.refused, err)
		}
		if c.refused && n > 1<<20 {
			t.Fatalf("refusing the index allocated %d bytes", n)
		}
	}
}

// The writer refuses to write an index that readers would refuse (here
// with the floor lowered so that 100,000 empty tensors exceed it).
func TestIndexRawLimitWriter(t *testing.T) {
	defer func(f int64) { indexRawFloor = f }(indexRawFloor)
	indexRawFloor = 64 << 10
	segs := make([]Segment, 100000)
	for i := range segs {
		segs[i] = Segment{Name: fmt.Sprintf("t%07d", i), DType: dtype.BF16, Shape: []int64{0}}
	}
	_, err := CompressBytes(nil, segs, Options{})
	if err == nil || !strings.Contains(err.Error(), "100000 tensors") {
		t.Fatalf("want the writer to refuse the index, got %v", err)
	}
}
