package core

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"neuralzip/serve"
	"neuralzip/store"
)

// HubMatrixMax is the most models whose shared-bytes matrix OpenHubStore
// computes (a store of more shows its models, families and chains without
// it: the matrix is models², the rest linear).
const HubMatrixMax = serve.HubMatrixMax

// HubStore is a store opened by the Hub screen: its models can be restored
// to files or opened as models. A store read from an nzip serve URL
// (Served) reads them through the server's download API.
type HubStore struct {
	Loc string
	s   *store.Store
	web *servedStore // a store of an nzip serve URL (s is nil)
}

// Served reports whether the store is read from an nzip serve URL.
func (hs *HubStore) Served() bool { return hs.web != nil }

// OpenHubStore opens the store at loc (a directory made by nzip store init,
// s3://bucket/prefix, or the http(s) URL of an nzip serve of a store)
// read-only and reads what the Hub screen shows: every model's raw,
// own-archive and added bytes and bases (one index scan), the families the
// bases join, each model's deepest delta/cast chain, and, for stores of up
// to HubMatrixMax models, the shared and near bytes of every pair (from the
// units' records; no payload is read). ctx cancels between models.
func OpenHubStore(ctx context.Context, loc string) (*Hub, *HubStore, error) {
	return OpenHubStorePages(ctx, loc, nil)
}

// OpenHubStorePages is OpenHubStore that, for a URL, calls page after each
// page of models the server sends, with the models read so far (no
// matrix, no families yet) and the store's count of them, so that a
// screen lists a large store while the rest arrives.
func OpenHubStorePages(ctx context.Context, loc string, page func(h *Hub, total int)) (*Hub, *HubStore, error) {
	if IsURL(loc) {
		return openServedStore(ctx, loc, page)
	}
	if !store.IsStore(loc) {
		return nil, nil, fmt.Errorf("%s is not a store (a directory made by nzip store init, s3://bucket/prefix, or http://HOST:PORT of nzip serve STORE)", loc)
	}
	s, err := store.Open(loc, store.Options{ReadOnly: true, Release: true, LockWait: 2 * time.Second})
	if err != nil {
		return nil, nil, err
	}
	hs := &HubStore{Loc: loc, s: s}
	ix, err := serve.ReadHub(ctx, s)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	h := hubFromIndex(ix.Models, ix.Raw, ix.Alone, ix.Stored, ix.Matrix)
	h.Source = loc
	return h, hs, nil
}

// Close closes the store.
func (hs *HubStore) Close() error {
	if hs.s == nil {
		return nil
	}
	return hs.s.Close()
}

// hubFromIndex makes the Hub of a store's models (in store order): the
// matrix from their sparse rows when matrix, the families from their bases.
func hubFromIndex(models []serve.HubModel, raw, alone, stored int64, matrix bool) *Hub {
	h := &Hub{Raw: raw, Alone: alone, Stored: stored}
	n := len(models)
	idx := make(map[string]int, n)
	if matrix {
		h.Shared, h.Near = square(n), square(n)
	}
	for i, m := range models {
		h.Models = append(h.Models, HubModel{Name: m.Name, Raw: m.Raw, TensorBytes: m.TensorBytes,
			Alone: m.Alone, Added: m.Added, Bases: m.Bases, Depth: m.Depth})
		idx[m.Name] = i
		if matrix {
			for _, e := range m.Shared {
				h.Shared[i][e[0]] = e[1]
			}
			for _, e := range m.Near {
				h.Near[i][e[0]] = e[1]
			}
		}
	}
	h.Families = families(h.Models, idx)
	return h
}

// Get restores model name's files into dir (made if missing), each written
// to a temporary file renamed into place once complete and checked; an
// existing file is an error unless force.
func (hs *HubStore) Get(name, dir string, force bool) error {
	if hs.web != nil {
		return hs.web.get(name, dir, force)
	}
	m, err := hs.s.Model(name)
	if err != nil {
		return err
	}
	for i, f := range m.Files {
		dst := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !filepath.IsLocal(filepath.FromSlash(f.Name)) {
			return fmt.Errorf("model %q: file name %q is not a local path", name, f.Name)
		}
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
		err = hs.s.WriteFile(m, i, tmp)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), dst)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}

