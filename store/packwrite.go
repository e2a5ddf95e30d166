package store

import (
	"bufio"
	"fmt"
	"hash"
	"os"
	"path/filepath"
)

// packWriter writes one pack part by part: a chunk file written while
// its units are still being coded (AddBatch), its address computed as
// it goes.
type packWriter interface {
	// write appends p (the writer may keep p until finish or abort).
	write(p []byte) error
	// finish stores what was written under its address and returns it.
	finish() (Hash, error)
	// abort drops what was written.
	abort()
}

// gatherPack is the packWriter of memory and S3 stores: it keeps the
// parts and puts them whole.
type gatherPack struct {
	bl    blobs
	parts [][]byte
}

func (g *gatherPack) write(p []byte) error  { g.parts = append(g.parts, p); return nil }
func (g *gatherPack) finish() (Hash, error) { return g.bl.put(g.parts...) }
func (g *gatherPack) abort()                { g.parts = nil }

// dirPack is a pack being written to dir/tmp: synced and renamed to its
// address by store (or finish), removed by abort.
type dirPack struct {
	d   *dirBlobs
	f   *os.File
	w   *bufio.Writer
	h   hash.Hash // the address as it is written (nil: the caller knows it)
	err error     // the first write error
}

func (d *dirBlobs) create() (packWriter, error) { return d.newPack(partsHash(d.ver)) }

// newPack starts a pack in dir/tmp, hashed with h unless h is nil.
func (d *dirBlobs) newPack(h hash.Hash) (*dirPack, error) {
	f, err := os.CreateTemp(filepath.Join(d.dir, "tmp"), "pack-*")
	if err != nil {
		return nil, fmt.Errorf("store: writing pack: %w", err)
	}
	// small parts joined, large ones written as they are
	return &dirPack{d: d, f: f, w: bufio.NewWriterSize(f, 1<<20), h: h}, nil
}

func (p *dirPack) write(b []byte) error {
	if p.err != nil {
		return p.err
	}
	if p.h != nil {
		p.h.Write(b)
	}
	_, p.err = p.w.Write(b)
	return p.err
}

func (p *dirPack) finish() (Hash, error) {
	var id Hash
	p.h.Sum(id[:0])
	if _, err := os.Stat(p.d.path(id)); err == nil {
		p.abort() // stored already
		return id, nil
	}
	return id, p.store(id)
}

func (p *dirPack) abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}

// store syncs the pack and renames it to pack id's path.
func (p *dirPack) store(id Hash) error {
	err := p.err
	if err == nil {
		err = p.w.Flush()
	}
	if err == nil {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	dst := p.d.path(id)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(dst), 0o755)
	}
	if err == nil {
		hook("pack-written")
		err = os.Rename(p.f.Name(), dst)
	}
	if err != nil {
		os.Remove(p.f.Name())
		return fmt.Errorf("store: writing pack: %w", err)
	}
	return syncDir(filepath.Dir(dst))
}
