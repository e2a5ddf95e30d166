package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"neuralzip/dtype"
)

var floatTypes = []dtype.DType{dtype.F64, dtype.F32, dtype.F16, dtype.BF16, dtype.F8E4M3, dtype.F8E5M2, dtype.F8E8M0, dtype.C64}

// specials returns the bit patterns of special values of d: NaNs with
// payloads (quiet and signalling, both signs), ±Inf, ±0, the smallest and
// largest subnormals, the largest finite value.
func specials(d dtype.DType) []uint64 {
	l, ok := d.FloatLayout()
	if d == dtype.C64 {
		l, ok = dtype.F32.FloatLayout()
	}
	if !ok {
		return nil
	}
	e, m := uint(l.Exp), uint(l.Mant)
	sign := uint64(0)
	if l.Sign == 1 {
		sign = 1 << (e + m)
	}
	expAll := (uint64(1)<<e - 1) << m
	mantAll := uint64(1)<<m - 1
	v := []uint64{
		0, sign, // ±0
		expAll, expAll | sign, // ±Inf (or NaN for formats without Inf)
		expAll | 1, expAll | mantAll, expAll | sign | 1, expAll | sign | mantAll>>1, // NaN payloads
		1, mantAll, sign | 1, sign | mantAll, // subnormals
		expAll - 1, sign | (expAll - 1), // largest finite
		1 << m, // smallest normal
	}
	if m > 2 {
		v = append(v, expAll|mantAll>>2|1, expAll|1<<(m-1)) // quiet NaN with payload
	}
	return v
}

func fill(d dtype.DType, vals []uint64) []byte {
	size := d.Size()
	if d == dtype.C64 {
		size = 4
	}
	b := make([]byte, len(vals)*size)
	for i, v := range vals {
		storeValue(b, i, size, v)
	}
	return b
}

// edgeTensors builds tensors with the edge cases of the issue for dtype d.
func edgeTensors(d dtype.DType) map[string][]byte {
	r := rand.New(rand.NewPCG(uint64(d), 11))
	out := map[string][]byte{}
	sp := specials(d)
	// specials mixed into realistic values, long enough for every coder
	var mixed []uint64
	size := d.Size()
	if d == dtype.C64 {
		size = 4
	}
	base := realisticValues(map[int]dtype.DType{1: dtype.F8E4M3, 2: dtype.BF16, 4: dtype.F32, 8: dtype.F64}[size], 5000, uint64(d))
	if d == dtype.F16 || d == dtype.F8E5M2 || d == dtype.F8E8M0 {
		base = realisticValues(d, 5000, uint64(d))
	}
	for i := 0; i < 5000; i++ {
		mixed = append(mixed, loadValue(base, i, size))
		if i%97 == 0 {
			mixed = append(mixed, sp[r.IntN(len(sp))])
		}
	}
	out["specials-mixed"] = fill(d, mixed)
	out["specials-only"] = fill(d, sp)
	sp2 := append([]uint64(nil), sp...)
	for len(sp2) < 3000 {
		sp2 = append(sp2, sp[r.IntN(len(sp))])
	}
	out["specials-long"] = fill(d, sp2)
	eq := make([]uint64, 4001)
	for i := range eq {
		eq[i] = sp[len(sp)-1]
	}
	out["all-equal"] = fill(d, eq)
	out["all-zero"] = make([]byte, 3000*size)
	out["one-element"] = fill(d, sp[4:5])
	out["empty"] = nil
	odd := make([]uint64, 1023)
	for i := range odd {
		odd[i] = loadValue(base, i, size)
	}
	out["odd-length"] = fill(d, odd)
	rnd := make([]byte, 7001*size)
	for i := range rnd {
		rnd[i] = byte(r.Uint32())
	}
	out["random-bits"] = rnd
	// values that were once of a narrower type: low mantissa bits zero
	cl := make([]uint64, 3000)
	for i := range cl {
		cl[i] = loadValue(base, i%5000, size) &^ 0xffff
	}
	out["clean-low-bits"] = fill(d, cl)
	return out
}

// tensorFile lays tensors out in one file: a small opaque header, then each
// tensor at an odd (unaligned) offset with a few opaque bytes between.
func tensorFile(d dtype.DType, tensors map[string][]byte) ([]byte, []Segment) {
	var file []byte
	var segs []Segment
	file = append(file, []byte("HEADER\x00\x01\x02")...)
	segs = append(segs, Segment{Offset: 0, Length: int64(len(file))})
	names := sortedKeys(tensors)
	for _, name := range names {
		pad := []byte{0xAA, 0xBB, 0xCC}
		segs = append(segs, Segment{Offset: int64(len(file)), Length: int64(len(pad))})
		file = append(file, pad...)
		t := tensors[name]
		n := int64(len(t))
		shape := []int64{n / int64(max(1, d.Size()))}
		segs = append(segs, Segment{Name: name, DType: d, Shape: shape, Offset: int64(len(file)), Length: n})
		file = append(file, t...)
	}
	return file, segs
}

