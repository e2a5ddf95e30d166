package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// realFixture serves archives of real models from ../shared (skips
// without them): local/stories (stories260K, BF16) and local/bench
// (real-bf16, BF16).
func realFixture(t *testing.T) (*httptest.Server, map[string][]byte) {
	t.Helper()
	var shared string
	for _, d := range []string{"../../shared", "../shared"} {
		if _, err := os.Stat(filepath.Join(d, "models")); err == nil {
			shared = d
			break
		}
	}
	if shared == "" {
		t.Skip("no ../shared/models: real-model serving tests skipped")
	}
	dir := t.TempDir()
	srv := New(Config{Log: discard()})
	files := map[string][]byte{}
	for id, p := range map[string]string{"local/stories": "models/original/stories260K.bf16.safetensors", "local/bench": "models/bench/real-bf16.safetensors"} {
		data, err := os.ReadFile(filepath.Join(shared, p))
		if err != nil {
			t.Skipf("%s: %v", p, err)
		}
		arch := filepath.Join(dir, filepath.Base(p)+".nzip")
		writeArchive(t, arch, []string{filepath.Base(p)}, [][]byte{data})
		if err := srv.Add(id, arch); err != nil {
			t.Fatal(err)
		}
		files[id+"/"+filepath.Base(p)] = data
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	if err := srv.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ts, files
}

func resolveURL(base, key string) string {
	i := strings.Index(key[strings.Index(key, "/")+1:], "/") + strings.Index(key, "/") + 1
	return base + "/" + key[:i] + "/resolve/main/" + key[i+1:]
}

// TestRealGoClient: every file of real archives through net/http equals
// the original (SHA-256).
func TestRealGoClient(t *testing.T) {
	ts, files := realFixture(t)
	for key, data := range files {
		resp, body := get(t, "GET", resolveURL(ts.URL, key))
		if resp.StatusCode != 200 || sha256.Sum256(body) != sha256.Sum256(data) {
			t.Errorf("%s: status %d, SHA-256 differs", key, resp.StatusCode)
		}
	}
}

func need(t *testing.T, tool, pkg string) string {
	p, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("%s is not installed (Debian %s; make serve-deps installs it): test skipped", tool, pkg)
	}
	return p
}

// TestCurlRanges: curl downloads random ranges and whole files.
func TestCurlRanges(t *testing.T) {
	curl := need(t, "curl", "curl")
	ts, files := realFixture(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for key, data := range files {
		for i := range 12 {
			args := []string{"-sS", "--fail", resolveURL(ts.URL, key)}
			lo, hi := 0, len(data)
			if i > 0 {
				lo = rng.IntN(len(data))
				hi = lo + 1 + rng.IntN(len(data)-lo)
				args = append(args, "-r", fmt.Sprintf("%d-%d", lo, hi-1))
			}
			out, err := exec.Command(curl, args...).Output()
			if err != nil || !bytes.Equal(out, data[lo:hi]) {
				t.Fatalf("curl %v: %v, %d bytes, want %d", args, err, len(out), hi-lo)
			}
		}
	}
}

// TestCurlHead: the headers Python's huggingface_hub reads from its HEAD.
func TestCurlHead(t *testing.T) {
	curl := need(t, "curl", "curl")
	ts, files := realFixture(t)
	for key, data := range files {
		out, err := exec.Command(curl, "-sS", "-I", "-H", "Accept-Encoding: identity", resolveURL(ts.URL, key)).Output()
		if err != nil {
			t.Fatal(err)
		}
		h := map[string]string{}
		for _, l := range strings.Split(string(out), "\r\n") {
			if k, v, ok := strings.Cut(l, ": "); ok {
				h[strings.ToLower(k)] = v
			}
		}
		sum := sha256.Sum256(data)
		want := map[string]string{
			"x-linked-etag": `"` + hex.EncodeToString(sum[:]) + `"`, "etag": `"` + hex.EncodeToString(sum[:]) + `"`,
			"x-linked-size": fmt.Sprint(len(data)), "content-length": fmt.Sprint(len(data)), "accept-ranges": "bytes",
		}
		for k, v := range want {
			if h[k] != v {
				t.Errorf("%s: %s: %q, want %q", key, k, h[k], v)
			}
		}
		if len(h["x-repo-commit"]) != 40 || !strings.HasPrefix(string(out), "HTTP/1.1 200") {
			t.Errorf("%s: %s", key, out)
		}
	}
}

// TestAria2: a download over 8 connections of 8 ranges each.
func TestAria2(t *testing.T) {
	aria := need(t, "aria2c", "aria2")
	ts, files := realFixture(t)
	dir := t.TempDir()
	for key, data := range files {
		name := filepath.Base(key)
		cmd := exec.Command(aria, "-q", "-x8", "-s8", "-k1M", "--allow-overwrite=true", "--auto-file-renaming=false",
			"-d", dir, "-o", name, resolveURL(ts.URL, key))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("aria2c: %v\n%s", err, out)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
			t.Errorf("%s: aria2c's file differs (%v)", key, err)
		}
	}
}

// TestHubJS: the npm package @huggingface/hub (listFiles, downloadFile,
// downloadFileToCacheDir, snapshotDownload) against the server.
func TestHubJS(t *testing.T) {
	node := need(t, "node", "nodejs")
	if _, err := os.Stat("testdata/hfjs/node_modules/@huggingface/hub"); err != nil {
		t.Skip("@huggingface/hub is not installed (make serve-deps: npm ci in serve/testdata/hfjs): test skipped")
	}
	ts, files := realFixture(t)
	for _, id := range []string{"local/stories", "local/bench"} {
		want := map[string]string{}
		for key, data := range files {
			if strings.HasPrefix(key, id+"/") {
				sum := sha256.Sum256(data)
				want[strings.TrimPrefix(key, id+"/")] = hex.EncodeToString(sum[:])
			}
		}
		wj, _ := json.Marshal(want)
		wp := filepath.Join(t.TempDir(), "want.json")
		os.WriteFile(wp, wj, 0o644)
		cmd := exec.Command(node, "check.mjs", ts.URL, id, wp, t.TempDir())
		cmd.Dir = "testdata/hfjs"
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("@huggingface/hub on %s: %v\n%s", id, err, out)
		}
	}
}
