package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"testing"

	"neuralzip/dtype"
)

// fuzzSeeds returns small archives of real and generated data.
func fuzzSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	add := func(src []byte, segs []Segment, chunk int) {
		arc, err := CompressBytes(context.Background(), src, segs, EncodeOptions{ChunkValues: chunk})
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
	if st, err := BuildSetup(context.Background(), []Input{{Name: "s", R: bytes.NewReader(sv), Size: int64(len(sv)), Segments: ssegs}}, SetupOptions{}); err == nil {
		arc, err := CompressBytes(context.Background(), sv, ssegs, EncodeOptions{Setup: st, SetupThreshold: 1e9, ChunkValues: 1024})
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, arc)
	} else {
		tb.Fatal(err)
	}
	// sparse blocks (format version 8): every mask method
	sp := sparseValues(dtype.BF16, 3000, 85, true, 3)
	add(sp, []Segment{{Name: "act", DType: dtype.BF16, Shape: []int64{30, 100}, Length: int64(len(sp))}}, 1024)
	// byte planes through zstd (format version 9): a windowed STFT basis
	lz, lzSegs := lzPlanesInput()
	add(lz, lzSegs, 0)
	// cm blocks (format version 10): quantised weights
	cm, cmSegs := cmInput()
	add(cm, cmSegs, 0)
	// records blocks (format version 11): quantised GGUF-like tensors
	rec, recSegs := recordsInput()
	add(rec, recSegs, 0)
	add([]byte("plain text, not a checkpoint, plain text"), nil, 0)
	add(nil, nil, 0)
	// a SHA-256 digest instead of BLAKE3, in format version 7 and as
	// version 3 archives held it (no digest kind)
	sha, err := CompressBytes(context.Background(), dup, []Segment{{Name: "a", DType: dtype.F32, Length: int64(len(dup))}}, EncodeOptions{ChunkValues: 300, Digest: DigestSHA256})
	if err != nil {
		tb.Fatal(err)
	}
	seeds = append(seeds, sha, withVersion(tb, sha, 3))
	seeds = append(seeds, bigOutputSeeds(tb)...)
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

// bigOutputSeeds are archives of a few KiB that decode to 1 MiB of zeros
// held as 2000 tensors of 64 bytes: in one block of 1 MiB, and in blocks
// of a few KiB. Reading each tensor alone decodes the blocks that hold it,
// so decoding the first one whole and every tensor decodes 256 MB (issue
// 28: such inputs held the fuzzer at a few executions a second).
func bigOutputSeeds(tb testing.TB) [][]byte {
	const n = 1 << 20
	segs := []Segment{{Length: 64}}
	for off := int64(64); off < n; off += 64 {
		segs = append(segs, Segment{Name: fmt.Sprintf("t%d", off/64), DType: dtype.BF16, Offset: off, Length: 64})
		if len(segs) == 2000 {
			segs = append(segs, Segment{Offset: off + 64, Length: n - off - 64})
			break
		}
	}
	var out [][]byte
	for _, chunk := range []int{0, MinChunkValues} {
		arc, err := CompressBytes(context.Background(), make([]byte, n), segs, EncodeOptions{ChunkValues: chunk})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, arc)
	}
	return out
}

// FuzzDecode feeds arbitrary bytes to the archive reader: it must return an
// error or the data, never panic, hang or allocate without bound. Decoding
// through a bytes.Reader and in memory must agree, and a tensor read on
// its own must be the bytes of the file that holds it.
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
		// in memory, the payloads are read in place: same results, and the
		// archive bytes stay untouched
		keep := bytes.Clone(arc)
		mr, err := NewMemReader(arc)
		if err != nil {
			t.Fatalf("NewMemReader fails where NewReader did not: %v", err)
		}
		defer mr.Close()
		fuzzCheckFiles(t, rd, mr, fuzzBudget(len(arc)))
		_, _ = mr.Census() // what inspect reads of any archive: an error or counts, never a panic
		if !bytes.Equal(keep, arc) {
			t.Fatal("decoding in memory changed the archive")
		}
	})
}

// fuzzBudget is the most output bytes a decoding fuzz target decodes for
// an input of n bytes. A few bytes of index can describe megabytes (blocks
// of zeros, copies of blocks): decoding them teaches the fuzzer nothing a
// small block does not, and inputs that did made 8-minute runs crawl at
// a few executions a second (issue 28). What lies beyond it is still
// parsed (NewReader checks the whole index) and decoded block by block as
// far as the budget goes.
func fuzzBudget(n int) int64 { return 64<<10 + 8*int64(n) }

