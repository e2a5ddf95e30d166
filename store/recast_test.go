package store

import (
	"errors"
	"fmt"
	"path"
	"testing"
)

// checkDepths checks every unit's depth against its base's: one more for
// a delta or a cast, 0 for the others.
func checkDepths(t *testing.T, s *Store) {
	t.Helper()
	err := s.kv.view(func(tx tx) error {
		return tx.scan(bUnits, nil, func(k, v []byte) error {
			u, err := parseUnit(v)
			if err != nil {
				return err
			}
			if u.Kind != KindDelta && u.Kind != KindCast {
				return nil
			}
			b, err := parseUnit(tx.get(bUnits, u.Base[:]))
			if err != nil {
				return fmt.Errorf("unit %x: base: %v", k[:8], err)
			}
			if u.Depth != b.Depth+1 {
				return fmt.Errorf("unit %x (%s) at depth %d, its base at %d", k[:8], KindName(u.Kind), u.Depth, b.Depth)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// verifyStore runs Verify and fails on any damage.
func verifyStore(t *testing.T, s *Store) {
	t.Helper()
	bad, err := s.Verify()
	if err != nil || len(bad) > 0 {
		t.Fatalf("verify: %v %v", err, bad)
	}
}

// TestRecastBF16First: BF16 exports added before their F32 originals (one
// model at a time and in one batch) are coded alone or as deltas at first
// and become casts when the F32 arrives: every tensor of the BF16 files
// is then a cast, the payload is that of the F32-first order (within 2 %),
// a fine-tune's BF16 delta against the base's BF16 moves down with it
// (depths stay consistent), every model restores to its bytes before and
// after, verify passes, and gc rewrites the BF16 files' chunk files so
// that the chunk files hold only what the index uses.
func TestRecastBF16First(t *testing.T) {
	needDir(t)
	hub := shared(t, "hub/stories260K")
	order := []string{
		"base/model.bf16.safetensors",
		"ft-fortunes-full/model.bf16.safetensors",
		"base/model.f32.safetensors",
		"ft-fortunes-full/model.f32.safetensors",
	}
	ins := map[string][]Input{}
	want := map[string][][]byte{}
	for _, f := range order {
		ins[f] = inputs(t, path.Join(hub, f))
		want[f] = fileBytes(t, ins[f])
	}
	casts := func(s *Store) (n int) {
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return st.Units["cast"]
	}
	// the F32-first store, for the payload it takes
	ref := NewMem(Options{Threads: 2})
	for _, f := range []string{order[2], order[3], order[0], order[1]} {
		if _, _, err := ref.Add(f, ins[f], AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refSt, _ := ref.Stats()
	for _, batch := range []bool{false, true} {
		s, _ := tempStore(t)
		if batch {
			var bms []BatchModel
			for _, f := range order {
				bms = append(bms, BatchModel{Name: f, Files: ins[f]})
			}
			if _, _, err := s.AddBatch(bms, AddOptions{}); err != nil {
				t.Fatal(err)
			}
		} else {
			for i, f := range order {
				if _, _, err := s.Add(f, ins[f], AddOptions{}); err != nil {
					t.Fatal(err)
				}
				checkDepths(t, s)
				if i == 1 {
					if n := casts(s); n != 0 {
						t.Fatalf("%d casts before any F32 model", n)
					}
					for _, g := range order[:2] {
						restore(t, s, g, want[g])
					}
				}
			}
		}
		if n := casts(s); n != 2*47 {
			t.Fatalf("batch %v: %d casts, want %d (every tensor of both BF16 files)", batch, n, 2*47)
		}
		checkDepths(t, s)
		for _, f := range order {
			restore(t, s, f, want[f])
		}
		verifyStore(t, s)
		st, _ := s.Stats()
		if st.Stored > refSt.Stored*102/100 {
			t.Fatalf("batch %v: BF16 first stores %d payload bytes, F32 first %d (> 2 %% more)", batch, st.Stored, refSt.Stored)
		}
		m, err := s.Model(order[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Bases) != 1 || m.Bases[0] != order[2] {
			t.Fatalf("batch %v: the base BF16 model's bases are %q, want its F32 model", batch, m.Bases)
		}
		gs, err := s.GC()
		if err != nil {
			t.Fatal(err)
		}
		st, _ = s.Stats()
		if gs.Repacked == 0 || st.ChunkBytes != st.Stored {
			t.Fatalf("batch %v: gc repacked %d chunk files; the chunk files hold %d bytes, the index uses %d", batch, gs.Repacked, st.ChunkBytes, st.Stored)
		}
		t.Logf("batch %v: %d payload bytes (F32 first: %d); gc repacked %d chunk files, saving %d bytes", batch, st.Stored, refSt.Stored, gs.Repacked, gs.RepackedBytes)
		for _, f := range order {
			restore(t, s, f, want[f])
		}
		verifyStore(t, s)
		for _, f := range order {
			if err := s.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.GC(); err != nil {
			t.Fatal(err)
		}
		if st, _ := s.Stats(); st.ChunkBytes != 0 || len(st.Units) != 0 {
			t.Fatalf("batch %v: after removing every model: %d chunk bytes, units %v", batch, st.ChunkBytes, st.Units)
		}
	}
}

// errCrash ends a GC at a hook, as a crash would.
var errCrash = errors.New("crash")

// TestRepackCrash: a gc that dies after writing the new chunk file, or
// after switching the index to it, leaves a store that restores every
// model to its bytes and verifies; the next gc finishes the job.
func TestRepackCrash(t *testing.T) {
	needDir(t)
	hub := shared(t, "hub/stories260K")
	order := []string{"base/model.bf16.safetensors", "base/model.f32.safetensors"}
	for _, phase := range []string{"repack-written", "repack-switched"} {
		s, dir := tempStore(t)
		want := addFiles(t, s, hub, order)
		func() {
			testHook = func(p string) {
				if p == phase {
					panic(errCrash)
				}
			}
			defer func() {
				testHook = nil
				if r := recover(); r != errCrash {
					t.Fatalf("gc did not reach %s (%v)", phase, r)
				}
			}()
			s.GC()
		}()
		s.Close()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, f := range order {
			restore(t, s, f, want[f])
		}
		verifyStore(t, s)
		if _, err := s.GC(); err != nil {
			t.Fatal(err)
		}
		st, _ := s.Stats()
		if st.ChunkBytes != st.Stored {
			t.Fatalf("crash at %s, then gc: the chunk files hold %d bytes, the index uses %d", phase, st.ChunkBytes, st.Stored)
		}
		for _, f := range order {
			restore(t, s, f, want[f])
		}
		verifyStore(t, s)
	}
}

// TestRecastReleasesBase: a recast drops the reference its unit held on
// its old base. When nothing else holds that base (its model removed),
// the base stays in the index without references until gc — so a model
// that uses the base's bytes again, in the same add or later in the
// same batch (which found it stored before the commit), still finds it
// (it used to be removed by the recast, and the add failed with "not in
// the index") — and AddBatch makes the store that Add makes. gc then
// removes what nothing uses; every model restores and verifies.
func TestRecastReleasesBase(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	in := func(files ...string) []Input {
		var ins []Input
		for _, f := range files {
			x := inputs(t, path.Join(hub, f))
			x[0].Name = f
			ins = append(ins, x...)
		}
		return ins
	}
	const baseBF16, ftBF16, ftF32 = "base/model.bf16.safetensors", "ft-continued/model.bf16.safetensors", "ft-continued/model.f32.safetensors"
	// A: the base's BF16; C: a fine-tune's BF16, deltas of A's units; A removed
	prepare := func() *Store {
		s := NewMem(Options{Threads: 2})
		for _, m := range []BatchModel{{"A", in(baseBF16)}, {"C", in(ftBF16)}} {
			if _, _, err := s.Add(m.Name, m.Files, AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Remove("A"); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// E recasts C's deltas (releasing A's units), D uses A's bytes again
	batch := []BatchModel{
		{"E", in(ftF32)},
		{"D", in(baseBF16)},
		{"F", in("ft-fortunes-full/model.bf16.safetensors")},
	}
	a, b := prepare(), prepare()
	for _, m := range batch {
		if _, _, err := a.Add(m.Name, m.Files, AddOptions{}); err != nil {
			t.Fatalf("Add %s: %v", m.Name, err)
		}
		checkDepths(t, a)
	}
	if _, _, err := b.AddBatch(batch, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	sameIndex(t, a, b, "batch")
	// the same in one add: the model that recasts also uses the base's bytes
	c := prepare()
	if _, _, err := c.Add("ED", in(ftF32, baseBF16), AddOptions{}); err != nil {
		t.Fatal(err)
	}
	// and without a model that uses them again: gc removes them
	d := prepare()
	if _, _, err := d.Add("E", batch[0].Files, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	released := 0
	d.kv.view(func(tx tx) error {
		return tx.scan(bUnits, nil, func(_, v []byte) error {
			if u, err := parseUnit(v); err == nil && u.Refs == 0 {
				released++
			}
			return nil
		})
	})
	if released == 0 {
		t.Fatal("the recasts released no base: the test no longer covers releaseRef")
	}
	verifyStore(t, d)
	gs, err := d.GC()
	if err != nil || gs.Released != released {
		t.Fatalf("gc: %+v %v, want %d units released", gs, err, released)
	}
	for _, s := range []*Store{a, b, c, d} {
		verifyStore(t, s)
		checkDepths(t, s)
		names, _ := s.Names()
		for _, n := range names {
			m, _ := s.Model(n)
			var files []Input
			for _, f := range m.Files {
				files = append(files, in(f.Name)...)
			}
			restore(t, s, n, fileBytes(t, files))
		}
	}
}
