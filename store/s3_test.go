//go:build !js

package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"neuralzip/internal/weedtest"
)

// The s3:// store against a real S3 server (internal/weedtest).

// s3Server makes a fresh bucket on the test server and returns a store
// location in it.
func s3Server(t *testing.T) string {
	t.Helper()
	return "s3://" + weedtest.Bucket(t) + "/models"
}

// TestS3Lifecycle: init, add (exact dedup, a cast, a delta), get byte for
// byte, ls/stats, rm + gc (never a chunk another model needs), verify,
// on a real S3 server.
func TestS3Lifecycle(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	loc := s3Server(t)
	if err := Init(loc); err != nil {
		t.Fatal(err)
	}
	if err := Init(loc); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("second init: %v", err)
	}
	if _, err := Open(loc+"-none", Options{}); !errors.Is(err, ErrNotStore) {
		t.Fatalf("open of an empty prefix: %v, want ErrNotStore", err)
	}
	s, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer func(g time.Duration) { s3GCGrace = g }(s3GCGrace)
	s3GCGrace = 0 // gc removes what it finds unused at once (no add runs beside it)
	files := []string{"base/model.f32.safetensors", "ft-fortunes-full/model.f32.safetensors", "base/model.bf16.safetensors", "tok512.bin"}
	want := addFiles(t, s, hub, files)
	// a second Store (another process's view) sees the models
	s2, err := Open(loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		restore(t, s2, f, want[f])
	}
	names, err := s2.Names()
	if err != nil || len(names) != len(files) {
		t.Fatalf("names %v, %v", names, err)
	}
	st, err := s2.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// the same models added as one batch, to a directory store and to a
	// second S3 store, make the same store
	var bms []BatchModel
	for _, f := range files {
		bms = append(bms, BatchModel{Name: f, Files: inputs(t, path.Join(hub, f))})
	}
	dirStore, _ := tempStore(t)
	if err := Init(loc + "-batch"); err != nil {
		t.Fatal(err)
	}
	s3b, err := Open(loc+"-batch", Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s3b.Close()
	for _, o := range []*Store{dirStore, s3b} {
		if _, _, err := o.AddBatch(bms, AddOptions{}); err != nil {
			t.Fatal(err)
		}
		ost, err := o.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Stored != ost.Stored || len(st.Units) != len(ost.Units) {
			t.Fatalf("s3 store %d bytes in %d units, batch into %q %d in %d", st.Stored, len(st.Units), o.Dir(), ost.Stored, len(ost.Units))
		}
		for _, f := range files {
			restore(t, o, f, want[f])
		}
	}
	s2.Close()
	gs, st := removeAndGC(t, s, files, want)
	if st.Chunks != 0 || len(st.Units) != 0 {
		t.Fatalf("after rm of everything and gc (%d chunks removed): %d chunks, %d units left", gs.Packs, st.Chunks, len(st.Units))
	}
}

