package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
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
	if err := statRegular(path); err != nil {
		return nil, err
	}
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
		fh, st, err := openRegular(f.Path, os.O_RDONLY)
		if err != nil {
			closeInputs(out)
			return nil, err
		}
		in := inputFile{name: f.Name, path: f.Path, f: fh, size: st.Size(), mod: st.ModTime(), format: "unknown"}
		if f.Layout != nil {
			if f.Layout.Size != st.Size() {
				fh.Close()
				closeInputs(out)
				return nil, fmt.Errorf("%s: file changed while reading it", f.Path)
			}
			in.format = f.Layout.Format
			in.segs = f.Layout.Segments
		}
		out = append(out, in)
	}
	return out, nil
}

// statRegular refuses a path that is not a regular file (a named pipe,
// a device, a directory) before anything opens it: opening a named pipe
// blocks until a writer comes, reading a device may never end. A path
// that cannot be stat'ed is left to the open that follows.
func statRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	return notRegular(path, st.Mode())
}

// checkOpened checks that f, opened from path, is a regular file, and
// closes it when it is not.
func checkOpened(f *os.File, path string) (os.FileInfo, error) {
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = notRegular(path, st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return st, nil
}

// notRegular says what path is instead of a regular file.
func notRegular(path string, m os.FileMode) error {
	what := ""
	switch {
	case m&os.ModeNamedPipe != 0:
		what = " (a named pipe)"
	case m&os.ModeSocket != 0:
		what = " (a socket)"
	case m&os.ModeDevice != 0:
		what = " (a device)"
	case m.IsDir():
		what = " (a directory)"
	}
	return fmt.Errorf("%s: not a regular file%s; nzip reads only regular files", path, what)
}

func closeInputs(in []inputFile) {
	for _, f := range in {
		f.f.Close()
	}
}

// atomicFile writes to a temporary file beside the destination that takes
// the destination's name on Commit; Abort (or a failed Commit) removes it.
// Without force the commit never replaces a file, not even one that
// appeared at dest while the output was written.
type atomicFile struct {
	*os.File
	dest   string
	force  bool     // replace what is at dest
	inputs []string // files read for it: dest is never one of them
	closed bool
	done   bool
}

// renameFile and linkFile are os.Rename and os.Link; tests make them fail
// (part-way through commitAll, or as on a file system without links).
// beforePublish, when set, runs just before an output takes its name
// (tests create a file there).
var (
	renameFile    = os.Rename
	linkFile      = os.Link
	beforePublish func(dest string)
)

// createOutput prepares to write dest. Without force any existing entry
// at dest (a dangling symbolic link too) is an error; with force or
// without, dest must never be one of the inputs.
func createOutput(dest string, force bool, inputs []string, mode os.FileMode) (*atomicFile, error) {
	if err := notAnInput(dest, inputs); err != nil {
		return nil, err
	}
	if st, err := os.Lstat(dest); err == nil {
		if !force {
			return nil, fmt.Errorf("%s: already exists (use -f to overwrite)", dest)
		}
		if !st.Mode().IsRegular() && st.Mode()&os.ModeSymlink == 0 {
			return nil, fmt.Errorf("%s: exists and is not a regular file", dest)
		}
	}
	dir := filepath.Dir(dest)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".*.tmp")
	if err != nil {
		// named by the output the user gave, not the temporary file
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot create: %w", dest, err)
	}
	if mode != 0 {
		f.Chmod(mode)
	}
	return &atomicFile{File: f, dest: dest, force: force, inputs: inputs}, nil
}

// notAnInput refuses a dest that is (the same file as) one of inputs.
func notAnInput(dest string, inputs []string) error {
	st, err := os.Stat(dest)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
			if filepath.Clean(in) == filepath.Clean(dest) {
				return fmt.Errorf("%s: output would overwrite the input", dest)
			}
			return fmt.Errorf("%s: output would overwrite the input %s", dest, in)
		}
	}
	return nil
}

// publish gives the finished temporary file its name: with force over
// whatever is there (but never an input), else only while the name is
// free (renameNew).
func (a *atomicFile) publish() error {
	if beforePublish != nil {
		beforePublish(a.dest)
	}
	if err := notAnInput(a.dest, a.inputs); err != nil {
		return err
	}
	if a.force {
		return renameFile(a.Name(), a.dest)
	}
	return renameNew(a.Name(), a.dest)
}

// renameNew renames from to to unless something is at to, atomically: it
// links from to to (link(2) fails when the name exists) and removes from.
// Where the file system has no hard links it creates to exclusively and
// renames from over that.
func renameNew(from, to string) error {
	err := linkFile(from, to)
	if err == nil {
		os.Remove(from)
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		var f *os.File
		if f, err = os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
			if err = renameFile(from, to); err != nil {
				os.Remove(to)
			}
			return err
		}
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: already exists: it appeared while the output was written, and is left as it is (use -f to overwrite)", to)
	}
	return err
}

// finish closes the temporary file, which keeps its name until Commit or
// commitAll (so that a step of many files holds no descriptor per file).
func (a *atomicFile) finish() error {
	if a.closed {
		return nil
	}
	a.closed = true
	return a.File.Close()
}

func (a *atomicFile) Commit() error {
	if err := a.finish(); err != nil {
		os.Remove(a.Name())
		return err
	}
	if err := a.publish(); err != nil {
		os.Remove(a.Name())
		return err
	}
	a.done = true
	return nil
}

func (a *atomicFile) Abort() {
	if !a.done {
		a.finish()
		os.Remove(a.Name())
		a.done = true
	}
}

