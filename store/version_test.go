package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
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

// TestOwnCast: a model holding an F32 tensor and, before it, its BF16
// cast (one file) stores the BF16 tensor as that cast in version 2 as in
// version 1, added alone (Add, which reads such 16-bit tensors ahead:
// localCastFPs) or in a batch; with the F32 tensor first, neither
// version relates them (a unit sees only the index, not the units of its
// own model).
func TestOwnCast(t *testing.T) {
	const n = 4096
	rng := rand.New(rand.NewPCG(3, 4))
	f32 := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	bf := castF32(nil, f32, dtype.BF16)
	for _, bfFirst := range []bool{true, false} {
		file := append(slices.Clone(bf), f32...)
		segs := []codec.Segment{{Offset: 0, Length: 2 * n, Name: "b", DType: dtype.BF16, Shape: []int64{n}}, {Offset: 2 * n, Length: 4 * n, Name: "f", DType: dtype.F32, Shape: []int64{n}}}
		if !bfFirst {
			file = append(slices.Clone(f32), bf...)
			segs = []codec.Segment{{Offset: 0, Length: 4 * n, Name: "f", DType: dtype.F32, Shape: []int64{n}}, {Offset: 4 * n, Length: 2 * n, Name: "b", DType: dtype.BF16, Shape: []int64{n}}}
		}
		in := []Input{{Name: "m", R: bytes.NewReader(file), Size: int64(len(file)), Segments: segs}}
		for _, v := range []int{Version1, Version2} {
			for _, batch := range []bool{false, true} {
				s := newMemVersion(Options{Threads: 2}, v)
				var err error
				if batch {
					_, _, err = s.AddBatch([]BatchModel{{Name: "m", Files: in}}, AddOptions{})
				} else {
					_, _, err = s.Add("m", in, AddOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
				st, _ := s.Stats()
				if want := map[bool]int{true: 1, false: 0}[bfFirst]; st.Units["cast"] != want {
					t.Fatalf("BF16 first %v, version %d, batch %v: %d casts, want %d", bfFirst, v, batch, st.Units["cast"], want)
				}
				restore(t, s, "m", [][]byte{file})
			}
		}
	}
}
