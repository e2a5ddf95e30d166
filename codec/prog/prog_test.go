package prog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
)

// ggmlSizes: record bytes and values of each type, from ggml-common.h's
// static_asserts (and the corpus README's table).
var ggmlSizes = map[string][2]int{
	"Q4_0": {18, 32}, "Q4_1": {20, 32}, "Q5_0": {22, 32}, "Q5_1": {24, 32}, "Q8_0": {34, 32},
	"Q2_K": {84, 256}, "Q3_K": {110, 256}, "Q4_K": {144, 256}, "Q5_K": {176, 256}, "Q6_K": {210, 256},
	"IQ4_NL": {18, 32}, "I8": {1, 1},
}

// TestSchemas: every type the issue names is there with ggml's sizes, and
// each schema's fields hold exactly its record's bits.
func TestSchemas(t *testing.T) {
	for name, sz := range ggmlSizes {
		s := ByName(name)
		if s == nil {
			t.Fatalf("no schema %s", name)
		}
		if s.Bytes != sz[0] || s.Values != sz[1] || ByID(s.ID) != s {
			t.Errorf("%s: %d bytes %d values (id %d), want %v", name, s.Bytes, s.Values, s.ID, sz)
		}
		bits := 0
		for _, f := range s.Fields() {
			if f.Width == 0 || f.Width > 8 || f.Elem == 0 || f.Width%f.Elem != 0 {
				t.Errorf("%s field %s: width %d elem %d", name, f.Name, f.Width, f.Elem)
			}
			bits += int(f.Width) * f.Per
		}
		if bits != 8*s.Bytes {
			t.Errorf("%s: fields hold %d bits, the record %d", name, bits, 8*s.Bytes)
		}
		if len(Schemas()) != len(ggmlSizes) {
			t.Errorf("%d schemas, want %d", len(Schemas()), len(ggmlSizes))
		}
	}
}

// TestBijection: split then merge gives back any record bytes, and merge
// then split gives back any symbols of the fields' widths: record →
// fields is a bijection, so every input round-trips.
func TestBijection(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range Schemas() {
		for _, n := range []int{1, 3, 64} {
			src := make([]byte, n*s.Bytes)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			fs := grow(nil, s, n)
			s.split(src, n, fs)
			for i, f := range s.fields {
				for _, b := range fs[i] {
					if b>>f.Width != 0 {
						t.Fatalf("%s field %s: symbol %#x wider than %d bits", s.Name, f.Name, b, f.Width)
					}
				}
			}
			back := make([]byte, len(src))
			for i := range back {
				back[i] = 0xa5
			}
			s.merge(back, n, fs)
			if !bytes.Equal(back, src) {
				t.Fatalf("%s: %d records: merge(split(x)) != x", s.Name, n)
			}
			for i, f := range s.fields {
				for j := range fs[i] {
					fs[i][j] = byte(rng.Uint32()) & (1<<f.Width - 1)
				}
			}
			want := make([][]byte, len(fs))
			for i := range fs {
				want[i] = bytes.Clone(fs[i])
			}
			s.merge(back, n, fs)
			s.split(back, n, fs)
			for i := range fs {
				if !bytes.Equal(fs[i], want[i]) {
					t.Fatalf("%s field %s: split(merge(f)) != f", s.Name, s.fields[i].Name)
				}
			}
		}
	}
}

// quantLike makes n records of s whose bytes look like a quantiser's:
// small scales, quants near the middle of their range.
func quantLike(s *Schema, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	fs := grow(nil, s, n)
	for i, f := range s.fields {
		for j := range fs[i] {
			var v int
			switch f.Half {
			case 1:
				v = 0x20 + rng.IntN(6)
			case 2:
				v = rng.IntN(256)
			default:
				k := int(f.Width / f.Elem)
				for e := 0; e < k; e++ {
					m := 1 << f.Elem
					x := m/2 + int(rng.NormFloat64()*float64(m)/8)
					v |= min(max(x, 0), m-1) << (e * int(f.Elem))
				}
			}
			fs[i][j] = byte(v)
		}
	}
	out := make([]byte, n*s.Bytes)
	s.merge(out, n, fs)
	return out
}

func roundTrip(t testing.TB, s *Schema, src []byte) []byte {
	var e Encoder
	var d Decoder
	c := e.Append(nil, src, s)
	back := make([]byte, len(src))
	if err := d.Decode(back, c); err != nil {
		t.Fatalf("%s: %d bytes: %v", s.Name, len(src), err)
	}
	if !bytes.Equal(back, src) {
		t.Fatalf("%s: %d bytes: decoded bytes differ", s.Name, len(src))
	}
	return c
}