// commitAll gives the temporary files outs their names, all or none.
// Without force a name taken meanwhile fails it (publish). A file it
// replaces (force) is first kept under a backup name (a hard link, so that
// it stays under its own name until replaced; a rename where the file
// system has no links); when a rename fails part-way, the files already
// renamed are removed and the ones they replaced put back, so the
// destination holds what it held before; once all are renamed the backups
// go. Every out is done (renamed or removed) when it returns.
func commitAll(outs []*atomicFile) error {
	for _, w := range outs {
		if err := w.finish(); err != nil {
			return err // the caller's Abort removes them
		}
	}
	type backup struct {
		path  string
		moved bool // renamed away (no hard link): dest is absent until replaced
	}
	baks := make([]backup, len(outs))
	restore := func(renamed int) {
		for j := range outs {
			b := baks[j]
			switch {
			case j < renamed && b.path != "":
				os.Rename(b.path, outs[j].dest) // the old file back over the new one
			case j < renamed:
				os.Remove(outs[j].dest) // nothing was there before
			case b.moved:
				os.Rename(b.path, outs[j].dest)
			case b.path != "":
				os.Remove(b.path)
			}
			if j >= renamed {
				outs[j].Abort()
			}
			outs[j].done = true
		}
	}
	for j, w := range outs {
		if !w.force {
			continue // publish refuses a name taken meanwhile
		}
		if _, err := os.Lstat(w.dest); err != nil {
			continue
		}
		bak, err := reserveName(w.dest, ".bak")
		if err != nil {
			restore(0)
			return err
		}
		baks[j].path = bak
		if err := linkFile(w.dest, bak); err != nil {
			if err := os.Rename(w.dest, bak); err != nil {
				baks[j].path = ""
				restore(0)
				return fmt.Errorf("%s: keeping it until its replacement is in place: %w", w.dest, err)
			}
			baks[j].moved = true
		}
	}
	for j, w := range outs {
		if err := w.publish(); err != nil {
			restore(j)
			return err
		}
		w.done = true
	}
	for _, b := range baks {
		if b.path != "" {
			os.Remove(b.path)
		}
	}
	return nil
}

// reserveName returns an unused name beside path (hidden, ending in
// suffix) for os.Link or os.Rename to take.
func reserveName(path, suffix string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*"+suffix)
	if err != nil {
		return "", err
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return "", err
	}
	return name, nil
}

// safeName checks that a file name from an archive, a slash-separated
// relative path on every system, stays inside the output directory:
// clean, no "..", no backslash, and local on this system
// (filepath.IsLocal also refuses names Windows reserves, such as NUL or
// C:x, there), at most maxNameDepth directories deep and maxNameBytes
// long. Join it with filepath.FromSlash.
func safeName(name string) error {
	if name == "" || name == "." || strings.ContainsRune(name, 0) || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) ||
		path.Clean(name) != name || !filepath.IsLocal(filepath.FromSlash(name)) {
		return fmt.Errorf("unsafe file name %q in archive", name)
	}
	if d := strings.Count(name, "/"); d > maxNameDepth || len(name) > maxNameBytes {
		return fmt.Errorf("file name %.64q... in archive: %d bytes, %d directories deep; nzip writes names of at most %d bytes and %d directories", name, len(name), d, maxNameBytes, maxNameDepth)
	}
	return nil
}

// maxNameDepth and maxNameBytes bound the file names of a multi-file
// archive (compress refuses models beyond them, decompress archives):
// real models nest their files a few directories deep, and a name of
// thousands of directories would make thousands before the system's path
// limit stops it.
const (
	maxNameDepth = 64
	maxNameBytes = 1024
)

// openArchive opens an archive file for reading. A trajectory archive
// given instead gets an error that says which commands read it.
func openArchive(path string) (*codec.Reader, *os.File, error) {
	rd, f, err := openWith(path, codec.NewReader)
	if errors.Is(err, codec.ErrNotArchive) && startsWith(path, trajectory.Magic[:]) {
		err = fmt.Errorf("%w: it is a trajectory archive (.nztraj); read it with nzip trajectory ls, extract or verify", err)
	}
	return rd, f, lossyHint(err)
}

// startsWith reports whether the file at path starts with magic.
func startsWith(path string, magic []byte) bool {
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(magic))
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == string(magic)
}

// openDecoder opens an archive for decoding with the setup and reference
// it needs (-setup, -ref; checked before anything is written). inputs are
// the files it reads (the archive, the setup, the reference's files), which
// no output may overwrite; close releases the archive and the reference.
func openDecoder(path, setupPath, refPath string, stderr io.Writer) (rd *codec.Reader, inputs []string, close func(), err error) {
	rd, f, err := openArchive(path)
	if err != nil {
		return nil, nil, nil, err
	}
	closeArchive := func() { rd.Close(); f.Close() }
	if err := useSetup(rd, path, setupPath, stderr); err != nil {
		closeArchive()
		return nil, nil, nil, err
	}
	refFiles, doneRef, err := useRef(rd, path, refPath, stderr)
	if err != nil {
		doneRef()
		closeArchive()
		return nil, nil, nil, err
	}
	inputs = append([]string{path}, refFiles...)
	if setupPath != "" && setupPath != codec.GaussianSetupName {
		inputs = append(inputs, setupPath)
	}
	return rd, inputs, func() { doneRef(); closeArchive() }, nil
}

// openWith opens a file and hands it, with its size, to open; the file stays
// open for the result (the caller closes it) unless open fails.
func openWith[T any](path string, open func(io.ReaderAt, int64) (T, error)) (T, *os.File, error) {
	var zero T
	f, st, err := openRegular(path, os.O_RDONLY)
	if err != nil {
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
