//go:build !js

package store

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// v1Hub makes a version 1 store of the hub's files at dir (the version 1
// code path: what builds before version 2 made) and returns the files'
// bytes by model name.
func v1Hub(t *testing.T, dir string) map[string][][]byte {
	t.Helper()
	hub := shared(t, "hub/stories260K")
	if err := initVersion(dir, Version1); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return addFiles(t, s, hub, hubNames())
}

// checkMigrated: the store at dir opens as version wantV, every model of
// want restores byte for byte, verify passes, no model is missing.
func checkMigrated(t *testing.T, dir string, wantV int, want map[string][][]byte, what string) {
	t.Helper()
	s, err := Open(dir, Options{ReadOnly: true, LockWait: 10 * time.Second})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer s.Close()
	if s.Version() != wantV {
		t.Fatalf("%s: version %d, want %d", what, s.Version(), wantV)
	}
	names, _ := s.Names()
	if !slices.Equal(names, slices.Sorted(func(yield func(string) bool) {
		for n := range want {
			if !yield(n) {
				return
			}
		}
	})) {
		t.Fatalf("%s: models %v", what, names)
	}
	for name, w := range want {
		restore(t, s, name, w)
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatalf("%s: verify: %v %v", what, err, bad)
	}
}

// TestMigrate: a version 1 store migrates to version 2 in place: the same
// models, byte for byte, the same units (each unit of the old store is a
// unit of the new one: every manifest lists as many), the old chunk files
// gone; the payload is the one a fresh version 2 store of the same models
// takes; a second migrate refuses.
func TestMigrate(t *testing.T) {
	needDir(t)
	dir := t.TempDir()
	want := v1Hub(t, dir)
	s, _ := Open(dir, Options{ReadOnly: true})
	oldUnits := map[string]int{}
	for name := range want {
		m, _ := s.Model(name)
		for _, f := range m.Files {
			oldUnits[name] += len(f.Units)
		}
	}
	s.Close()
	st, err := Migrate(dir, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d models, %d raw bytes: payload %d → %d bytes; gc removed %d of %d chunk files", st.Models, st.Raw, st.Before, st.After, st.GC.Packs, st.PacksBefore)
	checkMigrated(t, dir, Version2, want, "migrated")
	s, _ = Open(dir, Options{ReadOnly: true})
	defer s.Close()
	for name, n := range oldUnits {
		m, _ := s.Model(name)
		k := 0
		for _, f := range m.Files {
			k += len(f.Units)
		}
		if k != n {
			t.Fatalf("%s: %d units, was %d", name, k, n)
		}
	}
	if st.GC.Packs != int64(st.PacksBefore) {
		t.Fatalf("gc removed %d chunk files, want the %d old ones", st.GC.Packs, st.PacksBefore)
	}
	if _, err := os.Stat(filepath.Join(dir, migrateName)); err == nil {
		t.Fatal("the new index's temporary name is left")
	}
	// a fresh version 2 store of the same models in the same order
	ref := NewMem(Options{Threads: 2})
	hub := shared(t, "hub/stories260K")
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range want {
			if !yield(n) {
				return
			}
		}
	})
	var bms []BatchModel
	for _, n := range names {
		bms = append(bms, BatchModel{Name: n, Files: inputs(t, path.Join(hub, n))})
	}
	if _, _, err := ref.AddBatch(bms, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	rst, _ := ref.Stats()
	if rst.Stored != st.After {
		t.Fatalf("migrated payload %d, a fresh version 2 store's %d", st.After, rst.Stored)
	}
	s.Close()
	if _, err := Migrate(dir, Options{}); err == nil {
		t.Fatal("a second migrate did not refuse")
	}
}

// TestMigrateKillChild is the child of TestMigrateKill: it migrates the
// store NZ_MIGRATE_CHILD and kills itself at phase NZ_MIGRATE_KILL.
func TestMigrateKillChild(t *testing.T) {
	dir := os.Getenv("NZ_MIGRATE_CHILD")
	if dir == "" {
		t.Skip("the child process of TestMigrateKill (NZ_MIGRATE_CHILD not set)")
	}
	phase := os.Getenv("NZ_MIGRATE_KILL")
	killAt(phase)
	if _, err := Migrate(dir, Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateKill kills a migrating process (kill -9) before the switch
// (after a model, after the new chunk files land, after the new index is
// complete), after it, and at random times: the store opens as version 1
// with every model byte for byte, or as version 2 with every model byte
// for byte; a migrate run again completes it, and gc leaves no file
// nothing uses.
func TestMigrateKill(t *testing.T) {
	needDir(t)
	if testing.Short() {
		t.Skip("-short: the kill test runs child processes")
	}
	tmpl := t.TempDir()
	want := v1Hub(t, tmpl)
	dir := t.TempDir()
	run := func(phase string, after time.Duration) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMigrateKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NZ_MIGRATE_CHILD="+dir, "NZ_MIGRATE_KILL="+phase)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if after > 0 {
			time.Sleep(after)
			cmd.Process.Kill()
		}
		cmd.Wait()
	}
	version := func() int {
		s, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return s.Version()
	}
	cases := []struct {
		phase string
		after time.Duration
		v     int // the version the kill leaves (0: either)
	}{
		{"migrate-model", 0, Version1}, {"pack-written", 0, Version1}, {"migrate-built", 0, Version1},
		{"migrate-switched", 0, Version2}, {"", 100 * time.Millisecond, 0}, {"", 300 * time.Millisecond, 0},
		{"", 600 * time.Millisecond, 0}, {"", 1500 * time.Millisecond, 0}, {"", 3 * time.Second, 0},
	}
	for _, c := range cases {
		os.RemoveAll(dir)
		copyDir(t, tmpl, dir)
		run(c.phase, c.after)
		what := "killed at " + c.phase
		if c.after > 0 {
			what = "killed after " + c.after.String()
		}
		v := version()
		if c.v != 0 && v != c.v {
			t.Fatalf("%s: version %d, want %d", what, v, c.v)
		}
		checkMigrated(t, dir, v, want, what)
		if v == Version1 {
			if _, err := Migrate(dir, Options{}); err != nil {
				t.Fatalf("%s: migrate again: %v", what, err)
			}
		}
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		gs, err := s.GC()
		if err != nil {
			t.Fatal(err)
		}
		st, _ := s.Stats()
		s.Close()
		if st.ChunkBytes != st.Stored {
			t.Fatalf("%s: after gc the chunk files hold %d bytes, the index uses %d", what, st.ChunkBytes, st.Stored)
		}
		checkMigrated(t, dir, Version2, want, what+", migrated again")
		t.Logf("%s: left version %d; complete after; gc then removed %d chunk files", what, v, gs.Packs)
	}
}
