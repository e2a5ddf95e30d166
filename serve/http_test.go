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
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRanges(t *testing.T) {
	f := newFixture(t, Config{})
	data := f.files["local/syn/model.bin"]
	size := int64(len(data))
	url := f.ts.URL + "/local/syn/resolve/main/model.bin"
	etag := `"` + sumHex(data) + `"`
	type tc struct {
		name   string
		hdr    []string
		status int
		lo, hi int64 // the bytes expected (hi exclusive); -1: no body check
		cr     string
	}
	last := size - 1
	cases := []tc{
		{"whole", nil, 200, 0, size, ""},
		{"a-b", []string{"Range", "bytes=10-19"}, 206, 10, 20, fmt.Sprintf("bytes 10-19/%d", size)},
		{"block edge", []string{"Range", "bytes=524280-524300"}, 206, 524280, 524301, fmt.Sprintf("bytes 524280-524300/%d", size)},
		{"a-", []string{"Range", "bytes=1000000-"}, 206, 1000000, size, fmt.Sprintf("bytes 1000000-%d/%d", last, size)},
		{"-n", []string{"Range", "bytes=-100"}, 206, size - 100, size, fmt.Sprintf("bytes %d-%d/%d", size-100, last, size)},
		{"-n larger", []string{"Range", "bytes=-99999999"}, 206, 0, size, fmt.Sprintf("bytes 0-%d/%d", last, size)},
		{"b past end", []string{"Range", "bytes=5-99999999999"}, 206, 5, size, fmt.Sprintf("bytes 5-%d/%d", last, size)},
		{"last byte", []string{"Range", fmt.Sprintf("bytes=%d-%d", last, last)}, 206, last, size, ""},
		{"0-0", []string{"Range", "bytes=0-0"}, 206, 0, 1, fmt.Sprintf("bytes 0-0/%d", size)},
		{"start at size", []string{"Range", fmt.Sprintf("bytes=%d-", size)}, 416, -1, -1, fmt.Sprintf("bytes */%d", size)},
		{"start overflow", []string{"Range", "bytes=99999999999999999999-"}, 416, -1, -1, fmt.Sprintf("bytes */%d", size)},
		{"-0", []string{"Range", "bytes=-0"}, 416, -1, -1, fmt.Sprintf("bytes */%d", size)},
		{"b before a: ignored", []string{"Range", "bytes=20-10"}, 200, 0, size, ""},
		{"garbage: ignored", []string{"Range", "bytes=x-y"}, 200, 0, size, ""},
		{"other unit: ignored", []string{"Range", "items=0-5"}, 200, 0, size, ""},
		{"several: whole", []string{"Range", "bytes=0-5,10-20"}, 200, 0, size, ""},
		{"If-Range match", []string{"Range", "bytes=3-4", "If-Range", etag}, 206, 3, 5, ""},
		{"If-Range other", []string{"Range", "bytes=3-4", "If-Range", `"abc"`}, 200, 0, size, ""},
		{"If-Range weak", []string{"Range", "bytes=3-4", "If-Range", "W/" + etag}, 200, 0, size, ""},
		{"If-Range date", []string{"Range", "bytes=3-4", "If-Range", "Mon, 07 Dec 2026 06:01:02 GMT"}, 200, 0, size, ""},
		{"If-None-Match", []string{"If-None-Match", etag}, 304, -1, -1, ""},
		{"If-None-Match weak", []string{"If-None-Match", `"x", W/` + etag}, 304, -1, -1, ""},
		{"If-None-Match *", []string{"If-None-Match", "*"}, 304, -1, -1, ""},
		{"If-None-Match other", []string{"If-None-Match", `"x"`, "Range", "bytes=0-1"}, 206, 0, 2, ""},
		{"If-Match other", []string{"If-Match", `"x"`}, 412, -1, -1, ""},
		{"If-Match", []string{"If-Match", etag, "Range", "bytes=7-8"}, 206, 7, 9, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := get(t, "GET", url, c.hdr...)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, c.status, body)
			}
			if c.cr != "" && resp.Header.Get("Content-Range") != c.cr {
				t.Errorf("Content-Range %q, want %q", resp.Header.Get("Content-Range"), c.cr)
			}
			if c.status == 304 && (len(body) != 0 || resp.Header.Get("ETag") != etag) {
				t.Errorf("304: body %d bytes, ETag %q", len(body), resp.Header.Get("ETag"))
			}
			if c.lo >= 0 {
				if !bytes.Equal(body, data[c.lo:c.hi]) {
					t.Errorf("body: %d bytes, want bytes %d-%d", len(body), c.lo, c.hi)
				}
				if resp.Header.Get("ETag") != etag || resp.Header.Get("Accept-Ranges") != "bytes" {
					t.Errorf("ETag %q, Accept-Ranges %q", resp.Header.Get("ETag"), resp.Header.Get("Accept-Ranges"))
				}
				if resp.ContentLength != c.hi-c.lo {
					t.Errorf("Content-Length %d, want %d", resp.ContentLength, c.hi-c.lo)
				}
			}
		})
	}
	// HEAD: the headers of GET, no body
	resp, body := get(t, "HEAD", url, "Range", "bytes=10-19")
	if resp.StatusCode != 206 || len(body) != 0 || resp.Header.Get("Content-Length") != "10" {
		t.Errorf("HEAD range: %d, %d bytes, Content-Length %q", resp.StatusCode, len(body), resp.Header.Get("Content-Length"))
	}
	// an empty file: 200, and any range is unsatisfiable
	eu := f.ts.URL + "/local/syn/resolve/main/empty.bin"
	if resp, body := get(t, "GET", eu); resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != 0 {
		t.Errorf("empty file: %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp, _ := get(t, "GET", eu, "Range", "bytes=0-0"); resp.StatusCode != 416 || resp.Header.Get("Content-Range") != "bytes */0" {
		t.Errorf("empty file, range: %d %q", resp.StatusCode, resp.Header.Get("Content-Range"))
	}
}

