package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"neuralzip/codec/huff"
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
	s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{})
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
		plain := roundTrip(t, data, segs, EncodeOptions{})
		with := roundTrip(t, data, segs, EncodeOptions{Setup: s})
		a2 := roundTrip(t, data, segs, EncodeOptions{Setup: s, Threads: 1})
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
	s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	od := realisticValues(dtype.BF16, 100000, 2)
	oin := Input{Name: "y", R: bytes.NewReader(od), Size: int64(len(od)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(od))}}}
	other, err := BuildSetup(context.Background(), []Input{oin}, SetupOptions{K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if other.ID() == s.ID() {
		t.Fatal("two setups from different data have one ID")
	}
	arc, err := CompressBytes(context.Background(), data, segs, EncodeOptions{Setup: s, SetupExternal: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecompressBytes(context.Background(), arc, DecodeOptions{}); !errors.Is(err, ErrSetupMissing) {
		t.Fatalf("missing setup: %v", err)
	}
	if _, err := DecompressBytes(context.Background(), arc, DecodeOptions{Setup: other}); !errors.Is(err, ErrSetupMismatch) {
		t.Fatalf("wrong setup: %v", err)
	}
	out, err := DecompressBytes(context.Background(), arc, DecodeOptions{Setup: s})
	if err != nil || !bytes.Equal(out, data) {
		t.Fatalf("external setup: %v", err)
	}
	// embedded: no flags needed
	arc2, _ := CompressBytes(context.Background(), data, segs, EncodeOptions{Setup: s})
	if out, err := DecompressBytes(context.Background(), arc2, DecodeOptions{}); err != nil || !bytes.Equal(out, data) {
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
	s, err := BuildSetup(context.Background(), []Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs}}, SetupOptions{})
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
	roundTrip(t, odd, segs2, EncodeOptions{Setup: s, SetupThreshold: 1e9}) // never fall back to own tables
	roundTrip(t, odd, segs2, EncodeOptions{Setup: s})
	// every edge case of the dtype, with the setup
	for name, tensor := range edgeTensors(dtype.BF16) {
		roundTrip(t, tensor, []Segment{{Name: name, DType: dtype.BF16, Length: int64(len(tensor))}}, EncodeOptions{Setup: s, SetupThreshold: 1e9, ChunkValues: 1024})
	}
}

func FuzzSetup(f *testing.F) {
	data := realisticValues(dtype.BF16, 50000, 4)
	f16 := realisticValues(dtype.F16, 50000, 5)
	segs := []Segment{{Name: "a", DType: dtype.BF16, Length: int64(len(data))}}
	s, err := BuildSetup(context.Background(), []Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs},
		{Name: "y", R: bytes.NewReader(f16), Size: int64(len(f16)), Segments: []Segment{{Name: "b", DType: dtype.F16, Length: int64(len(f16))}}}}, SetupOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Bytes())
	// with chosen programs (setup version 3)
	p, err := s.WithPrograms(0, []SetupProgram{{"a", ProgramSparse}, {"b", ProgramZstd}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p.Bytes())
	// with a search prior (setup version 4)
	pr, err := BuildSetup(context.Background(), []Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs}}, SetupOptions{Prior: 4})
	if err != nil || pr.Prior.Len() == 0 {
		f.Fatalf("setup with a prior: %v", err)
	}
	f.Add(pr.Bytes())
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
	s, err := BuildSetup(context.Background(), []Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(data))}}}}, SetupOptions{})
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
				l = uint64(tb.single.huff.Lens[tb.single.esc]) + 8
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
	s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{ChunkValues: 4096})
	if err != nil {
		t.Fatal(err)
	}
	census := func(opt EncodeOptions) Census {
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
	if c := census(EncodeOptions{ChunkValues: 4096}); !reflect.DeepEqual(c, Census{Blocks: 6, FloatBlocks: 6, OwnTables: 6}) {
		t.Fatalf("no setup: %+v", c)
	}
	if c := census(EncodeOptions{ChunkValues: 4096, Setup: s, SetupThreshold: 1e9}); !reflect.DeepEqual(c, Census{Blocks: 6, FloatBlocks: 6, SharedTables: 5, OwnTables: 1}) {
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
		s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{ChunkValues: chunk, Cluster: m, MinGain: 0.001})
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
		again, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{ChunkValues: chunk, Cluster: m, MinGain: 0.001})
		if err != nil || !bytes.Equal(again.Bytes(), s.Bytes()) {
			t.Fatalf("%s: a second build differs (%v)", m, err)
		}
		arc := roundTrip(t, data, segs, EncodeOptions{ChunkValues: chunk, Setup: s, SetupThreshold: 1e9})
		t.Logf("%s: %d tables, ratio %.4f", m, len(tables), float64(len(data))/float64(len(arc)))
	}
	if _, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{Cluster: "spectral"}); err == nil || !strings.Contains(err.Error(), "spectral") {
		t.Fatalf("unknown method: %v", err)
	}
}