// fuzzCheckFiles decodes the files of rd, and compares them with those of
// mr (the same archive read another way) unless mr is nil, decoding at
// most budget bytes of output in each pass: files within it whole
// (WriteFile, checked against their SHA-256); of larger files, the blocks
// that fit in what is left; then, within another budget, the tensors of
// the files decoded whole, one by one (ReadAt: the same bytes). It returns
// the bytes decoded by each reader: at most twice the budget.
func fuzzCheckFiles(t *testing.T, rd, mr *Reader, budget int64) (decoded int64) {
	tb := budget // for the tensors
	for i, fi := range rd.Files() {
		if fi.Size > budget {
			n := fuzzCheckBlocks(t, rd, mr, i, budget)
			budget -= n
			decoded += n
			continue
		}
		budget -= fi.Size
		decoded += fi.Size
		var a, b bytes.Buffer
		ea := rd.WriteFile(context.Background(), &a, i, DecodeOptions{Threads: 1})
		if mr != nil {
			// two threads: the result must not depend on their number
			eb := mr.WriteFile(context.Background(), &b, i, DecodeOptions{Threads: 2})
			if (ea == nil) != (eb == nil) || !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("file %d: reader over bytes.Reader (%v) and in memory (%v) differ", i, ea, eb)
			}
		}
		// each tensor decodes the blocks that hold it; a small index can
		// list thousands of tensors in one large block
		for _, tn := range fi.Tensors {
			n := tensorBlockBytes(fi, tn)
			if tb -= n; tb < 0 {
				break
			}
			decoded += n
			got, err := rd.readTensor(i, tn)
			if ea == nil && (err != nil || !bytes.Equal(got, a.Bytes()[tn.Offset:tn.Offset+tn.Length])) {
				t.Fatalf("file %d decodes, but its tensor %q [%d,+%d) reads as %d other bytes (%v)", i, tn.Name, tn.Offset, tn.Length, len(got), err)
			}
		}
	}
	return decoded
}

// The fuzz targets decode at most twice their budget of output however
// much the index describes, and still decode what fits of large files.
func TestFuzzBudget(t *testing.T) {
	for k, arc := range bigOutputSeeds(t) {
		rd, err := NewMemReader(arc)
		if err != nil {
			t.Fatal(err)
		}
		f := rd.Files()[0]
		var all int64 // what the targets decoded before: the file and each tensor alone
		for _, tn := range f.Tensors {
			all += tensorBlockBytes(f, tn)
		}
		budget := fuzzBudget(len(arc))
		got := fuzzCheckFiles(t, rd, rd, budget)
		t.Logf("%d bytes, %d blocks: %d bytes decoded of %d (budget %d)", len(arc), len(f.blocks), got, f.Size+all, budget)
		if k == 0 && f.Size+all < 1000*budget || got > 2*budget {
			t.Fatalf("archive %d decodes %d bytes, want at most %d", k, got, 2*budget)
		}
		if k == 1 && got < budget/2 {
			t.Fatalf("archive %d of small blocks: %d bytes decoded, want most of %d", k, got, budget)
		}
	}
}

// fuzzCheckBlocks decodes the blocks of file fi that fit in budget (each
// checked against its CRC-32C) with rd and mr, which must agree, and
// returns the bytes decoded.
func fuzzCheckBlocks(t *testing.T, rd, mr *Reader, fi int, budget int64) int64 {
	var used int64
	f := rd.Files()[fi]
	for bi, b := range f.blocks {
		if b.origLen > budget-used {
			continue
		}
		used += b.origLen
		x := make([]byte, b.origLen)
		ex := rd.DecodeBlock(fi, bi, x)
		if mr != nil {
			y := make([]byte, b.origLen)
			ey := mr.DecodeBlock(fi, bi, y)
			if (ex == nil) != (ey == nil) || ex == nil && !bytes.Equal(x, y) {
				t.Fatalf("file %d block %d: reader over bytes.Reader (%v) and in memory (%v) differ", fi, bi, ex, ey)
			}
		}
	}
	return used
}

// tensorBlockBytes is the size of the blocks that hold tensor tn of f: what
// reading it alone decodes.
func tensorBlockBytes(f *FileInfo, tn TensorInfo) int64 {
	if tn.Length == 0 {
		return 0
	}
	var n int64
	i := sort.Search(len(f.blocks), func(i int) bool { return f.blocks[i].origOff+f.blocks[i].origLen > tn.Offset })
	for ; i < len(f.blocks) && f.blocks[i].origOff < tn.Offset+tn.Length; i++ {
		n += f.blocks[i].origLen
	}
	return n
}

// FuzzBlock decodes arbitrary payloads as every block kind and dtype,
// bypassing the index and its checksum, and reads their programs
// (BlockProgram: no panic; a payload that decodes has one whose parts
// add up).
func FuzzBlock(f *testing.F) {
	be := &blockEncoder{}
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E5M2} {
		v := realisticValues(d, 2500, 2)
		f.Add(be.encodeFloat(nil, v, d), byte(d), uint16(len(v)))
	}
	// a planes-form block with zstd streams (format version 9)
	be.zstdPlanes, _ = zstdEncoder(zstdPlanesLevel)
	lz := hannBasis(64)[:4*4000]
	f.Add(be.encodeLZPlanes(nil, lz, 4), byte(dtype.F32), uint16(4000))
	f.Fuzz(func(t *testing.T, payload []byte, d byte, n uint16) {
		bd := &blockDecoder{}
		bd.st.lz = true
		dt := dtype.DType(d)
		if floatType(dt) != dt || dt == dtype.Invalid {
			return
		}
		dst := make([]byte, int(n)*dt.Size())
		err := bd.decode(dst, payload, kindFloat, dt)
		fuzzProgram(t, payload, KindFloat, dt, len(dst), err == nil)
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
		arc, err := CompressBytes(context.Background(), data, segs, EncodeOptions{ChunkValues: c, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecompressBytes(context.Background(), arc, DecodeOptions{})
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("roundtrip failed: %v", err)
		}
	})
}
