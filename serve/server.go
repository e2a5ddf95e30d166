package serve

import (
	"context"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"neuralzip/store"
)

// Config configures a Server; its zero value works.
type Config struct {
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN); others get 401.
	Token string
	// CORSOrigins are the web origins (scheme://host:port, or "*" for any)
	// whose pages may read the server from a browser, as the workbench's
	// Open URL does (Access-Control-Allow-Origin); none by default, so a
	// page the user visits cannot read a server on their machine.
	CORSOrigins []string
	// MaxDecodes bounds the responses that read or decode at once; more
	// wait (until their client gives up). 0 means 2 × GOMAXPROCS.
	MaxDecodes int
	// Threads is the number of blocks one response decodes at once; 0
	// means GOMAXPROCS.
	Threads int
	// CacheDir, when set, keeps the SHA-256 of archive files that store a
	// BLAKE3 digest, named by that digest and the size, so that a restart
	// does not decode them again. "" keeps nothing.
	CacheDir string
	// CacheBytes bounds the decoded archive blocks kept for ranges (one
	// cache for all sources, least recently used dropped first); 0 means
	// DefaultCacheBytes, a negative value keeps none.
	CacheBytes int64
	// Log receives errors and progress; nil means log.Default().
	Log *log.Logger
	// PageSize is the number of entries of a tree listing page; 0 means 1000.
	PageSize int
	// WriteTimeout bounds each write of a response body (a client that
	// reads nothing for this long is dropped); 0 means one minute.
	WriteTimeout time.Duration
}

// Server serves repositories; it is an http.Handler.
type Server struct {
	cfg   Config
	mu    sync.Mutex
	repos map[string]*repo
	order []*repo
	// stores are the stores served, in the order added (HubPath)
	stores []*storeSrc
	sem    chan struct{}
	start  sync.Once
	cache  *blockCache
	ahead  chan struct{} // bounds the blocks decoded ahead of sequential reads
}

// New returns a server without repositories.
func New(cfg Config) *Server {
	if cfg.MaxDecodes <= 0 {
		cfg.MaxDecodes = 2 * runtime.GOMAXPROCS(0)
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 1000
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = log.Default()
	}
	switch {
	case cfg.CacheBytes == 0:
		cfg.CacheBytes = DefaultCacheBytes
	case cfg.CacheBytes < 0:
		cfg.CacheBytes = 0
	}
	s := &Server{cfg: cfg, repos: map[string]*repo{}, sem: make(chan struct{}, cfg.MaxDecodes),
		cache: newBlockCache(cfg.CacheBytes)}
	s.ahead = make(chan struct{}, s.threads())
	return s
}

func (s *Server) threads() int {
	if s.cfg.Threads > 0 {
		return s.cfg.Threads
	}
	return runtime.GOMAXPROCS(0)
}

func (s *Server) logf(format string, args ...any) { s.cfg.Log.Printf(format, args...) }

// DefaultName is the repository name a source gets when none is given:
// "local/" and the base name of the path without ".nzip", with characters
// a repository name cannot hold replaced by '-'.
func DefaultName(source string) string {
	base := filepath.Base(filepath.Clean(source))
	base = strings.TrimSuffix(base, ".nzip")
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '-'
		}
	}
	name := strings.Trim(strings.ReplaceAll(string(b), "..", "-"), ".-")
	if name == "" {
		name = "model"
	}
	if len(name) > 96 {
		name = name[:96]
	}
	return "local/" + name
}

