package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"neuralzip/dtype"
)

func fileInput(t testing.TB, path string) (Input, []byte) {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Skip(err)
	}
	return Input{Name: filepath.Base(path), R: bytes.NewReader(src), Size: int64(len(src)), Segments: safetensorsSegments(src)}, src
}

func TestSetupRoundTripAndReuse(t *testing.T) {
	d := needShared(t)
	in, src := fileInput(t, filepath.Join(d, "models/bench/real-bf16.safetensors"))
	t0 := time.Now()
	s, err := BuildSetup([]Input{in}, SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built in %v: %d bytes, ID %s", time.Since(t0), len(s.Bytes()), s.IDString())
	for _, sec := range s.Sections {
		pairs := 0
		for _, tb := range sec.Tables {
			if tb.HasPairs() {
				pairs++
			}
		}
		t.Logf("section %v join %d: %d tables (%d pairs)", sec.DType, sec.Join, len(sec.Tables), pairs)
	}
	// the file form parses back to the same setup
	s2, err := ParseSetup(s.Bytes())
	if err != nil || s2.ID() != s.ID() || !bytes.Equal(s2.Bytes(), s.Bytes()) {
		t.Fatalf("setup does not roundtrip: %v", err)
	}
	for _, name := range []string{"models/bench/real-bf16.safetensors", "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors", "models/original/stories260K.bf16.safetensors"} {
		_, data := fileInput(t, filepath.Join(d, name))
		segs := safetensorsSegments(data)
		plain := roundTrip(t, data, segs, Options{})
		with := roundTrip(t, data, segs, Options{Setup: s})
		a2 := roundTrip(t, data, segs, Options{Setup: s, Threads: 1})
		if !bytes.Equal(with, a2) {
			t.Fatal("setup archive depends on the thread count")
		}
		t.Logf("%s: per-chunk tables %.4f, setup %.4f", filepath.Base(name), float64(len(data))/float64(len(plain)), float64(len(data))/float64(len(with)))
	}
	_ = src
}

func TestSetupExternalAndMismatch(t *testing.T) {
	data := realisticValues(dtype.BF16, 300000, 1)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(data))}}
	in := Input{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs}
	s, err := BuildSetup([]Input{in}, SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	od := realisticValues(dtype.BF16, 100000, 2)
	oin := Input{Name: "y", R: bytes.NewReader(od), Size: int64(len(od)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(od))}}}
	other, err := BuildSetup([]Input{oin}, SetupOptions{K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if other.ID() == s.ID() {
		t.Fatal("two setups from different data have one ID")
	}
	arc, err := CompressBytes(data, segs, Options{Setup: s, SetupExternal: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecompressBytes(arc, Options{}); !errors.Is(err, ErrSetupMissing) {
		t.Fatalf("missing setup: %v", err)
	}
	if _, err := DecompressBytes(arc, Options{Setup: other}); !errors.Is(err, ErrSetupMismatch) {
		t.Fatalf("wrong setup: %v", err)
	}
	out, err := DecompressBytes(arc, Options{Setup: s})
	if err != nil || !bytes.Equal(out, data) {
		t.Fatalf("external setup: %v", err)
	}
	// embedded: no flags needed
	arc2, _ := CompressBytes(data, segs, Options{Setup: s})
	if out, err := DecompressBytes(arc2, Options{}); err != nil || !bytes.Equal(out, data) {
		t.Fatalf("embedded setup: %v", err)
	}
	if len(arc2) <= len(arc) {
		t.Fatal("embedded archive is not larger than the external one")
	}
}

// A chunk whose exponents the setup never saw still codes (escapes) and
// roundtrips.
func TestSetupUnseenExponents(t *testing.T) {
	data := realisticValues(dtype.BF16, 200000, 2)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(data))}}
	s, err := BuildSetup([]Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs}}, SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// values of a very different scale, plus specials
	other := realisticValues(dtype.F32, 100000, 3)
	odd := make([]byte, 0, 100000)
	for i := 0; i+3 < len(other); i += 4 {
		odd = append(odd, other[i+2], other[i+3]^0x20) // exponents far away
	}
	odd = append(odd, fill(dtype.BF16, specials(dtype.BF16))...)
	segs2 := []Segment{{Name: "odd", DType: dtype.BF16, Length: int64(len(odd))}}
	roundTrip(t, odd, segs2, Options{Setup: s, SetupThreshold: 1e9}) // never fall back to own tables
	roundTrip(t, odd, segs2, Options{Setup: s})
	// every edge case of the dtype, with the setup
	for name, tensor := range edgeTensors(dtype.BF16) {
		roundTrip(t, tensor, []Segment{{Name: name, DType: dtype.BF16, Length: int64(len(tensor))}}, Options{Setup: s, SetupThreshold: 1e9, ChunkValues: 1024})
	}
}

