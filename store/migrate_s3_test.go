//go:build !js

package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// v1S3 makes a version 1 s3:// store of the hub's files (the version 1
// code path, as v1Hub) and returns its location and the files' bytes by
// model name.
func v1S3(t *testing.T, files []string) (string, map[string][][]byte) {
	t.Helper()
	hub := shared(t, "hub/stories260K")
	loc := s3Server(t)
	if err := initVersion(loc, Version1); err != nil {
		t.Fatal(err)
	}
	s, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return loc, addFiles(t, s, hub, files)
}

// noGrace makes gc remove what it finds unused at once (no add runs
// beside it) for the rest of the test.
func noGrace(t *testing.T) {
	g := s3GCGrace
	s3GCGrace = 0
	t.Cleanup(func() { s3GCGrace = g })
}

// checkS3Clean: after a gc every chunk file is one the index uses (an
// s3:// gc rewrites none: they hold the index's bytes and the dead bytes
// of units recast later), and no migration's root is left.
func checkS3Clean(t *testing.T, loc, what string) {
	t.Helper()
	s, err := Open(loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gs, err := s.GC()
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.ChunkBytes != st.Stored+gs.DeadBytes {
		t.Fatalf("%s: after gc the chunk files hold %d bytes, the index uses %d (%d dead in its chunk files)", what, st.ChunkBytes, st.Stored, gs.DeadBytes)
	}
	l, _ := parseS3(loc)
	var left []string
	if err := (s3Objs{l}).list(context.Background(), s3MigratePrefix, func(key string, _ time.Time) error {
		left = append(left, key)
		return nil
	}); err != nil || len(left) > 0 {
		t.Fatalf("%s: a migration's root is left after gc: %v %v", what, left, err)
	}
}

// TestS3Migrate: a version 1 s3:// store migrates to version 2 on a real
// S3 server: every model byte for byte, verify passes, the payload is the
// one a fresh version 2 store of the same models takes, the old chunk
// files gone; a Store that had the version 1 store open refuses to write
// into the version 2 one (ErrMigrated); a second migrate refuses.
func TestS3Migrate(t *testing.T) {
	files := []string{"base/model.f32.safetensors", "base/model.bf16.safetensors", "ft-fortunes-full/model.f32.safetensors",
		"ft-fortunes-full/model.f16.gguf", "ft-continued/model.bf16.safetensors"}
	loc, want := v1S3(t, files)
	noGrace(t)
	stale, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	st, err := Migrate(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d models, %d raw bytes: payload %d → %d bytes; gc removed %d of %d chunk files", st.Models, st.Raw, st.Before, st.After, st.GC.Packs, st.PacksBefore)
	checkMigrated(t, loc, Version2, want, "migrated")
	if st.GC.Packs != int64(st.PacksBefore) {
		t.Fatalf("gc removed %d chunk files, want the %d old ones", st.GC.Packs, st.PacksBefore)
	}
	checkS3Clean(t, loc, "migrated")
	ref := NewMem(Options{Threads: 2})
	hub := shared(t, "hub/stories260K")
	var bms []BatchModel
	for _, n := range slices.Sorted(maps.Keys(want)) {
		bms = append(bms, BatchModel{Name: n, Files: inputs(t, hub+"/"+n)})
	}
	if _, _, err := ref.AddBatch(bms, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	rst, _ := ref.Stats()
	if rst.Stored != st.After {
		t.Fatalf("migrated payload %d, a fresh version 2 store's %d", st.After, rst.Stored)
	}
	if _, _, err := stale.Add("late", inputs(t, hub+"/tok512.bin"), AddOptions{}); !errors.Is(err, ErrMigrated) {
		t.Fatalf("an add through a Store opened as version 1: %v, want ErrMigrated", err)
	}
	if _, err := Migrate(loc, Options{}); err == nil {
		t.Fatal("a second migrate did not refuse")
	}
}

// TestS3MigrateRaced: a writer that removes a model and adds another
// between the migration's start and its switch makes the switch fail; the
// migration brings its index up to the store as it is then and switches
// again: the version 2 store holds exactly the models the version 1 store
// held at the switch.
func TestS3MigrateRaced(t *testing.T) {
	loc, want := v1S3(t, []string{"base/model.f32.safetensors", "ft-fortunes-full/model.bf16.safetensors"})
	noGrace(t)
	hub := shared(t, "hub/stories260K")
	w, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	built := 0
	testHook = func(p string) {
		if p == "migrate-built" {
			if built++; built == 1 {
				if err := w.Remove("ft-fortunes-full/model.bf16.safetensors"); err != nil {
					t.Fatal(err)
				}
				delete(want, "ft-fortunes-full/model.bf16.safetensors")
				maps.Copy(want, addFiles(t, w, hub, []string{"ft-continued/model.f32.safetensors"}))
			}
		}
	}
	st, err := Migrate(loc, Options{Threads: 2})
	testHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if built != 2 || st.Models != 2 {
		t.Fatalf("%d switches tried, %d models migrated; want 2 and 2", built, st.Models)
	}
	checkMigrated(t, loc, Version2, want, "migrated across a writer")
	checkS3Clean(t, loc, "migrated across a writer")
}

// TestS3MigrateRacedOut: a writer that lands before every switch the
// migration tries makes it give up (ErrMigrateRaced): the store is the
// version 1 store with every model the writer added, whole; a migrate run
// again (no writer) takes them all.
func TestS3MigrateRacedOut(t *testing.T) {
	loc, want := v1S3(t, []string{"base/model.f32.safetensors"})
	noGrace(t)
	hub := shared(t, "hub/stories260K")
	tok, err := os.ReadFile(hub + "/tok512.bin")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	built := 0
	testHook = func(p string) {
		if p == "migrate-built" {
			built++
			name := fmt.Sprintf("late%d", built)
			if _, _, err := w.Add(name, inputs(t, hub+"/tok512.bin"), AddOptions{}); err != nil {
				t.Fatal(err)
			}
			want[name] = [][]byte{tok}
		}
	}
	_, err = Migrate(loc, Options{Threads: 2})
	testHook = nil
	if !errors.Is(err, ErrMigrateRaced) || built != s3MigrateTries {
		t.Fatalf("migrate with a writer landing before every switch: %v after %d tries, want ErrMigrateRaced after %d", err, built, s3MigrateTries)
	}
	checkMigrated(t, loc, Version1, want, "raced out")
	if _, err := Migrate(loc, Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, loc, Version2, want, "migrated again")
	checkS3Clean(t, loc, "migrated again")
}

// TestS3MigrateKillChild is the child of TestS3MigrateKill: it migrates
// the store NZ_MIGRATE_S3_CHILD (the server's endpoint in its environment)
// and kills itself at phase NZ_MIGRATE_KILL.
func TestS3MigrateKillChild(t *testing.T) {
	loc := os.Getenv("NZ_MIGRATE_S3_CHILD")
	if loc == "" {
		t.Skip("the child process of TestS3MigrateKill (NZ_MIGRATE_S3_CHILD not set)")
	}
	killAt(os.Getenv("NZ_MIGRATE_KILL"))
	if _, err := Migrate(loc, Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
}

// TestS3MigrateKill kills a process migrating an s3:// store (kill -9)
// before the switch (after a model, once the new index is complete), after
// it, and at random times: the store is the version 1 store with every
// model byte for byte, or the version 2 store with every model byte for
// byte; a migrate run again completes it, and gc leaves no chunk file
// nothing uses.
func TestS3MigrateKill(t *testing.T) {
	files := []string{"base/model.f32.safetensors", "ft-fortunes-full/model.bf16.safetensors", "ft-continued/model.f32.safetensors"}
	cases := []struct {
		phase string
		after time.Duration
		v     int // the version the kill leaves (0: either)
	}{
		{"migrate-model", 0, Version1}, {"migrate-built", 0, Version1}, {"migrate-switched", 0, Version2},
		{"", 150 * time.Millisecond, 0}, {"", 400 * time.Millisecond, 0}, {"", 900 * time.Millisecond, 0},
	}
	for _, c := range cases {
		loc, want := v1S3(t, files)
		noGrace(t)
		cmd := exec.Command(os.Args[0], "-test.run", "^TestS3MigrateKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NZ_MIGRATE_S3_CHILD="+loc, "NZ_MIGRATE_KILL="+c.phase)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if c.after > 0 {
			time.Sleep(c.after)
			cmd.Process.Kill()
		}
		cmd.Wait()
		what := "killed at " + c.phase
		if c.after > 0 {
			what = "killed after " + c.after.String()
		}
		s, err := Open(loc, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		v := s.Version()
		s.Close()
		if c.v != 0 && v != c.v {
			t.Fatalf("%s: version %d, want %d", what, v, c.v)
		}
		checkMigrated(t, loc, v, want, what)
		if v == Version1 {
			if _, err := Migrate(loc, Options{Threads: 2}); err != nil {
				t.Fatalf("%s: migrate again: %v", what, err)
			}
			checkMigrated(t, loc, Version2, want, what+", migrated again")
		}
		checkS3Clean(t, loc, what+", then gc")
		t.Logf("%s: left version %d", what, v)
	}
}

// TestS3MigrateLegacy: a version 1 store as the oldest builds wrote it (no
// format record, the index one object: legacyKV) migrates to version 2:
// the switch replaces the single object with the new root.
func TestS3MigrateLegacy(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	loc := s3Server(t)
	l, err := parseS3(loc)
	if err != nil {
		t.Fatal(err)
	}
	o := s3Objs{l}
	if err := initLegacy(o); err != nil {
		t.Fatal(err)
	}
	lk, err := openLegacy(o)
	if err != nil {
		t.Fatal(err)
	}
	old, err := newS3Store(loc, l, lk, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if old.Version() != Version1 {
		t.Fatalf("a store without a format record opens as version %d", old.Version())
	}
	want := addFiles(t, old, hub, []string{"base/model.f32.safetensors", "base/model.bf16.safetensors"})
	noGrace(t)
	st, err := Migrate(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, loc, Version2, want, "migrated")
	checkS3Clean(t, loc, "migrated")
	t.Logf("%d models: payload %d → %d bytes; gc removed %d of %d chunk files", st.Models, st.Before, st.After, st.GC.Packs, st.PacksBefore)
}
