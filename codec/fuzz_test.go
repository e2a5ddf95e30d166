package codec

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"neuralzip/dtype"
)

// fuzzSeeds returns small archives of real and generated data.
func fuzzSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	add := func(src []byte, segs []Segment, chunk int) {
		arc, err := CompressBytes(src, segs, Options{ChunkValues: chunk})
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, arc)
	}
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F64} {
		v := realisticValues(d, 3000, 1)
		add(v, []Segment{{Offset: 0, Length: 7}, {Name: "t", DType: d, Offset: 7, Length: int64(len(v)) - 7 - int64(len(v)-7)%int64(d.Size())}}, 1024)
	}
	// duplicate blocks (kind 4)
	dup := realisticValues(dtype.F32, 600, 5)
	dsrc := append(append([]byte(nil), dup...), dup...)
	add(dsrc, []Segment{{Name: "a", DType: dtype.F32, Offset: 0, Length: int64(len(dup))}, {Name: "b", DType: dtype.F32, Offset: int64(len(dup)), Length: int64(len(dup))}}, 300)
	// blocks coded with an embedded setup's tables (modes 6 and 7)
	sv := realisticValues(dtype.BF16, 3000, 6)
	ssegs := []Segment{{Name: "s", DType: dtype.BF16, Length: int64(len(sv))}}
	if st, err := BuildSetup([]Input{{Name: "s", R: bytes.NewReader(sv), Size: int64(len(sv)), Segments: ssegs}}, SetupOptions{}); err == nil {
		arc, err := CompressBytes(sv, ssegs, Options{Setup: st, SetupThreshold: 1e9, ChunkValues: 1024})
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, arc)
	} else {
		tb.Fatal(err)
	}
	add([]byte("plain text, not a checkpoint, plain text"), nil, 0)
	add(nil, nil, 0)
	// a SHA-256 digest instead of BLAKE3, in format version 7 and as
	// version 3 archives held it (no digest kind)
	sha, err := CompressBytes(dup, []Segment{{Name: "a", DType: dtype.F32, Length: int64(len(dup))}}, Options{ChunkValues: 300, Digest: DigestSHA256})
	if err != nil {
		tb.Fatal(err)
	}
	seeds = append(seeds, sha, withVersion(tb, sha, 3))
	if d := sharedDir(); d != "" {
		for _, name := range []string{"models/bench/real-bf16.safetensors", "models/original/stories260K.f16.safetensors"} {
			src, err := os.ReadFile(d + "/" + name)
			if err != nil {
				continue
			}
			segs := safetensorsSegments(src)
			// keep the first 40 KiB worth of segments
			var keep []Segment
			for _, s := range segs {
				if s.Offset+s.Length <= 40<<10 {
					keep = append(keep, s)
				}
			}
			add(src[:40<<10], keep, 2048)
		}
	}
	return seeds
}

// withVersion rewrites an archive of SHA-256 digests as format version v:
// the same payload, its index written as version v writes it.
func withVersion(tb testing.TB, arc []byte, v int) []byte {
	rd, err := NewMemReader(arc)
	if err != nil {
		tb.Fatal(err)
	}
	x := *rd.idx
	x.version = v
	raw := x.marshal()
	enc, err := zstdEncoder(3)
	if err != nil {
		tb.Fatal(err)
	}
	ix := enc.EncodeAll(raw, nil)
	off := binary.LittleEndian.Uint64(arc[len(arc)-trailerLen:])
	out := append(bytes.Clone(arc[:off]), ix...)
	binary.LittleEndian.PutUint16(out[8:], uint16(v))
	var tr [trailerLen]byte
	binary.LittleEndian.PutUint64(tr[0:], off)
	binary.LittleEndian.PutUint64(tr[8:], uint64(len(ix)))
	binary.LittleEndian.PutUint32(tr[16:], uint32(len(raw)))
	binary.LittleEndian.PutUint32(tr[20:], crc32c(ix))
	copy(tr[24:], TrailerMagic[:])
	return append(out, tr[:]...)
}