func sortedKeys(m map[string][]byte) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	for i := 1; i < len(k); i++ {
		for j := i; j > 0 && k[j] < k[j-1]; j-- {
			k[j], k[j-1] = k[j-1], k[j]
		}
	}
	return k
}

func TestEdgeCasesPerDType(t *testing.T) {
	for _, d := range floatTypes {
		t.Run(d.String(), func(t *testing.T) {
			tensors := edgeTensors(d)
			// each tensor alone, as a whole file
			for name, data := range tensors {
				segs := []Segment{{Name: name, DType: d, Offset: 0, Length: int64(len(data))}}
				for _, th := range []int{1, 2} {
					roundTrip(t, data, segs, EncodeOptions{Threads: th, ChunkValues: 1024})
				}
			}
			// all of them in one file at unaligned offsets
			file, segs := tensorFile(d, tensors)
			a1 := roundTrip(t, file, segs, EncodeOptions{Threads: 1, ChunkValues: 1000})
			a2 := roundTrip(t, file, segs, EncodeOptions{Threads: 2, ChunkValues: 1000})
			if !bytes.Equal(a1, a2) {
				t.Fatal("archive depends on the thread count")
			}
			// random access to every tensor
			rd, err := NewReader(bytes.NewReader(a1), int64(len(a1)))
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			for name, data := range tensors {
				got, _, err := rd.Tensor(name)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("tensor %q: %v", name, err)
				}
			}
		})
	}
}

// The planner must keep files intact when a float segment has a length that
// is not a whole number of values, or lies about its dtype.
func TestOddSegments(t *testing.T) {
	data := realisticValues(dtype.F32, 3000, 1)
	data = append(data, 1, 2, 3) // 3 trailing bytes
	segs := []Segment{{Name: "odd", DType: dtype.F32, Offset: 0, Length: int64(len(data))}}
	roundTrip(t, data, segs, EncodeOptions{})
	// gaps between segments, a segment ending at the file end, zero-length tensors
	segs = []Segment{
		{Name: "a", DType: dtype.F32, Offset: 4, Length: 4000},
		{Name: "empty", DType: dtype.BF16, Offset: 4004, Length: 0},
		{Name: "b", DType: dtype.BF16, Offset: 4100, Length: int64(len(data)) - 4100},
	}
	roundTrip(t, data, segs, EncodeOptions{})
}

func TestNotACheckpoint(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := bytes.Repeat([]byte("this is not a checkpoint, just text. "), 5000)
	noise := make([]byte, 300000)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	for _, src := range [][]byte{nil, {0}, text, noise} {
		roundTrip(t, src, nil, EncodeOptions{})
	}
}

func TestBadSegmentsRejected(t *testing.T) {
	src := make([]byte, 100)
	for _, segs := range [][]Segment{
		{{Offset: 50, Length: 60}},
		{{Offset: -1, Length: 2}},
		{{Offset: 0, Length: 20}, {Offset: 10, Length: 5}},
	} {
		if _, err := CompressBytes(context.Background(), src, segs, EncodeOptions{}); err == nil {
			t.Errorf("segments %+v accepted", segs)
		}
	}
	if _, err := CompressBytes(context.Background(), src, nil, EncodeOptions{ChunkValues: 10}); err == nil {
		t.Error("chunk size 10 accepted")
	}
}

// Multi-file archives restore every file and keep names and tensors apart.
func TestMultiFile(t *testing.T) {
	a := realisticValues(dtype.BF16, 10000, 1)
	b := realisticValues(dtype.F32, 7000, 2)
	var buf bytes.Buffer
	_, err := Encode(context.Background(), &buf, []Input{
		{Name: "model-00001.safetensors", R: bytes.NewReader(a), Size: int64(len(a)), Segments: []Segment{{Name: "x", DType: dtype.BF16, Length: int64(len(a))}}},
		{Name: "model-00002.safetensors", R: bytes.NewReader(b), Size: int64(len(b)), Segments: []Segment{{Name: "y", DType: dtype.F32, Length: int64(len(b))}}},
		{Name: "empty", R: bytes.NewReader(nil), Size: 0},
	}, EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	arc := buf.Bytes()
	rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if len(rd.Files()) != 3 {
		t.Fatalf("%d files", len(rd.Files()))
	}
	for i, want := range [][]byte{a, b, nil} {
		var out bytes.Buffer
		if err := rd.WriteFile(context.Background(), &out, i, DecodeOptions{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("file %d differs", i)
		}
	}
	if got, _, err := rd.Tensor("y"); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("tensor y: %v", err)
	}
	if err := rd.Verify(context.Background(), DecodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := DecompressBytes(context.Background(), arc, DecodeOptions{}); err == nil {
		t.Fatal("DecompressBytes accepted a multi-file archive")
	}
}

// ReadAt at every kind of boundary.
func TestReadAtRanges(t *testing.T) {
	data := realisticValues(dtype.BF16, 50000, 3)
	segs := []Segment{{Offset: 0, Length: 10}, {Name: "w", DType: dtype.BF16, Offset: 10, Length: int64(len(data)) - 10}}
	arc := roundTrip(t, data, segs, EncodeOptions{ChunkValues: 4096})
	rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 200; i++ {
		off := r.IntN(len(data) + 1)
		l := r.IntN(20000)
		p := make([]byte, l)
		n, err := rd.ReadAt(0, p, int64(off))
		want := data[off:min(off+l, len(data))]
		if n != len(want) || !bytes.Equal(p[:n], want) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", off, l, n, err)
		}
		if n < l && err == nil {
			t.Fatalf("short ReadAt without error")
		}
	}
}

// A corrupted payload byte is found by the block CRC (or the decoder) and
// located: the error names the block and its original offset.
func TestCorruptionLocated(t *testing.T) {
	data := realisticValues(dtype.BF16, 200000, 5)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}
	arc := roundTrip(t, data, segs, EncodeOptions{ChunkValues: 16384})
	rd, _ := NewReader(bytes.NewReader(arc), int64(len(arc)))
	blocks := rd.Files()[0].Blocks()
	rd.Close()
	// flip a byte in the middle of block 3's payload
	off := int64(headerLen)
	for _, b := range blocks[:3] {
		off += b.Compressed
	}
	off += blocks[3].Compressed / 2
	bad := append([]byte(nil), arc...)
	bad[off] ^= 0x55
	_, err := DecompressBytes(context.Background(), bad, DecodeOptions{})
	var ce *CorruptError
	if !asCorrupt(err, &ce) || ce.Block != 3 || ce.FileOffset != blocks[3].Offset {
		t.Fatalf("corruption not located in block 3: %v", err)
	}
}

