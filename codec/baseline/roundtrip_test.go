package baseline

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// testNames are the codecs under test: the registered baselines plus the
// zstd variants without literal entropy coding and klauspost's fast gzip.
// With -short (used with -race) it is the baselines but zstd-19, whose
// wrapper is zstd-3's and whose encoder is slow.
func testNames() []string {
	if testing.Short() {
		return slices.DeleteFunc(slices.Clone(builtinNames), func(n string) bool { return n == "zstd-19" })
	}
	return append(slices.Clone(builtinNames), "zstd-1-nolit", "zstd-3-nolit", "gzip-fast")
}

func mustNew(tb testing.TB, name string, threads int) Codec {
	tb.Helper()
	c, err := New(name, Options{Threads: threads})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// roundtrip compresses in at 1 and 2 threads (outputs must be identical),
// decompresses at 1 and 2 threads and checks bytes and SHA-256. It returns
// the archive.
func roundtrip(t *testing.T, name string, in input) []byte {
	t.Helper()
	c1, c2 := mustNew(t, name, 1), mustNew(t, name, 2)
	a1, err := c1.Compress(in.src, in.segs)
	if err != nil {
		t.Fatalf("%s: compress %s: %v", name, in.name, err)
	}
	a2, err := c2.Compress(in.src, in.segs)
	if err != nil {
		t.Fatalf("%s: compress %s at 2 threads: %v", name, in.name, err)
	}
	if !bytes.Equal(a1, a2) {
		t.Fatalf("%s: %s: archive differs between 1 and 2 threads (%d vs %d bytes)", name, in.name, len(a1), len(a2))
	}
	want := sha256.Sum256(in.src)
	for _, c := range []Codec{c1, c2} {
		out, err := c.Decompress(a1)
		if err != nil {
			t.Fatalf("%s: decompress %s: %v", name, in.name, err)
		}
		if !bytes.Equal(out, in.src) || sha256.Sum256(out) != want {
			t.Fatalf("%s: %s: roundtrip differs (%d bytes back, %d in)", name, in.name, len(out), len(in.src))
		}
	}
	return a1
}

func TestRoundtripEdgeCases(t *testing.T) {
	for _, in := range edgeCases() {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			for _, name := range testNames() {
				roundtrip(t, name, in)
			}
		})
	}
}

func TestRoundtripRealFiles(t *testing.T) {
	files := realFiles(t)
	for _, in := range files {
		t.Run(in.name, func(t *testing.T) {
			// -short keeps safetensors files below 1.5 MB.
			if testing.Short() && (in.segs == nil || len(in.src) > 1536<<10) {
				t.Skipf("-short: skipping %d-byte file", len(in.src))
			}
			t.Parallel()
			for _, name := range testNames() {
				a := roundtrip(t, name, in)
				t.Logf("%-14s %10d -> %10d  ratio %.3f", name, len(in.src), len(a), float64(len(in.src))/float64(len(a)))
			}
		})
	}
}

// The float codecs must actually model the floats: on real BF16 weights they
// beat zstd-3, which sees only bytes.
func TestFloatCodecsBeatZstdOnBF16(t *testing.T) {
	in := benchFile(t, "real-bf16")
	size := func(name string) int {
		a, err := mustNew(t, name, 0).Compress(in.src, in.segs)
		if err != nil {
			t.Fatal(err)
		}
		return len(a)
	}
	z := size("zstd-3")
	for _, name := range []string{"zipnn", "dfloat11"} {
		if n := size(name); n >= z {
			t.Errorf("%s: %d bytes, not below zstd-3's %d", name, n, z)
		}
	}
}