// FuzzDecode feeds arbitrary bytes to the archive reader: it must return an
// error or the data, never panic, hang or allocate without bound.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arc []byte) {
		rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
		if err != nil {
			return
		}
		defer rd.Close()
		for i, fi := range rd.Files() {
			if fi.Size > 64<<20 {
				continue // a valid index may describe a large file of zeros
			}
			_ = rd.WriteFile(discard{}, i, Options{Threads: 2})
			for _, tn := range fi.Tensors {
				if tn.Length < 1<<20 {
					rd.Tensor(tn.Name)
				}
			}
		}
		// in memory, the payloads are read in place: same results, and the
		// archive bytes stay untouched
		keep := bytes.Clone(arc)
		mr, err := NewMemReader(arc)
		if err != nil {
			t.Fatalf("NewMemReader fails where NewReader did not: %v", err)
		}
		for i, fi := range mr.Files() {
			if fi.Size <= 64<<20 {
				var a, b bytes.Buffer
				ea := rd.WriteFile(&a, i, Options{Threads: 1})
				eb := mr.WriteFile(&b, i, Options{Threads: 2})
				if (ea == nil) != (eb == nil) || !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatalf("file %d: reader over bytes.Reader (%v) and in memory (%v) differ", i, ea, eb)
				}
			}
		}
		if !bytes.Equal(keep, arc) {
			t.Fatal("decoding in memory changed the archive")
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// FuzzBlock decodes arbitrary payloads as every block kind and dtype,
// bypassing the index and its checksum.
func FuzzBlock(f *testing.F) {
	be := &blockEncoder{}
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E5M2} {
		v := realisticValues(d, 2500, 2)
		f.Add(be.encodeFloat(nil, v, d), byte(d), uint16(len(v)))
	}
	f.Fuzz(func(t *testing.T, payload []byte, d byte, n uint16) {
		bd := &blockDecoder{}
		dt := dtype.DType(d)
		if floatType(dt) != dt || dt == dtype.Invalid {
			return
		}
		dst := make([]byte, int(n)*dt.Size())
		_ = bd.decode(dst, payload, kindFloat, dt)
	})
}

// FuzzIndex decodes arbitrary index bytes (behind the CRC in real archives).
func FuzzIndex(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		rd, err := NewReader(bytes.NewReader(s), int64(len(s)))
		if err != nil {
			continue
		}
		f.Add(rd.idx.marshal(), int64(len(s)))
		rd.Close()
	}
	f.Fuzz(func(t *testing.T, raw []byte, payload int64) {
		if payload < 0 {
			return
		}
		x, err := unmarshalIndex(raw, payload, Version)
		if err != nil {
			return
		}
		// what decodes must survive encode → decode unchanged
		m := x.marshal()
		y, err := unmarshalIndex(m, payload, Version)
		if err != nil {
			t.Fatalf("re-encoded index does not decode: %v", err)
		}
		if !bytes.Equal(y.marshal(), m) {
			t.Fatalf("index changes across encode/decode")
		}
	})
}

// FuzzRoundTrip compresses arbitrary bytes as a float tensor of each type
// (with an opaque prefix) and checks the roundtrip.
func FuzzRoundTrip(f *testing.F) {
	f.Add(realisticValues(dtype.BF16, 2000, 1), byte(dtype.BF16), uint8(3), uint16(300))
	f.Add(realisticValues(dtype.F32, 700, 1), byte(dtype.F32), uint8(0), uint16(256))
	f.Add([]byte{0x7f, 0xc0, 0xff, 0xff, 0, 0}, byte(dtype.F16), uint8(1), uint16(256))
	f.Fuzz(func(t *testing.T, data []byte, d byte, prefix uint8, chunk uint16) {
		dt := dtype.DType(d)
		if floatType(dt) == dtype.Invalid {
			dt = dtype.BF16
		}
		p := min(int(prefix), len(data))
		body := int64(len(data)-p) - int64(len(data)-p)%int64(dt.Size())
		segs := []Segment{{Offset: 0, Length: int64(p)}, {Name: "x", DType: dt, Offset: int64(p), Length: body}}
		c := max(MinChunkValues, int(chunk))
		arc, err := CompressBytes(data, segs, Options{ChunkValues: c, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecompressBytes(arc, Options{})
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("roundtrip failed: %v", err)
		}
	})
}