// TestS3CrashAndDamage: a pack written by an add that never committed its
// index (a crash between the two) leaves a store that verifies, and gc
// removes it; a damaged pack is ErrChunkDamaged naming the model, never
// other bytes; a damaged index is ErrIndexDamaged.
func TestS3CrashAndDamage(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	loc := s3Server(t)
	if err := Init(loc); err != nil {
		t.Fatal(err)
	}
	s, err := Open(loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := "base/model.bf16.safetensors"
	ins := inputs(t, path.Join(hub, f))
	if _, _, err := s.Add(f, ins, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fileBytes(t, ins)
	// the crash: a pack in the bucket that no index names
	if _, err := s.bl.put([]byte("the pack of an add that never committed")); err != nil {
		t.Fatal(err)
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	// within the grace period the orphan may be an add in flight: kept
	gs, err := s.GC()
	if err != nil || gs.Packs != 0 || gs.Young != 1 {
		t.Fatalf("gc right after the crash removed %d chunks and kept %d young ones (%v), want the orphan kept", gs.Packs, gs.Young, err)
	}
	defer func(g time.Duration) { s3GCGrace = g }(s3GCGrace)
	s3GCGrace = 0
	gs, err = s.GC()
	if err != nil || gs.Packs != 1 {
		t.Fatalf("gc after the grace period removed %d chunks (%v), want the orphan", gs.Packs, err)
	}
	restore(t, s, f, want)
	// damage: flip a byte of every pack in place
	l := s.bl.(*s3Blobs).l
	ctx := context.Background()
	damageObjects(t, l, "packs/", func(b []byte) bool {
		b[len(b)/2] ^= 0x10
		return true
	})
	s2, err := Open(loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	damaged, err := s2.Verify()
	if err != nil || len(damaged) == 0 {
		t.Fatalf("verify of damaged packs: %v, %v", damaged, err)
	}
	for _, e := range damaged {
		if !errors.Is(e, ErrChunkDamaged) || !strings.Contains(e.Error(), "model \"") {
			t.Fatalf("verify: %v: not ErrChunkDamaged naming the model", e)
		}
	}
	m, err := s2.Model(f)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := s2.WriteFile(m, 0, &out); err == nil && !bytes.Equal(out.Bytes(), want[0]) {
		t.Fatal("a damaged pack restored other bytes without an error")
	} else if err != nil && !strings.Contains(err.Error(), f) {
		t.Fatalf("error does not name the model: %v", err)
	}
	s2.Close()
	// a damaged index shard (of the models' and units' buckets; one of
	// the fingerprints' fails the open, which reads the format record
	// there): the model's read names it
	damageObjects(t, l, s3ShardPrefix, func(b []byte) bool {
		if bucket, _, _, err := decodeShard(b); err != nil || bucket == bFP {
			return false // the format record is read at open: damage the others
		}
		b[len(b)-1] ^= 0x01
		return true
	})
	s3r, err := Open(loc, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3r.Model(f); !errors.Is(err, ErrIndexDamaged) || !strings.Contains(err.Error(), fmt.Sprintf("model %q", f)) {
		t.Fatalf("model from a damaged index shard: %v, want ErrIndexDamaged naming the model", err)
	}
	s3r.Close()
	// a damaged index
	bad := []byte("not an index")
	if _, err := l.cl.PutObject(ctx, l.bucket, l.index(), bytes.NewReader(bad), int64(len(bad)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(loc, Options{}); !errors.Is(err, ErrIndexDamaged) {
		t.Fatalf("open with a damaged index: %v, want ErrIndexDamaged", err)
	}
}

// TestS3ConcurrentAdds: two Stores on one s3:// store add models at the
// same time; the conditional index writes make the later one read the
// other's index and redo its update: both models land.
func TestS3ConcurrentAdds(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	loc := s3Server(t)
	if err := Init(loc); err != nil {
		t.Fatal(err)
	}
	files := []string{"base/model.f32.safetensors", "ft-fortunes-full/model.f32.safetensors", "ft-fortunes-lora/model.f32.safetensors", "ft-continued/model.f32.safetensors"}
	check := func(loc string) {
		t.Helper()
		addConcurrently(t, loc, hub, files, Options{Threads: 1})
		s, err := Open(loc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, f := range files {
			restore(t, s, f, fileBytes(t, inputs(t, path.Join(hub, f))))
		}
		if bad, err := s.Verify(); err != nil || len(bad) > 0 {
			t.Fatal(err, bad)
		}
	}
	check(loc)
	// again with shards of at most 4 KB: the adders' writes meet in many
	// shards and split them
	smallShards(t, 4<<10)
	if err := Init(loc + "-small"); err != nil {
		t.Fatal(err)
	}
	check(loc + "-small")
}

// TestS3LegacyStore: a store written with the index as one object (as
// stores were before the root: legacyKV) opens and restores as it is; its
// first add writes the root and shards; every model restores from a fresh
// open, and the old writer now reads ErrIndexDamaged, never a wrong index.
func TestS3LegacyStore(t *testing.T) {
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
	files := []string{"base/model.f32.safetensors", "ft-fortunes-full/model.f32.safetensors", "base/model.bf16.safetensors"}
	want := addFiles(t, old, hub, files[:2])
	ctx := context.Background()
	isV2 := func() bool {
		raw, _, err := o.get(ctx, s3RootKey, maxIndexBytes, "")
		if err != nil {
			t.Fatal(err)
		}
		return isRoot(raw)
	}
	s, err := Open(loc, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, f := range files[:2] {
		restore(t, s, f, want[f])
	}
	if isV2() {
		t.Fatal("opening and reading converted the index")
	}
	for f, w := range addFiles(t, s, hub, files[2:]) {
		want[f] = w
	}
	if !isV2() {
		t.Fatal("the first add did not write a root")
	}
	s2, err := Open(loc, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, f := range files {
		restore(t, s2, f, want[f])
	}
	if bad, err := s2.Verify(); err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	if _, err := openLegacy(o); !errors.Is(err, ErrIndexDamaged) {
		t.Fatalf("the old reader on a converted store: %v, want ErrIndexDamaged", err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	weedtest.Stop()
	os.Exit(code)
}

// damageObjects rewrites every object under prefix (within the store's)
// that damage changes in place (returning true); it fails the test when
// there is none.
func damageObjects(t *testing.T, l *s3Loc, prefix string, damage func([]byte) bool) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for o := range l.cl.ListObjects(ctx, l.bucket, minio.ListObjectsOptions{Prefix: l.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	if len(keys) == 0 {
		t.Fatalf("no objects under %s in the bucket", prefix)
	}
	for _, k := range keys {
		obj, err := l.cl.GetObject(ctx, l.bucket, k, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(obj); err != nil {
			t.Fatal(err)
		}
		obj.Close()
		b := buf.Bytes()
		if !damage(b) {
			continue
		}
		if _, err := l.cl.PutObject(ctx, l.bucket, k, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
