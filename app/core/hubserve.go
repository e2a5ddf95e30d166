package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"neuralzip/serve"
)

// HubPageSize is the models asked for in one page of a served store (a
// variable so that tests read small stores in several pages).
var HubPageSize = serve.HubPageDefault

// hubPageBytes bounds one page's answer.
const hubPageBytes = 64 << 20

// servedStore is a store read from an nzip serve URL: its models' files are
// read and restored through the server's download API.
type servedStore struct {
	base   string // scheme://host
	models map[string]serve.HubModel
	client *http.Client
}

// openServedStore reads the store an nzip serve URL serves, page by page
// (serve.HubPath): u is http(s)://HOST[:PORT], optionally with the
// endpoint's path, and ?store=K to pick the server's K-th store.
func openServedStore(ctx context.Context, u string, page func(*Hub, int)) (*Hub, *HubStore, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, nil, err
	}
	if pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
		return nil, nil, fmt.Errorf("%s: not an http(s) URL", u)
	}
	if err := checkNoCredentials(pu, u); err != nil {
		return nil, nil, err
	}
	if p := strings.TrimSuffix(pu.Path, "/"); p != "" && p != serve.HubPath {
		return nil, nil, fmt.Errorf("%s: expected the address of nzip serve STORE, http://HOST:PORT", u)
	}
	k := 0
	if v := pu.Query().Get("store"); v != "" {
		if k, err = strconv.Atoi(v); err != nil || k < 0 {
			return nil, nil, fmt.Errorf("%s: store=%q is not a store's number", u, v)
		}
	}
	hs := &servedStore{base: pu.Scheme + "://" + pu.Host, models: map[string]serve.HubModel{},
		client: newClient(5 * time.Minute)}
	var first *serve.HubPage
	var models []serve.HubModel
	for from := 0; ; {
		p, err := hs.page(ctx, k, from)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", u, err)
		}
		if first == nil {
			first = p
		} else if p.Total != first.Total || p.Matrix != first.Matrix || p.Store != first.Store {
			return nil, nil, fmt.Errorf("%s: the store changed while it was read (%d models, then %d)", u, first.Total, p.Total)
		}
		if p.Store != k || p.From != from {
			return nil, nil, fmt.Errorf("%s: asked for store %d from model %d, got store %d from %d", u, k, from, p.Store, p.From)
		}
		for _, m := range p.Models {
			if _, dup := hs.models[m.Name]; dup {
				return nil, nil, fmt.Errorf("%s: model %q listed twice", u, m.Name)
			}
			hs.models[m.Name] = m
		}
		models = append(models, p.Models...)
		if p.Next == 0 {
			break
		}
		if page != nil {
			part := &Hub{Raw: p.Raw, Alone: p.Alone, Stored: p.Stored, Source: u}
			for _, m := range models {
				part.Models = append(part.Models, HubModel{Name: m.Name, Raw: m.Raw, TensorBytes: m.TensorBytes,
					Alone: m.Alone, Added: m.Added, Bases: m.Bases, Depth: m.Depth})
			}
			page(part, p.Total)
		}
		from = p.Next
	}
	h := hubFromIndex(models, first.Raw, first.Alone, first.Stored, first.Matrix)
	h.Source = u
	return h, &HubStore{Loc: u, web: hs}, nil
}

// page reads one page of store k from model from.
func (hs *servedStore) page(ctx context.Context, k, from int) (*serve.HubPage, error) {
	q := url.Values{}
	q.Set("store", strconv.Itoa(k))
	q.Set("from", strconv.Itoa(from))
	q.Set("limit", strconv.Itoa(HubPageSize))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.base+serve.HubPath+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := do(hs.client, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, hubPageBytes+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg := resp.Header.Get("X-Error-Message")
		switch {
		case resp.Header.Get("X-Error-Code") == "NoStore":
			return nil, errors.New("this server serves no store (only archives or directories): the Hub screen opens nzip serve STORE")
		case msg != "":
			return nil, fmt.Errorf("%s: %s", resp.Status, msg)
		}
		return nil, fmt.Errorf("not an nzip serve of a store (GET %s: %s)", serve.HubPath, resp.Status)
	}
	if len(b) > hubPageBytes {
		return nil, fmt.Errorf("a page of more than %d bytes", hubPageBytes)
	}
	return serve.ParseHubPage(b)
}

