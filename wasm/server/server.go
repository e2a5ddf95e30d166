// Package server serves the browser workbench (wasm/www) to this machine
// only: files from one directory (os.Root: no path leaves it, symlinks
// included), explicit MIME types (application/wasm for .wasm, which
// WebAssembly.instantiateStreaming requires), and precompressed variants
// (FILE.br, FILE.gz written by wasm/cmd/precompress) sent with
// Content-Encoding when the browser accepts them.
package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
)

// Errors of Listen.
var (
	// ErrNotLoopback: the address is not a loopback address.
	ErrNotLoopback = errors.New("server: only loopback addresses (127.0.0.1, ::1, localhost) may be served")
)

// types maps extensions to Content-Type; anything else is
// application/octet-stream.
var types = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".json":  "application/json",
	".wasm":  "application/wasm",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".txt":   "text/plain; charset=utf-8",
	".gz":    "application/gzip",
	".br":    "application/x-brotli",
	".nzip":  "application/octet-stream",
	".onnx":  "application/octet-stream",
	".bin":   "application/octet-stream",
	".map":   "application/json",
	".webp":  "image/webp",
	".woff2": "font/woff2",
}

// ContentType is the Content-Type served for name.
func ContentType(name string) string {
	if t, ok := types[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "application/octet-stream"
}

// encodings are the precompressed variants, in order of preference.
var encodings = []struct{ name, ext string }{{"br", ".br"}, {"gzip", ".gz"}}

// Handler serves the files of a directory.
type Handler struct {
	root   *os.Root
	models *os.Root // served under /models/ when not nil
}

// New serves dir; models (may be empty) is served under /models/ (for
// ?model=/models/NAME).
func New(dir, models string) (*Handler, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	h := &Handler{root: r}
	if models != "" {
		if h.models, err = os.OpenRoot(models); err != nil {
			r.Close()
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	return h, nil
}

// Close releases the directories.
func (h *Handler) Close() error {
	if h.models != nil {
		h.models.Close()
	}
	return h.root.Close()
}

// localHost reports whether a Host header names this machine (requests
// for other names are refused: DNS rebinding).
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !localHost(r.Host) {
		http.Error(w, "this server answers only to localhost", http.StatusMisdirectedRequest)
		return
	}
	name, root, ok := h.resolve(r.URL.Path)
	if !ok {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	f, st, err := openRegular(root, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	hdr := w.Header()
	hdr.Set("Content-Type", ContentType(name))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "no-cache")
	// a precompressed variant, when the client takes it
	var body io.ReadSeeker = f
	modTime := st.ModTime()
	varied := false
	for _, e := range encodings {
		cf, cst, err := openRegular(root, name+e.ext)
		if err != nil {
			continue
		}
		varied = true
		if !accepts(r.Header.Get("Accept-Encoding"), e.name) {
			cf.Close()
			continue
		}
		defer cf.Close()
		hdr.Set("Content-Encoding", e.name)
		hdr.Set("X-Uncompressed-Length", strconv.FormatInt(st.Size(), 10))
		body, modTime = cf, cst.ModTime()
		break
	}
	if varied {
		hdr.Set("Vary", "Accept-Encoding")
	}
	http.ServeContent(w, r, "", modTime, body)
}

// resolve maps a URL path to a file name in one of the roots: "/" is
// index.html; no empty, ".", ".." or hidden elements, no backslashes or
// NULs.
func (h *Handler) resolve(p string) (string, *os.Root, bool) {
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return "", nil, false
	}
	p = p[1:]
	if p == "" || strings.HasSuffix(p, "/") {
		p += "index.html"
	}
	root := h.root
	if rest, ok := strings.CutPrefix(p, "models/"); ok && h.models != nil {
		p, root = rest, h.models
	}
	for _, e := range strings.Split(p, "/") {
		if e == "" || e == "." || e == ".." || strings.HasPrefix(e, ".") {
			return "", nil, false
		}
	}
	return p, root, true
}

func openRegular(root *os.Root, name string) (*os.File, os.FileInfo, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, os.ErrNotExist
	}
	return f, st, nil
}

// accepts reports whether an Accept-Encoding header accepts coding (with a
// q-value above zero, or through "*").
func accepts(header, coding string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		name = strings.TrimSpace(name)
		if strings.EqualFold(name, coding) {
			return q > 0
		}
		if name == "*" && q > 0 {
			star = true
		}
	}
	return star
}

// Listen listens on addr, which must be a loopback address ("127.0.0.1:8080";
// "localhost:PORT" means 127.0.0.1).
func Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, addr)
	}
	return net.Listen("tcp", net.JoinHostPort(ip.String(), port))
}
