package prog

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/dtype"
)

var updateSeeds = flag.Bool("update", false, "rewrite testdata/fuzz/FuzzRecords from the real files and testdata/fuzz/FuzzRepeat")

// fuzzBudget bounds the bytes one input may decode to (as in package
// codec: 64 KiB + 8 per input byte), so that a short payload naming many
// records does not hold the fuzzer.
func fuzzBudget(in int) int { return 64<<10 + 8*in }

// FuzzRecords: any payload and record count decode to an error or to
// records, never a panic; Layout reads any payload without a panic, and
// every payload that decodes, with its streams end to end; records that
// decode code again to a payload that decodes to them. The committed seeds (testdata/fuzz/FuzzRecords)
// are a few records of every type in the real GGUF files and 64 bytes
// of a real TF.js uint8 tensor
// (TestFuzzSeeds -update writes them).
func FuzzRecords(f *testing.F) {
	for _, s := range Schemas() {
		var e Encoder
		f.Add(e.Append(nil, quantLike(s, 6, 1), s), uint16(6))
	}
	f.Fuzz(func(t *testing.T, c []byte, n uint16) {
		s := Type(c)
		if s == nil || int(n)*s.Bytes > fuzzBudget(len(c)) {
			return
		}
		var d Decoder
		dst := make([]byte, int(n)*s.Bytes)
		_, ls, lerr := Layout(c, len(dst))
		if err := d.Decode(dst, c); err != nil {
			return
		}
		// what decodes, Layout reads, its streams tiling the payload
		if lerr != nil {
			t.Fatalf("decodes, but Layout: %v", lerr)
		}
		pos := 1
		for _, l := range ls {
			if l.Start != pos || l.End <= l.Start {
				t.Fatalf("stream %s at %d..%d, want from %d", l.Field.Name, l.Start, l.End, pos)
			}
			pos = l.End
		}
		if pos != len(c) {
			t.Fatalf("streams end at %d of %d", pos, len(c))
		}
		var e Encoder
		back := make([]byte, len(dst))
		if err := d.Decode(back, e.Append(nil, dst, s)); err != nil || !bytes.Equal(back, dst) {
			t.Fatalf("decoded records do not round-trip: %v", err)
		}
	})
}

// TestFuzzSeeds writes FuzzRecords' committed seeds with -update: the
// payload of the first 8 records of the first tensor of each type found
// in the real files.
func TestFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("writes seeds only with -update")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRecords")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	done := map[*Schema]bool{}
	for _, name := range []string{"real-f32.mixed.gguf", "stories260K-base.Q4_0.gguf", "stories260K-base.Q4_1.gguf", "stories260K-base.Q5_1.gguf", "stories260K-base.IQ4_NL.gguf"} {
		data, segs := realTensors(t, name)
		for _, g := range segs {
			s := ByName(g.Type)
			if done[s] {
				continue
			}
			done[s] = true
			n := min(8, int(g.Length)/s.Bytes)
			var e Encoder
			c := e.Append(nil, data[g.Offset:g.Offset+int64(n*s.Bytes)], s)
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(%d)\n", c, n)
			if err := os.WriteFile(filepath.Join(dir, "real-"+s.Name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// I8: 64 bytes of the first uint8 tensor of a real TF.js model (as the
	// codec plans tensors of at least 4 KiB, but any length decodes)
	m, err := checkpoint.OpenPath(filepath.Join(shared, "..", "original", "handtrack", "handtrack.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range m.Files {
		for _, g := range mf.Layout.Segments {
			if g.DType != dtype.U8 || g.Length < 64 {
				continue
			}
			data, err := os.ReadFile(mf.Path)
			if err != nil {
				t.Fatal(err)
			}
			var e Encoder
			c := e.Append(nil, data[g.Offset:g.Offset+64], ByName("I8"))
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(%d)\n", c, 64)
			if err := os.WriteFile(filepath.Join(dir, "real-I8"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("handtrack: no uint8 tensor")
}

// repeatSeeds are FuzzRepeat's seeds: payloads of rows of the structured
// tables of codec/neverworse_test.go (the first rows of the Hann-windowed
// 256-point DFT basis, of a 32-point one under a window of 24, of the
// 40×80 DCT basis, and the 32-point basis cut to BF16), each followed by
// its literals as raw words.
func repeatSeeds() (seeds [][]byte, words []uint16, widths []byte) {
	bf := hannDFT(32, 24)
	bf16 := make([]byte, 0, len(bf)/2)
	for i := 0; i < len(bf); i += 4 {
		bf16 = append(bf16, bf[i+2], bf[i+3])
	}
	for _, c := range []struct {
		b           []byte
		cols, width int
	}{
		{hannDFT(256, 256)[:4*6*256], 256, 4},
		{hannDFT(32, 24), 32, 4},
		{dct(40, 80)[:4*10*80], 80, 4},
		{bf16, 32, 2},
	} {
		var e RepeatEncoder
		p, lits := e.Append(nil, c.b, c.cols, c.width)
		seeds = append(seeds, append(p, lits...))
		words = append(words, uint16(len(c.b)/c.width))
		widths = append(widths, byte(c.width))
	}
	return
}

// FuzzRepeat: any payload, word count and width decode (the literals: the
// bytes after the stream, or zeros where they are not as many as the
// header says) to an error or to words, never a panic nor more work than
// the words; words that decode code again to a payload that decodes to
// them. The committed seeds (testdata/fuzz/FuzzRepeat, TestRepeatFuzzSeeds
// -update) are repeatSeeds.
func FuzzRepeat(f *testing.F) {
	s, n, w := repeatSeeds()
	for i := range s {
		f.Add(s[i], n[i], w[i])
	}
	f.Fuzz(func(t *testing.T, c []byte, n uint16, w byte) {
		width := int(w)
		if width != 2 && width != 4 || int(n)*width > fuzzBudget(len(c)) {
			return
		}
		h, rest, err := ReadRepeatHeader(c, int(n))
		if err != nil {
			return
		}
		lits := rest
		if len(lits) != h.Lits*width {
			lits = make([]byte, h.Lits*width)
		}
		var d RepeatDecoder
		dst := make([]byte, int(n)*width)
		if err := d.Decode(dst, h, lits, width); err != nil {
			if !errors.Is(err, ErrRepeat) {
				t.Fatalf("error %v is not ErrRepeat", err)
			}
			return
		}
		var e RepeatEncoder
		p, l := e.Append(nil, dst, h.Cols, width)
		h2, _, err := ReadRepeatHeader(p, int(n))
		if err != nil {
			t.Fatal(err)
		}
		back := make([]byte, len(dst))
		if err := d.Decode(back, h2, l, width); err != nil || !bytes.Equal(back, dst) {
			t.Fatalf("decoded words do not round-trip: %v", err)
		}
	})
}

// TestRepeatFuzzSeeds writes FuzzRepeat's committed seeds with -update.
func TestRepeatFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("writes seeds only with -update")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRepeat")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, n, w := repeatSeeds()
	for i, name := range []string{"stft_256-rows", "stft_32_win24", "dct_40x80-rows", "stft_32_win24-bf16"} {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(%d)\nbyte(%d)\n", s[i], n[i], w[i])
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