// Add adds a source as repository id ("" means DefaultName): a directory
// is served as plain files, anything else must be an .nzip archive.
//
// A store (a directory holding one, or s3://bucket/prefix) adds a
// repository per model name (StoreRepo); its id, if any, is the
// organisation of its one-part model names instead.
func (s *Server) Add(id, source string) error {
	if store.IsStore(source) {
		if strings.Contains(id, "/") {
			return fmt.Errorf("serve: %s is a store: its models name their repositories (give ORG= to set the organisation of one-part names)", source)
		}
		return s.addStore(id, source)
	}
	if id == "" {
		id = DefaultName(source)
	}
	org, name, ok := strings.Cut(id, "/")
	if !ok || !ValidRepoPart(org) || !ValidRepoPart(name) {
		return fmt.Errorf("serve: %q is not a repository name ORG/NAME", id)
	}
	st, err := os.Stat(source)
	if err != nil {
		return err
	}
	var r *repo
	if st.IsDir() {
		r, err = s.openDir(id, source)
	} else {
		r, err = s.openArchive(id, source)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repos[id] != nil {
		r.close()
		return fmt.Errorf("serve: two sources named %s", id)
	}
	s.repos[id] = r
	s.order = append(s.order, r)
	return nil
}

// Repo describes a served repository.
type Repo struct {
	ID     string
	Source string
	Kind   string // "archive", "directory" or "store"
	Files  int
	Bytes  int64
}

// Repos lists the repositories in the order they were added.
func (s *Server) Repos() []Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Repo
	for _, r := range s.order {
		var n int64
		for _, f := range r.files {
			n += f.size
		}
		out = append(out, Repo{ID: r.id, Source: r.source, Kind: r.kind, Files: len(r.files), Bytes: n})
	}
	return out
}

// Start computes, in the background, the SHA-256 of every file that needs
// it and each repository's commit id; requests for a repository wait for
// its sums. ServeHTTP starts it too. Sources added later are not served
// (models added to a served store are: addStore).
func (s *Server) Start(ctx context.Context) {
	s.start.Do(func() {
		s.mu.Lock()
		repos := append([]*repo(nil), s.order...)
		s.mu.Unlock()
		go func() {
			for _, r := range repos {
				select {
				case <-r.ready:
					continue // a store's: its sums are its manifests'
				default:
				}
				r.err = s.hashRepo(ctx, r)
				if r.err != nil {
					s.logf("serve: %s: %v", r.id, r.err)
				}
				close(r.ready)
			}
		}()
	})
}

// WaitReady waits until every repository's sums are known and returns the
// first error found.
func (s *Server) WaitReady(ctx context.Context) error {
	s.Start(context.WithoutCancel(ctx))
	s.mu.Lock()
	repos := append([]*repo(nil), s.order...)
	s.mu.Unlock()
	for _, r := range repos {
		if err := r.wait(ctx); err != nil {
			return fmt.Errorf("%s: %w", r.id, err)
		}
	}
	return nil
}

