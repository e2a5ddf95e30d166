package serve

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"neuralzip/store"
)

// Source is one source opened for reading by ranges outside HTTP (nzip
// mount reads through it): an .nzip archive, a directory of plain files
// or a store, read exactly as the server reads it (the same block cache,
// CRC checks and decoding bounds).
type Source struct {
	srv *Server
	r   *repo
	st  *storeSrc // a store's: its files follow the index (Refresh)

	mu    sync.Mutex // files and gen, for a store
	files []*File
	gen   uint64          // st.allGen that files were made at
	byF   map[*file]*File // a store's Files, kept while their model is
}

// File is one file of a Source.
type File struct {
	Name string // relative, slash-separated: an archive's stored name
	Size int64
	f    *file
}

// Open opens a source: a store (a directory holding one, or s3://) shows
// each model's files under the model's name (a directory per model) and
// follows its index (Refresh), any other directory is read as plain
// files, anything else must be an .nzip archive. cfg's Threads,
// CacheBytes and Log apply.
func Open(source string, cfg Config) (*Source, error) {
	s := New(cfg)
	var r *repo
	if store.IsStore(source) {
		st, err := s.openStoreAll(source)
		if err != nil {
			return nil, err
		}
		src := &Source{srv: s, st: st, r: newRepo("", source, "store", nil, st.allMod, st.close)}
		src.Files()
		return src, nil
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

// Files lists the source's files, sorted by name: a store's as of the
// last Refresh (a file of a model that did not change is the same *File).
func (s *Source) Files() []*File {
	if s.st == nil {
		return s.files
	}
	s.st.mu.Lock()
	all, gen := s.st.all, s.st.allGen
	s.st.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byF == nil || gen != s.gen {
		byF := make(map[*file]*File, len(all))
		files := make([]*File, len(all))
		for i, f := range all {
			if files[i] = s.byF[f]; files[i] == nil {
				files[i] = &File{Name: f.name, Size: f.size, f: f}
			}
			byF[f] = files[i]
		}
		s.files, s.byF, s.gen = files, byF, gen
	}
	return s.files
}

// Live reports whether the source's files may change while it is open (a
// store: models added and removed).
func (s *Source) Live() bool { return s.st != nil }

// Refresh brings a store's files up to date with its index: a stat of
// the index (an s3:// store: its root's ETag every 2 s) and, when it
// changed, the models read again, waiting at most 2 s for that (a writer
// holding the index: the files as they were). It returns a number that
// changes whenever Files does (always 0 for sources that are not stores).
func (s *Source) Refresh(ctx context.Context) uint64 {
	if s.st == nil {
		return 0
	}
	s.st.fresh(ctx)
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.allGen
}

// Kind is "archive", "directory" or "store".
func (s *Source) Kind() string { return s.r.kind }

// ModTime is the source's modification time (a directory's newest
// file's; a store's index's when Files was last read).
func (s *Source) ModTime() time.Time {
	if s.st != nil {
		s.st.mu.Lock()
		defer s.st.mu.Unlock()
		return s.st.allMod.UTC().Truncate(time.Second)
	}
	return s.r.modified
}

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
