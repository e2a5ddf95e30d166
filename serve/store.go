package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"neuralzip/store"
)

// DefaultStoreOrg is the organisation of a store's models whose names have
// one part (a model "tiny" is served as "local/tiny"), unless the command
// names another (ORG=STORE).
const DefaultStoreOrg = "local"

// storeSrc is an opened store source (a directory or s3://).
type storeSrc struct {
	loc   string
	s     *store.Store
	srv   *Server
	close func() error // closes the store once, however many repositories share it

	places map[string]hubPlace // where each served model's files are (HubPath)
	hubMu  sync.Mutex
	hubR   *hubReader // made on the first HubPath request
}

// openStore opens a store read-only (shared: other readers run beside the
// server; a writer, such as nzip store add, waits until the server stops).
func (s *Server) openStore(loc string) (*storeSrc, error) {
	st, err := store.Open(loc, store.Options{ReadOnly: true, Threads: s.threads()})
	if err != nil {
		return nil, fmt.Errorf("serve: %s: %w", loc, err)
	}
	src := &storeSrc{loc: loc, s: st, srv: s, places: map[string]hubPlace{}}
	var once sync.Once
	var cerr error
	src.close = func() error {
		once.Do(func() {
			s.cache.forget(src)
			cerr = st.Close()
		})
		return cerr
	}
	return src, nil
}

// modified is the store's modification time: its index's (a directory
// store), or the time it was opened (s3://, whose index has no cheap one).
func (src *storeSrc) modified() time.Time {
	if t, ok := store.ModTime(src.loc); ok {
		return t
	}
	return time.Now()
}

// StoreRepo splits a stored model's name into the repository that serves
// it and the directory its files are under, given the names of its files:
// "ORG/NAME" is the repository ORG/NAME; "ORG/NAME/DIR…" puts the files
// under DIR… in ORG/NAME (so that several stored models, e.g. one per
// dtype, make one repository), except that a model of one file named as the
// name's last part (nzip store add names a model by the file's path:
// "org/llama/model.safetensors") puts it at that path in ORG/NAME; a name
// of one part is org/NAME. Empty, "." and ".." parts are dropped first (a
// model named by the path given to add: "/data/org/llama/model.safetensors",
// "../llama.safetensors"). ok is false for a name that cannot be served (a
// part a repository name or a path cannot hold).
func StoreRepo(model string, files []string, org string) (id, dir string, ok bool) {
	var parts []string
	for _, p := range strings.Split(model, "/") {
		if p != "" && p != "." && p != ".." { // a path given to add: "/data/org/x", "../x"
			parts = append(parts, p)
		}
	}
	switch {
	case len(parts) == 0:
		return "", "", false
	case len(parts) == 1:
		if !ValidRepoPart(parts[0]) {
			return "", "", false
		}
		return org + "/" + parts[0], "", true
	case !ValidRepoPart(parts[0]) || !ValidRepoPart(parts[1]):
		return "", "", false
	}
	rest := parts[2:]
	if len(rest) > 0 && len(files) == 1 && files[0] == rest[len(rest)-1] {
		rest = rest[:len(rest)-1]
	}
	dir = strings.Join(rest, "/")
	if dir != "" && !validName(dir) {
		return "", "", false
	}
	return parts[0] + "/" + parts[1], dir, true
}