// Plane cuts: uniform planes get a low cut (stored packed without trials),
// planes that compress keep being coded, even under a setup built where
// they did not; cuts survive the file; bad ones are refused.
func TestSetupPlaneCuts(t *testing.T) {
	src, segs := goldenInput()
	in := Input{Name: "x", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}
	adaptive, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{ChunkValues: 1024, PlaneMinGain: -1})
	if err != nil {
		t.Fatal(err)
	}
	cut, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{ChunkValues: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range adaptive.Sections {
		if sec.PlaneCuts != nil {
			t.Errorf("%v: plane cuts %v with PlaneMinGain < 0", sec.DType, sec.PlaneCuts)
		}
	}
	// the golden input's sign and mantissa bits are uniform: no plane pays,
	// so the cut comes down from the default to the lowest entropy seen
	bf := cut.Section(dtype.BF16)
	if bf == nil || len(bf.PlaneCuts) != 1 || bf.PlaneCuts[0] == 0 || bf.PlaneCuts[0] >= 252 {
		t.Fatalf("BF16 section: cuts %v, want one below the default", bf.PlaneCuts)
	}
	p, err := ParseSetup(cut.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i, sec := range p.Sections {
		if !bytes.Equal(sec.PlaneCuts, cut.Sections[i].PlaneCuts) {
			t.Errorf("%v: cuts %v after parsing, built %v", sec.DType, sec.PlaneCuts, cut.Sections[i].PlaneCuts)
		}
	}
	// BF16 whose mantissas were quantised to 2 bits: the plane compresses
	// to about half; coded with the uniform-plane setup it must stay coded
	q := make([]byte, 2*100000)
	copy(q, realisticValues(dtype.BF16, 100000, 3))
	for i := 1; i < len(q); i += 2 {
		q[i-1] &= 0x60 // keep 2 of the 7 mantissa bits
	}
	qs := []Segment{{Name: "q", DType: dtype.BF16, Shape: []int64{100000}, Length: int64(len(q))}}
	own, err := CompressBytes(context.Background(), q, qs, EncodeOptions{ChunkValues: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Setup{adaptive, cut} {
		arc, err := CompressBytes(context.Background(), q, qs, EncodeOptions{ChunkValues: 1024, Setup: s, SetupExternal: true})
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecompressBytes(context.Background(), arc, DecodeOptions{Setup: s})
		if err != nil || !bytes.Equal(out, q) {
			t.Fatalf("roundtrip: %v", err)
		}
		if float64(len(arc)) > 1.02*float64(len(own)) {
			t.Errorf("quantised planes under a setup: %d bytes, %d with own tables", len(arc), len(own))
		}
	}
	// more cuts than the dtype has planes
	bf.PlaneCuts = []uint8{100, 100}
	b := cut.marshal()
	bf.PlaneCuts = []uint8{100}
	if _, err := ParseSetup(b); !errors.Is(err, ErrSetup) {
		t.Fatalf("two cuts for BF16: %v, want ErrSetup", err)
	}
}

func TestPlaneCut(t *testing.T) {
	obs := []planeObs{
		{q: 0.999, packed: 1000, saved: 0},
		{q: 0.99, packed: 1000, saved: 1},
		{q: 0.90, packed: 1000, saved: 100},
	}
	// 0.2 % of 3000 bytes = 6: the first two together saved 1
	if c := planeCut(obs, 0.002); float64(c)/256 > 0.99 || float64(c)/256 <= 0.90 {
		t.Errorf("cut %d (%.3f), want in (0.90, 0.99]", c, float64(c)/256)
	}
	// nothing saved anywhere: down to the lowest entropy seen, not further
	obs[2].saved = 0
	if c := planeCut(obs, 0.002); c != 230 {
		t.Errorf("cut %d, want 230 (0.90 of 256, the lowest sample)", c)
	}
	// and never below 0.75
	obs[2].q = 0.1
	if c := planeCut(obs, 0.002); c != planeCutMin {
		t.Errorf("cut %d, want %d", c, planeCutMin)
	}
	obs[2].q = 0.9
	// a tiny chunk whose plane paid (within the budget, but 50 % of itself):
	// the cut stays above it
	obs = append(obs, planeObs{q: 0.95, packed: 2, saved: 1})
	if c := planeCut(obs, 0.002); float64(c)/256 <= 0.95 || float64(c)/256 > 0.99 {
		t.Errorf("cut %d (%.3f), want in (0.95, 0.99]", c, float64(c)/256)
	}
	obs = obs[:3]
	obs[2].saved = 100
	// a chunk near the default cut that saved a lot: no cut
	obs[1].saved = 500
	if c := planeCut(obs, 0.002); c != 0 {
		t.Errorf("cut %d, want 0", c)
	}
	if c := planeCut(nil, 0.002); c != 0 {
		t.Errorf("no chunks: cut %d, want 0", c)
	}
}

// The relative-index cost that picks tables (costRel, per block's mode)
// must equal the direct cost at the same shift, for every table and
// neighbouring shift.
func TestCostRelMatchesCost(t *testing.T) {
	data := realisticValues(dtype.BF16, 200000, 9)
	s, err := BuildSetup(context.Background(), []Input{{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(data))}}}}, SetupOptions{ChunkValues: 4096})
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
		sels := sec.selectors()
		if len(sels) == 0 {
			t.Fatal("no tables")
		}
		for i := range sels {
			sel := &sels[i]
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

// A cancelled build stops and says so.
func TestSetupCancel(t *testing.T) {
	data := realisticValues(dtype.BF16, 400000, 4)
	in := Input{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(data))}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := BuildSetup(ctx, []Input{in}, SetupOptions{ChunkValues: 1024}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled build: %v", err)
	}
	// cancelled while clustering (many chunks: the merge loop checks)
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := BuildSetup(ctx, []Input{in}, SetupOptions{ChunkValues: 256})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("build cancelled midway: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancelled build did not stop")
	}
}

