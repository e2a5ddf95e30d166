package serve

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// openDir opens a directory of plain files: every regular file under it
// (links included, as long as they stay inside it) is a file of the
// repository under its relative, slash-separated path. Files are opened
// through an os.Root, so no name, link or later change of the tree reaches
// outside the directory.
func (s *Server) openDir(id, dir string) (*repo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	var files []*file
	var newest time.Time
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && d.Name()[0] == '.' {
				return fs.SkipDir // .git, .cache and the like
			}
			return nil
		}
		if d.Name()[0] == '.' {
			return nil
		}
		st, err := root.Stat(p) // follows links, inside the root only
		if err != nil {
			s.logf("serve: %s: skipping %s: %v", dir, p, err)
			return nil
		}
		if !st.Mode().IsRegular() {
			return nil
		}
		if !validName(p) {
			s.logf("serve: %s: skipping %q: a name clients cannot request", dir, p)
			return nil
		}
		if st.ModTime().After(newest) {
			newest = st.ModTime()
		}
		files = append(files, &file{name: p, size: st.Size(), c: &dirFile{root: root, name: p, st: st, dir: dir, srv: s}})
		return nil
	})
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("serve: %s: %w", dir, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return newRepo(id, dir, "directory", files, newest, root.Close), nil
}

// dirFile is a plain file of a directory source.
type dirFile struct {
	root *os.Root
	name string
	dir  string
	st   os.FileInfo // when the source was added
	srv  *Server
}

// open opens the file and checks that it is the one that was added.
func (f *dirFile) open() (*os.File, error) {
	h, err := f.root.Open(filepath.FromSlash(f.name))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChanged, err)
	}
	st, err := h.Stat()
	if err == nil {
		err = f.same(st)
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

func (f *dirFile) same(st os.FileInfo) error {
	if !os.SameFile(st, f.st) || st.Size() != f.st.Size() || !st.ModTime().Equal(f.st.ModTime()) {
		return fmt.Errorf("%w: %s/%s", ErrChanged, f.dir, f.name)
	}
	return nil
}

func (f *dirFile) check() error {
	h, err := f.open()
	if err != nil {
		return err
	}
	return h.Close()
}

func (f *dirFile) sha256(ctx context.Context) ([32]byte, error) {
	var sum [32]byte
	h := sha256.New()
	if err := f.write(ctx, h, 0, f.st.Size(), true); err != nil {
		return sum, err
	}
	return [32]byte(h.Sum(nil)), nil
}

// write copies the range in pieces and checks, after the last piece was
// read, that the file is still the one added: a file truncated or
// rewritten meanwhile gives an error (the caller holds back the end of the
// response until write returns).
func (f *dirFile) write(ctx context.Context, w io.Writer, off, n int64, whole bool) error {
	h, err := f.open()
	if err != nil {
		return err
	}
	defer h.Close()
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(n, int64(len(buf)))
		if _, err := h.ReadAt(buf[:k], off); err != nil {
			if err == io.EOF {
				return fmt.Errorf("%w: %s/%s is shorter", ErrChanged, f.dir, f.name)
			}
			return err
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		off += k
		n -= k
	}
	st, err := h.Stat()
	if err != nil {
		return err
	}
	return f.same(st)
}

// readAt reads from the file, checking before and after that it is the one
// added.
func (f *dirFile) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	h, err := f.open()
	if err != nil {
		return 0, err
	}
	defer h.Close()
	n, err := h.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return n, err
	}
	if off+int64(n) < f.st.Size() && n < len(p) {
		return n, fmt.Errorf("%w: %s/%s is shorter", ErrChanged, f.dir, f.name)
	}
	st, serr := h.Stat()
	if serr == nil {
		serr = f.same(st)
	}
	if serr != nil {
		return n, serr
	}
	return n, err
}