func TestNamesAndNew(t *testing.T) {
	want := []string{"zstd-1", "zstd-3", "zstd-19", "gzip", "zipnn", "dfloat11"}
	if got := Names(); !slices.Equal(got[:len(want)], want) {
		t.Fatalf("Names() = %v, want prefix %v", got, want)
	}
	for _, name := range append(Names(), "zstd-7", "zstd-22-nolit", "zstd-3-lit", "gzip-fast") {
		c, err := New(name, Options{})
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if c.Name() != name {
			t.Errorf("New(%q).Name() = %q", name, c.Name())
		}
	}
	for _, name := range []string{"", "zstd", "zstd-0", "zstd-23", "zstd-03", "zstd-3-foo", "lz4", "ZIPNN"} {
		if _, err := New(name, Options{}); !errors.Is(err, ErrUnknownCodec) {
			t.Errorf("New(%q): err = %v, want ErrUnknownCodec", name, err)
		}
	}
	if _, err := New("gzip", Options{Threads: -1}); err == nil {
		t.Error("New with Threads -1: no error")
	}
}

type fakeCodec struct{ Codec }

func (fakeCodec) Name() string { return "fake-registered" }

func TestRegister(t *testing.T) {
	Register("fake-registered", func(Options) (Codec, error) { return fakeCodec{}, nil })
	if n := Names(); n[len(n)-1] != "fake-registered" {
		t.Fatalf("Names() = %v, want fake-registered last", n)
	}
	c, err := New("fake-registered", Options{})
	if err != nil || c.Name() != "fake-registered" {
		t.Fatalf("New(fake-registered) = %v, %v", c, err)
	}
	for _, name := range []string{"fake-registered", "zipnn", "zstd-5", "gzip-fast", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			Register(name, func(Options) (Codec, error) { return nil, nil })
		}()
	}
}

func TestBadLayout(t *testing.T) {
	src := make([]byte, 100)
	bad := [][]codec.Segment{
		{{Offset: 10, Length: 20}, {Offset: 25, Length: 5}}, // overlap
		{{Offset: 50, Length: 51}},                          // past the end
		{{Offset: -1, Length: 5}},                           // negative offset
		{{Offset: 0, Length: -5}},                           // negative length
		{{Offset: 101, Length: 0}},                          // past the end
		{{Offset: 40, Length: 10}, {Offset: 0, Length: 10}}, // unordered
	}
	for _, name := range testNames() {
		c := mustNew(t, name, 1)
		for i, segs := range bad {
			if _, err := c.Compress(src, segs); !errors.Is(err, ErrLayout) {
				t.Errorf("%s: layout %d: err = %v, want ErrLayout", name, i, err)
			}
		}
	}
}

// Every truncation, and a bit flip in every byte, of small archives must give an
// error or (if the flip is harmless) the original bytes, never a panic or a
// wrong result.
func TestCorruptArchives(t *testing.T) {
	var b builder
	b.header([]byte("hdr"))
	w := weights(newRand(), dtype.BF16, 2000)
	copy(w[600:], specials(dtype.BF16))
	b.tensor("w", dtype.BF16, w)
	b.tensor("f16", dtype.F16, weights(newRand(), dtype.F16, 500))
	b.tensor("f32", dtype.F32, weights(newRand(), dtype.F32, 300))
	b.tensor("i32", dtype.I32, weights(newRand(), dtype.I32, 50))
	in := input{name: "small", src: b.src, segs: b.segs}
	for _, name := range testNames() {
		c := mustNew(t, name, 2)
		a, err := c.Compress(in.src, in.segs)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, data []byte) {
			out, err := c.Decompress(data)
			if err == nil && !bytes.Equal(out, in.src) {
				t.Fatalf("%s: %s: decoded without error to different bytes", name, what)
			}
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrFormat) {
				t.Fatalf("%s: %s: error %v wraps neither ErrCorrupt nor ErrFormat", name, what, err)
			}
		}
		step := 1 // truncation length and flipped byte stride
		if testing.Short() {
			step = 7
		}
		for n := 0; n < len(a); n += step {
			if _, err := c.Decompress(a[:n]); err == nil {
				t.Fatalf("%s: truncated to %d of %d bytes: no error", name, n, len(a))
			}
		}
		check("extra byte", append(slices.Clone(a), 0))
		mut := slices.Clone(a)
		for i := 0; i < len(mut); i += step {
			bit := byte(1) << (i % 8)
			mut[i] ^= bit
			check("bit flip", mut)
			mut[i] ^= bit
		}
	}
}
