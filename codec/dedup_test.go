package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/zstd"

	"neuralzip/dtype"
)

// dedupModel: tensors a, b = a, c, d = a (F32, 3 blocks each at 1024 values
// per block), and a small tensor e = a's first 32 values (below dedupMin).
func dedupModel() ([]byte, []Segment) {
	a := realisticValues(dtype.F32, 3000, 1)
	c := realisticValues(dtype.F32, 3000, 2)
	return refSafetensors([]refT{
		{"a", dtype.F32, []int64{3000}, a},
		{"b", dtype.F32, []int64{3000}, a},
		{"c", dtype.F32, []int64{3000}, c},
		{"d", dtype.F32, []int64{3000}, a},
		{"e", dtype.F32, []int64{32}, a[:128]},
	})
}

func TestDedup(t *testing.T) {
	src, segs := dedupModel()
	opt := EncodeOptions{ChunkValues: 1024, Threads: 1}
	arc := roundTrip(t, src, segs, opt)
	rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rd.Census()
	if err != nil {
		t.Fatal(err)
	}
	if c.Duplicate != 6 {
		t.Fatalf("census %+v: want the 6 blocks of b and d as duplicates", c)
	}
	// the copies cost (almost) nothing: the archive is about that of a, c
	two, twoSegs := refSafetensors([]refT{{"a", dtype.F32, []int64{3000}, src[segs[1].Offset : segs[1].Offset+segs[1].Length]}, {"c", dtype.F32, []int64{3000}, src[segs[3].Offset : segs[3].Offset+segs[3].Length]}})
	base, err := CompressBytes(context.Background(), two, twoSegs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(arc) > len(base)+400 {
		t.Errorf("archive with duplicates %d bytes, without them %d", len(arc), len(base))
	}
	// random access to a duplicated tensor and to a range inside one
	b, _, err := rd.Tensor("d")
	if err != nil || !bytes.Equal(b, src[segs[4].Offset:segs[4].Offset+segs[4].Length]) {
		t.Fatalf("tensor d: %v", err)
	}
	p := make([]byte, 5000)
	if _, err := rd.ReadAt(0, p, segs[2].Offset+1000); err != nil || !bytes.Equal(p, src[segs[2].Offset+1000:segs[2].Offset+6000]) {
		t.Fatalf("ReadAt in b: %v", err)
	}
	// the same bytes at any thread count
	for _, th := range []int{2, 4} {
		o := opt
		o.Threads = th
		if a2, err := CompressBytes(context.Background(), src, segs, o); err != nil || !bytes.Equal(a2, arc) {
			t.Fatalf("threads %d: archive differs (%v)", th, err)
		}
	}
}

// A second file equal to the first: every block of it is a copy of the
// first file's.
func TestDedupAcrossFiles(t *testing.T) {
	src, segs := dedupModel()
	var buf bytes.Buffer
	in := func(name string) Input {
		return Input{Name: name, R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}
	}
	if _, err := Encode(context.Background(), &buf, []Input{in("x.safetensors"), in("y.safetensors")}, EncodeOptions{ChunkValues: 1024}); err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for fi := range rd.Files() {
		out, err := rd.ReadFile(context.Background(), fi, DecodeOptions{})
		if err != nil || sha256.Sum256(out) != sha256.Sum256(src) {
			t.Fatalf("file %d: %v", fi, err)
		}
	}
	for _, b := range rd.Files()[1].Blocks() {
		if b.Length >= dedupMin && b.Kind != KindDuplicate {
			t.Errorf("second file: block at %d is %s, want a duplicate", b.Offset, b.Kind)
		}
	}
}

// rewriteIndex re-encodes an archive's index after f changed it.
func rewriteIndex(t *testing.T, arc []byte, f func(x *indexData)) []byte {
	t.Helper()
	tr := arc[len(arc)-trailerLen:]
	off := binary.LittleEndian.Uint64(tr[0:])
	rawLen := int(binary.LittleEndian.Uint32(tr[16:]))
	raw, err := zstdDecode(make([]byte, 0, rawLen), arc[off:len(arc)-trailerLen], rawLen, true)
	if err != nil {
		t.Fatal(err)
	}
	x, err := unmarshalIndex(raw, int64(off)-headerLen, Version)
	if err != nil {
		t.Fatal(err)
	}
	f(x)
	raw = x.marshal()
	enc, _ := zstd.NewWriter(nil)
	ix := enc.EncodeAll(raw, nil)
	out := append([]byte(nil), arc[:off]...)
	out = append(out, ix...)
	var nt [trailerLen]byte
	binary.LittleEndian.PutUint64(nt[0:], off)
	binary.LittleEndian.PutUint64(nt[8:], uint64(len(ix)))
	binary.LittleEndian.PutUint32(nt[16:], uint32(len(raw)))
	binary.LittleEndian.PutUint32(nt[20:], crc32.Checksum(ix, castagnoli))
	copy(nt[24:], TrailerMagic[:])
	return append(out, nt[:]...)
}

// Duplicates that point forward, at themselves, at another duplicate, at a
// block of another length, or that carry a payload are refused when the
// index is read; a wrong CRC is found when the block is decoded.
func TestDedupBadIndex(t *testing.T) {
	src, segs := dedupModel()
	arc, err := CompressBytes(context.Background(), src, segs, EncodeOptions{ChunkValues: 1024})
	if err != nil {
		t.Fatal(err)
	}
	first := -1 // the first duplicate block
	rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range rd.Files()[0].Blocks() {
		if b.Kind == KindDuplicate {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("no duplicate block")
	}
	for name, f := range map[string]func(b *blockInfo){
		"forward": func(b *blockInfo) { b.refOff = int64(first + 1) },
		"itself":  func(b *blockInfo) { b.refOff = int64(first) },
		"file":    func(b *blockInfo) { b.ref = 1 },
		"length":  func(b *blockInfo) { b.refOff = 0 }, // the header block
		"payload": func(b *blockInfo) { b.compLen = 1 },
	} {
		bad := rewriteIndex(t, arc, func(x *indexData) { f(&x.files[0].blocks[first]) })
		if _, err := NewReader(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	// a duplicate of a duplicate
	bad := rewriteIndex(t, arc, func(x *indexData) {
		bs := x.files[0].blocks
		for j := first + 1; j < len(bs); j++ {
			if bs[j].kind == kindDup {
				bs[j].refOff = int64(first)
				return
			}
		}
		t.Fatal("one duplicate only")
	})
	if _, err := NewReader(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, ErrCorrupt) {
		t.Errorf("duplicate of a duplicate: %v, want ErrCorrupt", err)
	}
	// a CRC that does not match the source's bytes
	bad = rewriteIndex(t, arc, func(x *indexData) { x.files[0].blocks[first].crc ^= 1 })
	if _, err := DecompressBytes(context.Background(), bad, DecodeOptions{}); !errors.Is(err, ErrChecksum) {
		t.Errorf("wrong CRC: %v, want ErrChecksum", err)
	}
}
