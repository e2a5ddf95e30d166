package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/trajectory"
)

// inputFile is one original file opened for compression.
type inputFile struct {
	name   string
	path   string
	f      *os.File
	size   int64
	mod    time.Time // when it was opened
	format string
	segs   []codec.Segment
}

// unchanged reports an error when the file's size or modification time
// is no longer what it was when opened: it was written to since.
func (in inputFile) unchanged() error {
	st, err := in.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != in.size || !st.ModTime().Equal(in.mod) {
		return fmt.Errorf("%s: changed while it was read", in.path)
	}
	return nil
}

// openModel opens a checkpoint (or any file) for compression. A file whose
// content claims a format but does not parse is compressed as opaque bytes,
// with a warning: nzip never refuses a file.
func openModel(path string, warn io.Writer) ([]inputFile, error) {
	m, err := checkpoint.OpenPath(path)
	var fe *checkpoint.FormatError
	if err != nil && errors.As(err, &fe) && !strings.HasSuffix(path, ".index.json") {
		fmt.Fprintf(warn, "nzip: warning: %s: %v; compressing it as opaque bytes\n", path, err)
		m = nil
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var files []checkpoint.File
	if m != nil {
		files = m.Files
	} else {
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		files = []checkpoint.File{{Path: path, Name: filepath.Base(path), Size: st.Size()}}
	}
	var out []inputFile
	for _, f := range files {
		fh, err := os.Open(f.Path)
		if err != nil {
			closeInputs(out)
			return nil, err
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			closeInputs(out)
			return nil, err
		}
		if !st.Mode().IsRegular() {
			fh.Close()
			closeInputs(out)
			return nil, fmt.Errorf("%s: not a regular file", f.Path)
		}
		in := inputFile{name: f.Name, path: f.Path, f: fh, size: st.Size(), mod: st.ModTime(), format: "unknown"}
		if f.Layout != nil {
			if f.Layout.Size != st.Size() {
				fh.Close()
				closeInputs(out)
				return nil, fmt.Errorf("%s: file changed while reading it", f.Path)
			}
			in.format = f.Layout.Format
			in.segs = toCodecSegments(f.Layout.Segments)
		}
		out = append(out, in)
	}
	return out, nil
}

func closeInputs(in []inputFile) {
	for _, f := range in {
		f.f.Close()
	}
}

func toCodecSegments(segs []checkpoint.Segment) []codec.Segment {
	out := make([]codec.Segment, len(segs))
	for i, s := range segs {
		out[i] = codec.Segment{Offset: s.Offset, Length: s.Length, Name: s.Name, DType: s.DType, Type: s.Type, Shape: s.Shape}
	}
	return out
}

// atomicFile writes to a temporary file beside the destination and renames
// it over the destination on Commit; Abort (or a failed Commit) removes it.
type atomicFile struct {
	*os.File
	dest string
	done bool
}

// createOutput prepares to write dest. Without force an existing dest is an
// error; dest must never be one of the inputs.
func createOutput(dest string, force bool, inputs []string, mode os.FileMode) (*atomicFile, error) {
	if st, err := os.Stat(dest); err == nil {
		for _, in := range inputs {
			if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
				return nil, fmt.Errorf("%s: output would overwrite the input", dest)
			}
		}
		if !force {
			return nil, fmt.Errorf("%s: already exists (use -f to overwrite)", dest)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: exists and is not a regular file", dest)
		}
	}
	dir := filepath.Dir(dest)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".*.tmp")
	if err != nil {
		return nil, err
	}
	if mode != 0 {
		f.Chmod(mode)
	}
	return &atomicFile{File: f, dest: dest}, nil
}

func (a *atomicFile) Commit() error {
	if err := a.File.Close(); err != nil {
		os.Remove(a.Name())
		return err
	}
	if err := os.Rename(a.Name(), a.dest); err != nil {
		os.Remove(a.Name())
		return err
	}
	a.done = true
	return nil
}

func (a *atomicFile) Abort() {
	if !a.done {
		a.File.Close()
		os.Remove(a.Name())
		a.done = true
	}
}

// safeName checks that a file name from an archive stays inside the output
// directory (filepath.IsLocal also refuses names Windows reserves, such as
// NUL or C:x).
func safeName(name string) error {
	if name == "" || strings.ContainsRune(name, 0) || filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || !filepath.IsLocal(name) {
		return fmt.Errorf("unsafe file name %q in archive", name)
	}
	clean := filepath.Clean(name)
	if clean != name || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return fmt.Errorf("unsafe file name %q in archive", name)
	}
	return nil
}

// openArchive opens an archive file for reading. A trajectory archive
// given instead gets an error that says which commands read it.
func openArchive(path string) (*codec.Reader, *os.File, error) {
	rd, f, err := openWith(path, codec.NewReader)
	if errors.Is(err, codec.ErrNotArchive) && startsWith(path, trajectory.Magic[:]) {
		err = fmt.Errorf("%w: it is a trajectory archive (.nztraj); read it with nzip trajectory ls, extract or verify", err)
	}
	return rd, f, err
}

// startsWith reports whether the file at path starts with magic.
func startsWith(path string, magic []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(magic))
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == string(magic)
}

// openDecoder opens an archive for decoding with the setup and reference
// it needs (-setup, -ref; checked before anything is written). close
// releases the archive and the reference.
func openDecoder(path, setupPath, refPath string, stderr io.Writer) (*codec.Reader, func(), error) {
	rd, f, err := openArchive(path)
	if err != nil {
		return nil, nil, err
	}
	closeArchive := func() { rd.Close(); f.Close() }
	if err := useSetup(rd, path, setupPath, stderr); err != nil {
		closeArchive()
		return nil, nil, err
	}
	doneRef, err := useRef(rd, path, refPath, stderr)
	if err != nil {
		doneRef()
		closeArchive()
		return nil, nil, err
	}
	return rd, func() { doneRef(); closeArchive() }, nil
}

// openWith opens a file and hands it, with its size, to open; the file stays
// open for the result (the caller closes it) unless open fails.
func openWith[T any](path string, open func(io.ReaderAt, int64) (T, error)) (T, *os.File, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return zero, nil, err
	}
	v, err := open(f, st.Size())
	if err != nil {
		f.Close()
		return zero, nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, f, nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
