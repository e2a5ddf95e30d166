package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// IsURL reports whether p names a model on a server (OpenURL) rather than
// a file.
func IsURL(p string) bool {
	return strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://")
}

// OpenURL opens a model from a server of the Hugging Face download API
// (nzip serve, or the hub itself) by ranges: the checkpoint's header and
// layout are read first, and a tensor's bytes only when a screen reads
// them. u is a repository, http://HOST/ORG/NAME (its weights file is
// chosen: a sharded safetensors index, else the largest weights file), or
// one file of it, http://HOST/ORG/NAME/resolve/REV/PATH. Companion files
// (shards, TF.js weights) are read from the same repository.
func OpenURL(ctx context.Context, u string, warn func(string)) (*Model, error) {
	fsys, name, err := openHub(ctx, u)
	if err != nil {
		return nil, err
	}
	m, err := OpenFS(fsys, name, warn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	m.Name, m.Path = path.Base(name), u
	return m, nil
}

// HubFS is the file system of one repository revision of a Hugging Face
// download API server: its files as the tree lists them, read by HTTP
// ranges (fs.File values implement io.ReaderAt), small reads through a
// cache of hubBlock-byte blocks.
type HubFS struct {
	base, repo, rev string
	client          *http.Client
	ctx             context.Context
	files           map[string]int64 // path → size
	fetched         atomic.Int64

	mu    sync.Mutex
	cache map[blockKey][]byte
	order []blockKey // least recently used first
}

type blockKey struct {
	name string
	n    int64
}

const (
	hubBlock       = 256 << 10 // bytes fetched for a small read
	hubCacheBlocks = 32
	hubMaxTree     = 100000 // entries listed at most
)

// Fetched is the number of file bytes the server has sent so far.
func (h *HubFS) Fetched() int64 { return h.fetched.Load() }

// openHub lists the repository u names and returns its file system and
// the file to open.
func openHub(ctx context.Context, u string) (*HubFS, string, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, "", err
	}
	if pu.Scheme != "http" && pu.Scheme != "https" || pu.Host == "" {
		return nil, "", fmt.Errorf("%s: not an http(s) URL", u)
	}
	if err := checkNoCredentials(pu, u); err != nil {
		return nil, "", err
	}
	parts := strings.Split(strings.Trim(pu.EscapedPath(), "/"), "/")
	for i, p := range parts {
		if parts[i], err = url.PathUnescape(p); err != nil {
			return nil, "", fmt.Errorf("%s: %w", u, err)
		}
	}
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return nil, "", fmt.Errorf("%s: the URL names no repository (http://HOST/ORG/NAME)", u)
	}
	h := newHubFS(ctx, pu.Scheme+"://"+pu.Host, parts[0]+"/"+parts[1], "main", nil)
	want := ""
	if len(parts) > 2 {
		if len(parts) < 5 || parts[2] != "resolve" {
			return nil, "", fmt.Errorf("%s: expected http://HOST/ORG/NAME or http://HOST/ORG/NAME/resolve/REV/PATH", u)
		}
		h.rev, want = parts[3], strings.Join(parts[4:], "/")
	}
	if err := h.list(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", u, err)
	}
	if want != "" {
		if _, ok := h.files[want]; !ok {
			return nil, "", fmt.Errorf("%s: %s has no file %s", u, h.repo, want)
		}
		return h, want, nil
	}
	name := chooseWeights(h.files)
	if name == "" {
		return nil, "", fmt.Errorf("%s: %s holds no file", u, h.repo)
	}
	return h, name, nil
}

// newHubFS returns the file system of repository repo at revision rev of
// the server at base (scheme://host): files, when known, are its files by
// path and size, else list reads them.
func newHubFS(ctx context.Context, base, repo, rev string, files map[string]int64) *HubFS {
	return &HubFS{base: base, repo: repo, rev: rev, ctx: ctx, files: files,
		client: newClient(5 * time.Minute), cache: map[blockKey][]byte{}}
}

// chooseWeights picks the file a repository's model opens from: a
// safetensors index (sharded weights), else the largest file of a weights
// format, else the largest file.
func chooseWeights(files map[string]int64) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	weights := []string{".safetensors", ".gguf", ".onnx", ".tflite", ".pt", ".pth", ".bin", ".npz", ".npy", ".ckpt"}
	best, bestW := "", false
	for _, n := range names {
		if strings.HasSuffix(n, ".safetensors.index.json") {
			return n
		}
		w := slices.ContainsFunc(weights, func(s string) bool { return strings.HasSuffix(n, s) })
		if best == "" || w && !bestW || w == bestW && files[n] > files[best] {
			best, bestW = n, w
		}
	}
	return best
}

// treeEntry is an entry of the hub's tree listing.
type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// list reads the repository's recursive tree, page after page.
func (h *HubFS) list() error {
	next := h.base + "/api/models/" + h.repo + "/tree/" + url.PathEscape(h.rev) + "?recursive=true"
	h.files = map[string]int64{}
	for next != "" {
		req, err := http.NewRequestWithContext(h.ctx, http.MethodGet, next, nil)
		if err != nil {
			return err
		}
		resp, err := do(h.client, req)
		if err != nil {
			return err
		}
		var page []treeEntry
		err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&page)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("listing %s: %s", h.repo, resp.Status)
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", h.repo, err)
		}
		for _, e := range page {
			if e.Type == "file" && fs.ValidPath(e.Path) && e.Size >= 0 {
				h.files[e.Path] = e.Size
			}
		}
		if len(h.files) > hubMaxTree {
			return fmt.Errorf("listing %s: more than %d files", h.repo, hubMaxTree)
		}
		next = nextLink(resp.Header.Get("Link"), resp.Request.URL)
	}
	return nil
}

