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

	"neuralzip/store"
)

// HubMatrixMax is the most models whose shared-bytes matrix OpenHubStore
// computes (a store of more shows its models, families and chains without
// it: the matrix is models², the rest linear).
const HubMatrixMax = 300

// HubStore is a store opened by the Hub screen: its models can be restored
// to files or opened as models.
type HubStore struct {
	Loc string
	s   *store.Store
}

// OpenHubStore opens the store at loc (a directory made by nzip store init,
// or s3://bucket/prefix) read-only and reads what the Hub screen shows:
// every model's raw, own-archive and added bytes and bases (one index scan),
// the families the bases join, each model's deepest delta/cast chain, and,
// for stores of up to HubMatrixMax models, the shared and near bytes of
// every pair (from the units' records; no payload is read). ctx cancels
// between models.
func OpenHubStore(ctx context.Context, loc string) (*Hub, *HubStore, error) {
	if !store.IsStore(loc) {
		return nil, nil, fmt.Errorf("%s is not a store (a directory made by nzip store init, or s3://bucket/prefix)", loc)
	}
	s, err := store.Open(loc, store.Options{ReadOnly: true, LockWait: 2 * time.Second})
	if err != nil {
		return nil, nil, err
	}
	hs := &HubStore{Loc: loc, s: s}
	h, err := hs.read(ctx)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return h, hs, nil
}

// Close closes the store.
func (hs *HubStore) Close() error { return hs.s.Close() }

// hubUnit is one distinct unit of a model, as the matrix counts it.
type hubUnit struct {
	h    store.Hash
	meta store.UnitMeta
}

func (hs *HubStore) read(ctx context.Context) (*Hub, error) {
	st, err := hs.s.Stats()
	if err != nil {
		return nil, err
	}
	h := &Hub{Raw: st.Raw, Alone: st.Alone, Stored: st.Stored, Source: hs.Loc}
	idx := map[string]int{}
	n := len(st.Models)
	units := make([][]hubUnit, n)
	for i, ms := range st.Models {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := hs.s.Model(ms.Name)
		if err != nil {
			return nil, err
		}
		seen := map[store.Hash]bool{}
		var hashes []store.Hash
		for _, f := range m.Files {
			for _, u := range f.Units {
				if !seen[u] {
					seen[u] = true
					hashes = append(hashes, u)
				}
			}
		}
		metas, err := hs.s.UnitMetas(hashes)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", ms.Name, err)
		}
		hm := HubModel{Name: ms.Name, Raw: ms.Raw, Alone: ms.Alone, Added: ms.Added, Bases: ms.Bases}
		for k, u := range hashes {
			hm.TensorBytes += metas[k].RawLen
			hm.Depth = max(hm.Depth, metas[k].Depth)
			if n <= HubMatrixMax {
				units[i] = append(units[i], hubUnit{u, metas[k]})
			}
		}
		idx[ms.Name] = i
		h.Models = append(h.Models, hm)
	}
	if n <= HubMatrixMax {
		h.Shared, h.Near = square(n), square(n)
		owners := map[store.Hash][]int{}
		for i, us := range units {
			for _, u := range us {
				owners[u.h] = append(owners[u.h], i)
			}
		}
		for i, us := range units {
			for _, u := range us {
				shared := map[int]bool{}
				for _, j := range owners[u.h] {
					if j != i {
						h.Shared[i][j] += u.meta.RawLen
						shared[j] = true
					}
				}
				if u.meta.Kind != store.KindDelta && u.meta.Kind != store.KindCast {
					continue
				}
				for _, j := range owners[u.meta.Base] {
					if j != i && !shared[j] {
						h.Near[i][j] += u.meta.RawLen
						shared[j] = true // once per pair
					}
				}
			}
		}
	}
	h.Families = families(h.Models, idx)
	return h, nil
}

// Get restores model name's files into dir (made if missing), each written
// to a temporary file renamed into place once complete and checked; an
// existing file is an error unless force.
func (hs *HubStore) Get(name, dir string, force bool) error {
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
	m, err := hs.s.Model(name)
	if err != nil {
		return nil, err
	}
	fsys := &storeFS{files: map[string]*storeFileInfo{}}
	var first string
	var weights []string
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
		if first == "" {
			first = f.Name
		}
		if strings.HasSuffix(f.Name, ".index.json") {
			weights = append([]string{f.Name}, weights...)
		} else if f.Format != "" && f.Format != "unknown" {
			weights = append(weights, f.Name)
		}
	}
	if first == "" {
		return nil, fmt.Errorf("model %q holds no file", name)
	}
	open := first
	if len(weights) > 0 {
		open = weights[0]
	}
	mod, err := OpenFS(fsys, open, warn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	mod.Name, mod.Path = name, "store:"+hs.Loc+"#"+name
	return mod, nil
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
