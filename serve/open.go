package serve

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"neuralzip/store"
)

// Source is one source opened for reading by ranges outside HTTP (nzip
// mount reads through it): an .nzip archive or a directory of plain files,
// read exactly as the server reads it (the same block cache, CRC checks
// and decoding bounds).
type Source struct {
	srv   *Server
	r     *repo
	files []*File
}

// File is one file of a Source.
type File struct {
	Name string // relative, slash-separated: an archive's stored name
	Size int64
	f    *file
}

// Open opens a source: a store (a directory holding one, or s3://) shows
// each model's files under the model's name (a directory per model), any
// other directory is read as plain files, anything else must be an .nzip
// archive. cfg's Threads, CacheBytes and Log apply.
func Open(source string, cfg Config) (*Source, error) {
	s := New(cfg)
	var r *repo
	if store.IsStore(source) {
		var err error
		if r, err = s.openStoreAll(source); err != nil {
			return nil, err
		}
		return newSource(s, r), nil
	}
	st, err := os.Stat(source)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		r, err = s.openDir("", source)
	} else {
		r, err = s.openArchive("", source)
	}
	if err != nil {
		return nil, err
	}
	return newSource(s, r), nil
}

func newSource(s *Server, r *repo) *Source {
	src := &Source{srv: s, r: r}
	for _, f := range r.files {
		src.files = append(src.files, &File{Name: f.name, Size: f.size, f: f})
	}
	return src
}

// Files lists the source's files, sorted by name.
func (s *Source) Files() []*File { return s.files }

// Kind is "archive", "directory" or "store".
func (s *Source) Kind() string { return s.r.kind }

// ModTime is the source's modification time (a directory's newest file's).
func (s *Source) ModTime() time.Time { return s.r.modified }

// Close closes the source.
func (s *Source) Close() error { return s.r.close() }

// ReadAt reads len(p) bytes of the file at off as io.ReaderAt does (io.EOF
// when the file ends first). It decodes only the blocks that cover them,
// each checked against its CRC; an error names the file.
func (f *File) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := f.f.c.readAt(ctx, p, off)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", f.Name, err)
	}
	return n, err
}

// Check reports ErrChanged if the file's source changed since it was
// opened.
func (f *File) Check() error { return f.f.c.check() }

// Path is the path the source was opened from.
func (s *Source) Path() string { return s.r.source }
