package serve

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// hubTime is the hub's time format.
const hubTime = "2006-01-02T15:04:05.000Z"

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// lfsPointer is the Git LFS pointer the hub would store for f: every file
// is served as an LFS file, so clients key their caches by its SHA-256.
func lfsPointer(f *file) string {
	return fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%x\nsize %d\n", f.sum, f.size)
}

// gitOID is the Git blob id of data, what the hub lists as an entry's oid
// (of the pointer, for LFS files).
func gitOID(data string) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	io.WriteString(h, data)
	return hex.EncodeToString(h.Sum(nil))
}

type lfsInfo struct {
	OID         string `json:"oid"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

type commitRef struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Date  string `json:"date"`
}

type treeEntry struct {
	Type               string             `json:"type"`
	OID                string             `json:"oid"`
	Size               int64              `json:"size"`
	Path               string             `json:"path"`
	LFS                *lfsInfo           `json:"lfs,omitempty"`
	LastCommit         *commitRef         `json:"lastCommit,omitempty"`
	SecurityFileStatus *map[string]string `json:"securityFileStatus,omitempty"`
}

func (r *repo) lastCommit() *commitRef {
	return &commitRef{ID: r.commit, Title: "Served by nzip from " + r.kind, Date: r.modified.Format(hubTime)}
}

func (r *repo) fileEntry(f *file, expand bool) treeEntry {
	ptr := lfsPointer(f)
	e := treeEntry{Type: "file", OID: gitOID(ptr), Size: f.size, Path: f.name,
		LFS: &lfsInfo{OID: hex.EncodeToString(f.sum[:]), Size: f.size, PointerSize: len(ptr)}}
	if expand {
		e.LastCommit = r.lastCommit()
		e.SecurityFileStatus = &map[string]string{"status": "unscanned"}
	}
	return e
}

// dirEntry lists a directory; its oid is a SHA-1 of the paths and sums
// below it (stable, like a Git tree id, though not one).
func (r *repo) dirEntry(d string, expand bool) treeEntry {
	h := sha1.New()
	for _, f := range r.files {
		if strings.HasPrefix(f.name, d+"/") {
			fmt.Fprintf(h, "%s\x00%x\n", f.name, f.sum)
		}
	}
	e := treeEntry{Type: "directory", OID: hex.EncodeToString(h.Sum(nil)), Path: d}
	if expand {
		e.LastCommit = r.lastCommit()
	}
	return e
}

// serveModel answers /api/models/{repo} and /api/models/{repo}/revision/{rev}.
func (s *Server) serveModel(w http.ResponseWriter, req *http.Request, r *repo) {
	blobs := req.URL.Query().Get("blobs") == "true"
	type sibling struct {
		RFilename string   `json:"rfilename"`
		BlobID    string   `json:"blobId,omitempty"`
		Size      *int64   `json:"size,omitempty"`
		LFS       *lfsBlob `json:"lfs,omitempty"`
	}
	var sib []sibling
	var used int64
	for _, f := range r.files {
		sb := sibling{RFilename: f.name}
		if blobs {
			ptr := lfsPointer(f)
			size := f.size
			sb.BlobID, sb.Size = gitOID(ptr), &size
			sb.LFS = &lfsBlob{SHA256: hex.EncodeToString(f.sum[:]), Size: f.size, PointerSize: len(ptr)}
		}
		used += f.size
		sib = append(sib, sb)
	}
	org, _, _ := strings.Cut(r.id, "/")
	date := r.modified.Format(hubTime)
	writeJSON(w, http.StatusOK, map[string]any{
		"_id":          r.commit[:24],
		"id":           r.id,
		"modelId":      r.id,
		"author":       org,
		"sha":          r.commit,
		"lastModified": date,
		"createdAt":    date,
		"private":      false,
		"disabled":     false,
		"gated":        false,
		"downloads":    0,
		"likes":        0,
		"tags":         []string{"nzip"},
		"siblings":     sib,
		"spaces":       []string{},
		"usedStorage":  used,
	})
}

type lfsBlob struct {
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

// serveTree answers /api/models/{repo}/tree/{rev}[/{path}]: the entries
// directly in the directory, or all below it with recursive=true, sorted
// by path, in pages of Config.PageSize linked by a Link header (rel="next",
// an opaque cursor).
func (s *Server) serveTree(w http.ResponseWriter, req *http.Request, r *repo, dir string) {
	q := req.URL.Query()
	recursive, expand := q.Get("recursive") == "true", q.Get("expand") == "true"
	if !r.dirs[dir] {
		if r.byName[dir] != nil {
			apiError(w, http.StatusNotFound, "EntryNotFound", dir+" is a file, not a directory")
			return
		}
		apiError(w, http.StatusNotFound, "EntryNotFound", dir+" does not exist")
		return
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var paths []string
	kind := map[string]bool{} // true: directory
	for _, f := range r.files {
		rest, ok := strings.CutPrefix(f.name, prefix)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		for i := range parts {
			p := prefix + strings.Join(parts[:i+1], "/")
			isDir := i < len(parts)-1
			if _, seen := kind[p]; !seen {
				kind[p] = isDir
				paths = append(paths, p)
			}
			if !recursive {
				break
			}
		}
	}
	sort.Strings(paths)
	off := 0
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 || n > len(paths) {
			apiError(w, http.StatusBadRequest, "", "invalid cursor")
			return
		}
		off = n
	}
	limit := s.cfg.PageSize
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 && l < limit {
		limit = l
	}
	end := min(len(paths), off+limit)
	out := make([]treeEntry, 0, end-off)
	for _, p := range paths[off:end] {
		if kind[p] {
			out = append(out, r.dirEntry(p, expand))
		} else {
			out = append(out, r.fileEntry(r.byName[p], expand))
		}
	}
	if end < len(paths) {
		nq := req.URL.Query()
		nq.Set("cursor", base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end))))
		next := url.URL{Scheme: "http", Host: req.Host, Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: nq.Encode()}
		if req.TLS != nil {
			next.Scheme = "https"
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next.String()))
	}
	writeJSON(w, http.StatusOK, out)
}

// servePathsInfo answers POST /api/models/{repo}/paths-info/{rev}: a form
// or JSON body with paths (and expand); the entries that exist, files and
// directories, in the order asked (missing paths are left out, as the hub
// does).
func (s *Server) servePathsInfo(w http.ResponseWriter, req *http.Request, r *repo) {
	req.Body = http.MaxBytesReader(w, req.Body, 1<<20)
	var paths []string
	expand := false
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if ct == "application/json" {
		var body struct {
			Paths  json.RawMessage `json:"paths"`
			Expand any             `json:"expand"`
		}
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
			apiError(w, http.StatusBadRequest, "", "invalid JSON body: "+err.Error())
			return
		}
		if json.Unmarshal(body.Paths, &paths) != nil {
			var one string
			if json.Unmarshal(body.Paths, &one) != nil {
				apiError(w, http.StatusBadRequest, "", "paths must be a list of strings")
				return
			}
			paths = []string{one}
		}
		expand = body.Expand == true || body.Expand == "true" || body.Expand == "1"
	} else {
		if err := req.ParseForm(); err != nil {
			apiError(w, http.StatusBadRequest, "", "invalid form body: "+err.Error())
			return
		}
		paths = append(req.PostForm["paths"], req.PostForm["paths[]"]...)
		expand = req.PostForm.Get("expand") == "true" || req.PostForm.Get("expand") == "1"
	}
	if len(paths) > 10000 {
		apiError(w, http.StatusBadRequest, "", "too many paths")
		return
	}
	out := []treeEntry{}
	seen := map[string]bool{}
	for _, p := range paths {
		p = strings.Trim(p, "/")
		if seen[p] {
			continue
		}
		seen[p] = true
		if f := r.byName[p]; f != nil {
			out = append(out, r.fileEntry(f, expand))
		} else if p != "" && r.dirs[p] {
			out = append(out, r.dirEntry(p, expand))
		}
	}
	writeJSON(w, http.StatusOK, out)
}
