package serve

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"sync"
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

// block returns block bi of the file, decoded and checked against its CRC,
// from the server's block cache.
func (f *archiveFile) block(bi int) ([]byte, error) {
	return f.a.srv.cache.get(blockKey{f.a, f.fi, bi}, f.blocks[bi].Length, f.decoder(bi))
}

func (f *archiveFile) decoder(bi int) func([]byte) error {
	return func(dst []byte) error { return f.a.r.DecodeBlock(f.fi, bi, dst) }
}

// span returns the blocks [first, last) that cover [off, end).
func (f *archiveFile) span(off, end int64) (first, last int) {
	bl := f.blocks
	first = sort.Search(len(bl), func(i int) bool { return bl[i].Offset+bl[i].Length > off })
	last = sort.Search(len(bl), func(i int) bool { return bl[i].Offset >= end })
	return first, last
}

// readAt reads bytes of the file at off, decoding only the blocks that
// cover them (through the block cache). A read that starts where the
// previous one ended, or in the block after it, also starts decoding the
// blocks that follow in the background, up to the server's thread count at
// once, so that sequential readers (a FUSE mount's 128 KiB requests, the
// kernel's read-ahead) find them decoded.
func (f *archiveFile) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	size := f.info.Size
	if off < 0 {
		return 0, fmt.Errorf("serve: negative offset %d", off)
	}
	if off >= size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), size)
	first, last := f.span(off, end)
	prev := f.last.Swap(int64(last))
	if s := f.a.srv; s.cache.max > 0 {
		// the read's own blocks after the first, in parallel, and when
		// the read is sequential those ahead of it
		// (no further than a quarter of the cache, which must still hold
		// the blocks being read)
		stop := last
		if int64(first) == prev || int64(first) == prev-1 {
			stop = last + 4*cap(s.ahead)
		}
		budget := s.cache.max / 4
		for bi := first + 1; bi < min(stop, len(f.blocks)); bi++ {
			if bi >= last {
				if budget -= f.blocks[bi].Length; budget < 0 {
					break
				}
			}
			s.cache.prefetch(blockKey{f.a, f.fi, bi}, f.blocks[bi].Length, f.decoder(bi), s.ahead)
		}
	}
	n := 0
	for bi := first; bi < last; bi++ {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		data, err := f.block(bi)
		if err != nil {
			return n, err
		}
		b := f.blocks[bi]
		lo, hi := max(off, b.Offset)-b.Offset, min(end, b.Offset+b.Length)-b.Offset
		n += copy(p[n:], data[lo:hi])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// writeRange decodes the blocks that cover [off, off+n) — several at a
// time, each checked against its CRC — and writes the range in order.
func (f *archiveFile) writeRange(ctx context.Context, w io.Writer, off, n int64) error {
	if n == 0 {
		return nil
	}
	end := off + n
	bl := f.blocks
	first, last := f.span(off, end)
	threads := min(f.a.srv.threads(), last-first)
	type job struct {
		bi   int
		buf  []byte
		err  error
		done chan struct{}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *job)
	order := make(chan *job, 2*threads)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				j.buf, j.err = f.block(j.bi)
				close(j.done)
			}
		}()
	}
	go func() {
		defer close(work)
		defer close(order)
		for bi := first; bi < last; bi++ {
			j := &job{bi: bi, done: make(chan struct{})}
			select {
			case order <- j:
			case <-ctx.Done():
				return
			}
			select {
			case work <- j:
			case <-ctx.Done():
				close(j.done)
				return
			}
		}
	}()
	var werr error
	for j := range order {
		<-j.done
		if werr == nil && j.err != nil {
			werr = j.err
		}
		if werr == nil {
			werr = ctx.Err()
		}
		if werr == nil {
			b := bl[j.bi]
			lo, hi := max(off, b.Offset)-b.Offset, min(end, b.Offset+b.Length)-b.Offset
			if _, err := w.Write(j.buf[lo:hi]); err != nil {
				werr = err
			}
		}
		if werr != nil {
			cancel()
		}
	}
	wg.Wait()
	return werr
}
