package codec

import (
	"bytes"
	"context"
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
	arc, err := CompressBytes(context.Background(), nil, segs, EncodeOptions{})
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
	out, err := rd.ReadFile(context.Background(), 0, DecodeOptions{})
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
	arc, err := CompressBytes(context.Background(), []byte("not a checkpoint"), nil, EncodeOptions{})
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
	_, err := CompressBytes(context.Background(), nil, segs, EncodeOptions{})
	if err == nil || !strings.Contains(err.Error(), "100000 tensors") {
		t.Fatalf("want the writer to refuse the index, got %v", err)
	}
}

// hostileArchive assembles header | payload | zidx | trailer, with the
// trailer's raw index length rawLen.
func hostileArchive(payload, zidx []byte, rawLen int, flags uint16) []byte {
	b := append([]byte(nil), Magic[:]...)
	b = binary.LittleEndian.AppendUint16(b, Version)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = append(b, 0, 0, 0, 0)
	b = append(b, payload...)
	off := len(b)
	b = append(b, zidx...)
	b = binary.LittleEndian.AppendUint64(b, uint64(off))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(zidx)))
	b = binary.LittleEndian.AppendUint32(b, uint32(rawLen))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(zidx, castagnoli))
	return append(b, TrailerMagic[:]...)
}

func zstdFrame(t *testing.T, raw []byte) []byte {
	z, err := zstdEncoder(3)
	if err != nil {
		t.Fatal(err)
	}
	return z.EncodeAll(raw, nil)
}