// TestEveryFile checks every file of both sources, whole and in random
// ranges, and the hub headers.
func TestEveryFile(t *testing.T) {
	f := newFixture(t, Config{Threads: 3})
	rng := rand.New(rand.NewPCG(1, 2))
	for key, data := range f.files {
		repo, p := key[:strings.Index(key[6:], "/")+6], key[strings.Index(key[6:], "/")+7:]
		for _, rev := range []string{"main", f.srv.repos[repo].commit} {
			url := f.ts.URL + "/" + repo + "/resolve/" + rev + "/" + p
			resp, body := get(t, "GET", url)
			if resp.StatusCode != 200 || !bytes.Equal(body, data) {
				t.Fatalf("%s: status %d, %d bytes, want %d", url, resp.StatusCode, len(body), len(data))
			}
			h := resp.Header
			if h.Get("X-Repo-Commit") != f.srv.repos[repo].commit || h.Get("X-Linked-Etag") != `"`+sumHex(data)+`"` ||
				h.Get("X-Linked-Size") != fmt.Sprint(len(data)) {
				t.Errorf("%s: headers %v", url, h)
			}
		}
		if len(data) == 0 {
			continue
		}
		for range 20 {
			a := rng.IntN(len(data))
			b := a + rng.IntN(min(len(data)-a, 600_000))
			resp, body := get(t, "GET", f.ts.URL+"/"+repo+"/resolve/main/"+p, "Range", fmt.Sprintf("bytes=%d-%d", a, b))
			if resp.StatusCode != 206 || !bytes.Equal(body, data[a:b+1]) {
				t.Fatalf("%s bytes %d-%d: status %d, wrong bytes", key, a, b, resp.StatusCode)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t, Config{})
	u := f.ts.URL
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/local/nope/resolve/main/model.bin", 404, "RepoNotFound"},
		{"GET", "/api/models/local/nope", 404, "RepoNotFound"},
		{"GET", "/local/syn/resolve/v2/model.bin", 404, "RevisionNotFound"},
		{"GET", "/local/syn/resolve/refs%2Fpr%2F1/model.bin", 404, "RevisionNotFound"},
		{"GET", "/api/models/local/syn/revision/0000000000000000000000000000000000000000", 404, "RevisionNotFound"},
		{"GET", "/local/syn/resolve/main/nope.bin", 404, "EntryNotFound"},
		{"GET", "/api/models/local/syn/tree/main/nope", 404, "EntryNotFound"},
		{"GET", "/local/syn/resolve/main/sub", 404, "EntryNotFound"},
		// escapes: refused as paths, whatever exists outside
		{"GET", "/local/syn/resolve/main/../syn.nzip", 404, ""},
		{"GET", "/local/syn/resolve/main/%2e%2e/%2e%2e/etc/passwd", 404, ""},
		{"GET", "/local/syn/resolve/main/sub%2fx.bin", 404, ""},
		{"GET", "/local/syn/resolve/main/sub%5cx.bin", 404, ""},
		{"GET", "/local/syn/resolve/main//etc/passwd", 404, ""},
		{"GET", "/local/syn/resolve/main/./model.bin", 404, ""},
		{"GET", "/local/dir/resolve/main/%2Fetc%2Fpasswd", 404, ""},
		{"GET", "/local/dir/resolve/main/d/%00", 404, ""},
		{"GET", "/%2e%2e/syn/resolve/main/model.bin", 404, ""},
		{"GET", "/", 404, ""},
		// read-only
		{"PUT", "/local/syn/resolve/main/model.bin", 405, ""},
		{"DELETE", "/local/syn/resolve/main/model.bin", 405, ""},
		{"POST", "/local/syn/resolve/main/model.bin", 405, ""},
		{"GET", "/api/models/local/syn/paths-info/main", 405, ""},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, u+c.path, nil)
		req.URL.RawPath = "" // send the path as written
		req.URL.Opaque = "//" + req.URL.Host + c.path
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("X-Error-Code") != c.code || body["error"] == nil {
			t.Errorf("%s %s: %d %q %v, want %d %q", c.method, c.path, resp.StatusCode, resp.Header.Get("X-Error-Code"), body, c.status, c.code)
		}
	}
}

