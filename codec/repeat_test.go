package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// xz9Structured is `xz -9`'s archive of each structured table as a
// safetensors file alone (scripts/never-worse.sh, docs/programs.md).
var xz9Structured = map[string]int{
	"stft_256": 52176, "stft_512_win400": 157952, "dct_40x80": 3272,
	"stft_256_bf16": 43552, "stft_256_f16": 53004, "stft_512_win400_bf16": 136820,
	"stft_512_win400_f16": 169648, "dct_40x80_bf16": 2956, "dct_40x80_f16": 3512,
}

// TestRepeatStructured: the windowed DFT bases and the DCT basis of the
// structured tables, in F32, BF16 and F16, are repeat blocks (format
// version 13), round-trip, and code smaller than xz -9 codes their files;
// the 16-bit DFT bases only under Best (the row probe).
func TestRepeatStructured(t *testing.T) {
	for _, x := range structuredTables() {
		xz, ok := xz9Structured[x.name]
		if !ok {
			continue
		}
		src, segs := refSafetensors([]refT{x})
		// 16-bit tables whose value pairs do not repeat (the DFT bases)
		// are found by the row probe, which only Best runs
		rowProbed := x.d.Size() == 2 && strings.HasPrefix(x.name, "stft")
		if rowProbed {
			def := roundTrip(t, src, segs, EncodeOptions{})
			if c := censusOf(t, def); c.Repeat != 0 {
				t.Errorf("%s: a repeat block on the default path: %+v", x.name, c)
			}
		}
		arc := roundTrip(t, src, segs, EncodeOptions{Best: rowProbed})
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
// version and never pay for a repeat trial: trained-like weights in F32,
// BF16 and F16, sparse activations (their zeros repeat, not their
// values), a filterbank (its values repeat, but neither at the same
// column nor mirrored), and, outside -short, the real 16-bit weights and
// activations of ../shared (where present), of which only STFT bases
// (silero_vad_16k's, in real-bf16 and real-f16) are tried, and only by
// the row probe (Best).
func TestRepeatNotProbed(t *testing.T) {
	type input struct {
		name string
		src  []byte
		segs []Segment
	}
	src, segs := sparseGoldenInput()
	ins := []input{{"sparse", src, segs}}
	x := structuredTables()[0] // mel_80x201
	msrc, msegs := refSafetensors([]refT{x})
	ins = append(ins, input{x.name, msrc, msegs})
	for _, d := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
		wsrc, wsegs := refSafetensors([]refT{{"w", d, []int64{64, 512}, realisticValues(d, 64*512, 4)}})
		ins = append(ins, input{"weights " + d.String(), wsrc, wsegs})
	}
	if d := sharedDir(); d != "" && !testing.Short() {
		for _, f := range []string{"models/bench/real-bf16.safetensors", "models/bench/real-f16.safetensors", "models/bench/real-f16-native.safetensors",
			"models/original/stories260K.bf16.safetensors", "models/original/stories260K.f16.safetensors",
			"activations/relu2-step000.bf16.safetensors", "activations/relu2-step800.bf16.safetensors"} {
			m, err := checkpoint.OpenPath(filepath.Join(d, f))
			if err != nil {
				t.Logf("%s: %v (skipped)", f, err)
				continue
			}
			for _, mf := range m.Files {
				b, err := os.ReadFile(mf.Path)
				if err != nil {
					t.Fatal(err)
				}
				ins = append(ins, input{f, b, mf.Layout.Segments})
			}
		}
	}
	for _, c := range ins {
		for _, rowProbe := range []bool{false, true} { // the default path, Best
			plans, err := planBlocks(c.segs, int64(len(c.src)), DefaultChunkValues, nil)
			if err != nil {
				t.Fatal(err)
			}
			probeBlocks(bytes.NewReader(c.src), plans, rowProbe)
			for _, p := range plans {
				if !p.repeatTry {
					continue
				}
				name := ""
				for _, g := range c.segs {
					if g.Offset <= p.off && p.off < g.End() {
						name = g.Name
					}
				}
				if !rowProbe && p.dtype.Size() == 2 || !strings.Contains(name, "stft") {
					t.Errorf("%s (row probe %v): a block at %d (tensor %q) tries a repeat block", c.name, rowProbe, p.off, name)
				}
			}
		}
	}
}

// repeatInput is the golden repeat archive's input: a Hann-windowed
// 64-point DFT basis, the 40×80 DCT basis (repeat blocks), the basis cut
// to BF16 (float blocks on the default path, which does not run the row
// probe) and a small weight matrix.
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

// TestRepeatRowFirst: the row probe's first look (four words at a time)
// counts what a word-by-word count of the same words does, on spans of
// every length and centre, with mirrored words planted up to the sign
// bit, zeros and unrelated words.
func TestRepeatRowFirst(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[bool]int{}
	for trial := 0; trial < 3000; trial++ {
		span := int64(1 + r.IntN(64))
		mid := span - int64(r.IntN(3)) + 1 // cols odd or even, span a whole row or not
		b := make([]byte, 2*span)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		word := func(i int64) uint16 { return binary.LittleEndian.Uint16(b[2*i:]) }
		plant := r.IntN(16) // how often a word is its mirror's
		for i := int64(0); i < span; i++ {
			switch k := r.IntN(32); {
			case k == 0:
				binary.LittleEndian.PutUint16(b[2*i:], uint16(r.IntN(2))<<15) // ±0
			case k <= plant && mid-1-i >= 0 && mid-1-i < span:
				binary.LittleEndian.PutUint16(b[2*i:], word(mid-1-i)^uint16(r.IntN(2))<<15)
			case k == plant+1 && mid-i >= 0 && mid-i < span:
				binary.LittleEndian.PutUint16(b[2*i:], word(mid-i))
			}
		}
		first := max(0, mid-span+1)
		want := true
		if 2*(first+15)+2 < mid {
			nz, match := 0, 0
			for i := first; i < first+16; i++ {
				a := word(i) & 0x7fff
				if a == 0 {
					continue
				}
				nz++
				if word(mid-i)&0x7fff == a || word(mid-1-i)&0x7fff == a {
					match++
				}
			}
			want = nz < 8 || repeatRowShare*match >= nz
		}
		if got := repeatRowFirst(b, mid); got != want {
			t.Fatalf("span %d, mid %d: %v, word by word %v", span, mid, got, want)
		}
		seen[want]++
	}
	if seen[false] < 100 || seen[true] < 100 {
		t.Fatalf("outcomes %v: the spans test too little", seen)
	}
}
