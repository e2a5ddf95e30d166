package serve

import (
	"bytes"
	"log"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"neuralzip/store"
)

// tinyStore makes a store at a new directory holding model "tiny" of one
// file of random bytes (format version 1 when v1: the index without its
// format record, as builds before version 2 made it) and returns the
// directory and the bytes.
func tinyStore(t *testing.T, v1 bool) (string, []byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "st")
	if err := store.Init(dir); err != nil {
		t.Fatal(err)
	}
	if v1 {
		db, err := bolt.Open(filepath.Join(dir, "index.db"), 0o644, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("fp")).Delete([]byte("\xffformat")) })
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	data := make([]byte, 300_000)
	r := rand.New(rand.NewPCG(9, 1))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	writeStore(t, dir, func(st *store.Store) error {
		if v1 && st.Version() != store.Version1 {
			t.Errorf("a store without its format record opens as version %d", st.Version())
		}
		in := store.Input{Name: "weights.bin", R: bytes.NewReader(data), Size: int64(len(data)), Format: "unknown"}
		_, _, err := st.Add("tiny", []store.Input{in}, store.AddOptions{})
		return err
	})
	return dir, data
}

// TestStoreMigrated serves a version 1 store that nzip store migrate
// rewrites as version 2 under the server: the server opens the store
// again (the old one's reads are store.ErrMigrated) and serves the file
// bit-exact without a restart.
func TestStoreMigrated(t *testing.T) {
	dir, data := tinyStore(t, true)
	logs := &lockedLog{}
	srv := New(Config{Log: log.New(logs, "", 0), CacheBytes: 1 << 20})
	if err := srv.Add("", dir); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()
	url := resolveURL(ts.URL, "local/tiny/weights.bin")
	if resp, body := get(t, "GET", url); resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("before the migration: %d, %d bytes", resp.StatusCode, len(body))
	}
	if _, err := store.Migrate(dir, store.Options{LockWait: deadlock}); err != nil {
		t.Fatal(err)
	}
	// the request after the change reads the store again; one answered
	// meanwhile from the old listing may fail
	for end := time.Now().Add(deadlock); ; time.Sleep(10 * time.Millisecond) {
		resp, body := get(t, "GET", url)
		if resp.StatusCode == 200 && bytes.Equal(body, data) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("after the migration: %d, %d bytes (%.200s); log:\n%s", resp.StatusCode, len(body), body, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "migrated to format version 2: opened again") {
		t.Errorf("the log does not say the store was opened again:\n%s", logs.String())
	}
}

// TestStoreIndexFails serves a directory store whose index becomes
// unreadable: requests go on from the listing the server had, and the
// error is logged once, not on every request.
func TestStoreIndexFails(t *testing.T) {
	dir, _ := tinyStore(t, false)
	logs := &lockedLog{}
	srv := New(Config{Log: log.New(logs, "", 0), CacheBytes: 1 << 20})
	if err := srv.Add("", dir); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()
	// renamed over it (written in place, the index the server has open
	// would change under its memory map)
	bad := filepath.Join(dir, "index.db.bad")
	if err := os.WriteFile(bad, make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bad, filepath.Join(dir, "index.db")); err != nil {
		t.Fatal(err)
	}
	damaged := store.ErrIndexDamaged.Error()
	// until a request finds it (the old index stays open a moment after
	// its last read)
	for end := time.Now().Add(deadlock); !strings.Contains(logs.String(), damaged); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the damaged index is not logged:\n%s", logs.String())
		}
		get(t, "GET", ts.URL+"/api/models")
	}
	for range 20 {
		get(t, "GET", ts.URL+"/api/models")
	}
	if n := strings.Count(logs.String(), damaged); n != 1 {
		t.Fatalf("the damaged index logged %d times:\n%s", n, logs.String())
	}
}