// nextLink is the rel="next" target of a Link header, resolved against
// the request's URL, or "".
func nextLink(link string, base *url.URL) string {
	for _, part := range strings.Split(link, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(params, `rel="next"`) {
			continue
		}
		target = strings.Trim(strings.TrimSpace(target), "<>")
		if t, err := base.Parse(target); err == nil {
			return t.String()
		}
	}
	return ""
}

// Open implements fs.FS: a file, or a folder of the tree.
func (h *HubFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if size, ok := h.files[name]; ok {
		return &hubFile{h: h, name: name, size: size}, nil
	}
	if ents, err := h.ReadDir(name); err == nil {
		return &hubDir{name: name, ents: ents}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// ReadDir implements fs.ReadDirFS from the tree.
func (h *HubFS) ReadDir(name string) ([]fs.DirEntry, error) {
	prefix := ""
	if name != "." {
		prefix = name + "/"
	}
	seen := map[string]bool{}
	var ents []fs.DirEntry
	for p, size := range h.files {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		child, _, dir := strings.Cut(rest, "/")
		if seen[child] {
			continue
		}
		seen[child] = true
		ents = append(ents, fs.FileInfoToDirEntry(hubInfo{name: child, size: size, dir: dir}))
	}
	if len(ents) == 0 && name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// readAt reads len(p) bytes of file name at off: through the block cache
// when short, with one range request otherwise.
func (h *HubFS) readAt(name string, size int64, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("core: negative offset")
	}
	if off >= size {
		return 0, io.EOF
	}
	n := len(p)
	if rest := size - off; int64(n) > rest {
		n = int(rest)
	}
	if n >= hubBlock {
		if err := h.fetch(name, p[:n], off); err != nil {
			return 0, err
		}
	} else {
		for done := 0; done < n; {
			k := (off + int64(done)) / hubBlock
			b, err := h.block(name, size, k)
			if err != nil {
				return done, err
			}
			done += copy(p[done:n], b[off+int64(done)-k*hubBlock:])
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// block returns block k of file name, from the cache or the server.
func (h *HubFS) block(name string, size, k int64) ([]byte, error) {
	key := blockKey{name, k}
	h.mu.Lock()
	if b, ok := h.cache[key]; ok {
		i := slices.Index(h.order, key)
		h.order = append(slices.Delete(h.order, i, i+1), key)
		h.mu.Unlock()
		return b, nil
	}
	h.mu.Unlock()
	b := make([]byte, min(hubBlock, size-k*hubBlock))
	if err := h.fetch(name, b, k*hubBlock); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.cache[key]; !ok {
		if len(h.order) == hubCacheBlocks {
			delete(h.cache, h.order[0])
			h.order = h.order[1:]
		}
		h.cache[key] = b
		h.order = append(h.order, key)
	}
	return b, nil
}

// fetch reads len(p) bytes of file name at off with one range request,
// checking that the server answered with exactly that range.
func (h *HubFS) fetch(name string, p []byte, off int64) error {
	esc := strings.Split(name, "/")
	for i, s := range esc {
		esc[i] = url.PathEscape(s)
	}
	u := h.base + "/" + h.repo + "/resolve/" + url.PathEscape(h.rev) + "/" + strings.Join(esc, "/")
	req, err := http.NewRequestWithContext(h.ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	end := off + int64(len(p)) - 1
	req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(end, 10))
	resp, err := do(h.client, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		return fmt.Errorf("%s: bytes %d-%d: %s (a server that serves ranges is needed)", name, off, end, resp.Status)
	}
	var a, b int64
	if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/", &a, &b); err != nil || a != off || b != end {
		return fmt.Errorf("%s: asked for bytes %d-%d, got %q", name, off, end, resp.Header.Get("Content-Range"))
	}
	got, err := io.ReadFull(resp.Body, p)
	h.fetched.Add(int64(got))
	if err != nil {
		return fmt.Errorf("%s: bytes %d-%d: %w", name, off, end, err)
	}
	return nil
}

// hubFile is an open file of a HubFS; it implements io.ReaderAt.
type hubFile struct {
	h    *HubFS
	name string
	size int64
	off  int64
}

func (f *hubFile) Stat() (fs.FileInfo, error) {
	return hubInfo{name: path.Base(f.name), size: f.size}, nil
}

func (f *hubFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *hubFile) ReadAt(p []byte, off int64) (int, error) {
	return f.h.readAt(f.name, f.size, p, off)
}

func (f *hubFile) Close() error { return nil }

// hubDir is an open folder of a HubFS.
type hubDir struct {
	name string
	ents []fs.DirEntry
	pos  int
}

func (d *hubDir) Stat() (fs.FileInfo, error) { return hubInfo{name: path.Base(d.name), dir: true}, nil }
func (d *hubDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
func (d *hubDir) Close() error { return nil }

func (d *hubDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.pos:]
	if n <= 0 {
		d.pos = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.pos += len(rest)
	return rest, nil
}

// hubInfo is the fs.FileInfo of a HubFS file or folder.
type hubInfo struct {
	name string
	size int64
	dir  bool
}

func (i hubInfo) Name() string { return i.name }
func (i hubInfo) Size() int64 {
	if i.dir {
		return 0
	}
	return i.size
}
func (i hubInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i hubInfo) ModTime() time.Time { return time.Time{} }
func (i hubInfo) IsDir() bool        { return i.dir }
func (i hubInfo) Sys() any           { return nil }
