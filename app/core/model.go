// Package core is the workbench's model, apart from its view: opening
// checkpoints (files or the embedded demo models), computing their
// statistics in the background, building and comparing setups, and running
// codecs with progress and cancellation. It knows nothing of Fyne, so the
// desktop app and the browser build (both package main in app/; the browser
// one built for GOOS=js GOARCH=wasm by `make web`, its page in wasm/) share
// it.
package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"neuralzip/analysis"
	"neuralzip/assets"
	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/dtype"
)

// AssetPrefix marks the "path" of an embedded demo model (in recent-file
// lists and the like): "demo:silero-vad".
const AssetPrefix = "demo:"

// Model is an opened checkpoint: its files and tensors. Only headers are
// read when it is opened; tensor data is read on demand through the
// files' readers.
type Model struct {
	Name    string // base name of the main file
	Path    string // where it came from: a file path or AssetPrefix+name
	Format  string
	Files   []File
	Tensors []Tensor // every tensor segment of every file, in file order
	Size    int64    // bytes of all files
}

// File is one file of a model.
type File struct {
	Name     string
	Size     int64
	Format   string
	R        io.ReaderAt
	Segments []codec.Segment // layout in the codec's terms; nil: all opaque
	closer   io.Closer
}

// Tensor is one tensor of a model.
type Tensor struct {
	Index  int
	Name   string
	Layer  string // the group the tensor belongs to (see LayerOf)
	DType  dtype.DType
	Type   string // the format's own type name
	Shape  []int64
	File   int   // index into Model.Files
	Offset int64 // in its file
	Bytes  int64
}

// Row is the length of the tensor's rows (its last dimension; 0 for fewer
// than two dimensions): the columns of the sparse statistics.
func (t *Tensor) Row() int {
	if len(t.Shape) < 2 || t.Shape[len(t.Shape)-1] > 1<<30 {
		return 0
	}
	return int(t.Shape[len(t.Shape)-1])
}

// IsFloat reports whether the tensor's exponents can be analysed.
func (t *Tensor) IsFloat() bool {
	_, ok := t.DType.FloatLayout()
	return ok && t.Bytes > 0
}

// DTypeName is the dtype, or the format's own type name for types package
// dtype does not cover.
func (t *Tensor) DTypeName() string {
	if t.DType == dtype.Invalid {
		return t.Type
	}
	return t.DType.String()
}

// ShapeString is the shape as "[a×b×c]".
func (t *Tensor) ShapeString() string {
	parts := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, "×") + "]"
}

