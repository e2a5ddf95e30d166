package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// quantRecords makes n records of s with integer arithmetic only: every
// byte two nibbles of a triangular distribution around 8 (quants near
// the middle of their range), the bytes of f16 scales small exponents.
func quantRecords(s *prog.Schema, n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 11))
	out := make([]byte, n*s.Bytes)
	for i := range out {
		a := (r.IntN(16) + r.IntN(16) + 1) / 2
		b := (r.IntN(16) + r.IntN(16) + 1) / 2
		out[i] = byte(a | b<<4)
	}
	return out
}

// recordsInput is a GGUF-like file: a header, quantised tensors of
// several types (two adjacent ones of the same type, which share a
// block), one whose last record is cut short (the opaque path), a tiny
// one, an empty one and an F32 tensor.
func recordsInput() ([]byte, []Segment) {
	src := bytes.Repeat([]byte("GGUF header "), 6)
	segs := []Segment{{Length: int64(len(src))}}
	add := func(name, typ string, b []byte) {
		segs = append(segs, Segment{Name: name, Type: typ, Shape: []int64{int64(len(b))}, Offset: int64(len(src)), Length: int64(len(b))})
		src = append(src, b...)
	}
	add("blk.0.q", "Q4_0", quantRecords(prog.ByName("Q4_0"), 64, 1))
	add("blk.0.k", "Q4_0", quantRecords(prog.ByName("Q4_0"), 40, 2))
	add("blk.0.v", "Q8_0", quantRecords(prog.ByName("Q8_0"), 40, 3))
	add("blk.0.o", "Q6_K", quantRecords(prog.ByName("Q6_K"), 12, 4))
	add("blk.0.up", "Q4_K", quantRecords(prog.ByName("Q4_K"), 12, 5))
	add("blk.0.down", "Q5_0", quantRecords(prog.ByName("Q5_0"), 30, 6)[:30*22-5])
	add("blk.0.tiny", "Q4_0", quantRecords(prog.ByName("Q4_0"), 2, 7))
	add("blk.0.empty", "Q8_0", nil)
	f := goldenValues(dtype.F32, 300, 8)
	segs = append(segs, Segment{Name: "blk.0.norm", DType: dtype.F32, Shape: []int64{300}, Offset: int64(len(src)), Length: int64(len(f))})
	src = append(src, f...)
	return src, segs
}

// TestRecordsRoundTrip: the GGUF-like input codes its quantised tensors
// as records blocks (not the cut or tiny ones) in an archive of version
// 11 at every thread count, the same archive each time, smaller than the
// opaque path would make it.
func TestRecordsRoundTrip(t *testing.T) {
	src, segs := recordsInput()
	arc := roundTrip(t, src, segs, EncodeOptions{Threads: 1})
	if v := binary.LittleEndian.Uint16(arc[8:]); v != recordsVersion {
		t.Fatalf("archive of version %d, want %d", v, recordsVersion)
	}
	c := censusOf(t, arc)
	// blk.0.q and .k share a block; .v, .o, .up one each
	if c.Records != 4 {
		t.Fatalf("%d records blocks, want 4", c.Records)
	}
	for _, th := range []int{2, 3} {
		if a := roundTrip(t, src, segs, EncodeOptions{Threads: th}); !bytes.Equal(a, arc) {
			t.Fatalf("%d threads: another archive", th)
		}
	}
	plain := make([]Segment, len(segs))
	for i, g := range segs {
		plain[i] = g
		plain[i].Type = ""
	}
	opaque := roundTrip(t, src, plain, EncodeOptions{Threads: 1})
	if len(arc) >= len(opaque) {
		t.Fatalf("records archive %d bytes, opaque %d", len(arc), len(opaque))
	}
	if v := binary.LittleEndian.Uint16(opaque[8:]); v == recordsVersion {
		t.Fatalf("an archive without records blocks of version %d", v)
	}
	// a tensor read back by name
	rd, err := NewMemReader(arc)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := rd.Tensor("blk.0.k")
	if err != nil || !bytes.Equal(got, src[segs[2].Offset:segs[2].Offset+segs[2].Length]) {
		t.Fatalf("Tensor(blk.0.k): %v", err)
	}
}

