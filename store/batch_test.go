package store

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// hubNames is the hub's models for the ingest and batch tests: every
// dtype of five fine-tunes of one base (the first F32 model after its own
// BF16 cast, the others before theirs), a log and the tokenizer (opaque
// files).
func hubNames() []string {
	var names []string
	for _, d := range []string{"base", "ft-continued", "ft-fortunes-full", "ft-fortunes-lora", "ft-frozen-embed"} {
		for _, f := range []string{"model.f32.safetensors", "model.bf16.safetensors", "model.f16.gguf"} {
			if d == "ft-fortunes-full" || f != "model.f16.gguf" {
				names = append(names, d+"/"+f)
			}
		}
	}
	names = append(names, "ft-continued/log.tsv", "tok512.bin")
	names[0], names[1] = names[1], names[0]
	return names
}

// hubOrders is hubNames in the orders the batch and ingest tests add them
// in: "hub" (hubNames), "sorted" (as a hub lists them: each model's 16-bit
// exports before its F32 original, so every F32 add recasts stored units)
// and "16-bit-first" (every BF16 and F16 file, then the F32 files: the
// fine-tunes' BF16 files are deltas of the base's BF16 until the F32
// files arrive and recast them, moving their dependants' depths).
func hubOrders() map[string][]string {
	sorted := slices.Sorted(slices.Values(hubNames()))
	var first, last []string
	for _, n := range sorted {
		if strings.Contains(n, ".f32.") {
			last = append(last, n)
		} else {
			first = append(first, n)
		}
	}
	return map[string][]string{"hub": hubNames(), "sorted": sorted, "16-bit-first": append(first, last...)}
}

// TestAddBatchMatchesAdd: AddBatch makes the store that Add makes adding
// the same models one by one — the same index records (units, kinds,
// bases, depths, owners, chunk files, manifests), the same AddStats and
// manifests returned — from an empty store and from one that holds some
// of them already (stored bases, casts and duplicates), with -compare; in
// the hub's order and with 16-bit files first (recasts of units stored
// before the batch and of units the batch itself adds).
func TestAddBatchMatchesAdd(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	orders := hubOrders()
	for _, tc := range []struct {
		order   string
		pre     int // models added by Add first
		threads int
		compare bool
		maxDec  float64 // the store's decode bound (maxdecode.go)
	}{{"hub", 0, 2, false, 0}, {"hub", 3, 1, true, 0}, {"hub", 7, 4, false, 0}, {"sorted", 0, 2, false, 0}, {"sorted", 5, 4, false, 0}, {"16-bit-first", 0, 2, false, 0},
		{"16-bit-first", 0, 2, false, 3}, {"hub", 3, 1, false, 2}} {
		names := orders[tc.order]
		var models []BatchModel
		for _, n := range names {
			models = append(models, BatchModel{Name: n, Files: inputs(t, path.Join(hub, n))})
		}
		t.Run(fmt.Sprintf("%s-pre%d-threads%d-max%g", tc.order, tc.pre, tc.threads, tc.maxDec), func(t *testing.T) {
			o := InitOptions{MaxDecode: tc.maxDec}
			a, b := newMemWith(Options{Threads: 2}, latestVersion, o), newMemWith(Options{Threads: tc.threads}, latestVersion, o)
			var wantM []*Manifest
			var wantS []AddStats
			for i, bm := range models {
				m, st, err := a.Add(bm.Name, bm.Files, AddOptions{Compare: tc.compare})
				if err != nil {
					t.Fatal(err)
				}
				if i < tc.pre {
					if _, _, err := b.Add(bm.Name, bm.Files, AddOptions{Compare: tc.compare}); err != nil {
						t.Fatal(err)
					}
				} else {
					wantM, wantS = append(wantM, m), append(wantS, st)
				}
			}
			gotM, gotS, err := b.AddBatch(models[tc.pre:], AddOptions{Compare: tc.compare})
			if err != nil {
				t.Fatal(err)
			}
			for i := range wantM {
				if !reflect.DeepEqual(gotM[i], wantM[i]) {
					t.Errorf("%s: manifest\nAdd   %+v\nbatch %+v", names[tc.pre+i], wantM[i], gotM[i])
				}
				if gotS[i] != wantS[i] {
					t.Errorf("%s: stats\nAdd   %+v\nbatch %+v", names[tc.pre+i], wantS[i], gotS[i])
				}
			}
			sameIndex(t, a, b, "batch")
			sa, _ := a.Stats()
			if sa.Units["delta"] == 0 || (sa.Units["cast"] == 0 && tc.maxDec == 0) {
				t.Fatalf("the hub gave no deltas or casts: %v", sa.Units)
			}
			for i, bm := range models {
				restore(t, b, bm.Name, fileBytes(t, models[i].Files))
			}
			if bad, err := b.Verify(); err != nil || len(bad) > 0 {
				t.Fatalf("verify: %v %v", bad, err)
			}
		})
	}
}

