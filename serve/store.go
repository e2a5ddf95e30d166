package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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

// storeSrc is an opened store source (a directory or s3://). The store
// is opened with store.Options.Release: its index is held only while a
// read needs it, so nzip store add, rm, gc and repack run beside the
// server, and the listing is read again when the index changed (fresh).
type storeSrc struct {
	loc   string
	org   string                      // of one-part model names
	st    atomic.Pointer[store.Store] // the opened store (store()); another after a migration (reopen)
	srv   *Server
	close func() error // closes the store once, however many repositories share it

	openMu sync.Mutex // closed and the swap of st (reopen); never held while a store opens
	closed bool

	mu           sync.Mutex    // the fields below; never held with Server.mu
	version      string        // store.IndexVersion the listing was read at
	stamp        indexStamp    // the index file when it was (directory stores)
	checked      time.Time     // when the version was last read
	failed       string        // the error of the last reading of the version ("" if none), logged once
	refreshing   chan struct{} // while a reading runs (refresh); closed when it ends
	refreshStart time.Time
	models       map[string]*storeModel // by name
	repos        map[string]*repo       // this store's repositories by id
	places       map[string]hubPlace    // where each served model's files are (HubPath)
	hubR         *hubReader             // made on the first HubPath request after a change

	// a store opened whole (nzip mount: openStoreAll): every model's files
	// in one tree, read by readAll
	list   func(first bool) error // reads the listing: readStore, or readAll
	all    []*file                // sorted by name
	allGen uint64                 // one more each time readAll changes all
	allMod time.Time              // the index's modification time when read

	hubMu sync.Mutex // one hub reading at a time
}

// storeModel is one model of the listing: its manifest and files (nil
// files: a model that cannot be served).
type storeModel struct {
	m     *store.Manifest
	place hubPlace
	files []*file
}

// indexStamp is a directory store's index's modification time, and when
// it was looked at.
type indexStamp struct {
	mod  time.Time
	seen time.Time
}

// How often fresh looks again: a directory store's index file is checked
// (a stat) on every request, and its version read when the file changed
// or changed less than stampSettle before it was looked at (a commit in
// the same clock tick keeps the time); an s3:// store's version (a
// conditional GET of its root) at most every s3Poll. A request waits at
// most refreshWait for the listing to be read again (a writer holds the
// index while it adds: the request is then answered from the listing it
// had, and the reading finishes in the background).
const (
	stampSettle = 2 * time.Second
	refreshWait = 2 * time.Second
)

var s3Poll = 2 * time.Second // a variable for tests

// openStore opens a store read-only, released between reads (see
// storeSrc).
func (s *Server) openStore(loc string) (*storeSrc, error) {
	st, err := store.Open(loc, store.Options{ReadOnly: true, Release: true, Threads: s.threads()})
	if err != nil {
		return nil, fmt.Errorf("serve: %s: %w", loc, err)
	}
	src := &storeSrc{loc: loc, srv: s}
	src.st.Store(st)
	var once sync.Once
	var cerr error
	src.close = func() error {
		once.Do(func() {
			src.openMu.Lock()
			src.closed = true
			st := src.store()
			src.openMu.Unlock()
			s.cache.forget(src)
			cerr = st.Close()
		})
		return cerr
	}
	return src, nil
}

// store is the opened store.
func (src *storeSrc) store() *store.Store { return src.st.Load() }

// reopen opens the store again in place of old, which nzip store migrate
// switched to another format version under it (store.ErrMigrated): new
// requests read the new store; those under way on old may end with an
// error. A source closed meanwhile keeps old (closed) and closes the new
// one; Close never waits for the opening.
func (src *storeSrc) reopen(old *store.Store) error {
	st, err := store.Open(src.loc, store.Options{ReadOnly: true, Release: true, Threads: src.srv.threads()})
	if err != nil {
		return fmt.Errorf("opening the migrated store: %w", err)
	}
	src.openMu.Lock()
	if src.closed || src.store() != old {
		src.openMu.Unlock()
		st.Close()
		return nil
	}
	src.st.Store(st)
	src.openMu.Unlock()
	old.Close()
	src.srv.cache.forget(src) // the old store's units
	src.srv.logf("serve: %s: the store was migrated to format version %d: opened again", src.loc, st.Version())
	return nil
}