// Open opens stored model name as a model of the workbench: its files are
// read by ranges, each range decoding the units that cover it (checked
// against their addresses), so the screens read what they show.
func (hs *HubStore) Open(name string, warn func(string)) (*Model, error) {
	if hs.web != nil {
		mod, err := hs.web.open(name, warn)
		if err != nil {
			return nil, err
		}
		mod.Path = "store:" + hs.Loc + "#" + name
		return mod, nil
	}
	m, err := hs.s.Model(name)
	if err != nil {
		return nil, err
	}
	fsys := &storeFS{files: map[string]*storeFileInfo{}}
	var names, formats []string
	for _, f := range m.Files {
		lens, err := hs.s.UnitLens(f.Units)
		if err != nil {
			return nil, err
		}
		fi := &storeFileInfo{s: hs.s, name: f.Name, size: f.Size, units: f.Units, offs: make([]int64, len(lens)+1)}
		for i, n := range lens {
			fi.offs[i+1] = fi.offs[i] + n
		}
		if fi.offs[len(lens)] != f.Size {
			return nil, fmt.Errorf("model %q: file %q: units hold %d bytes, the manifest says %d", name, f.Name, fi.offs[len(lens)], f.Size)
		}
		fsys.files[f.Name] = fi
		names, formats = append(names, f.Name), append(formats, f.Format)
	}
	open := storedWeights(names, formats)
	if open == "" {
		return nil, fmt.Errorf("model %q holds no file", name)
	}
	mod, err := OpenFS(fsys, open, warn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	mod.Name, mod.Path = name, "store:"+hs.Loc+"#"+name
	return mod, nil
}

// storedWeights is the file a stored model opens from: a sharded
// safetensors index, else its first file of a known format, else its first
// file ("" when it has none).
func storedWeights(names, formats []string) string {
	open := ""
	for i, n := range names {
		switch {
		case strings.HasSuffix(n, ".index.json"):
			return n
		case open == "" && formats[i] != "" && formats[i] != "unknown":
			open = n
		}
	}
	if open == "" && len(names) > 0 {
		open = names[0]
	}
	return open
}

// storeFS is the files of one stored model as an fs.FS (flat names with
// slashes, as checkpoint.OpenFS resolves shards next to their index).
type storeFS struct {
	files map[string]*storeFileInfo
}

func (s *storeFS) Open(name string) (fs.File, error) {
	f, ok := s.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &storeFile{storeFileInfo: f}, nil
}

type storeFileInfo struct {
	s     *store.Store
	name  string
	size  int64
	units []store.Hash
	offs  []int64

	mu   sync.Mutex
	last int // the unit cached in buf, plus one (0: none)
	buf  []byte
}

type storeFile struct {
	*storeFileInfo
	off int64
}

func (f *storeFile) Stat() (fs.FileInfo, error) {
	return hubInfo{name: path.Base(f.name), size: f.size}, nil
}

func (f *storeFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *storeFile) Close() error { return nil }

// ReadAt decodes the units that cover [off, off+len(p)), keeping the last
// one (sequential small reads decode each unit once).
func (f *storeFileInfo) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset", f.name)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), f.size)
	u := sort.Search(len(f.units), func(i int) bool { return f.offs[i+1] > off })
	n := 0
	for ; u < len(f.units) && f.offs[u] < end; u++ {
		b, err := f.unit(u)
		if err != nil {
			return n, fmt.Errorf("%s: %w", f.name, err)
		}
		lo, hi := max(off, f.offs[u])-f.offs[u], min(end, f.offs[u+1])-f.offs[u]
		n += copy(p[n:], b[lo:hi])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *storeFileInfo) unit(u int) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == u+1 {
		return f.buf, nil
	}
	b, err := f.s.UnitBytes(f.units[u])
	if err != nil {
		return nil, err
	}
	f.buf, f.last = b, u+1
	return b, nil
}