// TestAddBatchRefuses: a batch with a name given twice, a name already
// stored or an input that fails before the commit adds nothing.
func TestAddBatchRefuses(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	base := BatchModel{Name: "base", Files: inputs(t, path.Join(hub, "base/model.f32.safetensors"))}
	ft := BatchModel{Name: "ft", Files: inputs(t, path.Join(hub, "ft-continued/model.f32.safetensors"))}
	s, _ := tempStore(t)
	empty := func(what string) {
		t.Helper()
		if names, err := s.Names(); err != nil || len(names) != 0 {
			t.Fatalf("%s: models %v (%v), want none", what, names, err)
		}
	}
	if _, _, err := s.AddBatch([]BatchModel{base, ft, base}, AddOptions{}); err == nil {
		t.Fatal("a name given twice was accepted")
	}
	empty("name twice")
	failed := errors.New("input changed")
	if _, _, err := s.AddBatch([]BatchModel{base, ft}, AddOptions{BeforeCommit: func() error { return failed }}); !errors.Is(err, failed) {
		t.Fatalf("BeforeCommit's error: got %v", err)
	}
	empty("BeforeCommit failed")
	gs, err := s.GC()
	if err != nil || gs.Packs != 2 {
		t.Fatalf("gc after the abandoned batch: %+v %v, want its 2 chunk files removed", gs, err)
	}
	if _, _, err := s.Add("ft", ft.Files, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddBatch([]BatchModel{base, ft}, AddOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("a stored name: got %v, want ErrExists", err)
	}
	if names, _ := s.Names(); len(names) != 1 {
		t.Fatalf("after the refused batch: %v", names)
	}
	ms, sts, err := s.AddBatch([]BatchModel{base}, AddOptions{})
	if err != nil || len(ms) != 1 || sts[0].Units == 0 {
		t.Fatalf("batch of one: %v %v %v", ms, sts, err)
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatalf("verify: %v %v", bad, err)
	}
}

// TestBatching: where nzip store add puts the next model.
func TestBatching(t *testing.T) {
	for _, c := range []struct {
		models      int
		size, n     int64
		alone, full bool
	}{
		{0, 0, BatchBytes + 1, true, true},
		{3, 100, BatchBytes, false, true},
		{0, 0, BatchBytes, false, false},
		{BatchModels, 100, 1, false, true},
		{BatchModels - 1, 100, 1, false, false},
	} {
		if alone, full := batching(c.models, c.size, c.n); alone != c.alone || full != c.full {
			t.Errorf("batching(%d, %d, %d) = %v, %v; want %v, %v", c.models, c.size, c.n, alone, full, c.alone, c.full)
		}
	}
}

// TestBatcher: models are added in batches of at most BatchModels, in
// order; a batch whose check fails adds none of its models and says so;
// every model's done runs once, whether it was added, failed or was
// discarded.
func TestBatcher(t *testing.T) {
	s := NewMem(Options{})
	in := func(i int) []Input {
		b := []byte(fmt.Sprintf("the bytes of model %d", i))
		return []Input{{Name: "f", R: bytesReader(b), Size: int64(len(b))}}
	}
	var added []string
	done := map[string]int{}
	b := &Batcher{Store: s, Added: func(m *Manifest, _ AddStats) { added = append(added, m.Name) }}
	add := func(name string, i int, check func() error) error {
		return b.Add(name, in(i), check, func() { done[name]++ })
	}
	var want []string
	for i := range BatchModels + 2 {
		name := fmt.Sprint("m", i)
		want = append(want, name)
		if err := add(name, i, nil); err != nil {
			t.Fatal(err)
		}
		if i == BatchModels && len(added) != BatchModels {
			t.Fatalf("model %d: %d added, want the first batch of %d", i, len(added), BatchModels)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(added, want) {
		t.Fatalf("added %v, want %v", added, want)
	}
	changed := errors.New("a file changed")
	add("x1", 100, nil)
	add("x2", 101, func() error { return changed })
	if err := b.Flush(); !errors.Is(err, changed) || !strings.Contains(err.Error(), "none of this batch's 2 models") {
		t.Fatalf("a batch whose check fails: %v", err)
	}
	add("y", 102, nil)
	b.Discard()
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	names, err := s.Names()
	if err != nil || len(names) != len(want) {
		t.Fatalf("%d models stored (%v), want %d", len(names), err, len(want))
	}
	for _, n := range append(want, "x1", "x2", "y") {
		if done[n] != 1 {
			t.Fatalf("model %s: done ran %d times", n, done[n])
		}
	}
}
