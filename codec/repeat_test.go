package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// xz9Structured is `xz -9`'s archive of each structured table as a
// safetensors file alone (scripts/never-worse.sh, docs/programs.md).
var xz9Structured = map[string]int{"stft_256": 52176, "stft_512_win400": 157952, "dct_40x80": 3272}

// TestRepeatStructured: the windowed DFT bases and the DCT basis of the
// structured tables are repeat blocks (format version 13), round-trip,
// and code smaller than xz -9 codes their files.
func TestRepeatStructured(t *testing.T) {
	for _, x := range structuredTables() {
		xz, ok := xz9Structured[x.name]
		if !ok {
			continue
		}
		src, segs := refSafetensors([]refT{x})
		arc := roundTrip(t, src, segs, EncodeOptions{})
		if v := binary.LittleEndian.Uint16(arc[8:]); v != repeatVersion {
			t.Errorf("%s: archive of version %d", x.name, v)
		}
		if c := censusOf(t, arc); c.Repeat != 1 || c.RepeatBytes != int64(len(x.data)) {
			t.Errorf("%s: census %+v", x.name, c)
		}
		if len(arc) > xz {
			t.Errorf("%s: %d bytes, xz -9 %d", x.name, len(arc), xz)
		}
		t.Logf("%s: %d bytes (xz -9: %d)", x.name, len(arc), xz)
	}
}

// TestRepeatNotProbed: tensors without row repeats keep the archive's
// version and never pay for a repeat trial: trained-like weights, sparse
// activations (their zeros repeat, not their values), and a filterbank
// (its values repeat, but neither at the same column nor mirrored).
func TestRepeatNotProbed(t *testing.T) {
	src, segs := sparseGoldenInput()
	plans, err := planBlocks(segs, int64(len(src)), DefaultChunkValues, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := structuredTables()[0] // mel_80x201
	msrc, msegs := refSafetensors([]refT{x})
	mplans, err := planBlocks(msegs, int64(len(msrc)), DefaultChunkValues, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := realisticValues(dtype.F32, 64*512, 4)
	wplans := []blockPlan{{length: int64(len(w)), float: true, dtype: dtype.F32, tensorRow: 512}}
	for _, c := range []struct {
		name  string
		src   []byte
		plans []blockPlan
	}{{"sparse", src, plans}, {x.name, msrc, mplans}, {"weights", w, wplans}} {
		probeBlocks(bytes.NewReader(c.src), c.plans)
		for _, p := range c.plans {
			if p.repeatTry {
				t.Errorf("%s: a block at %d tries a repeat block", c.name, p.off)
			}
		}
	}
	// 16-bit bases are not marked: the word probe reads 16-bit values in
	// pairs (fours in tensors with zeros), which a DFT basis seldom
	// repeats (the operator takes them: TestRepeatBlockEdges)
	bf := hannBasis(128)
	b16 := make([]byte, 0, len(bf)/2)
	for i := 0; i < len(bf); i += 4 {
		b16 = append(b16, bf[i+2], bf[i+3])
	}
	bplans := []blockPlan{{length: int64(len(b16)), float: true, dtype: dtype.BF16, tensorRow: 128}}
	probeBlocks(bytes.NewReader(b16), bplans)
	if bplans[0].repeatTry {
		t.Error("a BF16 DFT basis is tried as a repeat block")
	}
}

// repeatInput is the golden repeat archive's input: a Hann-windowed
// 64-point DFT basis, the 40×80 DCT basis (repeat blocks), the basis cut
// to BF16 (float blocks: not probed) and a small weight matrix.
func repeatInput() ([]byte, []Segment) {
	basis := hannBasis(64)
	b16 := make([]byte, 0, len(basis)/2)
	for i := 0; i < len(basis); i += 4 {
		b16 = append(b16, basis[i+2], basis[i+3])
	}
	return safetensorsFile(`{"source":"neuralzip codec/repeat_test.go"}`, []refT{
		{"stft.weight", dtype.F32, []int64{66, 1, 64}, basis},
		{"dct", dtype.F32, []int64{40, 80}, dctBasis(40, 80)},
		{"stft.bf16", dtype.BF16, []int64{66, 64}, b16},
		{"proj.weight", dtype.F32, []int64{16, 128}, goldenValues(dtype.F32, 16*128, 9)},
	})
}

// TestGoldenRepeat pins format version 13's repeat blocks as TestGolden
// pins the rest: the golden archive decodes to the input, holds repeat
// blocks, and the encoder writes it byte for byte (regenerate with
// -update after a deliberate change).
func TestGoldenRepeat(t *testing.T) {
	path := filepath.Join("testdata", "golden-repeat-v13.nzip")
	src, segs := repeatInput()
	arc := roundTrip(t, src, segs, EncodeOptions{Threads: 2})
	golden := checkGolden(t, path, arc, src, repeatVersion)
	if c := censusOf(t, golden); c.Repeat < 2 {
		t.Fatalf("golden archive holds %d repeat blocks: %+v", c.Repeat, c)
	}
}

// TestRepeatBlockEdges: the codec's repeat block round-trips any words —
// NaN payloads, ±0, ±Inf, subnormals, words equal to their mirror up to
// the sign bit — of every type it takes, in rows of 1, odd or 2^k words,
// including blocks with no literal at all; a damaged payload is an
// error, never a panic.
func TestRepeatBlockEdges(t *testing.T) {
	be := &blockEncoder{}
	bd := &blockDecoder{}
	edges := map[int][]uint32{
		4: {0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00001, 0xffc12345, 0x7f800001, 1, 0x80000001},
		2: {0, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0xfe23, 0x7f81, 1, 0x8001},
	}
	for _, d := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		size := d.Size()
		for _, sh := range [][2]int{{2, 1}, {5, 3}, {66, 64}, {9, 257}, {300, 2}} {
			rows, cols := sh[0], sh[1]
			basis := hannBasis(64)
			in := make([]byte, 0, rows*cols*size)
			e := edges[size]
			for i := 0; i < rows*cols; i++ {
				r, c := i/cols, i%cols
				v := binary.LittleEndian.Uint32(basis[4*((r%66)*64+c%64):])
				if size == 2 {
					v >>= 16
				}
				switch i % 13 {
				case 3:
					v = e[i%len(e)]
				case 7:
					v ^= 1 << (8*size - 1)
				}
				if size == 4 {
					in = binary.LittleEndian.AppendUint32(in, v)
				} else {
					in = binary.LittleEndian.AppendUint16(in, uint16(v))
				}
			}
			p := blockPlan{length: int64(len(in)), float: true, dtype: d, tensorRow: int64(cols)}
			if !repeatType(d, p.tensorRow, p.length) {
				t.Fatalf("%v %d×%d: not a repeat type", d, rows, cols)
			}
			payload := be.encodeRepeat(nil, in, p)
			out := make([]byte, len(in))
			if err := bd.decode(out, payload, kindRepeat, 0); err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%v %d×%d: round trip: %v", d, rows, cols, err)
			}
			nd, err := BlockProgram(BlockInfo{Kind: KindRepeat, Length: int64(len(in)), Compressed: int64(len(payload))}, payload)
			if err != nil || nd.Bytes != int64(len(payload)) {
				t.Fatalf("%v %d×%d: program %+v: %v", d, rows, cols, nd, err)
			}
			checkProgram(t, nd, "")
			for k := 0; k < len(payload); k += 1 + len(payload)/64 {
				q := append([]byte(nil), payload...)
				q[k] ^= 0xa5
				_ = bd.decode(out, q, kindRepeat, 0) // an error or other words, never a panic
				if err := bd.decode(out, payload[:k], kindRepeat, 0); err == nil && !bytes.Equal(out, in) {
					t.Fatalf("%v %d×%d: a payload cut to %d bytes decodes to other words", d, rows, cols, k)
				}
			}
		}
	}
	// a block of one repeated word: one literal
	same := bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 40*10)
	payload := be.encodeRepeat(nil, same, blockPlan{length: int64(len(same)), dtype: dtype.F32, tensorRow: 10})
	out := make([]byte, len(same))
	if err := bd.decode(out, payload, kindRepeat, 0); err != nil || !bytes.Equal(out, same) {
		t.Fatalf("a constant block: %v", err)
	}
	// a block that names a type the operator does not take
	if err := bd.decode(out, append([]byte{byte(dtype.F64)}, payload[1:]...), kindRepeat, 0); err == nil {
		t.Error("a repeat block of F64 decoded")
	}
	// the header is checked against the block's words
	if err := bd.decode(out[:len(out)-4], payload, kindRepeat, 0); err == nil {
		t.Error("a repeat block decoded into fewer words")
	}
	if !errors.Is(func() error { _, _, err := prog.ReadRepeatHeader([]byte{0}, 4); return err }(), prog.ErrRepeat) {
		t.Error("rows of 0 words were read")
	}
}

