//go:build !js

package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"neuralzip/dtype"
)

// TestRepackKillChild is the child of TestRepackKill: it repacks the store
// NZ_REPACK_CHILD and kills itself (SIGKILL) at phase NZ_STORE_KILL.
func TestRepackKillChild(t *testing.T) {
	dir := os.Getenv("NZ_REPACK_CHILD")
	if dir == "" {
		t.Skip("the child process of TestRepackKill (NZ_REPACK_CHILD not set)")
	}
	phase := os.Getenv("NZ_STORE_KILL")
	killAt(phase)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Repack(); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// copyDir copies a store directory.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	os.RemoveAll(to)
	err := filepath.WalkDir(from, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		q := filepath.Join(to, strings.TrimPrefix(p, from))
		if e.IsDir() {
			return os.MkdirAll(q, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(q, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRepackKill kills a repacking process (kill -9) after it wrote the
// new chunk file, after it switched the index, inside the gc that follows
// (after gc's rewrite of a chunk file, and after its switch) and at
// random times, on the hub stored in 16-bit-first order (every F32 add
// left BF16 units to recast); each time the store opens, restores every
// model byte for byte and verifies, and a second repack completes it to
// the payload of an uninterrupted repack, with no chunk bytes left over
// after its gc.
func TestRepackKill(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	if testing.Short() {
		t.Skip("-short: the kill test runs child processes")
	}
	tmpl := filepath.Join(t.TempDir(), "template")
	if err := Init(tmpl); err != nil {
		t.Fatal(err)
	}
	s, err := Open(tmpl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := addBatchOrder(t, s, hub, hubOrders()["16-bit-first"])
	s.Close()
	ref := filepath.Join(t.TempDir(), "ref")
	copyDir(t, tmpl, ref)
	s, err = Open(ref, Options{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.Repack()
	if err != nil {
		t.Fatal(err)
	}
	fullSt, _ := s.Stats()
	s.Close()
	dir := filepath.Join(t.TempDir(), "store")
	run := func(phase string, after time.Duration) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRepackKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NZ_REPACK_CHILD="+dir, "NZ_STORE_KILL="+phase)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if after > 0 {
			time.Sleep(after)
			cmd.Process.Kill()
		}
		cmd.Wait()
	}
	check := func(what string) {
		s, err := Open(dir, Options{LockWait: 10 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer s.Close()
		for n, w := range want {
			restore(t, s, n, w)
		}
		verifyStore(t, s)
		rs, err := s.Repack()
		if err != nil {
			t.Fatalf("%s: repack again: %v", what, err)
		}
		for n, w := range want {
			restore(t, s, n, w)
		}
		verifyStore(t, s)
		st, _ := s.Stats()
		if st.Stored != full.After || st.ChunkBytes != fullSt.ChunkBytes {
			t.Fatalf("%s, repacked again: payload %d, chunk files %d bytes (uninterrupted: %d, %d)", what, st.Stored, st.ChunkBytes, full.After, fullSt.ChunkBytes)
		}
		if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != 0 {
			t.Fatalf("%s: %d temporary files left after the second repack", what, len(ents))
		}
		t.Logf("%s: restores and verifies; the repack after it recast %d units, switched %d records", what, rs.Recast, rs.Changed)
	}
	for _, phase := range []string{"pack-written", "replan-written", "replan-switched", "repack-written", "repack-switched"} {
		copyDir(t, tmpl, dir)
		run(phase, 0)
		check("killed at " + phase)
	}
	for _, d := range []time.Duration{20, 60, 120, 250, 400} {
		copyDir(t, tmpl, dir)
		run("", d*time.Millisecond)
		check("killed after " + (d * time.Millisecond).String())
	}
}

// TestRepackDamaged: a damaged unit record or chunk file met by repack is
// an error (ErrIndexDamaged, ErrChunkDamaged) before anything is switched:
// no chunk file is written, and every get restores its model's bytes or
// fails, never other bytes.
func TestRepackDamaged(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	tmpl := filepath.Join(t.TempDir(), "template")
	if err := Init(tmpl); err != nil {
		t.Fatal(err)
	}
	s, err := Open(tmpl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := addBatchOrder(t, s, hub, hubOrders()["16-bit-first"])
	s.Close()
	packs := func(dir string) []string { return filesUnder(filepath.Join(dir, "packs")) }
	dir := filepath.Join(t.TempDir(), "store")
	gets := func(s *Store) {
		for n, w := range want {
			m, err := s.Model(n)
			if err != nil {
				continue
			}
			for fi := range m.Files {
				var buf bytes.Buffer
				if err := s.WriteFile(m, fi, &buf); err == nil && !bytes.Equal(buf.Bytes(), w[fi]) {
					t.Fatalf("%s restores to other bytes with no error", n)
				}
			}
		}
	}
	// a damaged unit record: the first F32 unit with BF16 units to recast
	copyDir(t, tmpl, dir)
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var victim Hash
	s.kv.view(func(t tx) error {
		// (a version 2 store has no cast hints: the F32 unit whose
		// fingerprint casts to a stored BF16 unit's)
		fps := map[Hash]fingerprint{}
		t.scan(bFP, nil, func(k, v []byte) error {
			if len(k) > 32 && k[0] != 0 {
				if f, err := parseFingerprint(v); err == nil {
					fps[Hash(k[len(k)-32:])] = f
				}
			}
			return nil
		})
		return t.scan(bFP, []byte("F32\x00"), func(k, v []byte) error {
			x := Hash(k[len(k)-32:])
			for _, fy := range fps {
				if victim == (Hash{}) && castsTo(fps[x], fy, dtype.BF16) {
					victim = x
				}
			}
			return nil
		})
	})
	if victim == (Hash{}) {
		t.Fatal("no F32 unit with a BF16 unit to recast")
	}
	s.kv.update(func(t tx) error {
		v := bytes.Clone(t.get(bUnits, victim[:]))
		v[len(v)/2] ^= 0x40
		return t.put(bUnits, victim[:], v)
	})
	before := len(packs(dir))
	if _, err := s.Repack(); !errors.Is(err, ErrIndexDamaged) {
		t.Fatalf("repack with a damaged unit record: %v, want ErrIndexDamaged", err)
	} else {
		t.Logf("damaged record: %v", err)
	}
	if n := len(packs(dir)); n != before {
		t.Fatalf("repack with a damaged record wrote %d chunk files", n-before)
	}
	gets(s)
	s.Close()
	// a damaged chunk file: each in turn
	failed := 0
	for _, p := range packs(tmpl) {
		copyDir(t, tmpl, dir)
		q := filepath.Join(dir, strings.TrimPrefix(p, tmpl))
		b, err := os.ReadFile(q)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x10
		if err := os.WriteFile(q, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		before := len(packs(dir))
		_, err = s.Repack()
		switch {
		case err == nil:
			// bytes repack did not need to read (a unit it left as it
			// was, or a payload no unit uses): verify's to report
			failed++
		case !errors.Is(err, ErrChunkDamaged):
			t.Fatalf("%s damaged: repack: %v, want ErrChunkDamaged", filepath.Base(q), err)
		default:
			if n := len(packs(dir)); n != before {
				t.Fatalf("failed repack wrote %d chunk files", n-before)
			}
			if !strings.Contains(err.Error(), "model \"") {
				t.Fatalf("repack: %v: does not name the model", err)
			}
		}
		gets(s)
		s.Close()
	}
	t.Logf("%d damaged chunk files: repack stopped at %d", len(packs(tmpl)), len(packs(tmpl))-failed)
	if failed == len(packs(tmpl)) {
		t.Fatal("repack read none of the damaged chunk files")
	}
}
