package store

import (
	"crypto/sha256"
	"errors"
	"path"
	"path/filepath"
	"testing"

	"neuralzip/codec"
)

// TestVersions: Init makes a version 2 store (units and chunk files
// addressed by BLAKE3, no cast hints, casts found from the fingerprints in
// either order); a version 1 store (made here by the version 1 code path,
// as builds before version 2 made it: SHA-256 addresses and cast hints)
// still opens, adds, restores byte for byte and verifies, and stays
// version 1. Both take the same payload for the hub in F32-first and in
// 16-bit-first order.
func TestVersions(t *testing.T) {
	needDir(t)
	hub := shared(t, "hub/stories260K")
	names := hubNames()
	rev := make([]string, 0, len(names)) // 16-bit files first
	for _, n := range names {
		if filepath.Ext(n) != ".safetensors" || !isF32Name(n) {
			rev = append(rev, n)
		}
	}
	for _, n := range names {
		if filepath.Ext(n) == ".safetensors" && isF32Name(n) {
			rev = append(rev, n)
		}
	}
	payload := map[int]int64{}
	for _, v := range []int{Version1, Version2} {
		for oi, order := range [][]string{names, rev} {
			dir := t.TempDir()
			if err := initVersion(dir, v); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			if s.Version() != v {
				t.Fatalf("version %d store opens as %d", v, s.Version())
			}
			want := addFiles(t, s, hub, order)
			s.Close()
			s, err = Open(dir, Options{Threads: 2, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				restore(t, s, name, w)
			}
			if _, err := s.Verify(); err != nil {
				t.Fatalf("version %d: verify: %v", v, err)
			}
			hints, units, checked := 0, 0, 0
			s.kv.view(func(tx tx) error {
				tx.scan(bCasts, nil, func(k, v []byte) error { hints++; return nil })
				return tx.scan(bUnits, nil, func(k, _ []byte) error {
					units++
					if checked < 20 {
						raw, err := s.UnitBytes(Hash(k))
						if err != nil {
							t.Fatal(err)
						}
						want := Hash(sha256.Sum256(raw))
						if v == Version2 {
							want = Hash(codec.SumBLAKE3(raw))
						}
						if want != Hash(k) {
							t.Fatalf("version %d: unit %x is not addressed by its bytes' %s", v, k[:8], map[int]string{1: "SHA-256", 2: "BLAKE3"}[v])
						}
						checked++
					}
					return nil
				})
			})
			if (v == Version1) != (hints > 0) {
				t.Fatalf("version %d: %d cast hints", v, hints)
			}
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("version %d, order %d: %d units (%d casts), %d cast hints, payload %d", v, oi, units, st.Units["cast"], hints, st.Stored)
			if oi == 0 {
				payload[v] = st.Stored
			}
			if st.Units["cast"] == 0 {
				t.Fatalf("version %d: no casts", v)
			}
			s.Close()
		}
	}
	if payload[Version1] != payload[Version2] {
		t.Fatalf("payload: version 1 %d, version 2 %d", payload[Version1], payload[Version2])
	}
}

func isF32Name(n string) bool { return path.Base(n) == "model.f32.safetensors" }

// TestHostileFormat: a damaged or unknown format record is an error naming
// the index (ErrIndexDamaged) when the store opens, never a store read
// with the wrong addresses.
func TestHostileFormat(t *testing.T) {
	needDir(t)
	for _, bad := range [][]byte{{1, 2, 0, 0, 0, 0}, formatRec(7), append(formatRec(Version2)[:5:5], 0)} {
		s, dir := tempStore(t)
		if err := s.kv.update(func(t tx) error { return t.put(bFP, formatKey, bad) }); err != nil {
			t.Fatal(err)
		}
		s.Close()
		for _, ro := range []bool{false, true} {
			if _, err := Open(dir, Options{ReadOnly: ro}); !errors.Is(err, ErrIndexDamaged) {
				t.Fatalf("format record %x (read-only %v): %v, want ErrIndexDamaged", bad, ro, err)
			}
		}
	}
}
