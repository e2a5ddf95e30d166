package serve

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"sync/atomic"

	"neuralzip/codec"
)

// archive is an opened .nzip source.
type archive struct {
	path string
	f    *os.File
	st   os.FileInfo
	r    *codec.Reader
	srv  *Server
}

// openArchive opens an archive source; every file of it is one file of the
// repository under its stored name.
func (s *Server) openArchive(id, p string) (*repo, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := codec.NewReader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("serve: %s: %w", p, err)
	}
	if _, how := r.SetupID(); how == "external" {
		f.Close()
		return nil, fmt.Errorf("serve: %s references an external setup, which serve does not take", p)
	}
	if r.UsesRef() {
		f.Close()
		return nil, fmt.Errorf("serve: %s is coded against a reference model, which serve does not take", p)
	}
	a := &archive{path: p, f: f, st: st, r: r, srv: s}
	var files []*file
	seen := map[string]bool{}
	for i, fi := range r.Files() {
		name := fi.Name
		if !validName(name) || seen[name] {
			f.Close()
			return nil, fmt.Errorf("serve: %s: file name %q cannot be served", p, name)
		}
		seen[name] = true
		files = append(files, &file{name: name, size: fi.Size, c: &archiveFile{a: a, fi: i, info: fi, blocks: fi.Blocks()}})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return newRepo(id, p, "archive", files, st.ModTime(), func() error {
		s.cache.forget(a)
		r.Close()
		return f.Close()
	}), nil
}

// validName reports whether an archive's (or a directory's) relative file
// name can be served: a clean relative slash-separated path whose segments
// pass filePath.
func validName(name string) bool {
	if name == "" || path.IsAbs(name) || path.Clean(name) != name {
		return false
	}
	_, ok := filePath(splitSlash(name))
	return ok
}

func splitSlash(p string) []string {
	var out []string
	for {
		i := 0
		for i < len(p) && p[i] != '/' {
			i++
		}
		out = append(out, p[:i])
		if i == len(p) {
			return out
		}
		p = p[i+1:]
	}
}

// archiveFile is one file of an archive.
type archiveFile struct {
	a      *archive
	fi     int
	info   *codec.FileInfo
	blocks []codec.BlockInfo
	last   atomic.Int64 // the block after the last read's (readAt), to spot sequential reads
}

func (f *archiveFile) check() error {
	st, err := os.Stat(f.a.path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrChanged, err)
	}
	if st.Size() != f.a.st.Size() || !st.ModTime().Equal(f.a.st.ModTime()) || !os.SameFile(st, f.a.st) {
		return fmt.Errorf("%w: %s", ErrChanged, f.a.path)
	}
	return nil
}

func (f *archiveFile) sha256(ctx context.Context) ([32]byte, error) {
	if f.info.Digest == codec.DigestSHA256 {
		return f.info.SHA256, nil
	}
	key := ""
	if f.a.srv.cfg.CacheDir != "" {
		key = fmt.Sprintf("%x-%d", f.info.Sum, f.info.Size)
		if sum, ok := f.a.srv.cachedSum(key); ok {
			return sum, nil
		}
	}
	// decode the whole file once: WriteFile checks the stored digest, so the
	// SHA-256 is that of the original bytes
	h := sha256.New()
	if err := f.a.r.WriteFile(ctx, h, f.fi, codec.DecodeOptions{Threads: f.a.srv.cfg.Threads}); err != nil {
		return [32]byte{}, err
	}
	sum := [32]byte(h.Sum(nil))
	if key != "" {
		f.a.srv.storeSum(key, sum)
	}
	return sum, nil
}

func (f *archiveFile) write(ctx context.Context, w io.Writer, off, n int64, whole bool) error {
	if whole {
		return f.a.r.WriteFile(ctx, w, f.fi, codec.DecodeOptions{Threads: f.a.srv.cfg.Threads})
	}
	return f.writeRange(ctx, w, off, n)
}

// The file as blocks (blocked): the archive's blocks, each decoded and
// checked against its CRC.
func (f *archiveFile) numBlocks() int { return len(f.blocks) }
func (f *archiveFile) blockSpan(bi int) (off, n int64) {
	return f.blocks[bi].Offset, f.blocks[bi].Length
}
func (f *archiveFile) blockKey(bi int) blockKey { return blockKey{src: f.a, fi: f.fi, bi: bi} }
func (f *archiveFile) srv() *Server             { return f.a.srv }
func (f *archiveFile) lastRead() *atomic.Int64  { return &f.last }

func (f *archiveFile) decoder(bi int) func([]byte) error {
	return func(dst []byte) error { return f.a.r.DecodeBlock(f.fi, bi, dst) }
}

func (f *archiveFile) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	return readBlocks(ctx, f, f.info.Size, p, off)
}

func (f *archiveFile) writeRange(ctx context.Context, w io.Writer, off, n int64) error {
	return writeBlocks(ctx, f, w, off, n)
}
