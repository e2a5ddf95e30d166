package serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/codec"
)

// TestSourceReadAt reads every file of an archive and of a directory
// through Open: sequential 128 KiB reads (as FUSE sends them) decode each
// block once, random reads at block edges match, reads past the end give
// io.EOF.
func TestSourceReadAt(t *testing.T) {
	f := newFixture(t, Config{})
	for _, src := range []struct{ path, repo string }{{filepath.Join(f.dir, "syn.nzip"), "local/syn/"}, {filepath.Join(f.dir, "plain"), "local/dir/"}} {
		s, err := Open(src.path, Config{Log: discard()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n := 0
		for name := range f.files {
			if strings.HasPrefix(name, src.repo) {
				n++
			}
		}
		if len(s.Files()) != n {
			t.Errorf("%s: %d files", src.path, len(s.Files()))
		}
		ctx := context.Background()
		for _, file := range s.Files() {
			want, ok := f.files[src.repo+file.Name]
			if !ok || file.Size != int64(len(want)) {
				t.Fatalf("%s: unexpected file %s of %d bytes", src.path, file.Name, file.Size)
			}
			// sequential, 128 KiB at a time
			var got []byte
			buf := make([]byte, 128<<10)
			for off := int64(0); ; {
				n, err := file.ReadAt(ctx, buf, off)
				got = append(got, buf[:n]...)
				off += int64(n)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: sequential read differs", file.Name)
			}
			// random reads, around block edges too
			rng := rand.New(rand.NewPCG(uint64(len(want)), 1))
			var edges []int64
			if af, ok := file.f.c.(*archiveFile); ok {
				for _, b := range af.blocks {
					edges = append(edges, b.Offset)
				}
			}
			for i := range 200 {
				off := rng.Int64N(int64(len(want)) + 1)
				if len(edges) > 0 && i%2 == 0 {
					off = max(0, min(int64(len(want)), edges[rng.IntN(len(edges))]+rng.Int64N(9)-4))
				}
				p := make([]byte, rng.IntN(300_000))
				n, err := file.ReadAt(ctx, p, off)
				wantN := min(len(p), len(want)-int(off))
				if n != wantN || !bytes.Equal(p[:n], want[off:off+int64(n)]) {
					t.Fatalf("%s: ReadAt(%d bytes, %d) = %d, %v: wrong bytes", file.Name, len(p), off, n, err)
				}
				if (n < len(p)) != (err == io.EOF) || err != nil && err != io.EOF {
					t.Fatalf("%s: ReadAt(%d bytes, %d) = %d, %v", file.Name, len(p), off, n, err)
				}
			}
		}
	}
}

// TestBlockCache: sequential 128 KiB reads decode each block once with the
// cache (blocks straddle the reads), more than once without it; the cache
// stays within its bound.
func TestBlockCache(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.nzip")
	data := synthetic(3_000_000, 9)
	writeArchive(t, p, []string{"m.bin"}, [][]byte{data})
	for _, c := range []struct {
		bytes  int64
		cached bool
	}{{0, true}, {-1, false}, {1200 << 10, true}} {
		s, err := Open(p, Config{CacheBytes: c.bytes, Log: discard()})
		if err != nil {
			t.Fatal(err)
		}
		file := s.Files()[0]
		nb := len(file.f.c.(*archiveFile).blocks)
		buf := make([]byte, 128<<10)
		for off := int64(100); off < file.Size; off += int64(len(buf)) {
			if n, err := file.ReadAt(context.Background(), buf, off); err != nil && err != io.EOF || !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
				t.Fatalf("cache %d: read at %d: %v", c.bytes, off, err)
			}
		}
		cache := s.srv.cache
		got := int(cache.decodes.Load())
		if c.cached && got > nb || !c.cached && got <= nb {
			t.Errorf("cache %d: %d blocks decoded for %d blocks", c.bytes, got, nb)
		}
		cache.mu.Lock()
		if c.cached && cache.used > max(cache.max, 0)+(256<<10) {
			t.Errorf("cache %d: holds %d bytes", c.bytes, cache.used)
		}
		cache.mu.Unlock()
		s.Close()
		if cache.used != 0 || len(cache.m) != 0 {
			t.Errorf("cache %d: %d bytes, %d blocks left after Close", c.bytes, cache.used, len(cache.m))
		}
	}
}

// TestSourceCorrupt: a damaged block gives an error wrapping the codec's,
// never other bytes.
func TestSourceCorrupt(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.nzip")
	data := synthetic(1300_000, 5)
	writeArchive(t, p, []string{"m.bin"}, [][]byte{data})
	s, err := Open(p, Config{Log: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.Files()[0].f.c.(*archiveFile).blocks[1]
	fh, _ := os.OpenFile(p, os.O_RDWR, 0)
	one := []byte{0}
	fh.ReadAt(one, b.Payload+b.Compressed/2)
	one[0] ^= 0x55
	fh.WriteAt(one, b.Payload+b.Compressed/2)
	fh.Close()
	buf := make([]byte, 10)
	_, err = s.Files()[0].ReadAt(context.Background(), buf, b.Offset)
	var ce *codec.CorruptError
	if err == nil || !errors.Is(err, codec.ErrChecksum) && !errors.As(err, &ce) && !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("read of a damaged block: %v", err)
	}
}
