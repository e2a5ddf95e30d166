package huff

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/huff0"
)

// huff0Decode4 is the twin: huff0's own table reader and 4-stream decoder.
func huff0Decode4(src []byte, n int) ([]byte, error) {
	return huff0Decode(src, n, true)
}

// huff0Decode is huff0's table reader and its 4-stream or 1-stream
// decoder, which must yield exactly n symbols (as streamDecoder requires).
func huff0Decode(src []byte, n int, x4 bool) ([]byte, error) {
	var s huff0.Scratch
	s.MaxDecodedSize = n
	s2, rest, err := huff0.ReadTable(src, &s)
	if err != nil {
		return nil, err
	}
	if x4 {
		return s2.Decoder().Decompress4X(make([]byte, 0, n), rest)
	}
	out, err := s2.Decoder().Decompress1X(make([]byte, 0, n), rest)
	if err == nil && len(out) != n {
		err = errf("%d symbols, want %d", len(out), n)
	}
	return out, err
}

// huff0Compress is huff0's 4-stream or 1-stream block of in (a copy).
func huff0Compress(in []byte, s *huff0.Scratch, x4 bool) ([]byte, error) {
	compress := huff0.Compress1X
	if x4 {
		compress = huff0.Compress4X
	}
	comp, _, err := compress(in, s)
	return bytes.Clone(comp), err
}

func huffXDecode4(h *Decoder, src []byte, n int) ([]byte, error) {
	return huffXDecode(h, src, n, true)
}

func huffXDecode(h *Decoder, src []byte, n int, x4 bool) ([]byte, error) {
	rest, err := h.ReadTable(src, n)
	if err != nil {
		return nil, err
	}
	dst := make([]byte, n)
	if x4 {
		err = h.Decode4(dst, rest)
	} else {
		err = h.Decode1(dst, rest)
	}
	if err != nil {
		return nil, err
	}
	return dst, nil
}

// huffXInputs are symbol streams of real exponents (bytes of a real
// checkpoint's high halves) and of generated skewed distributions.
func huffXInputs(t testing.TB) [][]byte {
	var ins [][]byte
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{40, 100, 1000, 4097, 65536, 200000} {
		for _, spread := range []float64{0.5, 2, 8, 40} {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(128 + int(r.NormFloat64()*spread))
			}
			ins = append(ins, b)
		}
	}
	if d := sharedDir(); d != "" {
		src, err := os.ReadFile(filepath.Join(d, "models/bench/real-bf16.safetensors"))
		if err == nil {
			e := make([]byte, 0, len(src)/2)
			for i := 1; i < len(src); i += 2 {
				e = append(e, src[i]<<1|src[i-1]>>7)
			}
			for off := 0; off+65536 <= len(e); off += len(e) / 7 {
				ins = append(ins, e[off:off+65536])
			}
		}
	}
	return ins
}

// TestHuffXTwin: every block huff0 writes (4 streams and 1) decodes the
// same with Decoder as with huff0, with and without two-symbol tables, and
// every truncation fails in both or in neither.
func TestHuffXTwin(t *testing.T) {
	var h Decoder
	s := huff0.Scratch{Reuse: huff0.ReusePolicyNone}
	n := 0
	for _, in := range huffXInputs(t) {
		for _, x4 := range []bool{true, false} {
			comp, err := huff0Compress(in, &s, x4)
			if err != nil {
				continue // incompressible or one symbol
			}
			want, err := huff0Decode(comp, len(in), x4)
			if err != nil || !bytes.Equal(want, in) {
				t.Fatalf("huff0 roundtrip: %v", err)
			}
			for _, two := range []bool{true, false} {
				restore := setFeatures(func(f *Features) { f.Two = two })
				got, err := huffXDecode(&h, comp, len(in), x4)
				restore()
				if err != nil || !bytes.Equal(got, in) {
					t.Fatalf("n=%d x4 %v two %v: Decoder: %v (equal %v)", len(in), x4, two, err, bytes.Equal(got, in))
				}
			}
			for _, cut := range []int{1, 2, 7, 8, 9, len(comp) / 2} {
				if cut >= len(comp) {
					continue
				}
				_, e1 := huff0Decode(comp[:len(comp)-cut], len(in), x4)
				_, e2 := huffXDecode(&h, comp[:len(comp)-cut], len(in), x4)
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("n=%d x4 %v cut %d: huff0 %v, Decoder %v", len(in), x4, cut, e1, e2)
				}
			}
			// one symbol more or fewer than the block holds
			for _, m := range []int{len(in) - 1, len(in) + 1} {
				_, e1 := huff0Decode(comp, m, x4)
				_, e2 := huffXDecode(&h, comp, m, x4)
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("n=%d x4 %v as %d symbols: huff0 %v, Decoder %v", len(in), x4, m, e1, e2)
				}
			}
			n++
		}
	}
	if n < 40 {
		t.Fatalf("only %d compressible inputs", n)
	}
}