// Blocks coded with setup tables decode the same through huffX (the
// code's tables made once, shared by the decoding goroutines) and through
// huff0's decoder, in the 4-stream and the 1-stream layout, with and
// without two-symbol tables.
func TestSetupHuffX(t *testing.T) {
	small := realisticValues(dtype.BF16, 200, 7) // a block of one short stream
	big := realisticValues(dtype.BF16, 300000, 8)
	data := append(append([]byte(nil), small...), big...)
	segs := []Segment{
		{Name: "s", DType: dtype.BF16, Length: int64(len(small))},
		{Name: "w", DType: dtype.BF16, Offset: int64(len(small)), Length: int64(len(big))},
	}
	in := Input{Name: "x", R: bytes.NewReader(data), Size: int64(len(data)), Segments: segs}
	s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{65536, 4096} {
		arc, err := CompressBytes(context.Background(), data, segs, EncodeOptions{Setup: s, SetupExternal: true, SetupThreshold: 1e9, ChunkValues: chunk})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ hx, two bool }{{false, false}, {true, false}, {true, true}} {
			if c.hx && !huff.Use().DecAsm {
				continue
			}
			// a fresh setup each time (not ParseSetup's cached one): the
			// huffX tables are made once
			s2, err := parseSetup(s.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			restore := setFeatures(func(f *features) { f.huffX, f.huff.Two = c.hx, c.two })
			out, err := DecompressBytes(context.Background(), arc, DecodeOptions{Setup: s2, Threads: 2})
			restore()
			if err != nil || !bytes.Equal(out, data) {
				t.Fatalf("chunk %d, huffX %v, two-symbol %v: %v", chunk, c.hx, c.two, err)
			}
			made, two := 0, 0
			for _, sec := range s2.Sections {
				for _, tb := range sec.Tables {
					for _, code := range []*tableCode{&tb.single, &tb.pair} {
						if code.hx != nil {
							made++
							if code.hx.TwoSymbol() {
								two++
							}
						}
					}
				}
			}
			if c.hx != (made > 0) || c.two && chunk == 65536 && two == 0 {
				t.Fatalf("chunk %d, huffX %v, two-symbol %v: %d huffX codes made (%d with two-symbol tables)", chunk, c.hx, c.two, made, two)
			}
		}
	}
}

// TestParseSetupCache: the same bytes give the same setup (its decoding
// tables built once), other bytes another; the cache stays bounded.
func TestParseSetupCache(t *testing.T) {
	src, segs := goldenInput()
	var first *Setup
	for i := 0; i < setupCacheSize+3; i++ {
		s, err := BuildSetup(context.Background(), []Input{{Name: "x", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, SetupOptions{ChunkValues: 1024, Builder: fmt.Sprint("cache test ", i)})
		if err != nil {
			t.Fatal(err)
		}
		a, err := ParseSetup(s.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		b, err := ParseSetup(append([]byte(nil), s.Bytes()...))
		if err != nil || a != b || a.ID() != s.ID() {
			t.Fatalf("setup %d parsed twice: %p %p (%v)", i, a, b, err)
		}
		if i == 0 {
			first = a
		} else if a == first {
			t.Fatal("another setup's bytes gave the first setup")
		}
	}
	if len(setupCache.list) > setupCacheSize {
		t.Fatalf("cache holds %d setups", len(setupCache.list))
	}
	if _, err := ParseSetup([]byte("not a setup at all, not a setup")); err == nil {
		t.Fatal("garbage parsed")
	}
}
