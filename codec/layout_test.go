package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// TestLayoutWalk reads every float block of the goldens through
// ReadFloatHeader and ReadStream, as the GPU planner does: the streams
// must tile the payload exactly, each in a mode its place allows, and
// every mode the encoder writes (pair1 only for fewer than 512 symbols,
// which it does not pair) must occur somewhere.
func TestLayoutWalk(t *testing.T) {
	files, err := filepath.Glob("testdata/golden*.nzip")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	archives := map[string][]byte{"synthetic": layoutArchive(t)}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		archives[name] = data
	}
	seen := map[StreamMode]int{}
	forms := map[FloatForm]int{}
	for name, data := range archives {
		rd, err := NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range rd.Files() {
			for bi, b := range f.Blocks() {
				if b.Kind != KindFloat || b.Compressed == 0 {
					continue
				}
				p := data[b.Payload : b.Payload+b.Compressed]
				h, err := ReadFloatHeader(p, b.DType)
				if err != nil {
					t.Fatalf("%s block %d: %v", name, bi, err)
				}
				forms[h.Form]++
				n := int(b.Length) / h.Size
				pos := h.Len
				if h.Form == FormSparse {
					// the mask's parts, then the values' header: the
					// nonzero count comes from decoding the mask
					sh, vh, m := walkSparse(t, p, n, b.DType)
					if sh.Mask != MaskColumns {
						seen[sh.Stream.Mode]++
					}
					pos, n, h = vh.Len, m, vh
					if m == 0 {
						pos = len(p)
					}
				}
				for i := 0; i < h.Streams(); i++ {
					s, err := ReadStream(p, pos, n, h.Width(i), h.Symbols(i))
					if err != nil {
						t.Fatalf("%s block %d stream %d: %v", name, bi, i, err)
					}
					if s.Start != pos || s.End <= pos || s.End > len(p) {
						t.Fatalf("%s block %d stream %d: %d..%d after %d", name, bi, i, s.Start, s.End, pos)
					}
					seen[s.Mode]++
					if s.X > 0 || s.Mode == StreamPair1 || s.Mode == StreamPair4 {
						e, err := ReadStream(p, s.Exc, s.X, h.Width(i), false)
						if err != nil || e.End != s.End {
							t.Fatalf("%s block %d stream %d: exceptions end at %d, stream at %d (%v)", name, bi, i, e.End, s.End, err)
						}
					}
					pos = s.End
				}
				if pos != len(p) {
					t.Fatalf("%s block %d: streams end at %d of %d bytes", name, bi, pos, len(p))
				}
			}
		}
		rd.Close()
	}
	t.Logf("forms %v, modes %v", forms, seen)
	for _, m := range []StreamMode{StreamPacked, StreamConst, StreamHuff1, StreamHuff4, StreamPair4, StreamShared4} {
		if seen[m] == 0 {
			t.Errorf("no %v stream in the archives", m)
		}
	}
}

// walkSparse reads a sparse block's header and decodes its mask to find
// the nonzero count m and the values' header (when m > 0).
func walkSparse(t *testing.T, p []byte, n int, d dtype.DType) (SparseHeader, FloatHeader, int) {
	t.Helper()
	sh, err := ReadSparseHeader(p, n, d)
	if err != nil {
		t.Fatal(err)
	}
	switch sh.Mask {
	case MaskBitmap, MaskGaps:
		if sh.Stream.End > len(p) || sh.Stream.End != sh.Values {
			t.Fatalf("sparse mask stream ends at %d, values at %d", sh.Stream.End, sh.Values)
		}
	case MaskColumns:
		if sh.DataEnd != sh.Values || sh.Data >= sh.DataEnd {
			t.Fatalf("sparse column mask %d..%d, values at %d", sh.Data, sh.DataEnd, sh.Values)
		}
	}
	bd := sparseDecoder()
	dst := make([]byte, n*d.Size())
	if err := bd.decode(dst, p, kindFloat, d); err != nil {
		t.Fatal(err)
	}
	m := n - countZeros(dst, d.Size())
	if m == 0 {
		return sh, FloatHeader{}, 0
	}
	vh, err := ReadSparseValues(p, sh, d)
	if err != nil {
		t.Fatal(err)
	}
	return sh, vh, m
}