// FuzzHuffX: on any input Decoder and huff0 agree: both fail, or both
// decode the same symbols.
func FuzzHuffX(f *testing.F) { fuzzHuffX(f, true) }

// FuzzHuffX1: the same for 1-stream blocks.
func FuzzHuffX1(f *testing.F) { fuzzHuffX(f, false) }

func fuzzHuffX(f *testing.F, x4 bool) {
	var s huff0.Scratch
	for _, in := range huffXInputs(f)[:12] {
		if comp, err := huff0Compress(in, &s, x4); err == nil {
			f.Add(comp, uint32(len(in)))
		}
	}
	var h Decoder
	f.Fuzz(func(t *testing.T, src []byte, n uint32) {
		n %= 1 << 17
		if n == 0 {
			return
		}
		want, e1 := huff0Decode(src, int(n), x4)
		got, e2 := huffXDecode(&h, src, int(n), x4)
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("huff0 %v, Decoder %v", e1, e2)
		}
		if e1 == nil && !bytes.Equal(want, got) {
			t.Fatal("outputs differ")
		}
	})
}

func BenchmarkHuffX(b *testing.B) {
	ins := huffXInputs(b)
	var s huff0.Scratch
	var comps [][]byte
	var total int
	for _, in := range ins {
		if len(in) < 4096 {
			continue
		}
		if c, _, err := huff0.Compress4X(in, &s); err == nil {
			comps = append(comps, bytes.Clone(c))
			total += len(in)
		}
	}
	sizes := make([]int, 0, len(comps))
	for _, in := range ins {
		if len(in) < 4096 {
			continue
		}
		if _, _, err := huff0.Compress4X(in, &s); err == nil {
			sizes = append(sizes, len(in))
		}
	}
	b.Run("huff0", func(b *testing.B) {
		b.SetBytes(int64(total))
		var d huff0.Scratch
		dst := make([]byte, 1<<18)
		for b.Loop() {
			for i, c := range comps {
				d.MaxDecodedSize = sizes[i]
				s2, rest, _ := huff0.ReadTable(c, &d)
				if _, err := s2.Decoder().Decompress4X(dst[:0:sizes[i]], rest); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Decoder", func(b *testing.B) {
		b.SetBytes(int64(total))
		var h Decoder
		dst := make([]byte, 1<<18)
		for b.Loop() {
			for i, c := range comps {
				rest, _ := h.ReadTable(c, sizes[i])
				if err := h.Decode4(dst[:0:sizes[i]], rest); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestHuffXTiers: the assembly rounds (4 streams and 1) and the AVX-512
// table build give what their pure-Go twins give.
func TestHuffXTiers(t *testing.T) {
	if !use.DecAsm && !use.DoubleAVX512 {
		t.Skip("no assembly tiers on this machine")
	}
	s := huff0.Scratch{Reuse: huff0.ReusePolicyNone}
	var a, b Decoder
	for _, in := range huffXInputs(t) {
		for _, x4 := range []bool{true, false} {
			comp, err := huff0Compress(in, &s, x4)
			if err != nil {
				continue
			}
			decode := func(h *Decoder, dst, src []byte) error {
				if x4 {
					return h.Decode4(dst, src)
				}
				return h.Decode1(dst, src)
			}
			r1, err1 := a.ReadTable(comp, len(in))
			restore := setFeatures(func(f *Features) { f.DecAsm, f.DoubleAVX512 = false, false })
			r2, err2 := b.ReadTable(comp, len(in))
			if err1 != nil || err2 != nil || a.two != b.two || a.two && a.double != b.double || a.Single != b.Single || len(r1) != len(r2) {
				restore()
				t.Fatalf("n=%d: tables differ (%v, %v)", len(in), err1, err2)
			}
			goOut := make([]byte, len(in))
			err2 = decode(&b, goOut, r2)
			restore()
			asmOut := make([]byte, len(in))
			err1 = decode(&a, asmOut, r1)
			if err1 != nil || err2 != nil || !bytes.Equal(asmOut, in) || !bytes.Equal(goOut, in) {
				t.Fatalf("n=%d x4 %v: assembly %v, Go %v", len(in), x4, err1, err2)
			}
		}
	}
}

// sharedDir is the real-weights corpus (../shared), or "" when it is absent.
func sharedDir() string {
	for _, d := range []string{"../../../shared", "../../shared", "../shared"} {
		if st, err := os.Stat(filepath.Join(d, "models")); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}
