//go:build linux

package mount

import (
	"context"
	"log"
	"path"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"

	"neuralzip/serve"
)

// tree is the mounted file tree: the source's files, with the directories
// of their relative paths. A store's tree is made again from its files
// when they change (refresh): a file whose serve.File is the same keeps
// its inode, others come and go, and the kernel is told (entry
// invalidations) so that names it keeps are dropped at once.
type tree struct {
	src   *serve.Source
	log   *log.Logger
	root  *dirNode
	dirTO time.Duration // how long the kernel keeps directories' attributes
	next  atomic.Int64  // unix ns: no look at the source before

	mu    sync.Mutex
	gen   uint64                 // the source's Refresh number the tree was made at
	files map[string]*fs.Inode   // by path
	dirs  map[string]*fs.Inode   // by path ("" is the root)
	of    map[string]*serve.File // each file node's file
}

// entry is a name in a directory whose kernel entry is out of date.
type entry struct {
	dir  *fs.Inode
	name string
}

// build makes the tree at mount.
func (t *tree) build(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.files, t.dirs, t.of = map[string]*fs.Inode{}, map[string]*fs.Inode{"": &t.root.Inode}, map[string]*serve.File{}
	t.gen = t.src.Refresh(ctx)
	t.sync(ctx, t.src.Files())
	t.next.Store(time.Now().Add(lookEvery).UnixNano())
}

// refresh brings a store's tree up to date with its index, looking at it
// at most every lookEvery; the kernel is told of the names that changed
// from another goroutine (a notification waits for the directory's lock,
// which the request being answered may hold).
func (t *tree) refresh(ctx context.Context) {
	if !t.src.Live() {
		return
	}
	now, next := time.Now().UnixNano(), t.next.Load()
	if now < next || !t.next.CompareAndSwap(next, now+int64(lookEvery)) {
		return
	}
	gen := t.src.Refresh(ctx)
	t.mu.Lock()
	if gen == t.gen {
		t.mu.Unlock()
		return
	}
	t.gen = gen
	stale := t.sync(ctx, t.src.Files())
	t.mu.Unlock()
	if len(stale) > 0 {
		go func() {
			for _, e := range stale {
				e.dir.NotifyEntry(e.name) // ENOENT: a name the kernel does not hold
			}
		}()
	}
}

// sync makes the tree hold files (t.mu held) and returns the entries
// that changed: files gone or replaced, directories left empty, names
// added (the kernel may hold them as absent).
func (t *tree) sync(ctx context.Context, files []*serve.File) (stale []entry) {
	want := make(map[string]*serve.File, len(files))
	need := map[string]bool{"": true} // directories
	for _, f := range files {
		want[f.Name] = f
		for d := parentDir(f.Name); d != "" && !need[d]; d = parentDir(d) {
			need[d] = true
		}
	}
	drop := func(p string, n *fs.Inode) {
		markGone(n)
		dir := t.dirs[parentDir(p)]
		dir.RmChild(path.Base(p))
		n.ForgetPersistent() // freed once the kernel forgets it too
		stale = append(stale, entry{dir, path.Base(p)})
	}
	for p, n := range t.files {
		if want[p] != t.of[p] {
			drop(p, n)
			delete(t.files, p)
			delete(t.of, p)
		}
	}
	var gone []string
	for d := range t.dirs {
		if !need[d] || want[d] != nil {
			gone = append(gone, d)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return len(gone[i]) > len(gone[j]) }) // the deepest first
	for _, d := range gone {
		drop(d, t.dirs[d])
		delete(t.dirs, d)
	}
	mtime := t.src.ModTime()
	var dirOf func(p string) *fs.Inode // nil where a file holds the name
	dirOf = func(p string) *fs.Inode {
		if d := t.dirs[p]; d != nil || t.files[p] != nil {
			return d
		}
		parent := dirOf(parentDir(p))
		if parent == nil {
			return nil
		}
		d := parent.NewPersistentInode(ctx, &dirNode{t: t, mtime: mtime}, fs.StableAttr{Mode: syscall.S_IFDIR})
		parent.AddChild(path.Base(p), d, true)
		t.dirs[p] = d
		stale = append(stale, entry{parent, path.Base(p)})
		return d
	}
	for _, f := range files {
		if t.files[f.Name] != nil {
			continue
		}
		parent := dirOf(parentDir(f.Name))
		if parent == nil || t.dirs[f.Name] != nil {
			t.log.Printf("nzip mount: skipping %s: a file holds the name of its directory", f.Name)
			continue
		}
		n := parent.NewPersistentInode(ctx, &fileNode{f: f, mtime: mtime, log: t.log}, fs.StableAttr{Mode: syscall.S_IFREG})
		parent.AddChild(path.Base(f.Name), n, true)
		t.files[f.Name], t.of[f.Name] = n, f
		stale = append(stale, entry{parent, path.Base(f.Name)})
	}
	return stale
}

// A node taken out of the tree is marked gone: a lookup that found it
// just before may put it back under its name (go-fuse adds the node a
// Lookup returns to its parent), where lookups and listings then ignore
// it until a new file of that name replaces it.
func markGone(n *fs.Inode) {
	switch o := n.Operations().(type) {
	case *fileNode:
		o.gone.Store(true)
	case *dirNode:
		o.gone.Store(true)
	}
}

func isGone(n *fs.Inode) bool {
	switch o := n.Operations().(type) {
	case *fileNode:
		return o.gone.Load()
	case *dirNode:
		return o.gone.Load()
	}
	return false
}