func FuzzSetup(f *testing.F) {
	data := realisticValues(dtype.BF16, 50000, 4)
	f16 := realisticValues(dtype.F16, 50000, 5)
	segs := []Segment{{Name: "a", DType: dtype.BF16, Length: int64(len(data))}}
	s, err := BuildSetup([]Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs},
		{Name: "y", R: bytes.NewReader(f16), Size: int64(len(f16)), Segments: []Segment{{Name: "b", DType: dtype.F16, Length: int64(len(f16))}}}}, SetupOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSetup(b)
		if err != nil {
			return
		}
		if !bytes.Equal(s.Bytes(), b) {
			t.Fatal("parsed setup changed its bytes")
		}
	})
}

// costNonzero must agree with a cost computed through the rotation tables.
func TestCostShiftedMatchesRotation(t *testing.T) {
	data := realisticValues(dtype.BF16, 100000, 8)
	s, err := BuildSetup([]Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(data))}}}}, SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb := s.Sections[0].Tables[0]
	var h [256]uint32
	for i := range h {
		h[i] = uint32(i*7919) % 13
	}
	for d := -300; d <= 300; d += 7 {
		fwd, _ := rotation(d, 8)
		var want uint64
		for sym, c := range h {
			l := uint64(tb.single.lens[fwd[sym]])
			if l == 0 {
				l = uint64(tb.single.huff.lens[tb.single.esc]) + 8
			}
			want += uint64(c) * l
		}
		if got := tb.costShifted(&h, d, 8); got != want {
			t.Fatalf("shift %d: %d, want %d", d, got, want)
		}
	}
}

// Census tells shared-table blocks from own-table ones: none without a
// setup, all (long enough) blocks with a setup forced on every block.
func TestCensus(t *testing.T) {
	data := realisticValues(dtype.BF16, 5*4096+50, 3)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Length: 5 * 4096 * 2}, {Name: "b", DType: dtype.BF16, Offset: 5 * 4096 * 2, Length: 100}}
	in := Input{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs}
	s, err := BuildSetup([]Input{in}, SetupOptions{ChunkValues: 4096})
	if err != nil {
		t.Fatal(err)
	}
	census := func(opt Options) Census {
		t.Helper()
		arc := roundTrip(t, data, segs, opt)
		rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		c, err := rd.Census()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// 5 blocks of 4096 values and one of 50 (own table: too short to share)
	if c := census(Options{ChunkValues: 4096}); c != (Census{Blocks: 6, FloatBlocks: 6, OwnTables: 6}) {
		t.Fatalf("no setup: %+v", c)
	}
	if c := census(Options{ChunkValues: 4096, Setup: s, SetupThreshold: 1e9}); c != (Census{Blocks: 6, FloatBlocks: 6, SharedTables: 5, OwnTables: 1}) {
		t.Fatalf("forced setup: %+v", c)
	}
}

