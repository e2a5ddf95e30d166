package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/codec"
)

// synthetic returns n bytes that compress a little (bytes of a few
// values, runs, noise), deterministic for a seed.
func synthetic(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		switch i / 4096 % 3 {
		case 0:
			b[i] = byte(rng.IntN(4))
		case 1:
			b[i] = byte(i / 97)
		default:
			b[i] = byte(rng.Uint32())
		}
	}
	return b
}

// writeArchive writes an archive of the given files (name → bytes) to dir.
func writeArchive(t testing.TB, path string, names []string, data [][]byte) {
	t.Helper()
	var in []codec.Input
	for i, n := range names {
		in = append(in, codec.Input{Name: n, R: bytes.NewReader(data[i]), Size: int64(len(data[i]))})
	}
	var buf bytes.Buffer
	if _, err := codec.Encode(context.Background(), &buf, in, codec.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture is a server over a synthetic archive (local/syn: model.bin of
// several blocks, config.json, sub/x.bin) and a directory (local/dir).
type fixture struct {
	srv   *Server
	ts    *httptest.Server
	files map[string][]byte // "repo/path" → bytes
	dir   string
}

func newFixture(t testing.TB, cfg Config) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{files: map[string][]byte{}, dir: dir}
	names := []string{"model.bin", "config.json", "sub/x.bin", "empty.bin"}
	data := [][]byte{synthetic(1300_000, 1), []byte(`{"model_type": "llama"}`), synthetic(70_000, 2), {}}
	writeArchive(t, filepath.Join(dir, "syn.nzip"), names, data)
	for i, n := range names {
		f.files["local/syn/"+n] = data[i]
	}
	plain := filepath.Join(dir, "plain")
	for _, p := range []string{"a.bin", "d/b.txt", "d/e/c.bin"} {
		b := synthetic(200_000+len(p)*1000, uint64(len(p)))
		os.MkdirAll(filepath.Dir(filepath.Join(plain, p)), 0o755)
		if err := os.WriteFile(filepath.Join(plain, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
		f.files["local/dir/"+p] = b
	}
	if cfg.Log == nil {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	f.srv = New(cfg)
	if err := f.srv.Add("", filepath.Join(dir, "syn.nzip")); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Add("local/dir", plain); err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(f.srv) // 127.0.0.1
	t.Cleanup(func() { f.ts.Close(); f.srv.Close() })
	if err := f.srv.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// get sends a request with headers (name, value pairs) and returns the
// response with its body read.
func get(t testing.TB, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp, b
}