// TestLinkOutside: a link out of a directory source is not served.
func TestLinkOutside(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret"), []byte("secret"), 0o644)
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "in.bin"), []byte("inside"), 0o644)
	if err := os.Symlink(filepath.Join(dir, "secret"), filepath.Join(src, "out.bin")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	os.Symlink("in.bin", filepath.Join(src, "link.bin"))
	srv := New(Config{Log: discard()})
	if err := srv.Add("a/b", src); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.repos["a/b"].byName["out.bin"] != nil || srv.repos["a/b"].byName["link.bin"] == nil {
		t.Fatalf("files: %v", srv.repos["a/b"].byName)
	}
}

func TestToken(t *testing.T) {
	f := newFixture(t, Config{Token: "s3cret"})
	u := f.ts.URL + "/local/syn/resolve/main/config.json"
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret"}, {"Authorization", "Basic s3cret"}} {
		if resp, _ := get(t, "GET", u, h...); resp.StatusCode != 401 {
			t.Errorf("%v: %d, want 401", h, resp.StatusCode)
		}
	}
	if resp, body := get(t, "GET", u, "Authorization", "Bearer s3cret"); resp.StatusCode != 200 || string(body) != `{"model_type": "llama"}` {
		t.Errorf("with the token: %d %q", resp.StatusCode, body)
	}
}

// TestChangedSource: a plain file rewritten or truncated under the server
// gives errors, never other bytes.
func TestChangedSource(t *testing.T) {
	f := newFixture(t, Config{})
	p := filepath.Join(f.dir, "plain", "a.bin")
	os.WriteFile(p, []byte("short"), 0o644)
	resp, body := get(t, "GET", f.ts.URL+"/local/dir/resolve/main/a.bin")
	if resp.StatusCode != 500 || bytes.Contains(body, []byte("short")) {
		t.Errorf("rewritten file: %d %q", resp.StatusCode, body)
	}
}