// TestRoundTrip: quantiser-like, random, constant and empty runs of
// records, up to the block size, decode to their bytes.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range Schemas() {
		for _, n := range []int{0, 1, 2, 5, 100, s.BlockRecords()} {
			src := quantLike(s, n, uint64(n))
			c := roundTrip(t, s, src)
			if n >= 100 && len(src) >= 1024 && len(c) >= len(src) { // I8: 100 records are 100 bytes, under a table
				t.Errorf("%s: %d records: %d bytes coded to %d", s.Name, n, len(src), len(c))
			}
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			if c := roundTrip(t, s, src); len(c) > len(src)+1+2*len(s.fields)+8 {
				t.Errorf("%s: %d random records: %d bytes coded to %d", s.Name, n, len(src), len(c))
			}
			clear(src)
			roundTrip(t, s, src)
		}
	}
}

// TestDecodeErrors: damaged payloads fail with ErrCorrupt, never panic.
func TestDecodeErrors(t *testing.T) {
	s := ByName("Q4_K")
	src := quantLike(s, 40, 9)
	var e Encoder
	c := e.Append(nil, src, s)
	var d Decoder
	dst := make([]byte, len(src))
	for _, bad := range [][]byte{nil, {99}, c[:1], c[:len(c)-1], append(bytes.Clone(c), 0)} {
		if err := d.Decode(dst, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("payload of %d bytes: %v, want ErrCorrupt", len(bad), err)
		}
	}
	if err := d.Decode(dst[:len(dst)-1], c); !errors.Is(err, ErrCorrupt) {
		t.Errorf("length not a whole number of records: %v", err)
	}
	// a const symbol wider than its field
	q5 := ByName("Q5_0")
	p := []byte{q5.ID, modeConst, 0x20, modeConst, 0, modeConst, 40}
	if err := d.Decode(make([]byte, q5.Bytes), p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("6-bit symbol in a 5-bit field: %v", err)
	}
}

// shared is the corpus of real weights, when there.
const shared = "../../../shared/models/quantized"

// realTensors returns the quantised tensors (with a schema) of a GGUF file.
func realTensors(t testing.TB, name string) (data []byte, segs []checkpoint.Segment) {
	p := filepath.Join(shared, name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("corpus not here: %v", err)
	}
	l, err := checkpoint.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range l.Segments {
		if g.Name != "" && ByName(g.Type) != nil {
			segs = append(segs, g)
		}
	}
	return data, segs
}

// TestReal: every quantised tensor of the real files round-trips in
// blocks as the codec cuts them, and codes within 2 % of the order-0
// bound of its fields (summed per file and type; -v prints them).
func TestReal(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(shared, "*.gguf"))
	if len(files) == 0 {
		t.Skip("corpus not here")
	}
	if testing.Short() {
		files = files[:2]
	}
	for _, f := range files {
		data, segs := realTensors(t, filepath.Base(f))
		type sum struct{ raw, coded, bound float64 }
		by := map[string]*sum{}
		for _, g := range segs {
			s := ByName(g.Type)
			src := data[g.Offset : g.Offset+g.Length]
			if len(src)%s.Bytes != 0 {
				t.Fatalf("%s: %d bytes of %s", g.Name, len(src), s.Name)
			}
			x := by[s.Name]
			if x == nil {
				x = new(sum)
				by[s.Name] = x
			}
			x.raw += float64(len(src))
			x.bound += Bound(src, s) / 8
			step := s.BlockRecords() * s.Bytes
			for o := 0; o < len(src); o += step {
				x.coded += float64(len(roundTrip(t, s, src[o:min(o+step, len(src))])))
			}
		}
		for name, x := range by {
			t.Logf("%s %s: %.0f B, coded %.0f (%.3f), bound %.0f, +%.2f %%", filepath.Base(f), name, x.raw, x.coded, x.raw/x.coded, x.bound, 100*(x.coded/x.bound-1))
			if x.coded > 1.02*x.bound {
				t.Errorf("%s %s: coded %.0f B, more than 2 %% over the bound %.0f", filepath.Base(f), name, x.coded, x.bound)
			}
		}
	}
}

func BenchmarkRecords(b *testing.B) {
	for _, name := range []string{"real-f32.mixed.gguf", "stories260K-base.Q4_0.gguf", "stories260K-base.Q5_1.gguf", "stories260K-base.IQ4_NL.gguf"} {
		data, segs := realTensors(b, name)
		by := map[*Schema][]byte{}
		var order []*Schema
		for _, g := range segs {
			s := ByName(g.Type)
			if by[s] == nil {
				order = append(order, s)
			}
			by[s] = append(by[s], data[g.Offset:g.Offset+g.Length]...)
		}
		for _, s := range order {
			src := by[s][:min(len(by[s]), s.BlockRecords()*s.Bytes)]
			var e Encoder
			var d Decoder
			c := e.Append(nil, src, s)
			b.Run(s.Name+"/encode", func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					c = e.Append(c[:0], src, s)
				}
			})
			dst := make([]byte, len(src))
			b.Run(s.Name+"/decode", func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					if err := d.Decode(dst, c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
