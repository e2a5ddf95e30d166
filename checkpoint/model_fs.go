package checkpoint

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
)

// OpenFS is [OpenPath] on a file system: it opens the checkpoint called name
// in fsys with every file it needs, its companions read from name's
// directory in fsys. It is how files without a real file system are read
// (a browser's dropped files, embedded demo models). File.Path is the
// file's name in fsys.
//
// Files are read through io.ReaderAt when fsys's files implement it (embed
// and testing/fstest do), else read whole into memory.
func OpenFS(fsys fs.FS, name string) (*Model, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("checkpoint: %q is not a valid path in the file system", name)
	}
	var wm map[string]string
	f, err := openFSFile(fsys, name, func(r io.ReaderAt, size int64) (err error) {
		_, wm, err = readIndex(r, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	dir := path.Dir(name)
	if f.Layout.Format == FormatTFJS {
		// as in OpenPath: weights placed by the shards' real sizes
		r, size, closeFn, err := ReaderAtFS(fsys, name)
		if err != nil {
			return nil, err
		}
		_, groups, err := readTFJS(r, size)
		closeFn()
		if err != nil {
			return nil, err
		}
		sub, err := fs.Sub(fsys, dir)
		if err != nil {
			return nil, err
		}
		comps, err := tfjsCompanions(groups, size, sub)
		if err != nil {
			return nil, err
		}
		f.Layout.Companions = comps
	}
	m := &Model{Format: f.Layout.Format, Files: []File{f}}
	for _, c := range f.Layout.Companions {
		cf, err := openFSCompanion(fsys, dir, f.Layout.Format, c)
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, cf)
	}
	if f.Layout.Format == FormatSafetensorsIndex {
		if err := checkWeightMap(m, wm); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkWeightMap checks that every tensor of a sharded index's weight map
// is in the shard it names.
func checkWeightMap(m *Model, wm map[string]string) error {
	held := make(map[string]map[string]struct{})
	for _, sf := range m.Files[1:] {
		names := make(map[string]struct{})
		for _, t := range sf.Layout.Tensors() {
			names[t.Name] = struct{}{}
		}
		held[sf.Name] = names
	}
	tensors := make([]string, 0, len(wm))
	for name := range wm {
		tensors = append(tensors, name)
	}
	slices.Sort(tensors)
	for _, name := range tensors {
		if _, ok := held[wm[name]][name]; !ok {
			return formatErr(FormatSafetensorsIndex, -1, ErrMalformed, "tensor %q not found in shard %q", name, wm[name])
		}
	}
	return nil
}

// ReaderAtFS opens name in fsys for reading at offsets: the file itself
// when it implements io.ReaderAt, else its bytes read into memory. close
// releases it. Only regular files are accepted.
func ReaderAtFS(fsys fs.FS, name string) (r io.ReaderAt, size int64, close func() error, err error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, 0, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, nil, fmt.Errorf("checkpoint: %s is not a regular file", name)
	}
	if ra, ok := f.(io.ReaderAt); ok {
		return ra, st.Size(), f.Close, nil
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, 0, nil, err
	}
	return bytes.NewReader(b), int64(len(b)), func() error { return nil }, nil
}

// openFSFile is openFile on a file system.
func openFSFile(fsys fs.FS, name string, index func(r io.ReaderAt, size int64) error) (File, error) {
	r, size, closeFn, err := ReaderAtFS(fsys, name)
	if err != nil {
		return File{}, err
	}
	defer closeFn()
	l, err := Open(r, size)
	if err != nil {
		return File{}, err
	}
	if l.Format == FormatSafetensorsIndex && index != nil {
		if err := index(r, size); err != nil {
			return File{}, err
		}
	}
	return File{Path: name, Name: path.Base(name), Size: size, Layout: l}, nil
}

// openFSCompanion is openCompanion on a file system.
func openFSCompanion(fsys fs.FS, dir, owner string, c Companion) (File, error) {
	return companionFile(path.Join(dir, c.Name), owner, c,
		func(p string) (File, error) { return openFSFile(fsys, p, nil) },
		func(p string) (fs.FileInfo, error) { return fs.Stat(fsys, p) })
}