// layoutArchive codes tensors whose exponent streams take the pair modes
// (1- and 4-stream codes) and the const mode (zeros).
func layoutArchive(t *testing.T) []byte {
	rng := rand.New(rand.NewPCG(29, 1))
	var src []byte
	var segs []Segment
	add := func(name string, d dtype.DType, n int, v func(i int) float64) {
		seg := Segment{Offset: int64(len(src)), Length: int64(n * d.Size()), Name: name, DType: d, Shape: []int64{int64(n)}}
		for i := range n {
			x := v(i)
			switch d {
			case dtype.BF16:
				src = binary.LittleEndian.AppendUint16(src, uint16(math.Float32bits(float32(x))>>16))
			case dtype.F16:
				b := math.Float32bits(float32(x))
				e := int(b>>23&255) - 127
				h := uint16(b>>16) & 0x8000
				if e >= -14 { // normal in F16 (|x| < 2 here), else ±0
					h |= uint16(e+15)<<10 | uint16(b>>13&0x3ff)
				}
				src = binary.LittleEndian.AppendUint16(src, h)
			}
		}
		segs = append(segs, seg)
	}
	// neighbours of similar magnitude: pairs pay
	var x float64
	pairs := func(i int) float64 {
		if i%2 == 0 {
			x = rng.NormFloat64() * 0.02
		}
		return x * (1 + rng.Float64()/4)
	}
	add("pairs.bf16", dtype.BF16, 65536, pairs)
	add("pairs.f16", dtype.F16, 12000, pairs)
	add("zeros", dtype.BF16, 4096, func(int) float64 { return 0 })
	return roundTrip(t, src, segs, EncodeOptions{})
}

// TestLayoutErrors: ReadStream refuses what the decoder refuses, with
// the same words.
func TestLayoutErrors(t *testing.T) {
	for _, c := range []struct {
		src     []byte
		n       int
		w       uint
		symbols bool
		want    string
	}{
		{nil, 4, 8, true, "missing stream"},
		{[]byte{smPacked, 1}, 4, 8, true, "packed stream: need 4 bytes, have 1"},
		{[]byte{smConst, 9}, 4, 3, true, "const stream: symbol 9 out of range"},
		{[]byte{smHuff1, 5, 1}, 4, 8, true, "length 5 exceeds 2"},
		{[]byte{smPair1, 1, 0, 0, 0, smPacked}, 4, 8, false, "pair stream not allowed here"},
		{[]byte{smPair1, 16}, 4, 8, true, "pair stream: bad alphabet size 16"},
		{[]byte{smPair4, 1, 9, 0, 0, smPacked}, 4, 3, true, "pair stream: symbol out of range"},
		{[]byte{smPair4, 1, 1, 0, 5, smPacked}, 4, 3, true, "length 5 exceeds 4"},
		{[]byte{smShared1, 0, 0, 0, 0, 0, smPacked}, 4, 8, false, "shared stream not allowed here"},
		{[]byte{smShared1, 0, 0, 2, 0, 0, smPacked}, 4, 8, true, "bad shared code kind"},
		{[]byte{smShared1, 0, 0, 0, 0, 1, smPair1}, 4, 8, true, "pair stream not allowed here"},
		{[]byte{smZstd, 5, 1}, 4, 8, false, "length 5 exceeds 2"},
		{[]byte{smPair1, 1, 0, 0, 1, smZstd, 0}, 4, 8, true, "zstd stream not allowed here"},
		{[]byte{9}, 4, 8, true, "unknown stream mode 9"},
	} {
		_, err := ReadStream(c.src, 0, c.n, c.w, c.symbols)
		if err == nil || err.Error() != c.want {
			t.Errorf("% x: %v, want %q", c.src, err, c.want)
		}
	}
	if got := StreamShared4.String(); got != "shared4" {
		t.Errorf("StreamShared4 is %q", got)
	}
	if got := StreamMode(9).String(); got != "mode9" {
		t.Errorf("StreamMode(9) is %q", got)
	}
}
