package checkpoint

import (
	"fmt"
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

// OpenPath opens the checkpoint at path. A plain file is a model of one
// File. A sharded safetensors index is the index file first, then every shard
// it references, in sorted order, read from the index's directory, each with
// its own layout. A missing shard, a shard that is not safetensors, or a
// weight_map tensor that its shard does not hold is an error.
func OpenPath(path string) (*Model, error) {
	var wm map[string]string
	f, err := openFile(path, func(r *os.File, size int64) (err error) {
		_, wm, err = readIndex(r, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	m := &Model{Format: f.Layout.Format, Files: []File{f}}
	if f.Layout.Format != FormatSafetensorsIndex {
		return m, nil
	}
	held := make(map[string]map[string]struct{}, len(f.Layout.Shards))
	dir := filepath.Dir(path)
	for _, shard := range f.Layout.Shards {
		sf, err := openFile(filepath.Join(dir, shard), nil)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s: shard %q: %w", FormatSafetensorsIndex, shard, err)
		}
		if sf.Layout.Format != "safetensors" {
			return nil, formatErr(FormatSafetensorsIndex, -1, ErrMalformed, "shard %q is %s, not safetensors", shard, sf.Layout.Format)
		}
		names := make(map[string]struct{})
		for _, t := range sf.Layout.Tensors() {
			names[t.Name] = struct{}{}
		}
		held[shard] = names
		m.Files = append(m.Files, sf)
	}
	tensors := make([]string, 0, len(wm))
	for name := range wm {
		tensors = append(tensors, name)
	}
	slices.Sort(tensors)
	for _, name := range tensors {
		if _, ok := held[wm[name]][name]; !ok {
			return nil, formatErr(FormatSafetensorsIndex, -1, ErrMalformed, "tensor %q not found in shard %q", name, wm[name])
		}
	}
	return m, nil
}

// openFile opens one file and reads its layout. When the file is a sharded
// index and index is not nil, index is called with the open file.
func openFile(path string, index func(f *os.File, size int64) error) (File, error) {
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