// addStore adds every model of a store, each under the repository its name
// gives (StoreRepo); org is the organisation of one-part names ("" means
// DefaultStoreOrg). Models whose names cannot be served are skipped with a
// log line; two models that would give a repository the same file are an
// error.
func (s *Server) addStore(org, loc string) error {
	if org == "" {
		org = DefaultStoreOrg
	}
	if !ValidRepoPart(org) {
		return fmt.Errorf("serve: %q is not an organisation name", org)
	}
	src, err := s.openStore(loc)
	if err != nil {
		return err
	}
	names, err := src.s.Names()
	if err != nil {
		src.close()
		return fmt.Errorf("serve: %s: %w", loc, err)
	}
	type group struct {
		id    string
		files []*file
	}
	groups := map[string]*group{}
	var ids []string
	for _, name := range names {
		m, err := src.s.Model(name)
		if err != nil {
			src.close()
			return fmt.Errorf("serve: %s: %w", loc, err)
		}
		var fnames []string
		for _, f := range m.Files {
			fnames = append(fnames, f.Name)
		}
		id, dir, ok := StoreRepo(name, fnames, org)
		if !ok {
			s.logf("serve: %s: skipping model %q: a name that cannot be served as ORG/NAME[/DIR]", loc, name)
			continue
		}
		src.places[name] = hubPlace{id: id, dir: dir}
		fs, err := src.modelFiles(m, dir)
		if err != nil {
			src.close()
			return err
		}
		g := groups[id]
		if g == nil {
			g = &group{id: id}
			groups[id] = g
			ids = append(ids, id)
		}
		g.files = append(g.files, fs...)
	}
	if len(ids) == 0 {
		src.close()
		return fmt.Errorf("serve: %s: the store holds no model that can be served", loc)
	}
	mod := src.modified()
	var repos []*repo
	for _, id := range ids {
		g := groups[id]
		if name := clash(g.files); name != "" {
			src.close()
			return fmt.Errorf("serve: %s: two models give %s the path %q", loc, id, name)
		}
		repos = append(repos, newRepo(id, loc, "store", g.files, mod, src.close))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range repos {
		if s.repos[r.id] != nil {
			src.close()
			return fmt.Errorf("serve: two sources named %s", r.id)
		}
	}
	for _, r := range repos {
		s.repos[r.id] = r
		s.order = append(s.order, r)
	}
	s.stores = append(s.stores, src)
	return nil
}

// modelFiles returns the files of a stored model, named under dir.
func (src *storeSrc) modelFiles(m *store.Manifest, dir string) ([]*file, error) {
	model := m.Name
	var out []*file
	for fi, fe := range m.Files {
		name := fe.Name
		if dir != "" {
			name = dir + "/" + name
		}
		if !validName(name) {
			return nil, fmt.Errorf("serve: %s: model %q: file name %q cannot be served", src.loc, model, fe.Name)
		}
		lens, err := src.s.UnitLens(fe.Units)
		if err != nil {
			return nil, fmt.Errorf("serve: %s: model %q: file %q: %w", src.loc, model, fe.Name, err)
		}
		sf := &storeFile{src: src, model: model, m: m, fi: fi, units: fe.Units, offs: make([]int64, len(lens)+1)}
		for i, n := range lens {
			sf.offs[i+1] = sf.offs[i] + n
		}
		if sf.offs[len(lens)] != fe.Size {
			return nil, fmt.Errorf("serve: %s: model %q: file %q: units hold %d bytes, the manifest says %d",
				src.loc, model, fe.Name, sf.offs[len(lens)], fe.Size)
		}
		out = append(out, &file{name: name, size: fe.Size, c: sf, sum: fe.SHA256})
	}
	return out, nil
}

// storeFile is one file of a stored model: its units in order, each
// decoded with its base chain and checked against its SHA-256 address.
type storeFile struct {
	src   *storeSrc
	model string
	m     *store.Manifest
	fi    int
	units []store.Hash
	offs  []int64 // offs[i] is unit i's offset in the file; the last is its size
	last  atomic.Int64
}

func (f *storeFile) numBlocks() int                  { return len(f.units) }
func (f *storeFile) blockSpan(bi int) (off, n int64) { return f.offs[bi], f.offs[bi+1] - f.offs[bi] }
func (f *storeFile) blockKey(bi int) blockKey        { return blockKey{src: f.src, h: f.units[bi]} }
func (f *storeFile) srv() *Server                    { return f.src.srv }
func (f *storeFile) lastRead() *atomic.Int64         { return &f.last }

func (f *storeFile) decoder(bi int) func([]byte) error {
	return func(dst []byte) error {
		b, err := f.src.s.UnitBytes(f.units[bi]) // checked against its address
		if err != nil {
			return fmt.Errorf("model %q: %w", f.model, err)
		}
		if len(b) != len(dst) {
			return fmt.Errorf("model %q: unit %s: %d bytes, the index says %d", f.model, f.units[bi], len(b), len(dst))
		}
		copy(dst, b)
		return nil
	}
}

func (f *storeFile) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	return readBlocks(ctx, f, f.offs[len(f.offs)-1], p, off)
}

func (f *storeFile) write(ctx context.Context, w io.Writer, off, n int64, whole bool) error {
	if whole {
		// the store's own get: units decoded on its threads, each checked
		return f.src.s.WriteFile(f.m, f.fi, ctxWriter{ctx, w})
	}
	return writeBlocks(ctx, f, w, off, n)
}

// sha256 is the SHA-256 the store recorded when the file was added (every
// unit read is checked against its own).
func (f *storeFile) sha256(context.Context) ([32]byte, error) { return f.m.Files[f.fi].SHA256, nil }

// check reports ErrChanged when the model was removed from the store or
// now holds another file under this name.
func (f *storeFile) check() error {
	m, err := f.src.s.Model(f.model)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: model %q is no longer in %s", ErrChanged, f.model, f.src.loc)
		}
		return err
	}
	if f.fi >= len(m.Files) || m.Files[f.fi].SHA256 != f.m.Files[f.fi].SHA256 {
		return fmt.Errorf("%w: model %q in %s", ErrChanged, f.model, f.src.loc)
	}
	return nil
}

// ctxWriter fails writes once ctx is done, so that a whole-file download
// whose client went away stops decoding.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// openStoreAll opens a store as one repository (nzip mount): every model's
// files under the model's name, so a model "org/name" is the directory
// org/name. Models whose names cannot be paths are skipped with a log line.
func (s *Server) openStoreAll(loc string) (*repo, error) {
	src, err := s.openStore(loc)
	if err != nil {
		return nil, err
	}
	names, err := src.s.Names()
	if err != nil {
		src.close()
		return nil, fmt.Errorf("serve: %s: %w", loc, err)
	}
	var files []*file
	for _, name := range names {
		if !validName(name) {
			s.logf("serve: %s: skipping model %q: a name that cannot be a path", loc, name)
			continue
		}
		m, err := src.s.Model(name)
		if err != nil {
			src.close()
			return nil, fmt.Errorf("serve: %s: %w", loc, err)
		}
		// a model of one file named by its path is that file (nzip
		// store add's naming); others are a directory of their files
		dir := name
		if len(m.Files) == 1 && (m.Files[0].Name == name || strings.HasSuffix(name, "/"+m.Files[0].Name)) {
			dir = parentDir(name)
		}
		fs, err := src.modelFiles(m, dir)
		if err != nil {
			src.close()
			return nil, err
		}
		files = append(files, fs...)
	}
	if name := clash(files); name != "" {
		src.close()
		return nil, fmt.Errorf("serve: %s: two models give the path %q", loc, name)
	}
	return newRepo("", loc, "store", files, src.modified(), src.close), nil
}

// clash sorts files by name and returns a name two of them hold, or that
// is one's file name and another's directory ("" if none).
func clash(files []*file) string {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	dirs := map[string]bool{}
	for i, f := range files {
		if i > 0 && files[i-1].name == f.name {
			return f.name
		}
		for d := parentDir(f.name); d != ""; d = parentDir(d) {
			dirs[d] = true
		}
	}
	for _, f := range files {
		if dirs[f.name] {
			return f.name
		}
	}
	return ""
}