// Both clustering methods find three chunk populations whose exponent
// histograms differ in shape (alignment removes mere shifts), the automatic
// K stops at three, and a build is deterministic.
func TestSetupClusters(t *testing.T) {
	const chunk = 4096
	r := rand.New(rand.NewPCG(7, 7))
	var data []byte
	var segs []Segment
	gen := []func() float64{
		func() float64 { return r.NormFloat64() * 0.02 },    // Gaussian
		func() float64 { return (r.Float64()*2 - 1) * 0.5 }, // uniform: geometric exponents
		func() float64 { // 8 exponents, linearly falling weights
			k := r.IntN(36)
			e := 0
			for w := 8; k >= w; w-- {
				k -= w
				e++
			}
			return math.Ldexp(1+r.Float64(), -e)
		},
	}
	for rep := 0; rep < 4; rep++ {
		for g, f := range gen {
			off := int64(len(data))
			for i := 0; i < chunk; i++ {
				data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(float32(f()))>>16))
			}
			segs = append(segs, Segment{Name: fmt.Sprintf("t%d.%d", rep, g), DType: dtype.BF16, Offset: off, Length: chunk * 2})
		}
	}
	in := Input{Name: "three", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs}
	for _, m := range []string{ClusterAgglomerative, ClusterKMeans} {
		s, err := BuildSetup([]Input{in}, SetupOptions{ChunkValues: chunk, Cluster: m, MinGain: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		tables := s.Sections[0].Tables
		if len(tables) != 3 {
			t.Fatalf("%s: %d tables, want 3", m, len(tables))
		}
		for _, tb := range tables {
			if tb.Chunks != 4 {
				t.Fatalf("%s: a cluster of %d chunks, want 4 each", m, tb.Chunks)
			}
		}
		again, err := BuildSetup([]Input{in}, SetupOptions{ChunkValues: chunk, Cluster: m, MinGain: 0.001})
		if err != nil || !bytes.Equal(again.Bytes(), s.Bytes()) {
			t.Fatalf("%s: a second build differs (%v)", m, err)
		}
		arc := roundTrip(t, data, segs, Options{ChunkValues: chunk, Setup: s, SetupThreshold: 1e9})
		t.Logf("%s: %d tables, ratio %.4f", m, len(tables), float64(len(data))/float64(len(arc)))
	}
	if _, err := BuildSetup([]Input{in}, SetupOptions{Cluster: "spectral"}); err == nil || !strings.Contains(err.Error(), "spectral") {
		t.Fatalf("unknown method: %v", err)
	}
}

// Planes whose entropy code does not pay on the sample are marked raw and
// stored packed; the marks survive the file; bad marks are refused.
func TestSetupRawPlanes(t *testing.T) {
	src, segs := goldenInput()
	in := Input{Name: "x", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}
	adaptive, err := BuildSetup([]Input{in}, SetupOptions{ChunkValues: 1024, PlaneMinGain: -1})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := BuildSetup([]Input{in}, SetupOptions{ChunkValues: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range adaptive.Sections {
		if sec.RawPlanes != 0 {
			t.Errorf("%v: raw planes %#x with PlaneMinGain < 0", sec.DType, sec.RawPlanes)
		}
	}
	// the golden input's sign and mantissa bits are uniform: no plane pays
	bf := raw.Section(dtype.BF16)
	if bf == nil || bf.RawPlanes != 1 {
		t.Fatalf("BF16 section: %+v, want raw plane 0", bf)
	}
	p, err := ParseSetup(raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i, sec := range p.Sections {
		if sec.RawPlanes != raw.Sections[i].RawPlanes {
			t.Errorf("%v: raw planes %#x after parsing, built %#x", sec.DType, sec.RawPlanes, raw.Sections[i].RawPlanes)
		}
	}
	var sizes []int
	for _, s := range []*Setup{adaptive, raw} {
		arc, err := CompressBytes(src, segs, Options{ChunkValues: 1024, Setup: s, SetupThreshold: 1e9})
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecompressBytes(arc, Options{})
		if err != nil || !bytes.Equal(out, src) {
			t.Fatalf("roundtrip: %v", err)
		}
		sizes = append(sizes, len(arc)-len(s.Bytes()))
	}
	// uniform planes: packing costs at most the mode bytes of the trials
	if d := sizes[1] - sizes[0]; d < -4096 || d > 4096 {
		t.Errorf("raw planes change the archive by %d bytes", d)
	}
	// a plane the dtype does not have
	bf.RawPlanes = 0x80
	b := raw.marshal()
	bf.RawPlanes = 1
	if _, err := ParseSetup(b); !errors.Is(err, ErrSetup) {
		t.Fatalf("raw plane 7 of BF16: %v, want ErrSetup", err)
	}
}

// The relative-index cost that picks tables (costRel, per block's mode)
// must equal the direct cost at the same shift, for every table and
// neighbouring shift.
func TestCostRelMatchesCost(t *testing.T) {
	data := realisticValues(dtype.BF16, 200000, 9)
	s, err := BuildSetup([]Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(data))}}}}, SetupOptions{ChunkValues: 4096})
	if err != nil {
		t.Fatal(err)
	}
	sec := s.Sections[0]
	const w, m = 8, 254
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		var h [256]uint32
		for k := rng.IntN(40) + 1; k > 0; k-- {
			h[rng.IntN(256)] += uint32(rng.IntN(5000))
		}
		var nz, fixed []byte
		var ri []uint8
		var rc []uint32
		mode := modeOf(&h, w)
		for sym, c := range h {
			if c == 0 {
				continue
			}
			nz = append(nz, byte(sym))
			if sym >= 1 && sym <= m {
				ri = append(ri, uint8((sym-mode+m)%m+1))
				rc = append(rc, c)
			} else {
				fixed = append(fixed, byte(sym))
			}
		}
		for i := range sec.sel {
			sel := &sec.sel[i]
			d0 := mode - int(sel.mode)
			for _, delta := range []int{-1, 0, 1} {
				got := sel.costRel(ri, rc, delta) + sel.cost(&h, fixed, 0, w)
				if want := sel.cost(&h, nz, d0+delta, w); got != want {
					t.Fatalf("trial %d table %d shift %d%+d: %d, want %d", trial, i, d0, delta, got, want)
				}
			}
		}
	}
}
