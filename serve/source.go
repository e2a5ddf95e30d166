package serve

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrChanged is returned when a source changed under the server (its
// size, modification time or identity differ from what was seen when it
// was added): the server answers with an error, never with other bytes.
var ErrChanged = errors.New("serve: source changed since it was added")

// content is the bytes of one served file.
type content interface {
	// write writes bytes [off, off+n) of the file to w in order. whole
	// says the range is the whole file: the source checks the file's
	// digest where it has one, before write returns.
	write(ctx context.Context, w io.Writer, off, n int64, whole bool) error
	// readAt reads len(p) bytes at off as io.ReaderAt does (io.EOF when
	// the file ends first), decoding only what covers them.
	readAt(ctx context.Context, p []byte, off int64) (int, error)
	// sha256 returns the file's SHA-256, decoding or reading it if the
	// source does not store it.
	sha256(ctx context.Context) ([32]byte, error)
	// check reports ErrChanged if the source changed since it was added.
	check() error
}

// file is one file of a repository.
type file struct {
	name string // slash-separated, relative
	size int64
	c    content
	sum  [32]byte // SHA-256, set before the repository is ready
}

// repo is one served repository.
type repo struct {
	id       string // ORG/NAME
	source   string // what it was made from (for messages)
	kind     string // "archive" or "directory"
	files    []*file
	byName   map[string]*file
	dirs     map[string]bool // every directory holding a file ("" is the root)
	modified time.Time       // the source's modification time
	close    func() error

	// a store's repository: the store and its models, in the store's order
	store  *storeSrc
	models []*storeModel

	ready  chan struct{} // closed when sums and commit are known
	err    error         // why the repository could not be hashed
	commit string        // 40 hex digits (commitID)
}

// newRepo indexes files.
func newRepo(id, source, kind string, files []*file, modified time.Time, closeFn func() error) *repo {
	r := &repo{id: id, source: source, kind: kind, files: files, byName: map[string]*file{},
		dirs: map[string]bool{"": true}, modified: modified.UTC().Truncate(time.Second), close: closeFn, ready: make(chan struct{})}
	for _, f := range files {
		r.byName[f.name] = f
		for d := parentDir(f.name); d != ""; d = parentDir(d) {
			r.dirs[d] = true
		}
	}
	return r
}

// parentDir returns the directory of a slash-separated path ("" at the top).
func parentDir(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return ""
}

// wait waits until the repository's sums are known.
func (r *repo) wait(ctx context.Context) error {
	select {
	case <-r.ready:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
