package server

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// site writes a small site: index.html, app.wasm with .br and .gz
// variants, wasm_exec.js, a file outside the root and a symlink to it.
func site(t *testing.T) (*Handler, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "www")
	files := map[string]string{
		"www/index.html":   "<!doctype html>",
		"www/app.wasm":     "\x00asm plain",
		"www/app.wasm.br":  "BROTLI",
		"www/app.wasm.gz":  "GZIP",
		"www/wasm_exec.js": "// js",
		"www/icon.svg":     "<svg/>",
		"www/sub/x.json":   "{}",
		"www/.hidden":      "secret",
		"secret.txt":       "outside",
		"models/m.onnx":    "model",
	}
	for name, body := range files {
		p := filepath.Join(base, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Log("no symlinks here:", err)
	}
	h, err := New(dir, filepath.Join(base, "models"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, base
}

func get(h http.Handler, path, acceptEncoding string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil)
	if strings.Contains(path, "%") || strings.Contains(path, "..") {
		r.URL.Path = path // as a raw client would send it
	}
	if acceptEncoding != "" {
		r.Header.Set("Accept-Encoding", acceptEncoding)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestContentTypes(t *testing.T) {
	h, _ := site(t)
	for path, want := range map[string]string{
		"/":              "text/html; charset=utf-8",
		"/index.html":    "text/html; charset=utf-8",
		"/app.wasm":      "application/wasm",
		"/wasm_exec.js":  "text/javascript; charset=utf-8",
		"/icon.svg":      "image/svg+xml",
		"/sub/x.json":    "application/json",
		"/models/m.onnx": "application/octet-stream",
	} {
		w := get(h, path, "")
		if w.Code != 200 || w.Header().Get("Content-Type") != want || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %q, want 200 %q", path, w.Code, w.Header().Get("Content-Type"), want)
		}
	}
}

func TestContentEncoding(t *testing.T) {
	h, _ := site(t)
	for _, c := range []struct{ accept, enc, body string }{
		{"", "", "\x00asm plain"},
		{"gzip, deflate, br, zstd", "br", "BROTLI"},
		{"gzip", "gzip", "GZIP"},
		{"br;q=0, gzip;q=0.5", "gzip", "GZIP"},
		{"br;q=0, gzip;q=0", "", "\x00asm plain"},
		{"identity", "", "\x00asm plain"},
		{"*", "br", "BROTLI"},
		{"deflate", "", "\x00asm plain"},
	} {
		w := get(h, "/app.wasm", c.accept)
		if w.Code != 200 || w.Header().Get("Content-Encoding") != c.enc || w.Body.String() != c.body {
			t.Errorf("Accept-Encoding %q: %d, encoding %q, body %q; want %q %q", c.accept, w.Code, w.Header().Get("Content-Encoding"), w.Body.String(), c.enc, c.body)
		}
		if w.Header().Get("Content-Type") != "application/wasm" || w.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: type %q, vary %q", c.accept, w.Header().Get("Content-Type"), w.Header().Get("Vary"))
		}
		if c.enc != "" && w.Header().Get("X-Uncompressed-Length") != "10" {
			t.Errorf("Accept-Encoding %q: X-Uncompressed-Length %q", c.accept, w.Header().Get("X-Uncompressed-Length"))
		}
	}
	// files without variants: no Vary, no encoding
	w := get(h, "/index.html", "br, gzip")
	if w.Header().Get("Content-Encoding") != "" || w.Header().Get("Vary") != "" {
		t.Errorf("index.html: encoding %q vary %q", w.Header().Get("Content-Encoding"), w.Header().Get("Vary"))
	}
}

func TestPathsRefused(t *testing.T) {
	h, _ := site(t)
	for _, p := range []string{"/../secret.txt", "/sub/../../secret.txt", "/..%2fsecret.txt", "/.hidden", "/link.txt",
		"/sub/", "/nothere", "/models/../secret.txt", "/a\\..\\secret.txt", "/sub//x.json"} {
		w := get(h, p, "")
		if w.Code == 200 || strings.Contains(w.Body.String(), "outside") || strings.Contains(w.Body.String(), "secret") {
			t.Errorf("%s: %d %q, want refused", p, w.Code, w.Body.String())
		}
	}
}

func TestHostAndMethod(t *testing.T) {
	h, _ := site(t)
	r := httptest.NewRequest("GET", "http://evil.example:8080/", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: %d", w.Code)
	}
	for _, host := range []string{"localhost:1", "127.0.0.1", "[::1]:80"} {
		r = httptest.NewRequest("GET", "http://"+host+"/", nil)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Errorf("Host %s: %d", host, w.Code)
		}
	}
	r = httptest.NewRequest("POST", "http://127.0.0.1/", nil)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", w.Code)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.168.1.1:0", "example.com:0"} {
		if ln, err := Listen(addr); !errors.Is(err, ErrNotLoopback) {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("Listen(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
	h, _ := site(t)
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ln.Addr().String(), "127.0.0.1:") {
			t.Errorf("Listen(%q) on %s", addr, ln.Addr())
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/app.wasm", nil)
		req.Header.Set("Accept-Encoding", "br")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "BROTLI" || resp.Header.Get("Content-Type") != "application/wasm" {
			t.Errorf("GET over TCP: %d %q", resp.StatusCode, b)
		}
		srv.Close()
	}
}
