package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"neuralzip/serve"
)

// lockedBuf is a bytes.Buffer safe for a command's goroutine and the test.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestServe runs "nzip serve" on an archive and a directory, downloads a
// file of each, and stops it by cancelling (as SIGINT does).
func TestServe(t *testing.T) {
	dir := t.TempDir()
	model := bytes.Repeat([]byte("weights!"), 50_000)
	in := filepath.Join(dir, "m.bin")
	os.WriteFile(in, model, 0o644)
	if code := run(context.Background(), []string{"compress", "-q", "-o", filepath.Join(dir, "m.nzip"), in}, io.Discard, io.Discard); code != 0 {
		t.Fatal("compress failed")
	}
	plain := filepath.Join(dir, "plain")
	os.Mkdir(plain, 0o755)
	os.WriteFile(filepath.Join(plain, "config.json"), []byte("{}"), 0o644)
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("t0ken\n"), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuf
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-cache-dir", "", "-token-file", tok,
			filepath.Join(dir, "m.nzip"), "org/cfg=" + plain}, &out, &errb)
	}()
	base := serveAddress(t, &out, &errb)
	for url, want := range map[string][]byte{base + "/local/m/resolve/main/m.bin": model, base + "/org/cfg/resolve/main/config.json": []byte("{}")} {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer t0ken")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d, %d bytes", url, resp.StatusCode, len(got))
		}
		if resp, _ := http.Get(url); resp.StatusCode != 401 {
			t.Errorf("%s without the token: %d", url, resp.StatusCode)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	if strings.Contains(errb.String(), "warning") {
		t.Errorf("loopback: %s", errb.String())
	}
}

func TestServeUsage(t *testing.T) {
	for _, args := range [][]string{{"serve"}, {"serve", "-nope", "x"}} {
		if code := run(context.Background(), args, io.Discard, io.Discard); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "/nonexistent.nzip"}, io.Discard, io.Discard); code != 1 {
		t.Errorf("missing source: exit %d, want 1", code)
	}
}

// TestServeStore serves a store made with nzip store: a one-part model name
// under the organisation given as ORG=STORE, an ORG/NAME model as itself.
func TestServeStore(t *testing.T) {
	orig := sharedFile(t, "models/original/stories260K.bf16.safetensors")
	want, _ := os.ReadFile(orig)
	st := filepath.Join(t.TempDir(), "st")
	for _, args := range [][]string{{"store", "init", st}, {"store", "add", "-q", "-name", "tiny", st, orig},
		{"store", "add", "-q", "-name", "org/stories", st, orig}} {
		if code, _, errs := nzip(t, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuf
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-cache-dir", "", "hub=" + st}, &out, &errb)
	}()
	base := serveAddress(t, &out, &errb)
	name := filepath.Base(orig)
	for _, repo := range []string{"hub/tiny", "org/stories"} {
		resp, err := http.Get(base + "/" + repo + "/resolve/main/" + name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d, %d bytes", repo, resp.StatusCode, len(got))
		}
	}
	if !strings.Contains(out.String(), "hub/tiny: store") {
		t.Errorf("the listing does not name hub/tiny as a store's: %s", out.String())
	}
	// the store's structure, for the workbench's Hub screen
	resp, err := http.Get(base + serve.HubPath)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if p, err := serve.ParseHubPage(page); err != nil || p.Total != 2 || !strings.Contains(out.String(), "Hub screen opens the store at "+base) {
		t.Errorf("GET %s: %v, %s; output %s", serve.HubPath, err, page, out.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// serveAddress waits for nzip serve's "listening on" line and returns the
// server's URL.
func serveAddress(t *testing.T, out, errb *lockedBuf) string {
	t.Helper()
	re := regexp.MustCompile(`listening on (http://\S+)`)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address: %s %s", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
