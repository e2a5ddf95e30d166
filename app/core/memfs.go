package core

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"neuralzip/checkpoint"
)

// OpenFS opens the checkpoint called name in fsys with every file it needs
// (see checkpoint.OpenFS): the embedded demo models, and files that exist
// only in memory (dropped on a browser page). As OpenPath does, a file
// whose content claims a format but does not parse opens as opaque bytes,
// with the reason passed to warn (when non-nil).
func OpenFS(fsys fs.FS, name string, warn func(string)) (*Model, error) {
	cm, err := checkpoint.OpenFS(fsys, name)
	var fe *checkpoint.FormatError
	if err != nil && errors.As(err, &fe) && !strings.HasSuffix(name, ".index.json") {
		if warn != nil {
			warn(fmt.Sprintf("%s: %v; it is treated as opaque bytes", path.Base(name), err))
		}
		st, serr := fs.Stat(fsys, name)
		if serr != nil {
			return nil, serr
		}
		cm = &checkpoint.Model{Format: checkpoint.FormatUnknown, Files: []checkpoint.File{{Path: name, Name: path.Base(name), Size: st.Size()}}}
	} else if err != nil {
		return nil, err
	}
	m := &Model{Name: path.Base(name), Path: name, Format: cm.Format}
	for _, cf := range cm.Files {
		r, size, closeFn, err := checkpoint.ReaderAtFS(fsys, cf.Path)
		if err != nil {
			m.Close()
			return nil, err
		}
		mf := File{Name: cf.Name, Size: size, Format: checkpoint.FormatUnknown, R: r, closer: closer(closeFn)}
		if cf.Layout != nil {
			if cf.Layout.Size != size {
				closeFn()
				m.Close()
				return nil, fmt.Errorf("%s: file changed while reading it", cf.Path)
			}
			mf.Format = cf.Layout.Format
			mf.Segments = cf.Layout.Segments
		}
		m.Files = append(m.Files, mf)
	}
	m.index()
	return m, nil
}

type closer func() error

func (c closer) Close() error { return c() }

// MemFS is a flat in-memory file system: file names (with "/" for
// folders) to their bytes. It is how the browser hands dropped or
// uploaded files to OpenFS; its files implement io.ReaderAt.
type MemFS map[string][]byte

// Open implements fs.FS.
func (m MemFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if b, ok := m[name]; ok {
		return &memFile{Reader: bytes.NewReader(b), name: path.Base(name), size: int64(len(b))}, nil
	}
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return &memFile{name: path.Base(name), dir: true}, nil
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

type memFile struct {
	*bytes.Reader
	name string
	size int64
	dir  bool
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f}, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Read(p []byte) (int, error) {
	if f.dir {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	return f.Reader.Read(p)
}
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if f.dir {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	return f.Reader.ReadAt(p, off)
}

type memInfo struct{ f *memFile }

func (i memInfo) Name() string { return i.f.name }
func (i memInfo) Size() int64  { return i.f.size }
func (i memInfo) Mode() fs.FileMode {
	if i.f.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.f.dir }
func (i memInfo) Sys() any           { return nil }

var _ io.ReaderAt = (*memFile)(nil)

// MainFiles returns the files of fsys that are models of their own: every
// file that no other file names as its companion (a TF.js model.json and
// not its weight shards, a sharded index and not its shards), in name
// order. It is how several files dropped together become models.
func (m MemFS) MainFiles() []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	companion := map[string]bool{}
	for _, n := range names {
		b := m[n]
		l, err := checkpoint.Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			continue
		}
		dir := path.Dir(n)
		for _, c := range l.Companions {
			companion[path.Join(dir, c.Name)] = true
		}
	}
	var out []string
	for _, n := range names {
		if !companion[n] {
			out = append(out, n)
		}
	}
	return out
}
