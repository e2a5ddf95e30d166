package checkpoint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// A File is one file of a model.
type File struct {
	Path   string  // where it was read from
	Name   string  // name to store in an archive: the base name
	Size   int64   // size in bytes
	Layout *Layout // its layout
}

// A Model is a checkpoint that may span several files.
type Model struct {
	Format string // Layout.Format of the first file
	Files  []File
}

// OpenPath opens the checkpoint at path with every file it needs. A plain
// file is a model of one File. A file with companions (a sharded safetensors
// index, a TF.js model.json, an ONNX model with external data) comes first,
// followed by its companions in name order, read from its directory.
// A missing companion, one of the wrong format, or one that cannot hold the
// tensors the first file places in it is an error; so is a weight_map tensor
// of a sharded index that its shard does not hold.
func OpenPath(path string) (*Model, error) {
	var wm map[string]string
	f, err := openFile(path, func(r *os.File, size int64) (err error) {
		_, wm, err = readIndex(r, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	if f.Layout.Format == FormatTFJS {
		// model.json does not record where its weight files cut the
		// weights: place them by the files' real sizes.
		if err := tfjsPlaceInShards(&f); err != nil {
			return nil, err
		}
	}
	m := &Model{Format: f.Layout.Format, Files: []File{f}}
	dir := filepath.Dir(path)
	for _, c := range f.Layout.Companions {
		cf, err := openCompanion(dir, f.Layout.Format, c)
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

// openCompanion opens companion c of a file of format owner in dir.
func openCompanion(dir, owner string, c Companion) (File, error) {
	return companionFile(filepath.Join(dir, filepath.FromSlash(c.Name)), owner, c,
		func(p string) (File, error) { return openFile(p, nil) }, os.Stat)
}

// companionFile is companion c (at p) of a file of format owner: opened
// with open when it has a layout of its own, else described by c's
// segments, its size from stat. OpenPath and OpenFS share it.
func companionFile(p, owner string, c Companion, open func(p string) (File, error), stat func(p string) (fs.FileInfo, error)) (File, error) {
	if !ValidCompanionName(c.Name) {
		return File{}, formatErr(owner, -1, ErrMalformed, "companion file %q leaves the model's directory", c.Name)
	}
	what := "companion"
	if owner == FormatSafetensorsIndex {
		what = "shard"
	}
	if c.Segments == nil {
		cf, err := open(p)
		if err != nil {
			return File{}, fmt.Errorf("checkpoint: %s: %s %q: %w", owner, what, c.Name, err)
		}
		if c.Format != "" && cf.Layout.Format != c.Format {
			return File{}, formatErr(owner, -1, ErrMalformed, "%s %q is %s, not %s", what, c.Name, cf.Layout.Format, c.Format)
		}
		cf.Name = c.Name
		return cf, nil
	}
	st, err := stat(p)
	if err != nil {
		return File{}, fmt.Errorf("checkpoint: %s: companion %q: %w", owner, c.Name, err)
	}
	if !st.Mode().IsRegular() {
		return File{}, fmt.Errorf("checkpoint: %s: companion %q is not a regular file", owner, c.Name)
	}
	l, err := describedLayout(owner, c, st.Size())
	if err != nil {
		return File{}, err
	}
	return File{Path: p, Name: c.Name, Size: st.Size(), Layout: l}, nil
}

// describedLayout makes the layout of a companion of the given size from
// the tensors its referring file places in it: tensors in offset order,
// gaps and the rest of the file opaque.
func describedLayout(owner string, c Companion, size int64) (*Layout, error) {
	ts := slices.Clone(c.Segments)
	slices.SortStableFunc(ts, func(a, b Segment) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	format := c.DataFormat
	if format == "" {
		format = owner + "-data"
	}
	l := &Layout{Format: format, Size: size}
	var pos int64
	for _, t := range ts {
		if t.Offset < 0 || t.Length < 0 || t.Offset > size || t.Length > size-t.Offset {
			return nil, formatErr(owner, -1, ErrOutOfRange, "tensor %q at [%d,+%d) lies beyond the %d bytes of %q", t.Name, t.Offset, t.Length, size, c.Name)
		}
		if t.Offset < pos {
			return nil, formatErr(owner, -1, ErrOverlap, "tensor %q at %d of %q overlaps the previous tensor ending at %d", t.Name, t.Offset, c.Name, pos)
		}
		if t.Offset > pos {
			l.Segments = append(l.Segments, Segment{Offset: pos, Length: t.Offset - pos})
		}
		l.Segments = append(l.Segments, t)
		pos = t.Offset + t.Length
	}
	if pos < size {
		l.Segments = append(l.Segments, Segment{Offset: pos, Length: size - pos})
	}
	if err := l.Validate(); err != nil {
		return nil, formatErr(owner, -1, ErrMalformed, "companion %q: %v", c.Name, err)
	}
	return l, nil
}

// openFile opens one file and reads its layout. When the file is a sharded
// index and index is not nil, index is called with the open file.
func openFile(path string, index func(f *os.File, size int64) error) (File, error) {
	// checked before the open too: opening a named pipe blocks until a
	// writer comes
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return File{}, fmt.Errorf("checkpoint: %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return File{}, err
	}
	if !st.Mode().IsRegular() {
		return File{}, fmt.Errorf("checkpoint: %s is not a regular file", path)
	}
	l, err := Open(f, st.Size())
	if err != nil {
		return File{}, err
	}
	if l.Format == FormatSafetensorsIndex && index != nil {
		if err := index(f, st.Size()); err != nil {
			return File{}, err
		}
	}
	return File{Path: path, Name: filepath.Base(path), Size: st.Size(), Layout: l}, nil
}