// TestCorruptArchive: a damaged block aborts the response (the client
// sees a failed download) for whole files and ranges.
func TestCorruptArchive(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.nzip")
	data := synthetic(1300_000, 5)
	writeArchive(t, p, []string{"m.bin"}, [][]byte{data})
	srv := New(Config{Log: discard()})
	if err := srv.Add("", p); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	if err := srv.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	// damage the middle block's payload in place (same size, same mtime)
	af := srv.repos["local/c"].files[0].c.(*archiveFile)
	b := af.blocks[1]
	st, _ := os.Stat(p)
	fh, _ := os.OpenFile(p, os.O_RDWR, 0)
	one := []byte{0}
	fh.ReadAt(one, b.Payload+b.Compressed/2)
	one[0] ^= 0x55
	fh.WriteAt(one, b.Payload+b.Compressed/2)
	fh.Close()
	os.Chtimes(p, st.ModTime(), st.ModTime())
	for _, rng := range []string{"", fmt.Sprintf("bytes=%d-%d", b.Offset, b.Offset+10)} {
		req, _ := http.NewRequest("GET", ts.URL+"/local/c/resolve/main/m.bin", nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue // refused outright: fine
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("range %q: a complete response of %d bytes from a damaged archive", rng, len(got))
		}
	}
}

// TestLoad: concurrent clients, whole files and random ranges, every byte
// compared.
func TestLoad(t *testing.T) {
	f := newFixture(t, Config{})
	clients, dur := 64, 1500*time.Millisecond
	if testing.Short() {
		dur = 500 * time.Millisecond
	}
	var keys []string
	for k, d := range f.files {
		if len(d) > 0 {
			keys = append(keys, k)
		}
	}
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	var n, bytesN atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(dur)
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 9))
			for time.Now().Before(stop) {
				k := keys[rng.IntN(len(keys))]
				data := f.files[k]
				i := strings.Index(k[6:], "/") + 6
				req, _ := http.NewRequest("GET", f.ts.URL+"/"+k[:i]+"/resolve/main/"+k[i+1:], nil)
				lo, hi := 0, len(data)
				if rng.IntN(4) != 0 {
					lo = rng.IntN(len(data))
					hi = lo + 1 + rng.IntN(min(len(data)-lo, 1<<20))
					req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", lo, hi-1))
				}
				resp, err := cl.Do(req)
				if err != nil {
					errs <- err
					return
				}
				got, err := sameBytes(resp.Body, data[lo:hi])
				resp.Body.Close()
				if err != nil {
					errs <- fmt.Errorf("%s %d-%d: %v", k, lo, hi, err)
					return
				}
				n.Add(1)
				bytesN.Add(got)
			}
		}()
	}
	// the heap stays bounded while they run: the block cache, the
	// responses being decoded (at most MaxDecodes at once) and the
	// clients' buffers, not a file per request
	var peak atomic.Uint64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for time.Now().Before(stop) {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wg.Wait()
	<-sampled
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	const bound = 256 << 20
	if peak.Load() > bound {
		t.Errorf("heap reached %d MiB under load, above %d MiB", peak.Load()>>20, bound>>20)
	}
	t.Logf("%d clients: %d requests, %d MB in %v, peak heap %d MiB", clients, n.Load(), bytesN.Load()>>20, dur, peak.Load()>>20)
}

// sameBytes reads r to its end, comparing it with want as it arrives.
func sameBytes(r io.Reader, want []byte) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if n+int64(k) > int64(len(want)) || !bytes.Equal(buf[:k], want[n:n+int64(k)]) {
				return n, fmt.Errorf("wrong bytes at %d", n)
			}
			n += int64(k)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if n != int64(len(want)) {
		return n, fmt.Errorf("%d bytes, want %d", n, len(want))
	}
	return n, nil
}

