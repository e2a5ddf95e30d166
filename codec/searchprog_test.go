package codec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec/search"
	"neuralzip/dtype"
)

// searchModel is a model of its own for the search tests: a token
// embedding whose rows repeat (zstd planes beat the fields, as on
// stories260K's), dense weights, a tensor with half its values zero and
// a repeating table, each large enough to be searched.
func searchModel() ([]byte, []Segment) {
	var src []byte
	var segs []Segment
	add := func(name string, d dtype.DType, shape []int64, b []byte) {
		segs = append(segs, Segment{Name: name, DType: d, Shape: shape, Offset: int64(len(src)), Length: int64(len(b))})
		src = append(src, b...)
	}
	rows := realisticValues(dtype.F32, 64*512, 11)
	var emb []byte
	for r := range 512 {
		k := r
		if r%2 == 1 {
			k = (r * 7) % 16 // half the rows repeat 16 of them
		}
		emb = append(emb, rows[k*64*4:(k+1)*64*4]...)
	}
	add("embed", dtype.F32, []int64{512, 64}, emb)
	add("dense", dtype.BF16, []int64{256, 256}, realisticValues(dtype.BF16, 256*256, 12))
	half := realisticValues(dtype.BF16, 128*256, 13)
	for i := 0; i < len(half); i += 4 {
		half[i], half[i+1] = 0, 0
	}
	add("half", dtype.BF16, []int64{128, 256}, half)
	table := make([]byte, 0, 300*1024)
	for len(table) < 300*1024 {
		table = append(table, rows[:1024]...)
	}
	add("table", dtype.F32, []int64{300 * 1024 / 4}, table)
	return src, segs
}

// tensorBytes is the coded bytes of each tensor of an archive's first
// file whose blocks hold nothing else.
func tensorBytes(t *testing.T, arc []byte) map[string]int64 {
	t.Helper()
	rd, err := NewMemReader(arc)
	if err != nil {
		t.Fatal(err)
	}
	f := rd.Files()[0]
	out := map[string]int64{}
	blocks := f.Blocks()
	for _, tn := range f.Tensors {
		var n int64
		own := true
		for _, b := range blocks {
			if b.Offset < tn.Offset+tn.Length && b.Offset+b.Length > tn.Offset {
				own = own && b.Offset >= tn.Offset && b.Offset+b.Length <= tn.Offset+tn.Length
				n += b.Compressed
			}
		}
		if own {
			out[tn.Name] = n
		}
	}
	return out
}

// The search's archive is the same at every thread count and on every
// run, decodes to the input, and is never larger than the encoder's own
// choice, tensor by tensor; -search 0 and 1 are the encoder's own choice.
func TestSearchDeterministic(t *testing.T) {
	src, segs := searchModel()
	plain := roundTrip(t, src, segs, EncodeOptions{Threads: 1})
	for _, n := range []int{0, 1} {
		if a := roundTrip(t, src, segs, EncodeOptions{Threads: 2, Search: n}); !bytes.Equal(a, plain) {
			t.Fatalf("-search %d: not the archive of no search", n)
		}
	}
	for _, n := range []int{2, 4, 20} {
		a1 := roundTrip(t, src, segs, EncodeOptions{Threads: 1, Search: n})
		a2 := roundTrip(t, src, segs, EncodeOptions{Threads: 2, Search: n})
		a3 := roundTrip(t, src, segs, EncodeOptions{Threads: 2, Search: n})
		if !bytes.Equal(a1, a2) || !bytes.Equal(a2, a3) {
			t.Fatalf("-search %d: archives differ between runs or thread counts", n)
		}
		neverLarger(t, plain, a1, n)
		if n == 20 && len(a1) >= len(plain) {
			t.Fatalf("-search %d: %d bytes, no smaller than %d", n, len(a1), len(plain))
		}
	}
}

// A tensor above searchCheckMax has its sampled winner checked on a
// larger sample instead of the whole: still deterministic, and here still
// never larger.
func TestSearchCheckSampled(t *testing.T) {
	src, segs := searchModel()
	defer func(m int64) { searchCheckMax = m }(searchCheckMax)
	searchCheckMax = 64 << 10
	plain := roundTrip(t, src, segs, EncodeOptions{Threads: 1})
	a1 := roundTrip(t, src, segs, EncodeOptions{Threads: 1, Search: 20})
	a2 := roundTrip(t, src, segs, EncodeOptions{Threads: 2, Search: 20})
	if !bytes.Equal(a1, a2) {
		t.Fatal("archives differ between thread counts")
	}
	neverLarger(t, plain, a1, 20)
	rep, err := searchTensor(memArchive(src), segs[0], EncodeOptions{}, nil, 20)
	if err != nil || !rep.Verified {
		t.Fatalf("embed: verified %v, %v", rep.Verified, err)
	}
}