// TestSectionReaderOffsets opens an archive that lies inside a larger
// file: it decodes as on its own, and the damage its errors locate is at
// positions of the file (a damaged block, the header flags, the index),
// while Blocks keeps the archive's own offsets.
func TestSectionReaderOffsets(t *testing.T) {
	data := realisticValues(dtype.BF16, 100000, 7)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(data))}}
	arc := roundTrip(t, data, segs, EncodeOptions{ChunkValues: 16384})
	const base = 1234
	file := append(append(bytes.Repeat([]byte{0xee}, base), arc...), 0xee, 0xee)
	open := func(f []byte) (*Reader, error) {
		return NewSectionReader(bytes.NewReader(f), base, int64(len(arc)))
	}
	rd, err := open(file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rd.ReadFile(context.Background(), 0, DecodeOptions{})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("section decode: %v", err)
	}
	blk := rd.Files()[0].Blocks()[2]
	if blk.Payload < headerLen || blk.Payload >= int64(len(arc)) {
		t.Fatalf("block 2's payload at %d: not an offset in the archive", blk.Payload)
	}
	var ce *CorruptError
	bad := bytes.Clone(file)
	bad[base+blk.Payload+blk.Compressed/2] ^= 0x55
	rb, err := open(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rb.ReadFile(context.Background(), 0, DecodeOptions{}); !asCorrupt(err, &ce) || ce.Block != 2 || ce.Offset != base+blk.Payload {
		t.Fatalf("damaged block 2 (payload at %d in the file): %v", base+blk.Payload, err)
	}
	if !strings.Contains(ce.Error(), fmt.Sprintf("archive offset %d:", base+blk.Payload)) {
		t.Fatalf("message %q does not give the file offset", ce.Error())
	}
	bad = bytes.Clone(file)
	bad[base+10] |= 0x80 // an unknown header flag
	if _, err := open(bad); !asCorrupt(err, &ce) || ce.Offset != base+10 {
		t.Fatalf("damaged header flags: %v", err)
	}
	bad = bytes.Clone(file)
	bad[base+len(arc)-trailerLen-1] ^= 0x55 // the index's last byte
	if _, err := open(bad); !asCorrupt(err, &ce) || ce.Offset < base+headerLen || ce.Offset >= base+int64(len(arc)) {
		t.Fatalf("damaged index: %v", err)
	}
	// a file cut short inside the section: the failed read is located in
	// the file too
	cut := file[:base+len(arc)-1]
	if _, err := open(cut); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at offset %d:", base+len(arc)-trailerLen)) {
		t.Fatalf("section past the end of the file: %v", err)
	}
	if _, err := NewSectionReader(bytes.NewReader(file), -1, 10); !errors.Is(err, ErrNotArchive) {
		t.Fatalf("negative offset: %v", err)
	}
}

func asCorrupt(err error, ce **CorruptError) bool {
	for err != nil {
		if c, ok := err.(*CorruptError); ok {
			*ce = c
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func TestFloatBitsHelper(t *testing.T) {
	// sanity of the test generator itself
	if floatBits(dtype.BF16, 1.0) != 0x3f80 || floatBits(dtype.F16, 1.0) != 0x3c00 || floatBits(dtype.F32, -2) != uint64(math.Float32bits(-2)) {
		t.Fatal("floatBits broken")
	}
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], uint16(floatBits(dtype.F16, 65504)))
	if b != [2]byte{0xff, 0x7b} {
		t.Fatalf("f16 max = %x", b)
	}
}
