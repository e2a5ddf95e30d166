//go:build !js

package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"
)

// Migrations in the tests wait 2×s3GCRecheck after their root appeared
// before they check their objects (s3hold.go): a tenth of a second, not
// half a minute.
func init() { s3GCRecheck = 50 * time.Millisecond }

// s3Keys is the keys under prefix of the store at loc.
func s3Keys(t *testing.T, loc, prefix string) map[string]bool {
	t.Helper()
	l, err := parseS3(loc)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	if err := (s3Objs{l}).list(context.Background(), prefix, func(key string, _ time.Time) error {
		keys[key] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// rootShards is the shard keys the root at key names.
func rootShards(t *testing.T, loc, key string) []string {
	t.Helper()
	l, _ := parseS3(loc)
	raw, _, err := (s3Objs{l}).get(context.Background(), key, maxRootBytes, "")
	if err != nil {
		t.Fatal(err)
	}
	root, err := decodeRoot(raw)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, refs := range root.shards {
		for _, r := range refs {
			keys = append(keys, s3ShardKey(r.id))
		}
	}
	return keys
}

// sweepEvery makes every commit sweep and adopt, and gc's grace g, for the
// rest of the test.
func sweepEvery(t *testing.T, g time.Duration) {
	sw, ad, gr := s3SweepEvery, s3AdoptEvery, s3GCGrace
	s3SweepEvery, s3AdoptEvery, s3GCGrace = 1, 1, g
	t.Cleanup(func() { s3SweepEvery, s3AdoptEvery, s3GCGrace = sw, ad, gr })
}

// TestS3MigrateHeld: a gc and an add (whose commit sweeps and adopts) of
// the version 1 store, run while a migration is between building its
// objects and switching, when those objects are older than the grace
// period and named by no index but the migration's, and with a retired
// list naming the migration's shards: they delete nothing (gc reports the
// chunk files it kept); the switch lands (after the add, again), and every
// model restores byte for byte and verifies, before and after a commit on
// the version 2 store sweeps that list.
func TestS3MigrateHeld(t *testing.T) {
	loc, want := v1S3(t, []string{"base/model.f32.safetensors", "ft-fortunes-full/model.bf16.safetensors"})
	sweepEvery(t, 6*time.Second)
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
		switch {
		case p == "migrate-copied":
			time.Sleep(s3GCGrace + 1500*time.Millisecond) // its objects age past the grace
		case p == "migrate-built" && built == 0:
			built++
			roots := s3Keys(t, loc, s3MigratePrefix)
			if len(roots) != 1 {
				t.Fatalf("migration roots %v, want one", roots)
			}
			var ids []Hash
			for key := range roots {
				for _, sk := range rootShards(t, loc, key) {
					raw, err := hex.DecodeString(strings.TrimPrefix(sk, s3ShardPrefix))
					if err != nil || len(raw) != len(Hash{}) {
						t.Fatalf("shard key %s", sk)
					}
					ids = append(ids, Hash(raw))
				}
			}
			l, _ := parseS3(loc)
			if _, err := (s3Objs{l}).put(context.Background(), fmt.Sprintf("%s%012d-%016x-planted", s3RetiredPrefix, time.Now().Add(-time.Hour).Unix(), 0), encodeRetired(ids), "", false); err != nil {
				t.Fatal(err)
			}
			packs, shards := s3Keys(t, loc, "packs/"), s3Keys(t, loc, s3ShardPrefix)
			gs, err := w.GC()
			if err != nil {
				t.Fatal(err)
			}
			if gs.Packs != 0 || gs.Migrating == 0 {
				t.Fatalf("gc during a migration removed %d chunk files and kept %d for it; want none removed, some kept", gs.Packs, gs.Migrating)
			}
			if _, _, err := w.Add("late", inputs(t, hub+"/tok512.bin"), AddOptions{}); err != nil {
				t.Fatal(err)
			}
			want["late"] = [][]byte{tok}
			after := s3Keys(t, loc, "packs/")
			for k := range s3Keys(t, loc, s3ShardPrefix) {
				after[k] = true
			}
			for k := range packs {
				if !after[k] {
					t.Fatalf("%s deleted during the migration", k)
				}
			}
			for k := range shards {
				if !after[k] {
					t.Fatalf("%s deleted during the migration", k)
				}
			}
		case p == "migrate-built":
			built++
		}
	}
	st, err := Migrate(loc, Options{Threads: 2})
	testHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if built < 2 || st.Models != 3 {
		t.Fatalf("%d switches tried, %d models migrated; want 2 or more and 3", built, st.Models)
	}
	checkMigrated(t, loc, Version2, want, "migrated across a gc and a sweep")
	s, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(want, addFiles(t, s, hub, []string{"ft-continued/model.f32.safetensors"}))
	s.Close()
	checkMigrated(t, loc, Version2, want, "after a sweep of the version 2 store")
	noGrace(t)
	checkS3Clean(t, loc, "migrated across a gc and a sweep")
}

// TestS3MigrateGCAcross: a gc of the version 1 store that worked out what
// to delete before the switch (the migration's chunk files among it,
// older than the grace and named by no version 1 index) and deletes after
// it, once the migration's root is gone: it deletes nothing
// (ErrMigrated), and every model restores byte for byte and verifies.
func TestS3MigrateGCAcross(t *testing.T) {
	loc, want := v1S3(t, []string{"base/model.f32.safetensors", "ft-fortunes-full/model.bf16.safetensors"})
	sweepEvery(t, 3*time.Second)
	w, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	listed, switched := make(chan struct{}), make(chan struct{})
	var gs GCStats
	var gcErr error
	done := make(chan struct{})
	gcs, started := 0, false
	testHook = func(p string) {
		switch p {
		case "migrate-copied":
			time.Sleep(s3GCGrace + 1500*time.Millisecond)
		case "migrate-built":
			if !started {
				started = true
				go func() {
					defer close(done)
					gs, gcErr = w.GC()
				}()
				<-listed
			}
		case "gc-listed":
			if gcs++; gcs == 1 {
				close(listed)
				<-switched
			}
		}
	}
	_, err = Migrate(loc, Options{Threads: 2})
	close(switched)
	<-done
	testHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(gcErr, ErrMigrated) || gs.Packs != 0 {
		t.Fatalf("a version 1 gc deleting after the switch: %v, %d chunk files removed; want ErrMigrated and none", gcErr, gs.Packs)
	}
	checkMigrated(t, loc, Version2, want, "migrated across a gc")
}

// errMigrateCrash ends a migration in TestS3MigrateCrashedGC as a crash would.
var errMigrateCrash = errors.New("crash")

// TestS3MigrateCrashedGC: a migration that dies before its switch leaves
// its root and objects; while the root is younger than the grace period
// gc keeps them, and once it has aged gc removes the root and the chunk
// files, and the shard sweeps the shards, as before; the store stays the
// version 1 store, whole, and migrates afterwards.
func TestS3MigrateCrashedGC(t *testing.T) {
	loc, want := v1S3(t, []string{"base/model.f32.safetensors"})
	sweepEvery(t, time.Hour)
	hub := shared(t, "hub/stories260K")
	testHook = func(p string) {
		if p == "migrate-built" {
			panic(errMigrateCrash)
		}
	}
	func() {
		defer func() {
			if r := recover(); r != errMigrateCrash {
				panic(r)
			}
		}()
		Migrate(loc, Options{Threads: 2})
	}()
	testHook = nil
	if roots := s3Keys(t, loc, s3MigratePrefix); len(roots) != 1 {
		t.Fatalf("a crashed migration left roots %v, want one", roots)
	}
	packs := len(s3Keys(t, loc, "packs/"))
	s, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gs, err := s.GC()
	if err != nil {
		t.Fatal(err)
	}
	if gs.Packs != 0 || gs.Temps != 0 || gs.Young == 0 {
		t.Fatalf("gc of a young crashed migration removed %d chunk files and %d roots, kept %d young ones; want none removed, some kept", gs.Packs, gs.Temps, gs.Young)
	}
	s3GCGrace = 0 // the root and its objects have aged
	if gs, err = s.GC(); err != nil {
		t.Fatal(err)
	}
	if gs.Temps != 1 || gs.Packs == 0 || gs.Migrating != 0 || len(s3Keys(t, loc, "packs/")) >= packs {
		t.Fatalf("gc of an aged crashed migration removed %d roots and %d chunk files, kept %d; want 1, some and none", gs.Temps, gs.Packs, gs.Migrating)
	}
	// a commit adopts the orphan shards, the next sweeps them
	maps.Copy(want, addFiles(t, s, hub, []string{"ft-continued/model.f32.safetensors"}))
	maps.Copy(want, addFiles(t, s, hub, []string{"ft-fortunes-full/model.bf16.safetensors"}))
	named := map[string]bool{}
	for _, k := range rootShards(t, loc, s3RootKey) {
		named[k] = true
	}
	for k := range s3Keys(t, loc, s3ShardPrefix) {
		if !named[k] {
			t.Fatalf("shard %s of the crashed migration left after the sweeps", k)
		}
	}
	s.Close()
	checkMigrated(t, loc, Version1, want, "after the gc of a crashed migration")
	checkS3Clean(t, loc, "after the gc of a crashed migration")
	if _, err := Migrate(loc, Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, loc, Version2, want, "migrated after a crashed migration")
}