func neverLarger(t *testing.T, plain, searched []byte, n int) {
	t.Helper()
	before, after := tensorBytes(t, plain), tensorBytes(t, searched)
	for name, b := range before {
		if a, ok := after[name]; ok && a > b {
			t.Errorf("-search %d: tensor %s %d bytes, %d without the search", n, name, a, b)
		}
	}
}

// Each tensor's search codes at most the budget's candidates, the
// encoder's own choice first, and prunes those whose bound cannot win:
// raw (its exact size) and byte planes (their order-0 entropy) on a
// repeating table that zstd codes to a fraction.
func TestSearchBudgetAndPruning(t *testing.T) {
	src, segs := searchModel()
	for _, g := range segs {
		for _, budget := range []int{1, 2, 3, 5, 100} {
			rep, err := searchTensor(memArchive(src), g, EncodeOptions{}, nil, budget)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Expanded > budget || len(rep.Costs) != rep.Expanded || len(rep.Order) != rep.Expanded {
				t.Fatalf("%s budget %d: %d expanded, %d costed", g.Name, budget, rep.Expanded, len(rep.Costs))
			}
			if pickOf(rep.Order[0]).p != ProgramAuto {
				t.Fatalf("%s: first node %v", g.Name, pickOf(rep.Order[0]))
			}
			if budget == 100 && rep.Expanded+rep.Pruned != len(rep.Candidates) {
				t.Fatalf("%s: %d expanded + %d pruned of %d candidates", g.Name, rep.Expanded, rep.Pruned, len(rep.Candidates))
			}
			if g.Name == "table" && budget == 100 {
				for _, p := range []Program{ProgramRaw, ProgramPlanes} {
					if _, coded := rep.Costs[choiceOf(pick{p: p})]; coded {
						t.Errorf("table: %v was coded, its bound should have pruned it", p)
					}
				}
				if rep.Pruned < 2 {
					t.Errorf("table: %d pruned", rep.Pruned)
				}
			}
			// the winner is the cheapest candidate that may win
			for pk, c := range rep.Costs {
				if c.OK && c.Cost < rep.Cost.Cost {
					t.Errorf("%s budget %d: %v won at %d, %v costs %d", g.Name, budget, rep.Best, rep.Cost.Cost, pk, c.Cost)
				}
			}
			if g.Name == "embed" && budget >= 2 && rep.Best.p != ProgramZstdPlanes {
				t.Errorf("embed budget %d: %v won (costs %v)", budget, rep.Best, rep.Costs)
			}
		}
	}
}