// hashRepo computes the files' SHA-256 and the commit id.
func (s *Server) hashRepo(ctx context.Context, r *repo) error {
	for _, f := range r.files {
		sum, err := f.c.sha256(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		f.sum = sum
	}
	r.commit = commitID(r.files)
	return nil
}

// commitID is a repository's commit id: the SHA-1 of the lines
// "PATH\x00SIZE\x00SHA256HEX\n" of its files sorted by path (bytewise).
// It depends on the content only, so it stays the same across restarts and
// machines, and changes when any file does.
func commitID(files []*file) string {
	sorted := append([]*file(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	h := sha1.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%s\x00%d\x00%x\n", f.name, f.size, f.sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cachedSum reads a SHA-256 from the cache directory.
func (s *Server) cachedSum(key string) ([32]byte, bool) {
	var sum [32]byte
	b, err := os.ReadFile(filepath.Join(s.cfg.CacheDir, key))
	if err != nil || len(b) < 64 {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], b[:64]); err != nil {
		return sum, false
	}
	return sum, true
}

// storeSum writes a SHA-256 to the cache directory (errors are logged:
// the cache only saves time).
func (s *Server) storeSum(key string, sum [32]byte) {
	if err := os.MkdirAll(s.cfg.CacheDir, 0o755); err != nil {
		s.logf("serve: sha256 cache: %v", err)
		return
	}
	tmp, err := os.CreateTemp(s.cfg.CacheDir, key+".*")
	if err != nil {
		s.logf("serve: sha256 cache: %v", err)
		return
	}
	_, err = fmt.Fprintf(tmp, "%x\n", sum)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(s.cfg.CacheDir, key))
	}
	if err != nil {
		os.Remove(tmp.Name())
		s.logf("serve: sha256 cache: %v", err)
	}
}

// Close closes the sources.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, r := range s.order {
		if err := r.close(); err != nil && first == nil {
			first = err
		}
	}
	for _, src := range s.stores { // one whose models all left has no repository
		if err := src.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// NewHTTPServer returns an http.Server for h with bounded header size and
// read-header and idle timeouts (no overall write timeout: a download may
// take long; the Server bounds each write instead).
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second, // request bodies are small (paths-info)
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.Start(context.Background())
	if s.cors(w, req) {
		return // a preflight, answered
	}
	if s.cfg.Token != "" && !s.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="nzip serve"`)
		apiError(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
		return
	}
	s.freshStores(req.Context()) // models added or removed since
	if req.URL.Path == HubPath {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			apiError(w, http.StatusMethodNotAllowed, "", "the server is read-only: GET, HEAD only")
			return
		}
		s.serveHub(w, req)
		return
	}
	rt, err := parsePath(req.URL.EscapedPath())
	if err != nil {
		apiError(w, http.StatusNotFound, "", "Not found (or a path the server refuses)")
		return
	}
	allowed := "GET, HEAD"
	if rt.kind == routePathsInfo {
		allowed = "POST"
	}
	if !strings.Contains(allowed, req.Method) || req.Method == "" {
		w.Header().Set("Allow", allowed)
		apiError(w, http.StatusMethodNotAllowed, "", "the server is read-only: "+allowed+" only")
		return
	}
	s.mu.Lock()
	r := s.repos[rt.repo]
	s.mu.Unlock()
	if r == nil {
		apiError(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
		return
	}
	if err := r.wait(req.Context()); err != nil {
		if req.Context().Err() == nil {
			apiError(w, http.StatusInternalServerError, "", "the repository's files could not be read: "+err.Error())
		}
		return
	}
	if rt.rev != "" && rt.rev != "main" && rt.rev != "HEAD" && rt.rev != r.commit {
		apiError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rt.rev)
		return
	}
	w.Header().Set("X-Repo-Commit", r.commit)
	switch rt.kind {
	case routeModel:
		s.serveModel(w, req, r)
	case routeTree:
		s.serveTree(w, req, r, rt.path)
	case routePathsInfo:
		s.servePathsInfo(w, req, r)
	case routeResolve:
		s.serveFile(w, req, r, rt.rev, rt.path)
	}
}

// authorized checks the bearer token in constant time.
// corsExpose are the response headers a page may read: what the hub's
// clients and the workbench's Open URL use.
const corsExpose = "Accept-Ranges, Content-Length, Content-Range, ETag, Link, X-Repo-Commit, X-Linked-Etag, X-Linked-Size, X-Error-Code, X-Error-Message"

// cors adds the CORS headers for a request from an allowed origin and
// answers a preflight (OPTIONS with Access-Control-Request-Method), which
// it reports; requests from other origins get no CORS headers, so the
// browser keeps their answers from the page.
func (s *Server) cors(w http.ResponseWriter, req *http.Request) bool {
	origin := req.Header.Get("Origin")
	if origin == "" || len(s.cfg.CORSOrigins) == 0 {
		return false
	}
	allow := ""
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || o == origin {
			allow = o
			break
		}
	}
	if allow == "" {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", allow)
	if allow != "*" {
		h.Add("Vary", "Origin")
	}
	h.Set("Access-Control-Expose-Headers", corsExpose)
	if req.Method != http.MethodOptions || req.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-None-Match, If-Range, Range")
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
	return true
}

func (s *Server) authorized(req *http.Request) bool {
	h := req.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.cfg.Token)) == 1
}

// apiError answers as the hub does: X-Error-Code (when code is set),
// X-Error-Message and a JSON body {"error": msg}.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	h := w.Header()
	for _, k := range []string{"ETag", "X-Linked-Etag", "X-Linked-Size", "Accept-Ranges", "Content-Disposition"} {
		h.Del(k)
	}
	if code != "" {
		h.Set("X-Error-Code", code)
	}
	h.Set("X-Error-Message", msg)
	writeJSON(w, status, map[string]string{"error": msg})
}
