package huff

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/fse"
	"github.com/klauspost/compress/huff0"
)

// fseTwin decodes in with klauspost's fse.Decompress as huff0.ReadTable
// calls it.
func fseTwin(s *fse.Scratch, in []byte) ([]byte, error) {
	s.DecompressLimit = 255
	s.Out = nil
	b, err := fse.Decompress(in, s)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// fseCheck requires fseWeights and fse.Decompress to agree on in: both
// fail, or both return the same weights (more than 255 counts as failing,
// as huff0.ReadTable and Decoder.readTable both reject it).
func fseCheck(t testing.TB, s *fse.Scratch, in []byte) bool {
	want, e1 := fseTwin(s, in)
	if e1 == nil && len(want) > 255 {
		e1 = errf("too many weights")
	}
	var w [fseOutMax]byte
	n, e2 := fseWeights(&w, in)
	if e2 == nil && n > 255 {
		e2 = errf("too many weights")
	}
	if (e1 == nil) != (e2 == nil) {
		t.Fatalf("input %x: fse %v, fseWeights %v", in, e1, e2)
	}
	if e1 == nil && !bytes.Equal(want, w[:n]) {
		t.Fatalf("input %x: fse %v, fseWeights %v", in, want, w[:n])
	}
	return e1 == nil
}

// huffBlocks returns huff0 blocks (1X and 4X, each with its table) of
// real exponents and of generated distributions, from narrow (few
// weights) to wide (~250 symbols, as the token tables of difference
// blocks).
func huffBlocks(t testing.TB) (blocks [][]byte, x4 []bool) {
	ins := huffXInputs(t)
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{300, 3000, 30000} {
		for _, k := range []int{12, 60, 120, 250} {
			b := make([]byte, n)
			for i := range b {
				// geometric-like over k symbols: many weights, few of each
				b[i] = byte(int(r.ExpFloat64()*float64(k)/4) % k)
			}
			ins = append(ins, b)
		}
	}
	s := huff0.Scratch{Reuse: huff0.ReusePolicyNone} // every block with its table
	for _, in := range ins {
		for _, four := range []bool{false, true} {
			if comp, err := huff0Compress(in, &s, four); err == nil {
				blocks, x4 = append(blocks, comp), append(x4, four)
			}
		}
	}
	return blocks, x4
}

// fseDescriptions returns the FSE-coded weight descriptions of huffBlocks.
func fseDescriptions(t testing.TB) [][]byte {
	blocks, _ := huffBlocks(t)
	var out [][]byte
	for _, comp := range blocks {
		if comp[0] < 128 && 1+int(comp[0]) <= len(comp) {
			out = append(out, comp[1:1+comp[0]])
		}
	}
	return out
}

// TestFSEWeightsTwin: fseWeights decodes every real description as
// fse.Decompress does, and the two agree on every truncation, extension
// and byte change of them.
func TestFSEWeightsTwin(t *testing.T) {
	var s fse.Scratch
	descs := fseDescriptions(t)
	if len(descs) < 30 {
		t.Fatalf("only %d descriptions", len(descs))
	}
	widest, zeroBits := 0, 0
	r := rand.New(rand.NewPCG(11, 12))
	for _, d := range descs {
		if !fseCheck(t, &s, d) {
			t.Fatalf("description %x does not decode", d)
		}
		// a symbol of probability ≥ 1/2 has states that read no bits
		var norm [256]int16
		tl, sl, _, _ := fseReadNCount(&norm, d)
		for _, v := range norm[:sl] {
			if v >= 1<<(tl-1) {
				zeroBits++
				break
			}
		}
		var w [fseOutMax]byte
		n, _ := fseWeights(&w, d)
		widest = max(widest, n)
		for cut := 1; cut < len(d); cut++ {
			fseCheck(t, &s, d[:cut])
		}
		fseCheck(t, &s, append(bytes.Clone(d), 0))
		fseCheck(t, &s, append(bytes.Clone(d), 0x80, 3))
		for i := range d {
			for range 4 {
				m := bytes.Clone(d)
				m[i] ^= byte(1 << r.IntN(8))
				if i == 0 {
					m[0] &^= 0x0e // keep the table log the caller allows
				}
				fseCheck(t, &s, m)
			}
		}
	}
	if widest < 200 {
		t.Fatalf("the widest table has %d weights; the inputs miss wide alphabets", widest)
	}
	if zeroBits == 0 {
		t.Fatal("no description has states that read no bits")
	}
}

// FuzzFSEWeights: on any input with a table log the caller accepts (5 or
// 6), fseWeights and fse.Decompress agree.
func FuzzFSEWeights(f *testing.F) {
	for _, d := range fseDescriptions(f)[:16] {
		f.Add(d)
	}
	var s fse.Scratch
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 0 && in[0]&15 > 1 {
			return
		}
		fseCheck(t, &s, in)
	})
}

func BenchmarkFSEWeights(b *testing.B) {
	descs := fseDescriptions(b)
	b.Run("fseWeights", func(b *testing.B) {
		var w [fseOutMax]byte
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for _, d := range descs {
				if _, err := fseWeights(&w, d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("fse.Decompress", func(b *testing.B) {
		var s fse.Scratch
		var w [256]byte
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for _, d := range descs {
				s.DecompressLimit = 255
				s.Out = w[:0]
				if _, err := fse.Decompress(d, &s); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkHuffXTable reads the tables of huffBlocks (Decoder.readTable:
// weights, the single-symbol table and, where it pays, the two-symbol
// one).
func BenchmarkHuffXTable(b *testing.B) {
	blocks, _ := huffBlocks(b)
	var h Decoder
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, c := range blocks {
			if _, err := h.ReadTable(c, 1<<20); err != nil { // a long block: two-symbol tables where they pay
				b.Fatal(err)
			}
		}
	}
}