// BuildSetup learns a prior (each searched tensor's winner, by dtype and
// shape class), the setup file keeps it (version 4), and it orders the
// search on another model: a candidate the prior ranks first is coded
// right after the own choice unless its bound prunes it.
func TestSearchPrior(t *testing.T) {
	src, segs := searchModel()
	in := Input{Name: "m", R: memArchive(src), Size: int64(len(src)), Segments: segs}
	s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{Prior: 8})
	if err != nil {
		t.Fatal(err)
	}
	// four searches, each winner counted 1 + the per mille it saved:
	// the embedding's zstd planes under its key, more than 1
	embKey := search.Key{DType: uint8(dtype.F32), Class: search.ShapeClass([]int64{512, 64})}
	roots := 0
	s.Prior.Each(func(k search.Key, c search.Choice, n uint32) {
		if k.Parent == 0 {
			roots++
		}
	})
	if roots != 4 || s.Prior.Count(embKey, choiceOf(pick{p: ProgramZstdPlanes})) <= 1 {
		t.Fatalf("prior: %v", s.PriorCounts())
	}
	// through the file
	back, err := parseSetup(s.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Bytes(), s.Bytes()) || back.Prior.Len() != s.Prior.Len() || binaryVersion(s.Bytes()) != 4 {
		t.Fatal("setup with a prior changed through its file")
	}
	// a prior that says raw wins on such matrices moves raw first on
	// another model (an embedding of other values, same class)
	other := &search.Prior{}
	for range 3 {
		other.Add(embKey, choiceOf(pick{p: ProgramRaw}))
	}
	s2, err := (&Setup{ChunkValues: DefaultChunkValues, Sections: s.Sections, Prior: other}).WithPrograms(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := Segment{Name: "e2", DType: dtype.F32, Shape: []int64{512, 64}, Length: 512 * 64 * 4}
	vals := realisticValues(dtype.F32, 512*64, 21)
	rep, err := searchTensor(memArchive(vals), g, EncodeOptions{Setup: s2}, s2.Prior, 2)
	if err != nil {
		t.Fatal(err)
	}
	// raw's bound (its exact size) is above the own choice: pruned, so
	// the second node is the list's first
	if rep.Pruned == 0 || len(rep.Order) != 2 || pickOf(rep.Order[1]) == (pick{p: ProgramRaw}) {
		t.Fatalf("order %v pruned %d", rep.Order, rep.Pruned)
	}
	// a prior for zstd (the list's second) moves it first
	z := &search.Prior{}
	z.Add(embKey, choiceOf(pick{p: ProgramZstd}))
	rep, err = searchTensor(memArchive(vals), g, EncodeOptions{Setup: s2}, z, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pickOf(rep.Order[1]) != (pick{p: ProgramZstd}) {
		t.Fatalf("with a zstd prior: order %v", rep.Order)
	}
	// the setup transfers: compressing another model with it and a
	// search roundtrips and is deterministic
	a1 := roundTrip(t, vals, []Segment{g}, EncodeOptions{Setup: s, Search: 3, Threads: 1})
	a2 := roundTrip(t, vals, []Segment{g}, EncodeOptions{Setup: s, Search: 3, Threads: 2})
	if !bytes.Equal(a1, a2) {
		t.Fatal("search under a setup: archives differ between thread counts")
	}
}

func binaryVersion(b []byte) int { return int(b[8]) | int(b[9])<<8 }

// On real models the search never makes a tensor larger than the
// encoder's own choice, finds stories260K's token embedding (13 %
// smaller as zstd planes), and a setup with a prior learned on one model
// codes another.
func TestSearchReal(t *testing.T) {
	d := needShared(t)
	if testing.Short() {
		t.Skip("real files: not in -short")
	}
	files := []string{"hub/stories260K/base/model.f32.safetensors", "models/original/silero_vad_16k.safetensors",
		"models/bench/real-bf16.safetensors", "models/quantized/stories260K-base.Q4_K.gguf", "models/quantized/stories260K-base.mixed.gguf"}
	var setup *Setup
	for i, f := range files {
		m, err := checkpoint.OpenPath(filepath.Join(d, f))
		if err != nil {
			t.Logf("%s: %v (skipped)", f, err)
			continue
		}
		src, err := os.ReadFile(m.Files[0].Path)
		if err != nil {
			t.Fatal(err)
		}
		segs := m.Files[0].Layout.Segments
		plain := roundTrip(t, src, segs, EncodeOptions{})
		searched := roundTrip(t, src, segs, EncodeOptions{Search: 4})
		neverLarger(t, plain, searched, 4)
		t.Logf("%s: %d -> %d bytes with -search 4", f, len(plain), len(searched))
		if i == 0 {
			b, a := tensorBytes(t, plain)["model.embed_tokens.weight"], tensorBytes(t, searched)["model.embed_tokens.weight"]
			if a*100 > b*90 {
				t.Errorf("stories260K embedding: %d bytes searched, %d not", a, b)
			}
			in := Input{Name: "m", R: memArchive(src), Size: int64(len(src)), Segments: segs}
			if setup, err = BuildSetup(context.Background(), []Input{in}, SetupOptions{Prior: 16}); err != nil {
				t.Fatal(err)
			}
		} else if setup != nil && i == 2 {
			// a prior learned on stories260K, used on real-bf16
			plainS := roundTrip(t, src, segs, EncodeOptions{Setup: setup})
			searchedS := roundTrip(t, src, segs, EncodeOptions{Setup: setup, Search: 4})
			neverLarger(t, plainS, searchedS, 4)
		}
	}
}

// Tensors below searchMinBytes are not searched, nor those named in
// Programs; one at the limit is.
func TestSearchable(t *testing.T) {
	g := Segment{Name: "w", DType: dtype.BF16, Shape: []int64{searchMinBytes / 2}, Length: searchMinBytes}
	if !searchable(g, &EncodeOptions{}) {
		t.Fatalf("%d bytes: not searched", g.Length)
	}
	if searchable(g, &EncodeOptions{Programs: map[string]Program{"w": ProgramRaw}}) {
		t.Fatal("a tensor with a program chosen was searched")
	}
	g.Shape, g.Length = []int64{searchMinBytes/2 - 64}, searchMinBytes-128
	if searchable(g, &EncodeOptions{}) {
		t.Fatalf("%d bytes: searched", g.Length)
	}
}