// An index frame that declares no size must not decode past the length
// the trailer gives (it used to run on to the decoder's 1 GiB limit).
func TestIndexFrameWithoutSize(t *testing.T) {
	z := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38} // no content size, 128 KiB window
	for i := range 64 {                             // 64 RLE blocks of 128 KiB of zeros
		h := uint32(1<<1 | (128<<10)<<3)
		if i == 63 {
			h |= 1
		}
		z = append(z, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	a := hostileArchive(nil, z, 3, 0)
	var err error
	n := allocated(func() { _, err = NewReader(bytes.NewReader(a), int64(len(a))) })
	if err == nil {
		t.Fatal("an index of the wrong length was accepted")
	}
	if n > 2<<20 {
		t.Fatalf("a %d-byte archive allocated %d bytes before its index was refused", len(a), n)
	}
}

// Every file of an index once got a name buffer the size of the rest of
// the index: many empty files cost time and memory quadratic in the index.
func TestIndexManyEmptyFiles(t *testing.T) {
	var raw []byte
	raw = binary.AppendUvarint(raw, 1024) // chunk
	raw = append(raw, setupNone)
	raw = binary.AppendUvarint(raw, 4000)
	for range 4000 {
		raw = append(raw, 0, 0) // name "", size 0
		raw = append(raw, byte(DigestBLAKE3))
		raw = append(raw, make([]byte, 32)...) // its value
		raw = append(raw, 0, 0, 0)             // format "", no blocks, no tensors
	}
	a := hostileArchive(nil, zstdFrame(t, raw), len(raw), 0)
	var err error
	n := allocated(func() { _, err = NewReader(bytes.NewReader(a), int64(len(a))) })
	if err != nil {
		t.Fatal(err)
	}
	if limit := 64*uint64(len(raw)) + 4<<20; n > limit {
		t.Fatalf("an index of %d bytes allocated %d (limit %d)", len(raw), n, limit)
	}
}

// The bound on tensor names holds for all files together: per file, a few
// files of long shared-prefix names could each stay within it.
func TestIndexNamesAcrossFiles(t *testing.T) {
	long := strings.Repeat("n", 64<<10)
	x := namesIndex(nil)
	x.files = nil
	for i := range 4 {
		f := &FileInfo{Name: fmt.Sprint("f", i), Format: "unknown", Digest: DigestBLAKE3}
		for range 21 {
			f.Tensors = append(f.Tensors, TensorInfo{Name: long, DType: dtype.F32, Shape: []int64{0}})
		}
		x.files = append(x.files, f)
	}
	raw := x.marshalNames(true)
	if perFile := 21 * len(long); perFile > maxNameBytes(len(raw)) || 4*perFile <= maxNameBytes(len(raw)) {
		t.Fatalf("names %d per file, bound %d: not a test of the total", perFile, maxNameBytes(len(raw)))
	}
	if _, err := unmarshalIndex(raw, 0, Version); err == nil || !strings.Contains(err.Error(), "tensor names exceed") {
		t.Fatalf("want a names-limit error, got %v", err)
	}
	// the writer stores such names whole, and they read back
	if _, err := unmarshalIndex(x.marshal(), 0, Version); err != nil {
		t.Fatal(err)
	}
}

// bigZeroTensor is an archive of one tensor t of nb × 4 MiB of zeros:
// block 0 a zstd block, the rest duplicates of it. With badCRC block 0's
// checksum is wrong.
func bigZeroTensor(t *testing.T, nb int, badCRC bool) []byte {
	const bl = 4 << 20
	zeros := make([]byte, bl)
	payload := zstdFrame(t, zeros)
	crc := crc32.Checksum(zeros, castagnoli)
	if badCRC {
		crc++
	}
	size := uint64(nb) * bl
	var raw []byte
	raw = binary.AppendUvarint(raw, 1024)
	raw = append(raw, setupNone)
	raw = binary.AppendUvarint(raw, 1) // one file
	raw = append(raw, 1, 'z')
	raw = binary.AppendUvarint(raw, size)
	raw = append(raw, byte(DigestBLAKE3))
	raw = append(raw, make([]byte, 32)...)
	raw = append(raw, 0) // format ""
	raw = binary.AppendUvarint(raw, uint64(nb))
	for i := range nb {
		if i == 0 {
			raw = append(raw, kindZstd)
			raw = binary.AppendUvarint(raw, bl)
			raw = binary.AppendUvarint(raw, uint64(len(payload)))
			raw = binary.LittleEndian.AppendUint32(raw, crc)
			continue
		}
		raw = append(raw, kindDup)
		raw = binary.AppendUvarint(raw, bl)
		raw = binary.AppendUvarint(raw, 0)
		raw = binary.LittleEndian.AppendUint32(raw, crc32.Checksum(zeros, castagnoli))
		raw = append(raw, 0, 0) // file 0, block 0
	}
	raw = binary.AppendUvarint(raw, 1)                 // one tensor
	raw = append(raw, 0, 1, 't', byte(dtype.U8), 0, 0) // name "t", rank 0, offset 0
	raw = binary.AppendUvarint(raw, size)
	return hostileArchive(payload, zstdFrame(t, raw), len(raw), 0)
}

// Reader.Tensor allocates up front only what a sane archive could hold;
// beyond that the tensor grows as its blocks decode, so a tiny archive
// claiming a huge tensor fails at its first bad block without the
// allocation, and a real one still reads.
func TestTensorHugeClaim(t *testing.T) {
	defer func(f int64) { plausibleFloor = f }(plausibleFloor)
	plausibleFloor = 1 << 20
	a := bigZeroTensor(t, 8, true)
	rd, err := NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	n := allocated(func() { _, _, err = rd.Tensor("t") })
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("want a checksum error, got %v", err)
	}
	if n > 16<<20 {
		t.Fatalf("a %d-byte archive claiming %d bytes allocated %d before its first block failed", len(a), 8<<22, n)
	}
	a = bigZeroTensor(t, 8, false)
	if rd, err = NewReader(bytes.NewReader(a), int64(len(a))); err != nil {
		t.Fatal(err)
	}
	b, _, err := rd.Tensor("t")
	if err != nil || len(b) != 8<<22 || !bytes.Equal(b, make([]byte, len(b))) {
		t.Fatalf("tensor of %d bytes, %v", len(b), err)
	}
}