// modified is the store's modification time: its index's (a directory
// store), or the time it was read (s3://, whose index has no cheap one).
func (src *storeSrc) modified() time.Time {
	if t, ok := store.ModTime(src.loc); ok {
		return t
	}
	return time.Now()
}

// statIndex looks at a directory store's index (ok false for s3://).
func (src *storeSrc) statIndex() (indexStamp, bool) {
	t, ok := store.ModTime(src.loc)
	return indexStamp{mod: t, seen: time.Now()}, ok
}

// mayHaveChanged reports whether the index may have changed since the
// listing was read (src.mu held).
func (src *storeSrc) mayHaveChanged() bool {
	if store.IsS3(src.loc) {
		return time.Since(src.checked) >= s3Poll
	}
	st, ok := src.statIndex()
	if !ok || src.failed != "" { // the index cannot be looked at or read: try its version now and then
		return time.Since(src.checked) >= s3Poll
	}
	return !st.mod.Equal(src.stamp.mod) || src.stamp.seen.Sub(src.stamp.mod) < stampSettle
}

// fresh reads the store's listing again if the index changed, waiting
// for it until refreshWait after the reading started (or until ctx ends);
// a reading already under way is waited for, not doubled.
func (src *storeSrc) fresh(ctx context.Context) {
	src.mu.Lock()
	if src.refreshing == nil {
		if !src.mayHaveChanged() {
			src.mu.Unlock()
			return
		}
		src.refreshing, src.refreshStart = make(chan struct{}), time.Now()
		go src.refresh(src.refreshing)
	}
	done, wait := src.refreshing, refreshWait-time.Since(src.refreshStart)
	src.mu.Unlock()
	if wait <= 0 {
		return // a writer holds the index: the listing as it was
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// refresh reads the index's version and, if it changed, the listing; a
// store migrated meanwhile is opened again (reopen). An error reading the
// version is logged once (until it changes) and the version read again
// at most every s3Poll; the server keeps serving the listing it had.
func (src *storeSrc) refresh(done chan struct{}) {
	defer close(done)
	stamp, _ := src.statIndex() // before the version: a later commit changes it again
	st := src.store()
	v, err := st.IndexVersion()
	if errors.Is(err, store.ErrMigrated) {
		if err = src.reopen(st); err == nil {
			stamp, _ = src.statIndex()
			v, err = src.store().IndexVersion()
		}
	}
	src.mu.Lock()
	changed := err == nil && v != src.version
	logErr := err != nil && err.Error() != src.failed
	src.mu.Unlock()
	if logErr {
		src.srv.logf("serve: %s: %v", src.loc, err)
	} else if changed {
		if err := src.list(false); err != nil {
			src.srv.logf("serve: %s: %v (serving the models as they were)", src.loc, err)
		}
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	src.stamp = stamp
	if err == nil {
		src.version, src.failed = v, ""
		if changed {
			src.hubR = nil // sizes and the matrix change with any write
		}
	} else {
		src.failed = err.Error()
	}
	src.checked = time.Now()
	src.refreshing = nil
}

// freshStores brings every served store's listing up to date (fresh).
func (s *Server) freshStores(ctx context.Context) {
	s.mu.Lock()
	stores := append([]*storeSrc(nil), s.stores...)
	s.mu.Unlock()
	for _, src := range stores {
		src.fresh(ctx)
	}
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
// error. Models added to the store later are served from the next
// request on (fresh), and those removed leave.
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
	src.org = org
	src.list = func(first bool) error { return s.readStore(src, first) }
	stamp, _ := src.statIndex()
	v, err := src.store().IndexVersion()
	if err == nil {
		err = s.readStore(src, true)
	}
	if err != nil {
		src.close()
		return err
	}
	src.version, src.stamp, src.checked = v, stamp, time.Now()
	s.mu.Lock()
	s.stores = append(s.stores, src)
	s.mu.Unlock()
	return nil
}

// readStore reads a store's listing and puts its repositories in the
// server's place of its previous ones, reusing the files of models whose
// manifests did not change and the repositories all of whose models did
// not. At start (first) a model that cannot be listed, a clash and a
// repository named by another source are errors; later they are logged
// and that model or repository left out (a repository that clashes keeps
// what it served).
func (s *Server) readStore(src *storeSrc, first bool) error {
	loc := src.loc
	src.mu.Lock()
	oldModels, oldRepos := src.models, src.repos
	src.mu.Unlock()
	// one read of the index, whatever the number of models: the unit
	// lengths of new and changed models only
	listed, err := src.store().List(func(m *store.Manifest) bool {
		old := oldModels[m.Name]
		return old == nil || !sameManifest(old.m, m)
	})
	if err != nil {
		return fmt.Errorf("serve: %s: %w", loc, err)
	}
	models := map[string]*storeModel{}
	groups := map[string][]*storeModel{}
	var ids []string
	for _, l := range listed {
		name := l.Name
		sm := oldModels[name]
		if l.Lens != nil || l.Err != nil {
			if sm, err = src.listModel(l); err != nil {
				if first {
					return err
				}
				s.logf("%v (not served)", err)
				continue
			}
		}
		models[name] = sm
		if sm.files == nil {
			continue
		}
		id := sm.place.id
		if groups[id] == nil {
			ids = append(ids, id)
		}
		groups[id] = append(groups[id], sm)
	}
	mod := src.modified()
	repos := map[string]*repo{}
	var order []*repo
	for _, id := range ids {
		g := groups[id]
		if old := oldRepos[id]; old != nil && slices.Equal(old.models, g) {
			repos[id] = old
			order = append(order, old)
			continue
		}
		var files []*file
		for _, sm := range g {
			files = append(files, sm.files...)
		}
		if name := clash(files); name != "" {
			err := fmt.Errorf("serve: %s: two models give %s the path %q", loc, id, name)
			if first {
				return err
			}
			s.logf("%v", err)
			if old := oldRepos[id]; old != nil {
				repos[id] = old
				order = append(order, old)
			}
			continue
		}
		r := newRepo(id, loc, "store", files, mod, src.close)
		r.store, r.models = src, g
		r.commit = commitID(files) // the sums are the manifests'
		close(r.ready)
		repos[id] = r
		order = append(order, r)
	}
	if first && len(listed) > 0 && len(order) == 0 {
		return fmt.Errorf("serve: %s: the store holds no model that can be served", loc)
	}
	if first && len(listed) == 0 {
		s.logf("serve: %s: the store holds no model yet (models added later are served)", loc)
	}
	places := map[string]hubPlace{}
	for name, sm := range models {
		if sm.files != nil {
			places[name] = sm.place
		}
	}

	s.mu.Lock()
	for i := 0; i < len(order); i++ {
		r := order[i]
		if other := s.repos[r.id]; other != nil && other.store != src {
			if first {
				s.mu.Unlock()
				return fmt.Errorf("serve: two sources named %s", r.id)
			}
			s.logf("serve: %s: model repository %s is another source's: not served", loc, r.id)
			delete(repos, r.id)
			order = slices.Delete(order, i, i+1)
			i--
		}
	}
	// this store's repositories take the place of its previous ones
	var all []*repo
	placed := false
	for _, r := range s.order {
		if r.store != src {
			all = append(all, r)
			continue
		}
		delete(s.repos, r.id)
		if !placed {
			all = append(all, order...)
			placed = true
		}
	}
	if !placed {
		all = append(all, order...)
	}
	for _, r := range order {
		s.repos[r.id] = r
	}
	s.order = all
	s.mu.Unlock()

	src.mu.Lock()
	src.models, src.repos, src.places = models, repos, places
	src.mu.Unlock()
	if !first {
		logChanges(s, loc, oldRepos, repos)
	}
	return nil
}

// logChanges logs the repositories a store's new listing adds, changes
// and drops.
func logChanges(s *Server, loc string, old, now map[string]*repo) {
	var added, changed, gone []string
	for id, r := range now {
		switch o := old[id]; {
		case o == nil:
			added = append(added, id)
		case o != r:
			changed = append(changed, id)
		}
	}
	for id := range old {
		if now[id] == nil {
			gone = append(gone, id)
		}
	}
	if len(added)+len(changed)+len(gone) == 0 {
		return
	}
	slices.Sort(added)
	slices.Sort(changed)
	slices.Sort(gone)
	s.logf("serve: %s changed: %d repositories; added %v, changed %v, removed %v", loc, len(now), added, changed, gone)
}

// listModel lists a model's files under the repository its name gives
// (files nil: a name that cannot be served, logged).
func (src *storeSrc) listModel(l store.Listed) (*storeModel, error) {
	m := l.Manifest
	var fnames []string
	for _, f := range m.Files {
		fnames = append(fnames, f.Name)
	}
	id, dir, ok := StoreRepo(m.Name, fnames, src.org)
	if !ok {
		src.srv.logf("serve: %s: skipping model %q: a name that cannot be served as ORG/NAME[/DIR]", src.loc, m.Name)
		return &storeModel{m: m}, nil
	}
	fs, err := src.modelFiles(l, dir)
	if err != nil {
		return nil, err
	}
	return &storeModel{m: m, place: hubPlace{id: id, dir: dir}, files: fs}, nil
}

// sameManifest reports whether two manifests of a model list the same
// files (names, sizes, sums and units): its files need not be listed again.
func sameManifest(a, b *store.Manifest) bool {
	if a.Name != b.Name || len(a.Files) != len(b.Files) {
		return false
	}
	for i := range a.Files {
		fa, fb := &a.Files[i], &b.Files[i]
		if fa.Name != fb.Name || fa.Size != fb.Size || fa.SHA256 != fb.SHA256 || !slices.Equal(fa.Units, fb.Units) {
			return false
		}
	}
	return true
}

// modelFiles returns the files of a stored model, named under dir (l's
// Lens read, or Err set).
func (src *storeSrc) modelFiles(l store.Listed, dir string) ([]*file, error) {
	m, model := l.Manifest, l.Name
	if l.Err != nil {
		return nil, fmt.Errorf("serve: %s: model %q: %w", src.loc, model, l.Err)
	}
	var out []*file
	for fi, fe := range m.Files {
		name := fe.Name
		if dir != "" {
			name = dir + "/" + name
		}
		if !validName(name) {
			return nil, fmt.Errorf("serve: %s: model %q: file name %q cannot be served", src.loc, model, fe.Name)
		}
		lens := l.Lens[fi]
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
		b, err := f.src.store().UnitBytes(f.units[bi]) // checked against its address
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
		return f.src.store().WriteFile(f.m, f.fi, ctxWriter{ctx, w})
	}
	return writeBlocks(ctx, f, w, off, n)
}

// sha256 is the SHA-256 the store recorded when the file was added (every
// unit read is checked against its own).
func (f *storeFile) sha256(context.Context) ([32]byte, error) { return f.m.Files[f.fi].SHA256, nil }

// check reports ErrChanged when the model was removed from the store or
// now holds another file under this name.
func (f *storeFile) check() error {
	m, err := f.src.store().Model(f.model)
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