// served returns model name and checks that the server serves its files.
func (hs *servedStore) served(name string) (serve.HubModel, error) {
	m, ok := hs.models[name]
	if !ok {
		return m, fmt.Errorf("model %q is not in the store", name)
	}
	if m.Repo == "" {
		return m, fmt.Errorf("model %q: the server does not serve it (a name that cannot be a repository ORG/NAME)", name)
	}
	for _, f := range m.Files {
		if f.Path == "" {
			return m, fmt.Errorf("model %q: file %q is not served", name, f.Name)
		}
	}
	return m, nil
}

// fileURL is the download URL of a served file.
func (hs *servedStore) fileURL(repo, p string) string {
	esc := strings.Split(p, "/")
	for i, s := range esc {
		esc[i] = url.PathEscape(s)
	}
	return hs.base + "/" + repo + "/resolve/main/" + strings.Join(esc, "/")
}

// get restores model name's files into dir from the server: each written
// to a temporary file, renamed into place once complete and its size and
// SHA-256 checked against the store's.
func (hs *servedStore) get(name, dir string, force bool) error {
	m, err := hs.served(name)
	if err != nil {
		return err
	}
	for _, f := range m.Files {
		if !filepath.IsLocal(filepath.FromSlash(f.Name)) {
			return fmt.Errorf("model %q: file name %q is not a local path", name, f.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Name))
		if _, err := os.Stat(dst); err == nil && !force {
			return fmt.Errorf("%s exists", dst)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
		if err != nil {
			return err
		}
		err = hs.download(m.Repo, f, tmp)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), dst)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("model %q: %w", name, err)
		}
	}
	return nil
}

// download writes file f of repo to w, checking its size and SHA-256.
func (hs *servedStore) download(repo string, f serve.HubFile, w io.Writer) error {
	req, err := http.NewRequest(http.MethodGet, hs.fileURL(repo, f.Path), nil)
	if err != nil {
		return err
	}
	client := *hs.client
	client.Timeout = 0 // a large file takes long; the server bounds each write
	resp, err := do(&client, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", f.Name, resp.Status, resp.Header.Get("X-Error-Message"))
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, sum), io.LimitReader(resp.Body, f.Size+1))
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	if n != f.Size {
		return fmt.Errorf("%s: the server sent %d bytes, the store holds %d", f.Name, n, f.Size)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != f.SHA256 {
		return fmt.Errorf("%s: SHA-256 %s, the store recorded %s", f.Name, got, f.SHA256)
	}
	return nil
}

// HubMemMax bounds a file that HubStore.ReadFiles holds in memory.
const HubMemMax = 1 << 30

// ReadFiles reads the files of model name of a served store into memory
// through the server's download API, each checked against its size and
// SHA-256, and calls fn with each file's name in the model and its bytes
// (the browser's get: it saves them as downloads). A file larger than
// HubMemMax is an error, as is a store that is not served.
func (hs *HubStore) ReadFiles(name string, fn func(file string, data []byte) error) error {
	if hs.web == nil {
		return fmt.Errorf("%s: not a served store", hs.Loc)
	}
	m, err := hs.web.served(name)
	if err != nil {
		return err
	}
	for _, f := range m.Files {
		if f.Size > HubMemMax {
			return fmt.Errorf("model %q: %s holds %s, more than the %s a page keeps in memory: get it with nzip store get or a hub client", name, f.Name, HumanBytes(f.Size), HumanBytes(HubMemMax))
		}
	}
	for _, f := range m.Files {
		var buf bytes.Buffer
		buf.Grow(int(f.Size))
		if err := hs.web.download(m.Repo, f, &buf); err != nil {
			return fmt.Errorf("model %q: %w", name, err)
		}
		if err := fn(f.Name, buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// open opens model name in the workbench: its files read by HTTP ranges
// from the server, as the screens need them.
func (hs *servedStore) open(name string, warn func(string)) (*Model, error) {
	m, err := hs.served(name)
	if err != nil {
		return nil, err
	}
	files := map[string]int64{}
	var paths, formats []string
	for _, f := range m.Files {
		files[f.Path] = f.Size
		paths, formats = append(paths, f.Path), append(formats, f.Format)
	}
	open := storedWeights(paths, formats)
	if open == "" {
		return nil, fmt.Errorf("model %q holds no file", name)
	}
	fsys := newHubFS(context.Background(), hs.base, m.Repo, "main", files)
	mod, err := OpenFS(fsys, open, warn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	mod.Name = name
	return mod, nil
}
