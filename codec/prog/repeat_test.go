package prog

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// f32Rows is rows×cols float32 values f(r, c), little-endian.
func f32Rows(rows, cols int, f func(r, c int) float64) []byte {
	out := make([]byte, 0, 4*rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(f(r, c))))
		}
	}
	return out
}

// hannDFT is a windowed DFT basis as codec/neverworse_test.go makes it.
func hannDFT(nFFT, win int) []byte {
	pad := (nFFT - win) / 2
	half := nFFT/2 + 1
	return f32Rows(2*half, nFFT, func(r, j int) float64 {
		if j < pad || j >= pad+win {
			return 0
		}
		w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(j-pad)/float64(win))
		k := r % half
		a := 2 * math.Pi * float64(k*j) / float64(nFFT)
		if r >= half {
			return -w * math.Sin(a)
		}
		return w * math.Cos(a)
	})
}

func dct(n, m int) []byte {
	return f32Rows(n, m, func(k, j int) float64 {
		s := math.Sqrt(2 / float64(m))
		if k == 0 {
			s = math.Sqrt(1 / float64(m))
		}
		return s * math.Cos(math.Pi*float64(k)*(float64(j)+0.5)/float64(m))
	})
}

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
		p, l := repeatRoundTrip(t, c.b, c.cols, 4)
		t.Logf("%s: %d words, stream %d bytes, %d literals (%.1f %%)", c.name, len(c.b)/4, len(p), len(l)/4, 100*float64(len(l))/float64(len(c.b)))
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
