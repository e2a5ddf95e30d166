package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"neuralzip/checkpoint"
	"neuralzip/internal/weedtest"
	"neuralzip/store"
)

// hubStore makes a store of the shared hub's stories260K models (F32 and
// BF16 files: casts and deltas against the base) under names of every
// form StoreRepo reads, and returns its directory and the original bytes by
// served "ORG/NAME/PATH".
func hubStore(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	return hubStoreAt(t, "")
}

// hubStoreAt is hubStore at loc (an s3:// location; "": a new directory).
func hubStoreAt(t *testing.T, loc string) (string, map[string][]byte) {
	t.Helper()
	hub := hubSource(t)
	dir := loc
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "hub")
	}
	if err := store.Init(dir); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want := map[string][]byte{}
	for _, m := range []struct{ model, src, served string }{
		{"base", "base", "local/base"},
		{"stories/ft-continued", "ft-continued", "stories/ft-continued"},
		{"stories/fortunes/full", "ft-fortunes-full", "stories/fortunes/full"},
		{"stories/fortunes/lora", "ft-fortunes-lora", "stories/fortunes/lora"},
	} {
		ins, data := hubInputs(t, hub, m.src)
		for name, b := range data {
			want[m.served+"/"+name] = b
		}
		if _, _, err := st.Add(m.model, ins, store.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return dir, want
}

// hubSource is the shared hub's stories260K directory (the test skips
// without it).
func hubSource(t *testing.T) string {
	t.Helper()
	for _, d := range []string{"../../shared/hub/stories260K", "../shared/hub/stories260K"} {
		if _, err := os.Stat(filepath.Join(d, "base")); err == nil {
			return d
		}
	}
	t.Skip("no ../shared/hub/stories260K: store source tests skipped")
	return ""
}

// hubInputs are the F32 and BF16 files of the hub's model src, as a store
// add takes them, and their bytes by file name.
func hubInputs(t *testing.T, hub, src string) ([]store.Input, map[string][]byte) {
	t.Helper()
	var ins []store.Input
	data := map[string][]byte{}
	for _, name := range []string{"model.f32.safetensors", "model.bf16.safetensors"} {
		p := filepath.Join(hub, src, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cm, err := checkpoint.OpenPath(p)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, store.Input{Name: name, R: bytes.NewReader(b), Size: int64(len(b)),
			Format: cm.Files[0].Layout.Format, Segments: cm.Files[0].Layout.Segments})
		data[name] = b
	}
	return ins, data
}

// TestStoreSource serves a store: every model under the repository its
// name gives, whole files and random ranges equal to the originals, the
// recorded SHA-256 as the ETag, and the hub API listing the files.
func TestStoreSource(t *testing.T) {
	dir, want := hubStore(t)
	srv := New(Config{Log: discard(), CacheBytes: 1 << 20})
	if err := srv.Add("", dir); err != nil {
		t.Fatal(err)
	}
	if err := srv.Add("x/y", dir); err == nil || !strings.Contains(err.Error(), "is a store") {
		t.Errorf("a store given ORG/NAME: %v, want an error saying it is a store", err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()
	if err := srv.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range srv.Repos() {
		if r.Kind != "store" {
			t.Errorf("%s: kind %q, want store", r.ID, r.Kind)
		}
		ids = append(ids, r.ID)
	}
	sort.Strings(ids)
	if got := strings.Join(ids, " "); got != "local/base stories/fortunes stories/ft-continued" {
		t.Errorf("repositories %q", got)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for key, data := range want {
		u := resolveURL(ts.URL, key)
		resp, body := get(t, "GET", u)
		if resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("%s: %d, %d bytes, want %d equal bytes", key, resp.StatusCode, len(body), len(data))
		}
		if et := resp.Header.Get("ETag"); et != `"`+sumHex(data)+`"` {
			t.Errorf("%s: ETag %s, want the SHA-256", key, et)
		}
		for range 20 {
			lo := rng.IntN(len(data))
			hi := lo + 1 + rng.IntN(min(len(data)-lo, 300_000))
			resp, body := get(t, "GET", u, "Range", fmt.Sprintf("bytes=%d-%d", lo, hi-1))
			if resp.StatusCode != 206 || !bytes.Equal(body, data[lo:hi]) {
				t.Fatalf("%s %d-%d: %d, %d bytes", key, lo, hi, resp.StatusCode, len(body))
			}
		}
	}
	// a model whose name has a directory part: its files under it
	resp, body := get(t, "GET", ts.URL+"/api/models/stories/fortunes/tree/main?recursive=true")
	if resp.StatusCode != 200 {
		t.Fatalf("tree: %d %s", resp.StatusCode, body)
	}
	var tree []struct{ Path, Type string }
	if err := json.Unmarshal(body, &tree); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range tree {
		paths = append(paths, e.Type+":"+e.Path)
	}
	if got := strings.Join(paths, " "); got != "directory:full file:full/model.bf16.safetensors file:full/model.f32.safetensors directory:lora file:lora/model.bf16.safetensors file:lora/model.f32.safetensors" {
		t.Errorf("tree of stories/fortunes: %s", got)
	}
}

// TestStoreSourceS3 serves a store on a real S3 server (SeaweedFS, as the
// store's own s3:// tests): every file whole and a range of each, and a
// model added while serving (listed again on a request s3Poll after the
// last look).
func TestStoreSourceS3(t *testing.T) {
	loc := "s3://" + weedtest.Bucket(t) + "/hub"
	_, want := hubStoreAt(t, loc)
	defer func(p time.Duration) { s3Poll = p }(s3Poll)
	s3Poll = 0
	srv := New(Config{Log: discard()})
	if err := srv.Add("", loc); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()
	if err := srv.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	for key, data := range want {
		u := resolveURL(ts.URL, key)
		if resp, body := get(t, "GET", u); resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("%s: %d, %d bytes", key, resp.StatusCode, len(body))
		}
		lo, hi := len(data)/3, len(data)/3+200_000
		if resp, body := get(t, "GET", u, "Range", fmt.Sprintf("bytes=%d-%d", lo, hi-1)); resp.StatusCode != 206 || !bytes.Equal(body, data[lo:hi]) {
			t.Fatalf("%s %d-%d: %d, %d bytes", key, lo, hi, resp.StatusCode, len(body))
		}
	}
	ins, added := hubInputs(t, hubSource(t), "ft-frozen-embed")
	writeStore(t, loc, func(st *store.Store) error {
		_, _, err := st.Add("stories/frozen-embed", ins, store.AddOptions{})
		return err
	})
	waitListed(t, ts.URL+"/api/models/stories/frozen-embed", 200)
	for name, data := range added {
		key := "stories/frozen-embed/" + name
		if resp, body := get(t, "GET", resolveURL(ts.URL, key)); resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("%s (added while serving): %d, %d bytes", key, resp.StatusCode, len(body))
		}
	}
}

// TestStoreSourceOpen reads a store as nzip mount does: one tree, a
// directory per model, pread at unit edges equal to the originals.
func TestStoreSourceOpen(t *testing.T) {
	dir, want := hubStore(t)
	src, err := Open(dir, Config{Log: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Kind() != "store" {
		t.Errorf("kind %q", src.Kind())
	}
	byName := map[string][]byte{}
	for k, v := range want {
		// served "local/base/F" is the model "base"; "ORG/NAME/F" the model ORG/NAME
		name := strings.TrimPrefix(k, "local/")
		byName[name] = v
	}
	if len(src.Files()) != len(byName) {
		t.Fatalf("%d files, want %d", len(src.Files()), len(byName))
	}
	for _, f := range src.Files() {
		data, ok := byName[f.Name]
		if !ok {
			t.Fatalf("unexpected file %q", f.Name)
		}
		sf := f.f.c.(*storeFile)
		var edges []int64
		for _, o := range sf.offs {
			edges = append(edges, o-1, o, o+1)
		}
		for _, off := range edges {
			if off < 0 || off >= f.Size {
				continue
			}
			p := make([]byte, 4099)
			n, err := f.ReadAt(context.Background(), p, off)
			end := min(off+int64(len(p)), f.Size)
			if int64(n) != end-off || (err != nil && err != io.EOF) || !bytes.Equal(p[:n], data[off:end]) {
				t.Fatalf("%s at %d: %d bytes, %v", f.Name, off, n, err)
			}
		}
		if err := f.Check(); err != nil {
			t.Errorf("%s: check: %v", f.Name, err)
		}
	}
}

// TestStoreSourceCorrupt damages a chunk file under a served store: the
// download fails (never other bytes) and the log names the model.
func TestStoreSourceCorrupt(t *testing.T) {
	dir, want := hubStore(t)
	var packs []string
	filepath.Walk(filepath.Join(dir, "packs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			packs = append(packs, p)
		}
		return nil
	})
	if len(packs) == 0 {
		t.Fatal("no chunk files in the store")
	}
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := 100; i < len(b); i += 997 {
			b[i] ^= 0x20
		}
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs lockedLog
	srv := New(Config{Log: log.New(&logs, "", 0), CacheBytes: -1})
	if err := srv.Add("", dir); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()
	srv.WaitReady(context.Background())
	bad := 0
	for key, data := range want {
		for _, rng := range []string{"", "bytes=1000-400000"} {
			req, _ := http.NewRequest("GET", resolveURL(ts.URL, key), nil)
			if rng != "" {
				req.Header.Set("Range", rng)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				bad++
				continue
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			exp := data
			if rng != "" {
				exp = data[1000:400001]
			}
			if err == nil && resp.StatusCode < 300 && bytes.Equal(body, exp) {
				continue // a unit the damage missed (a cast has no payload)
			}
			if err == nil && resp.StatusCode < 300 {
				t.Fatalf("%s %s: a complete-looking response of other bytes (%d of %d)", key, rng, len(body), len(exp))
			}
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("no download failed after every chunk file was damaged")
	}
	if !strings.Contains(logs.String(), "model \"") {
		t.Errorf("the log does not name the model: %s", logs.String())
	}
}

// lockedLog is a log sink that handlers write from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func TestStoreRepo(t *testing.T) {
	for _, c := range []struct {
		model   string
		files   []string
		id, dir string
		ok      bool
	}{
		{"llama", []string{"model.safetensors"}, "local/llama", "", true},
		{"org/llama", []string{"a", "b"}, "org/llama", "", true},
		{"org/llama/bf16", []string{"model.safetensors"}, "org/llama", "bf16", true},
		{"org/llama/f32/x", []string{"a", "b"}, "org/llama", "f32/x", true},
		{"org/llama/model.safetensors", []string{"model.safetensors"}, "org/llama", "", true},
		{"org/llama/v2/model.safetensors", []string{"model.safetensors"}, "org/llama", "v2", true},
		{"org/llama/model.safetensors", []string{"a", "model.safetensors"}, "org/llama", "model.safetensors", true},
		{"/data/org/llama/model.safetensors", []string{"model.safetensors"}, "data/org", "llama", true},
		{"../llama.safetensors", []string{"llama.safetensors"}, "local/llama.safetensors", "", true},
		{"", nil, "", "", false},
		{"org/ll ama", nil, "", "", false},
		{"..", nil, "", "", false},
	} {
		id, dir, ok := StoreRepo(c.model, c.files, "local")
		if id != c.id || dir != c.dir || ok != c.ok {
			t.Errorf("StoreRepo(%q, %q) = %q, %q, %v; want %q, %q, %v", c.model, c.files, id, dir, ok, c.id, c.dir, c.ok)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	weedtest.Stop() // the S3 server TestStoreSourceS3 may have started
	os.Exit(code)
}