// OpenPath opens the checkpoint at p with every file it needs (see
// checkpoint.OpenPath). A file whose content claims a format but does not
// parse is opened as opaque bytes, as nzip compresses it; warn (when
// non-nil) receives the reason.
func OpenPath(p string, warn func(string)) (*Model, error) {
	cm, err := checkpoint.OpenPath(p)
	var fe *checkpoint.FormatError
	if err != nil && errors.As(err, &fe) && !strings.HasSuffix(p, ".index.json") {
		if warn != nil {
			warn(fmt.Sprintf("%s: %v; it is treated as opaque bytes", filepath.Base(p), err))
		}
		st, serr := os.Stat(p)
		if serr != nil {
			return nil, serr
		}
		cm = &checkpoint.Model{Format: checkpoint.FormatUnknown, Files: []checkpoint.File{{Path: p, Name: filepath.Base(p), Size: st.Size()}}}
	} else if err != nil {
		return nil, err
	}
	m := &Model{Name: filepath.Base(p), Path: p, Format: cm.Format}
	for _, cf := range cm.Files {
		f, err := os.Open(cf.Path)
		if err != nil {
			m.Close()
			return nil, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			m.Close()
			return nil, err
		}
		if !st.Mode().IsRegular() {
			f.Close()
			m.Close()
			return nil, fmt.Errorf("%s: not a regular file", cf.Path)
		}
		mf := File{Name: cf.Name, Size: st.Size(), Format: checkpoint.FormatUnknown, R: f, closer: f}
		if cf.Layout != nil {
			if cf.Layout.Size != st.Size() {
				f.Close()
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

// Demo returns the embedded demo model called name.
func Demo(name string) (assets.Model, bool) {
	for _, d := range assets.Models() {
		if d.Name == name {
			return d, true
		}
	}
	return assets.Model{}, false
}

// OpenAsset opens an embedded demo model, straight from the embedded file
// system (with its companion files), so it needs no real file system.
func OpenAsset(d assets.Model) (*Model, error) {
	m, err := OpenFS(assets.FS, d.Files[0], nil)
	if err != nil {
		return nil, fmt.Errorf("demo %s: %w", d.Name, err)
	}
	m.Path = AssetPrefix + d.Name
	return m, nil
}

// Open opens p: a file path, AssetPrefix+name for a demo model, or the
// http(s) URL of a model on a server of the Hugging Face download API
// (OpenURL).
func Open(p string, warn func(string)) (*Model, error) {
	if IsURL(p) {
		return OpenURL(context.Background(), p, warn)
	}
	if name, ok := strings.CutPrefix(p, AssetPrefix); ok {
		d, ok := Demo(name)
		if !ok {
			return nil, fmt.Errorf("no demo model %q", name)
		}
		return OpenAsset(d)
	}
	return OpenPath(p, warn)
}

// Close closes the model's files.
func (m *Model) Close() error {
	for _, f := range m.Files {
		if f.closer != nil {
			f.closer.Close()
		}
	}
	return nil
}

func (m *Model) index() {
	m.Tensors = nil
	m.Size = 0
	for fi, f := range m.Files {
		m.Size += f.Size
		for _, s := range f.Segments {
			if !s.IsTensor() {
				continue
			}
			m.Tensors = append(m.Tensors, Tensor{Index: len(m.Tensors), Name: s.Name, Layer: LayerOf(s.Name), DType: s.DType, Type: s.Type,
				Shape: s.Shape, File: fi, Offset: s.Offset, Bytes: s.Length})
		}
	}
}

// FloatCount is the number of float tensors.
func (m *Model) FloatCount() int {
	n := 0
	for i := range m.Tensors {
		if m.Tensors[i].IsFloat() {
			n++
		}
	}
	return n
}

// Data returns the tensors idx (all when idx is nil) as analysis inputs.
func (m *Model) Data(idx []int) []analysis.TensorData {
	if idx == nil {
		idx = make([]int, len(m.Tensors))
		for i := range idx {
			idx[i] = i
		}
	}
	out := make([]analysis.TensorData, 0, len(idx))
	for _, i := range idx {
		t := &m.Tensors[i]
		out = append(out, analysis.TensorData{Name: t.Name, DType: t.DType, R: m.Files[t.File].R, Offset: t.Offset, Length: t.Bytes})
	}
	return out
}

// Inputs returns the model's files as codec inputs (for BuildSetup). With
// keep non-nil, only the tensors it marks are given as tensors; the rest of
// each file counts as opaque bytes.
func (m *Model) Inputs(keep map[int]bool) []codec.Input {
	var in []codec.Input
	ti := 0
	for _, f := range m.Files {
		segs := f.Segments
		if keep != nil {
			segs = nil
			for _, s := range f.Segments {
				if !s.IsTensor() {
					continue
				}
				if keep[ti] {
					segs = append(segs, s)
				}
				ti++
			}
		}
		in = append(in, codec.Input{Name: f.Name, R: f.R, Size: f.Size, Format: f.Format, Segments: segs})
	}
	return in
}

// ReadAll reads every file of the model into one buffer, in archive order,
// with the segments of each file moved to its place (as `nzip bench` measures
// a model). starts[i] is where file i begins.
func (m *Model) ReadAll() (src []byte, segs []codec.Segment, starts []int64, err error) {
	src = make([]byte, 0, m.Size)
	for _, f := range m.Files {
		base := int64(len(src))
		starts = append(starts, base)
		src = src[:base+f.Size]
		if _, err := f.R.ReadAt(src[base:], 0); err != nil && err != io.EOF {
			return nil, nil, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		for _, s := range f.Segments {
			s.Offset += base
			segs = append(segs, s)
		}
	}
	return src, segs, starts, nil
}

// LayerOf is the layer a tensor name belongs to: the name up to and
// including its first numeric component ("model.layers.3" of
// "model.layers.3.mlp.up.weight"), otherwise the name without its last
// component ("conv1" of "conv1.weight"), or "(top level)".
func LayerOf(name string) string {
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == '/' || r == ':' })
	for i, p := range parts {
		if i > 0 && p != "" && strings.IndexFunc(p, func(r rune) bool { return !unicode.IsDigit(r) }) < 0 {
			return strings.Join(parts[:i+1], ".")
		}
	}
	if len(parts) <= 1 {
		return "(top level)"
	}
	return strings.Join(parts[:len(parts)-1], ".")
}

// Layers lists the distinct layers of the tensors, in order of first
// appearance.
func (m *Model) Layers() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range m.Tensors {
		if !seen[t.Layer] {
			seen[t.Layer] = true
			out = append(out, t.Layer)
		}
	}
	return out
}

// SortedIndex returns the indices of the tensors sorted by less (stable).
func SortedIndex(ts []Tensor, keep func(int) bool, less func(a, b int) bool) []int {
	var idx []int
	for i := range ts {
		if keep == nil || keep(i) {
			idx = append(idx, i)
		}
	}
	if less != nil {
		sort.SliceStable(idx, func(a, b int) bool { return less(idx[a], idx[b]) })
	}
	return idx
}