// FuzzRepeatBlock decodes arbitrary payloads as repeat blocks of a given
// length, bypassing the index and its checksum, and reads their programs
// (BlockProgram: no panic; a payload that decodes has one whose parts add
// up). Seeds: the blocks of the golden repeat input's tensors.
func FuzzRepeatBlock(f *testing.F) {
	be := &blockEncoder{}
	src, segs := repeatInput()
	for _, g := range segs {
		if !g.IsTensor() || g.DType.Size() < 2 {
			continue
		}
		p := blockPlan{length: g.Length, float: true, dtype: g.DType, tensorRow: g.Shape[len(g.Shape)-1]}
		f.Add(be.encodeRepeat(nil, src[g.Offset:g.Offset+g.Length], p), uint32(g.Length))
	}
	f.Fuzz(func(t *testing.T, payload []byte, n uint32) {
		if int64(n) > int64(fuzzBudget(len(payload))) {
			return
		}
		bd := &blockDecoder{}
		dst := make([]byte, n)
		err := bd.decode(dst, payload, kindRepeat, 0)
		fuzzProgram(t, payload, KindRepeat, 0, len(dst), err == nil)
	})
}

// TestRepeatNeedsVersion13: an archive of an earlier version that names a
// repeat block is refused when its index is read, before any decoding.
func TestRepeatNeedsVersion13(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "golden-repeat-v13.nzip"))
	if err != nil {
		t.Fatal(err)
	}
	old := append([]byte(nil), golden...)
	binary.LittleEndian.PutUint16(old[8:], byteRecordsVersion)
	if _, err := NewMemReader(old); err == nil || !strings.Contains(err.Error(), "unknown kind 7") {
		t.Fatalf("a version-12 archive with repeat blocks: %v", err)
	}
}
