package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"
)

// TestMaxDecodeInit: InitWith refuses a bound below 1, NaN or infinite;
// the bound is read back at Open and shown by Stats; a store made without
// one has no record of it (an unbounded store's index is what it was); a
// damaged record is refused at Open.
func TestMaxDecodeInit(t *testing.T) {
	needDir(t)
	for _, r := range []float64{0.5, -1, math.NaN(), math.Inf(1), 0.999} {
		if err := InitWith(t.TempDir(), InitOptions{MaxDecode: r}); err == nil {
			t.Errorf("decode bound %v accepted", r)
		}
	}
	for _, r := range []float64{0, 1, 2.5} {
		dir := t.TempDir()
		if err := InitWith(dir, InitOptions{MaxDecode: r}); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if s.MaxDecode() != r || st.MaxDecode != r {
			t.Errorf("bound %v reads back as %v (stats %v)", r, s.MaxDecode(), st.MaxDecode)
		}
		_, has := dumpIndex(t, s)[fmt.Sprintf("%s/%x", bFP, maxDecodeKey)]
		if has != (r != 0) {
			t.Errorf("bound %v: record present %v", r, has)
		}
		s.Close()
	}
	// a damaged record
	dir := t.TempDir()
	if err := InitWith(dir, InitOptions{MaxDecode: 2}); err != nil {
		t.Fatal(err)
	}
	k, err := openBolt(filepath.Join(dir, indexName), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := maxDecodeRec(2)
	bad[3] ^= 1
	if err := k.update(func(t tx) error { return t.put(bFP, maxDecodeKey, bad) }); err != nil {
		t.Fatal(err)
	}
	k.close()
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrIndexDamaged) {
		t.Fatalf("a damaged decode bound opened: %v", err)
	}
}

// TestMaxDecodeHub: the hub added under bounds 1, 2 and 3, F32 files
// first and 16-bit files first (recasts), then repacked: every model
// restores byte for byte, and its get on a fresh read-only open decodes at
// most R bytes per byte restored, as many as the index says (Stats);
// under R = 1 every unit is coded alone, under R < 3 none is a cast.
func TestMaxDecodeHub(t *testing.T) {
	needDir(t)
	hub := shared(t, "hub/stories260K")
	orders := hubOrders()
	for _, r := range []float64{1, 2, 3} {
		for _, order := range []string{"hub", "16-bit-first"} {
			t.Run(fmt.Sprintf("R%g-%s", r, order), func(t *testing.T) {
				dir := t.TempDir()
				if err := InitWith(dir, InitOptions{MaxDecode: r}); err != nil {
					t.Fatal(err)
				}
				s, err := Open(dir, Options{Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				names := orders[order]
				want := addFiles(t, s, hub, names)
				s.Close()
				st := boundedGets(t, dir, r, names, want)
				switch {
				case r < 2 && (st.Units["delta"] > 0 || st.Units["cast"] > 0):
					t.Errorf("bound %v: units %v, want none coded against a base", r, st.Units)
				case r < 3 && st.Units["cast"] > 0:
					t.Errorf("bound %v: units %v, want no casts", r, st.Units)
				case r >= 2 && st.Units["delta"] == 0:
					t.Errorf("bound %v: units %v, want deltas", r, st.Units)
				}
				if s, err = Open(dir, Options{Threads: 2}); err != nil {
					t.Fatal(err)
				}
				rs, err := s.Repack()
				s.Close()
				if err != nil {
					t.Fatal(err)
				}
				after := boundedGets(t, dir, r, names, want)
				if rs.DecodedAfter != after.Decoded || rs.DecodedBefore != st.Decoded {
					t.Errorf("repack says %d → %d bytes decoded; stats %d → %d", rs.DecodedBefore, rs.DecodedAfter, st.Decoded, after.Decoded)
				}
			})
		}
	}
}

// boundedGets gets every model of the store at dir on a fresh read-only
// open, checks its bytes against want and its bytes decoded per byte
// restored against bound r, and the bytes decoded by all against Stats.
func boundedGets(t *testing.T, dir string, r float64, names []string, want map[string][][]byte) *Stats {
	t.Helper()
	s, err := Open(dir, Options{Threads: 2, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range names {
		m, err := s.Model(n)
		if err != nil {
			t.Fatal(err)
		}
		before := s.BytesDecoded()
		var restored int64
		for fi := range m.Files {
			var buf bytes.Buffer
			if err := s.WriteFile(m, fi, &buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want[n][fi]) {
				t.Fatalf("%s: file %d restores to other bytes", n, fi)
			}
			restored += int64(buf.Len())
		}
		if d := s.BytesDecoded() - before; float64(d) > r*float64(restored) {
			t.Errorf("%s: a get decoded %d bytes for %d restored (%.3f), bound %v", n, d, restored, float64(d)/float64(restored), r)
		}
	}
	unitsWithin(t, s, r)
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Decoded != s.BytesDecoded() {
		t.Errorf("gets decoded %d bytes, the index says %d", s.BytesDecoded(), st.Decoded)
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatalf("verify: %v %v", bad, err)
	}
	return st
}

// TestMaxDecodeRecast: a bound keeps an F32 unit arriving after its
// 16-bit export from recasting it when that takes the export, or a delta
// coded against it, past the bound: the base's BF16 export, then a
// fine-tune's (deltas of it), then the base's F32 (whose casts are the
// first's units; a recast would take the deltas to 1 + 3).
func TestMaxDecodeRecast(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	names := []string{"base/model.bf16.safetensors", "ft-continued/model.bf16.safetensors", "base/model.f32.safetensors"}
	casts := map[float64]int{}
	for _, r := range []float64{0, 4, 3} {
		s := newMemWith(Options{Threads: 2}, latestVersion, InitOptions{MaxDecode: r})
		want := addFiles(t, s, hub, names)
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		casts[r] = st.Units["cast"]
		unitsWithin(t, s, r)
		for _, n := range names {
			restore(t, s, n, want[n])
		}
	}
	if casts[0] == 0 || casts[4] != casts[0] || casts[3] >= casts[0] {
		t.Fatalf("casts (recasts) under bounds: %v; want some unbounded, as many under 4, fewer under 3", casts)
	}
}

// unitsWithin fails t unless every unit of s decodes within bound r
// (its chain's bytes over its own, from the index).
func unitsWithin(t *testing.T, s *Store, r float64) {
	t.Helper()
	err := s.kv.view(func(tx tx) error {
		return tx.scan(bUnits, nil, func(k, v []byte) error {
			u, err := parseUnit(v)
			if err != nil {
				return err
			}
			if c := chainCost(tx, u); c < 0 || !within(r, c, u.RawLen) {
				t.Errorf("unit %x (%s, %s): decodes %d bytes for %d, bound %v", k[:8], KindName(u.Kind), u.DType, c, u.RawLen, r)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
