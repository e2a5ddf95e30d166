package prog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"neuralzip/internal/formula"
)

func repeatRoundTrip(t *testing.T, src []byte, cols, width int) (payload, lits []byte) {
	t.Helper()
	var e RepeatEncoder
	payload, lits = e.Append(nil, src, cols, width)
	lits = append([]byte(nil), lits...)
	h, rest, err := ReadRepeatHeader(payload, len(src)/width)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes after the stream", len(rest))
	}
	var d RepeatDecoder
	got := make([]byte, len(src))
	if err := d.Decode(got, h, lits, width); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("repeat round trip differs")
	}
	return payload, lits
}

// TestRepeatStructured: the windowed DFT bases and the DCT basis, in F32
// and rounded to BF16 and F16, round-trip, and most of their words are
// sources' (at most a fifth literals).
func TestRepeatStructured(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		cols int
	}{
		{"stft_256", hannDFT(256, 256), 256},
		{"stft_512_win400", hannDFT(512, 400), 512},
		{"dct_40x80", dct(40, 80), 80},
	} {
		for _, w := range []struct {
			name  string
			b     []byte
			width int
		}{{"F32", c.b, 4}, {"BF16", formula.BF16(c.b), 2}, {"F16", formula.F16(c.b), 2}} {
			p, l := repeatRoundTrip(t, w.b, c.cols, w.width)
			share := float64(len(l)) / float64(len(w.b))
			if share > 0.2 {
				t.Errorf("%s %s: %.1f %% literals", c.name, w.name, 100*share)
			}
			t.Logf("%s %s: %d words, stream %d bytes, %d literals (%.1f %%)", c.name, w.name, len(w.b)/w.width, len(p), len(l)/w.width, 100*share)
		}
	}
}

// BenchmarkRepeat codes and decodes the windowed 512-point DFT basis
// (the literals kept apart, as the codec's float coder takes them).
func BenchmarkRepeat(b *testing.B) {
	src := hannDFT(512, 400)
	b.Run("encode", func(b *testing.B) {
		var e RepeatEncoder
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			e.Append(nil, src, 512, 4)
		}
	})
	b.Run("decode", func(b *testing.B) {
		var e RepeatEncoder
		p, lits := e.Append(nil, src, 512, 4)
		h, _, err := ReadRepeatHeader(p, len(src)/4)
		if err != nil {
			b.Fatal(err)
		}
		var d RepeatDecoder
		dst := make([]byte, len(src))
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if err := d.Decode(dst, h, lits, 4); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// edgeWords is n words of width bytes: a windowed DFT row pattern
// broken by the values a decoder must keep bit for bit — ±0, ±Inf,
// NaNs with payloads and either sign, subnormals — and by words that
// equal their mirror or another row's only up to the sign bit.
func edgeWords(n, cols, width int, seed uint64) []byte {
	x := seed
	next := func() uint64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	base := hannDFT(64, 48)
	var edge []uint32
	if width == 4 {
		edge = []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00001, 0xffc12345, 0x7f800001, 1, 0x80000001}
	} else {
		edge = []uint32{0, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0xfe23, 0x7f81, 1, 0x8001}
	}
	out := make([]byte, 0, n*width)
	for i := 0; i < n; i++ {
		r, c := i/cols, i%cols
		v := binary.LittleEndian.Uint32(base[4*((r%66)*64+c%64):])
		if width == 2 {
			v >>= 16
		}
		switch k := next() % 16; {
		case k == 0:
			v = edge[next()%uint64(len(edge))]
		case k == 1:
			v ^= 1 << (8*width - 1)
		case k == 2:
			v = uint32(next())
		}
		out = appendWord(out, v, width)
	}
	return out
}

// TestRepeatRoundTrip: any words round-trip, in every width and shape the
// operator takes — one row, one column, odd row lengths, rows of one
// repeated word, random words (all literals) — and the payload's header
// says so.
func TestRepeatRoundTrip(t *testing.T) {
	for _, width := range []int{2, 4} {
		for _, sh := range [][2]int{{1, 1}, {1, 7}, {7, 1}, {2, 2}, {3, 5}, {17, 64}, {130, 64}, {40, 80}, {9, 257}} {
			rows, cols := sh[0], sh[1]
			src := edgeWords(rows*cols, cols, width, uint64(rows*cols+width))
			p, lits := repeatRoundTrip(t, src, cols, width)
			h, _, _ := ReadRepeatHeader(p, rows*cols)
			if h.Cols != cols || h.Lits != len(lits)/width {
				t.Fatalf("%d×%d: header %+v", rows, cols, h)
			}
		}
		// one word everywhere: every word after the first is a copy
		same := bytes.Repeat(appendWord(nil, 0x3f80, width), 50*30)
		if _, lits := repeatRoundTrip(t, same, 30, width); len(lits) != width {
			t.Errorf("width %d: a constant tensor holds %d literal bytes", width, len(lits))
		}
	}
	// the empty tensor has no header a reader takes
	var e RepeatEncoder
	p, _ := e.Append(nil, nil, 4, 4)
	if _, _, err := ReadRepeatHeader(p, 0); err == nil {
		t.Error("a payload of no words was read")
	}
}

// TestRepeatDamaged: a damaged payload is an error (ErrRepeat), never a
// panic: every prefix, and every byte changed, of a real payload, with
// its literals.
func TestRepeatDamaged(t *testing.T) {
	src := hannDFT(32, 24)
	var e RepeatEncoder
	p, lits := e.Append(nil, src, 32, 4)
	p, lits = append([]byte(nil), p...), append([]byte(nil), lits...)
	n := len(src) / 4
	dst := make([]byte, len(src))
	var d RepeatDecoder
	decode := func(q []byte) error {
		h, _, err := ReadRepeatHeader(q, n)
		if err != nil {
			return err
		}
		l := lits
		if h.Lits*4 != len(l) {
			l = make([]byte, h.Lits*4)
		}
		return d.Decode(dst, h, l, 4)
	}
	for k := 0; k < len(p); k++ {
		if err := decode(p[:k]); err == nil {
			// a stream cut at its end may still decode (zeros read past
			// it): then to the same words
			if !bytes.Equal(dst, src) {
				t.Fatalf("prefix of %d bytes decodes to other words", k)
			}
		} else if !errors.Is(err, ErrRepeat) {
			t.Fatalf("prefix of %d bytes: %v is not ErrRepeat", k, err)
		}
		q := append([]byte(nil), p...)
		q[k] ^= 0x5a
		if err := decode(q); err != nil && !errors.Is(err, ErrRepeat) {
			t.Fatalf("byte %d changed: %v is not ErrRepeat", k, err)
		}
	}
}

// The tables made from their formulas (internal/formula), shared with
// the codec's tests.
var (
	f32Rows = formula.F32Table
	hannDFT = formula.WindowedDFT
	dct     = formula.DCTBasis
)