// TestRecordsPlan: whole tensors of a known layout become records blocks
// of at most BlockRecords records, small adjacent ones of one type
// share a block, and a cut or unknown or tiny tensor stays opaque.
func TestRecordsPlan(t *testing.T) {
	q6 := prog.ByName("Q6_K")
	big := int64(q6.BlockRecords()*q6.Bytes)*2 + 210
	segs := []Segment{
		{Name: "a", Type: "Q6_K", Offset: 0, Length: big},
		{Name: "b", Type: "Q6_K", Offset: big, Length: 2100},
		{Name: "c", Type: "Q6_K", Offset: big + 2100, Length: 2100},
		{Name: "d", Type: "Q6_K", Offset: big + 4200, Length: 2101},
		{Name: "e", Type: "Q9_9", Offset: big + 6301, Length: 2100},
	}
	plans, err := planBlocks(segs, big+8401, DefaultChunkValues, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rec []int64
	for _, p := range plans {
		if p.rec != nil {
			rec = append(rec, p.length)
		} else if p.off < big+4200 {
			t.Fatalf("opaque block at %d", p.off)
		}
	}
	third := (big / 210 / 3) * 210
	if len(rec) != 4 || rec[0] != third+210 || rec[3] != 4200 {
		t.Fatalf("records blocks %v", rec)
	}
}

// TestGoldenRecords: the golden archive of version 11 decodes to its
// input, holds records blocks, and the encoder still writes it byte for
// byte.
func TestGoldenRecords(t *testing.T) {
	path := filepath.Join("testdata", "golden-records-v11.nzip")
	src, segs := recordsInput()
	arc := roundTrip(t, src, segs, EncodeOptions{Threads: 2})
	golden := checkGolden(t, path, arc, src, recordsVersion)
	if c := censusOf(t, golden); c.Records == 0 {
		t.Fatalf("golden archive holds no records blocks: %+v", c)
	}
}

// xz9 is `xz -9`'s ratio on some of the quantised files (their README).
var xz9 = map[string]float64{
	"real-f32.Q4_K.gguf": 1.096, "real-f32.Q6_K.gguf": 1.097, "real-f32.mixed.gguf": 1.095,
	"stories260K-base.Q4_0.gguf": 1.106, "stories260K-base.Q8_0.gguf": 1.097, "stories260K-base.Q5_1.gguf": 1.088,
	"stories260K-ft-fortunes-full.IQ4_NL.gguf": 1.095, "stories260K-ft-fortunes-full.mixed.gguf": 1.097,
}

// TestRecordsReal: the real quantised GGUF files round-trip, with records
// blocks, and code smaller than xz -9 does.
func TestRecordsReal(t *testing.T) {
	for name, xz := range xz9 {
		src := realFile(t, filepath.Join("models", "quantized", name))
		l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
		if err != nil {
			t.Fatal(err)
		}
		segs := l.Segments
		arc := roundTrip(t, src, segs, EncodeOptions{})
		c := censusOf(t, arc)
		if c.Records == 0 {
			t.Errorf("%s: no records blocks", name)
		}
		// the records blocks against the order-0 bound of their tensors'
		// fields (prog.Bound, per tensor)
		var coded int64
		var bound float64
		rd, err := NewMemReader(arc)
		if err != nil {
			t.Fatal(err)
		}
		var qb int64
		blocks := rd.Files()[0].Blocks()
		for _, g := range segs {
			s := recordSchema(g)
			if s == nil {
				continue
			}
			bound += prog.Bound(src[g.Offset:g.Offset+g.Length], s) / 8
			qb += g.Length
			// the blocks of a records tensor hold it alone (or with
			// the small tensors of its type after it)
			for _, b := range blocks {
				if b.Offset == g.Offset {
					coded += b.Compressed
				}
			}
		}
		r := float64(len(src)) / float64(len(arc))
		t.Logf("%s: %d → %d bytes, %.4f (xz -9 %.3f); quantised tensors: %d bytes (%d in records blocks) → %d, order-0 field bound %.0f (%+.2f %%)", name, len(src), len(arc), r, xz, qb, c.RecordsBytes, coded, bound, 100*(float64(coded)/bound-1))
		if float64(coded) > 1.02*bound {
			t.Errorf("%s: quantised tensors coded to %d bytes, more than 2 %% over their fields' bound %.0f", name, coded, bound)
		}
		if r <= xz {
			t.Errorf("%s: ratio %.4f, xz -9 %.3f", name, r, xz)
		}
	}
}

// BenchmarkRecordsFile: a real GGUF file through Encode and decoding on
// one thread (NZ_GGUF names it in ../shared/models/quantized).
func BenchmarkRecordsFile(b *testing.B) {
	name := os.Getenv("NZ_GGUF")
	if name == "" {
		name = "real-f32.mixed.gguf"
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "shared", "models", "quantized", name))
	if err != nil {
		b.Skip(err)
	}
	l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		b.Fatal(err)
	}
	segs := l.Segments
	opt := EncodeOptions{Threads: 1}
	arc, err := CompressBytes(context.Background(), src, segs, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if _, err := CompressBytes(context.Background(), src, segs, opt); err != nil {
				b.Fatal(err)
			}
		}
	})
	dst := make([]byte, len(src))
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if _, err := DecompressBytesTo(context.Background(), dst, arc, opt.Decoding()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRecordsRepeats: a tensor of repeated records (which zstd's matches
// take and field streams do not) is coded by the opaque path.
func TestRecordsRepeats(t *testing.T) {
	q8 := prog.ByName("Q8_0")
	rec := quantRecords(q8, 3, 9)
	src := bytes.Repeat(rec, 2000)
	segs := []Segment{{Name: "rep", Type: "Q8_0", Length: int64(len(src))}}
	arc := roundTrip(t, src, segs, EncodeOptions{})
	if c := censusOf(t, arc); c.Records != 0 || len(arc) > len(src)/20 {
		t.Fatalf("repeated records: %d records blocks, %d bytes of %d", c.Records, len(arc), len(src))
	}
}

// TestByteRecordsReal: the uint8 tensors of a real TF.js model (its
// loader's layout) become one-byte records blocks where those are
// smaller than zstd's, in an archive of version 12 that is smaller than
// zstd -3 of the weights file; the same bytes without a layout (opaque)
// hold no records block.
func TestByteRecordsReal(t *testing.T) {
	dir := filepath.Join(needShared(t), "models", "original", "handtrack")
	bin := realFile(t, filepath.Join("models", "original", "handtrack", "handtrack.bin"))
	m, err := checkpoint.OpenPath(filepath.Join(dir, "handtrack.json"))
	if err != nil {
		t.Fatal(err)
	}
	var segs []Segment
	u8 := 0
	for _, mf := range m.Files {
		if filepath.Base(mf.Path) != "handtrack.bin" {
			continue
		}
		for _, g := range mf.Layout.Segments {
			if g.DType == dtype.U8 && g.Length >= byteRecordsMinBytes {
				u8++
			}
			segs = append(segs, g)
		}
	}
	if u8 == 0 {
		t.Fatal("handtrack.bin: the loader names no uint8 tensor")
	}
	arc := roundTrip(t, bin, segs, EncodeOptions{Threads: 2})
	if v := binary.LittleEndian.Uint16(arc[8:]); v != byteRecordsVersion {
		t.Errorf("version %d, want %d", v, byteRecordsVersion)
	}
	c := censusOf(t, arc)
	z, err := zstdEncoder(3)
	if err != nil {
		t.Fatal(err)
	}
	zs := len(z.EncodeAll(bin, nil))
	if c.Records == 0 || len(arc) >= zs {
		t.Errorf("%d bytes: %d records blocks of %d uint8 tensors, archive %d, zstd -3 %d", len(bin), c.Records, u8, len(arc), zs)
	}
	if c := censusOf(t, roundTrip(t, bin, nil, EncodeOptions{Threads: 2})); c.Records != 0 {
		t.Errorf("opaque: %d records blocks", c.Records)
	}
	t.Logf("handtrack.bin %d bytes: %d with %d records blocks (%d uint8 tensors of >= %d bytes), zstd -3 %d", len(bin), len(arc), c.Records, u8, byteRecordsMinBytes, zs)
}
