package bytecm

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

var handtrackPath = filepath.Join("..", "..", "..", "shared", "models", "original", "handtrack", "handtrack.bin")

// handtrack is the weights file of ../shared's handtrack model (a TF.js
// .bin: 272 uint8 tensors, quantised with a scale and minimum each, and
// small int32 tensors); the test or benchmark skips when it is absent.
func handtrack(tb testing.TB) []byte {
	b, err := os.ReadFile(handtrackPath)
	if err != nil {
		tb.Skipf("real weights absent (%v): skipping", err)
	}
	return b
}

// quantised returns the uint8 weights of a layer of rows×cols weights
// quantised as TF.js does (one scale and minimum for the tensor): each
// row's weights are normal with a scale of its own (channels differ), and
// a few rows repeat an earlier one (the repeats of real tensors: dead or
// copied channels).
func quantised(rows, cols int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	w := make([]float64, rows*cols)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range rows {
		s := math.Exp(r.NormFloat64() * 0.5)
		for j := range cols {
			v := r.NormFloat64() * s
			if i > 8 && i%11 == 0 {
				v = w[(i-7)*cols+j]
			}
			w[i*cols+j] = v
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	out := make([]byte, len(w))
	for i, v := range w {
		out[i] = byte(math.Round((v - lo) / (hi - lo) * 255))
	}
	return out
}

// inputs is the table of test inputs, shared by the tests and the fuzz
// target's seeds.
func inputs() map[string][]byte {
	random := make([]byte, 20000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	text := bytes.Repeat([]byte(`{"name": "conv2d/kernel", "shape": [3, 3, 16, 32], "dtype": "float32"}, `), 200)
	return map[string][]byte{
		"empty":     {},
		"one":       {0x80},
		"seven":     {1, 2, 3, 4, 5, 6, 7},
		"zeros":     make([]byte, 4096),
		"ones":      bytes.Repeat([]byte{0xff}, 5000),
		"random":    random,
		"text":      text,
		"quantised": quantised(96, 160, 1),
		"narrow":    quantised(4, 1000, 2),
	}
}

func roundtrip(t *testing.T, name string, src []byte) []byte {
	t.Helper()
	c := Encode(nil, src)
	got := make([]byte, len(src))
	if err := Decode(got, c); err != nil {
		t.Fatalf("%s (%d bytes): %v", name, len(src), err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("%s (%d bytes): decoded bytes differ", name, len(src))
	}
	return c
}

func TestRoundtrip(t *testing.T) {
	for name, src := range inputs() {
		c := roundtrip(t, name, src)
		t.Logf("%-10s %6d -> %6d", name, len(src), len(c))
	}
}

// TestAppends: Encode appends to dst, and its output depends on the input
// only (the pooled state is reset between streams).
func TestAppends(t *testing.T) {
	in := inputs()
	a, b := in["quantised"], in["text"]
	first := Encode(nil, a)
	Encode(nil, b)
	again := Encode([]byte("prefix"), a)
	if string(again[:6]) != "prefix" || !bytes.Equal(again[6:], first) {
		t.Fatal("Encode after another stream, appending, differs from the first Encode")
	}
}

// TestMatchModel: a block that repeats an earlier stretch codes the
// repeat at a small part of its size; without the match model it would
// cost as much as the first copy.
func TestMatchModel(t *testing.T) {
	q := quantised(64, 128, 3)
	once := len(Encode(nil, q))
	twice := len(Encode(nil, append(append([]byte(nil), q...), q...)))
	if extra := twice - once; extra*20 > once {
		t.Fatalf("a repeat of %d bytes (coded %d) costs %d more", len(q), once, extra)
	}
}

// TestBeatsZstd: on quantised weights the models code smaller than zstd
// at its default level (whose literals' Huffman table costs per block and
// stays fixed within it).
func TestBeatsZstd(t *testing.T) {
	z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		t.Fatal(err)
	}
	q := quantised(256, 256, 4)
	if c, l := len(Encode(nil, q)), len(z.EncodeAll(q, nil)); c >= l {
		t.Fatalf("quantised weights: %d bytes, zstd %d", c, l)
	}
}

// TestHandtrack: handtrack's weights in the codec's opaque blocks (512 KiB
// less 4) code below zstd's level 3 and below xz -6's 2,271,760 bytes of
// the whole file.
func TestHandtrack(t *testing.T) {
	src := handtrack(t)
	z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		t.Fatal(err)
	}
	const block = 1<<19 - 4
	n, zn := 0, 0
	for o := 0; o < len(src); o += block {
		p := src[o:min(len(src), o+block)]
		n += len(roundtrip(t, "handtrack", p))
		zn += len(z.EncodeAll(p, nil))
	}
	t.Logf("%d bytes: %d (zstd %d)", len(src), n, zn)
	if n >= zn || n >= 2271760 {
		t.Fatalf("%d bytes coded to %d: zstd %d, xz -6 2271760", len(src), n, zn)
	}
}

// TestCorrupt: streams that are not Encode's for the length asked fail
// with ErrCorrupt: a bad start, a missing or an extra byte, a length
// longer than coded.
func TestCorrupt(t *testing.T) {
	q := inputs()["quantised"]
	c := Encode(nil, q)
	dst := make([]byte, len(q))
	bad := map[string]func() error{
		"empty":     func() error { return Decode(dst, nil) },
		"start":     func() error { return Decode(dst, append([]byte{1}, c[1:]...)) },
		"truncated": func() error { return Decode(dst, c[:len(c)-1]) },
		"extra":     func() error { return Decode(dst, append(append([]byte(nil), c...), 0)) },
		"longer":    func() error { return Decode(make([]byte, len(q)+100), c) },
	}
	for name, f := range bad {
		if err := f(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// TestShortStops: a stream far too short for the length asked (5 bytes
// for 1 MiB) fails where it runs out, without decoding the rest.
func TestShortStops(t *testing.T) {
	dst := bytes.Repeat([]byte{0xaa}, 1<<20)
	if err := Decode(dst, []byte{0, 0, 0, 0, 0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("5 bytes for 1 MiB: %v, want ErrCorrupt", err)
	}
	if n := len(dst) - bytes.Count(dst, []byte{0xaa}); n > 64<<10 || dst[len(dst)-1] != 0xaa {
		t.Fatalf("decoded %d bytes of a 5-byte stream before failing", n)
	}
}

// FuzzDecode: any stream and length decode to an error or to bytes, never
// a panic, and bytes that decode re-encode to a stream that decodes to
// them.
func FuzzDecode(f *testing.F) {
	for _, src := range inputs() {
		if len(src) <= 8000 {
			f.Add(Encode(nil, src), uint16(len(src)))
		}
	}
	f.Add(Encode(nil, quantised(8, 500, 5)), uint16(4000))
	f.Fuzz(func(t *testing.T, c []byte, n uint16) {
		dst := make([]byte, n)
		if Decode(dst, c) != nil {
			return
		}
		back := make([]byte, n)
		if err := Decode(back, Encode(nil, dst)); err != nil || !bytes.Equal(back, dst) {
			t.Fatalf("decoded bytes do not round-trip: %v", err)
		}
	})
}

func benchInput(b *testing.B) []byte {
	if src, err := os.ReadFile(handtrackPath); err == nil {
		return src[:1<<19]
	}
	return quantised(512, 1024, 6)
}

func BenchmarkEncode(b *testing.B) {
	src := benchInput(b)
	b.SetBytes(int64(len(src)))
	var dst []byte
	for b.Loop() {
		dst = Encode(dst[:0], src)
	}
	b.ReportMetric(float64(len(src))/float64(len(dst)), "ratio")
}

func BenchmarkDecode(b *testing.B) {
	src := benchInput(b)
	c := Encode(nil, src)
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if err := Decode(dst, c); err != nil {
			b.Fatal(err)
		}
	}
}
