//go:build linux

package mount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"neuralzip/serve"
)

// Options configures Mount; the zero value works.
type Options struct {
	// AllowOther lets other users than the one mounting read the files
	// (FUSE's allow_other; without root it needs user_allow_other in
	// /etc/fuse.conf).
	AllowOther bool
	// Log receives read errors; nil means log.Default().
	Log *log.Logger
	// Debug logs every FUSE request to Log.
	Debug bool
}

// Mount is a mounted source.
type Mount struct {
	dir string
	srv *fuse.Server
}

// timeout is how long the kernel may keep names and attributes of an
// archive's or a directory's files, which never change while they are
// mounted. A store's tree follows its index: the kernel keeps its names
// and its directories' attributes liveTimeout, and each lookup or listing
// that reaches nzip looks at the index (at most every lookEvery: a stat,
// and when it changed the models read again; see serve.Source.Refresh).
// A file's attributes and content never change (a model replaced under
// the same name is a new inode).
const (
	timeout     = time.Hour
	liveTimeout = time.Second
	lookEvery   = 200 * time.Millisecond
)

// New mounts src's files read-only at dir (an existing directory) and
// serves them until Unmount. Call Available first for a clear message
// where FUSE cannot be used. A store's tree follows its index: models
// added to it appear, removed ones leave (a file already open keeps
// reading while its units are in the store, then fails with EIO).
func New(src *serve.Source, dir string, opt Options) (*Mount, error) {
	if opt.Log == nil {
		opt.Log = log.Default()
	}
	t := &tree{src: src, log: opt.Log, dirTO: timeout}
	to := timeout
	if src.Live() {
		to, t.dirTO = liveTimeout, liveTimeout
	}
	t.root = &dirNode{t: t, mtime: src.ModTime()}
	fo := &fs.Options{
		EntryTimeout:    &to,
		AttrTimeout:     &to,
		NegativeTimeout: &to,
		UID:             uint32(os.Getuid()),
		GID:             uint32(os.Getgid()),
		Logger:          opt.Log,
		OnAdd:           func(ctx context.Context) { t.build(ctx) },
		MountOptions: fuse.MountOptions{
			AllowOther:   opt.AllowOther,
			FsName:       "nzip:" + src.Path(),
			Name:         "nzip",
			Options:      []string{"ro", "default_permissions"},
			MaxWrite:     1 << 20, // reads of up to 1 MiB (the kernel's max_pages)
			MaxReadAhead: 1 << 20,
			DirectMount:  os.Geteuid() == 0, // root: no fusermount3 needed
			Debug:        opt.Debug,
			Logger:       opt.Log,
		},
	}
	srv, err := fs.Mount(dir, t.root, fo)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		return nil, fmt.Errorf("mount: %s: %w (FUSE needs root, or fusermount3 and access to /dev/fuse; a container needs --device /dev/fuse --cap-add SYS_ADMIN)", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("mount: %s: %w", dir, err)
	}
	return &Mount{dir: dir, srv: srv}, nil
}

// Wait waits until the file system is unmounted (by Unmount or by
// fusermount3 -u / umount).
func (m *Mount) Wait() { m.srv.Wait() }

// Unmount unmounts the file system. If it is busy (a file open or mapped),
// it is detached lazily: it disappears from the mount table at once and
// the files open on it fail from then on, so no stale mount is left.
func (m *Mount) Unmount() error {
	err := m.srv.Unmount()
	if err == nil {
		return nil
	}
	if os.Geteuid() == 0 {
		if derr := syscall.Unmount(m.dir, syscall.MNT_DETACH); derr == nil {
			return nil
		}
	}
	if out, ferr := exec.Command("fusermount3", "-u", "-z", m.dir).CombinedOutput(); ferr != nil {
		return fmt.Errorf("mount: unmounting %s: %v; fusermount3 -u -z: %v %s", m.dir, err, ferr, strings.TrimSpace(string(out)))
	}
	return nil
}

// Available reports why FUSE cannot be used here, or nil when it can: it
// needs /dev/fuse and either root or the fusermount3 helper.
func Available() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("mount: /dev/fuse is missing: FUSE needs the fuse kernel module (modprobe fuse), and a container needs --device /dev/fuse")
	case err != nil && os.Geteuid() == 0:
		return fmt.Errorf("mount: FUSE is not usable: %v", err)
	case err == nil:
		f.Close()
	}
	if os.Geteuid() == 0 {
		return nil
	}
	for _, name := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(name); err == nil {
			return nil
		}
	}
	return errors.New("mount: FUSE needs root or the fusermount3 helper (Debian/Ubuntu: apt-get install fuse3)")
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// dirNode is a directory: mode 0555. Its lookups and listings first
// bring a store's tree up to date (tree.refresh).
type dirNode struct {
	fs.Inode
	t     *tree
	mtime time.Time
	gone  atomic.Bool // taken out of the tree (tree.sync)
}

var (
	_ = (fs.NodeGetattrer)((*dirNode)(nil))
	_ = (fs.NodeLookuper)((*dirNode)(nil))
	_ = (fs.NodeReaddirer)((*dirNode)(nil))
)

func (d *dirNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o555
	out.SetTimes(nil, &d.mtime, &d.mtime)
	out.SetTimeout(d.t.dirTO)
	return 0
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.t.refresh(ctx)
	ch := d.GetChild(name)
	if ch == nil || isGone(ch) {
		return nil, syscall.ENOENT
	}
	if ga, ok := ch.Operations().(fs.NodeGetattrer); ok {
		var a fuse.AttrOut
		if errno := ga.Getattr(ctx, nil, &a); errno == 0 {
			out.Attr = a.Attr
		}
	}
	return ch, 0
}

func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	d.t.refresh(ctx)
	var es []fuse.DirEntry
	for name, ch := range d.Children() {
		if isGone(ch) {
			continue
		}
		es = append(es, fuse.DirEntry{Mode: ch.Mode(), Name: name, Ino: ch.StableAttr().Ino})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return fs.NewListDirStream(es), 0
}

// fileNode is a file of the source: mode 0444, read by ranges.
type fileNode struct {
	fs.Inode
	f     *serve.File
	mtime time.Time
	log   *log.Logger
	gone  atomic.Bool // taken out of the tree (tree.sync)
}

var (
	_ = (fs.NodeGetattrer)((*fileNode)(nil))
	_ = (fs.NodeOpener)((*fileNode)(nil))
	_ = (fs.NodeReader)((*fileNode)(nil))
)

func (n *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(n.f.Size)
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 1 << 20
	out.Nlink = 1
	out.SetTimes(nil, &n.mtime, &n.mtime)
	out.SetTimeout(timeout)
	return 0
}

// Open refuses writing and lets the kernel keep the file's pages between
// opens (FOPEN_KEEP_CACHE: the content never changes while mounted).
func (n *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	if err := n.f.Check(); err != nil {
		n.log.Printf("nzip mount: %s: %v", n.f.Name, err)
		return nil, 0, syscall.EIO
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

// Read decodes the blocks the request touches; an error (a CRC failure, a
// source that changed) is logged and gives EIO.
func (n *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	k, err := n.f.ReadAt(ctx, dest, off)
	if err != nil && err != io.EOF {
		if ctx.Err() != nil {
			return nil, syscall.EINTR
		}
		n.log.Printf("nzip mount: %s bytes %d-%d: %v", n.f.Name, off, off+int64(len(dest))-1, err)
		return nil, syscall.EIO
	}
	return fuse.ReadResultData(dest[:k]), 0
}