// TestHubAPI checks the JSON routes against what the hub sends.
func TestHubAPI(t *testing.T) {
	f := newFixture(t, Config{PageSize: 2})
	commit := f.srv.repos["local/syn"].commit
	if len(commit) != 40 || commit != commitID(f.srv.repos["local/syn"].files) {
		t.Fatalf("commit %q", commit)
	}
	var info struct {
		ID       string `json:"id"`
		SHA      string `json:"sha"`
		Private  bool   `json:"private"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
			LFS       *struct {
				SHA256 string `json:"sha256"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	for _, p := range []string{"/api/models/local/syn", "/api/models/local/syn/revision/main?blobs=true", "/api/models/local/syn/revision/HEAD", "/api/models/local/syn/revision/" + commit} {
		resp, body := get(t, "GET", f.ts.URL+p)
		info.Siblings = nil
		if err := json.Unmarshal(body, &info); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", p, resp.StatusCode, err)
		}
		if info.ID != "local/syn" || info.SHA != commit || len(info.Siblings) != 4 {
			t.Errorf("%s: %s", p, body)
		}
	}
	if info.Siblings[0].LFS != nil {
		t.Errorf("lfs without blobs=true")
	}
	// the tree, recursive, in pages of 2
	type entry struct {
		Type, Path, OID string
		Size            int64
		LFS             *struct {
			OID         string `json:"oid"`
			Size        int64  `json:"size"`
			PointerSize int    `json:"pointerSize"`
		}
		LastCommit *struct{ ID string } `json:"lastCommit"`
	}
	var all []entry
	next := f.ts.URL + "/api/models/local/syn/tree/main?recursive=true&expand=true"
	for pages := 0; next != ""; pages++ {
		resp, body := get(t, "GET", next)
		var es []entry
		if err := json.Unmarshal(body, &es); err != nil || resp.StatusCode != 200 || pages > 5 {
			t.Fatalf("%s: %d %v", next, resp.StatusCode, err)
		}
		all = append(all, es...)
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			next = l[1:strings.Index(l, ">")]
		}
	}
	var got []string
	for _, e := range all {
		got = append(got, e.Type+":"+e.Path)
		if e.Type == "file" {
			d := f.files["local/syn/"+e.Path]
			if e.LFS == nil || e.LFS.OID != sumHex(d) || e.Size != int64(len(d)) || len(e.OID) != 40 || e.LastCommit == nil || e.LastCommit.ID != commit {
				t.Errorf("entry %+v", e)
			}
		}
	}
	if strings.Join(got, " ") != "file:config.json file:empty.bin file:model.bin directory:sub file:sub/x.bin" {
		t.Errorf("tree: %v", got)
	}
	// not recursive, a subdirectory
	resp, body := get(t, "GET", f.ts.URL+"/api/models/local/dir/tree/main/d")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"path":"d/b.txt"`) || !strings.Contains(string(body), `"type":"directory","oid"`) || strings.Contains(string(body), "d/e/c.bin") {
		t.Errorf("tree d: %d %s", resp.StatusCode, body)
	}
	// paths-info, JSON and form
	for _, c := range []struct{ ct, body string }{
		{"application/json", `{"paths":["sub/x.bin","nope","sub"],"expand":true}`},
		{"application/x-www-form-urlencoded", "paths=sub%2Fx.bin&paths=nope&paths=sub&expand=true"},
	} {
		resp, err := http.Post(f.ts.URL+"/api/models/local/syn/paths-info/main", c.ct, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var es []entry
		json.NewDecoder(resp.Body).Decode(&es)
		resp.Body.Close()
		if len(es) != 2 || es[0].Path != "sub/x.bin" || es[0].LFS == nil || es[0].LastCommit == nil || es[1].Type != "directory" {
			t.Errorf("paths-info %s: %+v", c.ct, es)
		}
	}
}

func discard() *log.Logger { return log.New(io.Discard, "", 0) }
