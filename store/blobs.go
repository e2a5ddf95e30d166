package store

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// blobs holds the chunk files ("packs"): immutable, named by the address
// of their bytes (version.go: BLAKE3, SHA-256 in version 1). An add writes the payloads of the units it stores as
// one pack; the index says where each unit's payload lies in which pack.
type blobs interface {
	// create starts a pack written part by part (packWriter.finish
	// stores it as put would).
	create() (packWriter, error)
	// put stores the concatenation of parts (written as they are, not
	// joined first) and returns its address; storing an existing address
	// is a no-op.
	put(parts ...[]byte) (Hash, error)
	// readAt reads len(p) bytes at off of pack id.
	readAt(id Hash, p []byte, off int64) error
	remove(id Hash) error
	// list calls fn for every pack present.
	list(fn func(id Hash, size int64) error) error
	// clean removes leftovers of interrupted writes.
	clean() (int, error)
	// setFormat sets the address function: format version v's (partsSum).
	setFormat(v int)
}

// dirBlobs keeps packs as files under dir/packs/xx/<hex>.pack, written to
// dir/tmp first, synced and renamed.
type dirBlobs struct {
	dir string
	sum func(...[]byte) Hash
	ver int // the format version, whose partsHash create's packs use
	mu  sync.Mutex
	fds map[Hash]*openPack // open packs, for reads
}

// openPack is an open pack file and its size (packs do not change). An
// open pack leaves the table (eviction, remove) at any time but is closed
// only when no read holds it (refs).
type openPack struct {
	f       *os.File
	size    int64
	refs    int  // reads in progress (dirBlobs.mu)
	dropped bool // out of the table: close when refs reaches 0
}

func (d *dirBlobs) path(id Hash) string {
	h := hex.EncodeToString(id[:])
	return filepath.Join(d.dir, "packs", h[:2], h+".pack")
}

func (d *dirBlobs) setFormat(v int) { d.sum, d.ver = partsSum(v), v }

func (d *dirBlobs) put(parts ...[]byte) (Hash, error) {
	id := d.sum(parts...)
	if _, err := os.Stat(d.path(id)); err == nil {
		return id, nil
	}
	w, err := d.newPack(nil)
	if err != nil {
		return id, err
	}
	for _, p := range parts {
		if err := w.write(p); err != nil {
			break
		}
	}
	return id, w.store(id)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}

// open returns pack id, opened if it is not open yet; the caller gives
// it back with done.
func (d *dirBlobs) open(id Hash) (*openPack, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if o, ok := d.fds[id]; ok {
		o.refs++
		return o, nil
	}
	f, err := os.Open(d.path(id))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if d.fds == nil {
		d.fds = map[Hash]*openPack{}
	}
	if len(d.fds) >= 64 {
		for k := range d.fds {
			d.drop(k)
		}
	}
	o := &openPack{f: f, size: st.Size(), refs: 1}
	d.fds[id] = o
	return o, nil
}

// done gives back a pack that open returned.
func (d *dirBlobs) done(o *openPack) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o.refs--
	if o.dropped && o.refs == 0 {
		o.f.Close()
	}
}

// drop takes pack id out of the table, closing it unless a read holds it
// (d.mu held).
func (d *dirBlobs) drop(id Hash) {
	o, ok := d.fds[id]
	if !ok {
		return
	}
	delete(d.fds, id)
	o.dropped = true
	if o.refs == 0 {
		o.f.Close()
	}
}

func (d *dirBlobs) readAt(id Hash, p []byte, off int64) error {
	o, err := d.open(id)
	if err != nil {
		return err
	}
	defer d.done(o)
	n, err := o.f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func (d *dirBlobs) remove(id Hash) error {
	d.mu.Lock()
	d.drop(id)
	d.mu.Unlock()
	return os.Remove(d.path(id))
}

func (d *dirBlobs) list(fn func(id Hash, size int64) error) error {
	root := filepath.Join(d.dir, "packs")
	return filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		var id Hash
		if b, err := hex.DecodeString(name); !ok || err != nil || len(b) != len(id) {
			return nil // not ours: left alone
		}
		hex.Decode(id[:], []byte(name))
		st, err := e.Info()
		if err != nil {
			return err
		}
		return fn(id, st.Size())
	})
}

func (d *dirBlobs) clean() (int, error) {
	ents, err := os.ReadDir(filepath.Join(d.dir, "tmp"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if err := os.Remove(filepath.Join(d.dir, "tmp", e.Name())); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (d *dirBlobs) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.fds {
		d.drop(k)
	}
}

// memBlobs keeps packs in memory (the browser, tests).
type memBlobs struct {
	sum func(...[]byte) Hash
	mu  sync.RWMutex
	m   map[Hash][]byte
}

func (m *memBlobs) setFormat(v int) { m.sum = partsSum(v) }

func (m *memBlobs) create() (packWriter, error) { return &gatherPack{bl: m}, nil }

func (m *memBlobs) put(parts ...[]byte) (Hash, error) {
	data := bytes.Join(parts, nil)
	id := m.sum(data)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[Hash][]byte{}
	}
	if _, ok := m.m[id]; !ok {
		m.m[id] = data
	}
	return id, nil
}

func (m *memBlobs) readAt(id Hash, p []byte, off int64) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.m[id]
	if !ok {
		return os.ErrNotExist
	}
	if off < 0 || off > int64(len(b)) || int64(len(p)) > int64(len(b))-off {
		return io.ErrUnexpectedEOF
	}
	copy(p, b[off:])
	return nil
}

func (m *memBlobs) remove(id Hash) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, id)
	return nil
}

func (m *memBlobs) list(fn func(id Hash, size int64) error) error {
	m.mu.RLock()
	ids := make(map[Hash]int64, len(m.m))
	for k, v := range m.m {
		ids[k] = int64(len(v))
	}
	m.mu.RUnlock()
	for k, n := range ids {
		if err := fn(k, n); err != nil {
			return err
		}
	}
	return nil
}

func (m *memBlobs) clean() (int, error) { return 0, nil }

func (d *dirBlobs) size(id Hash) (int64, bool) {
	o, err := d.open(id)
	if err != nil {
		return 0, false
	}
	d.done(o)
	return o.size, true
}

func (m *memBlobs) size(id Hash) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.m[id]
	return int64(len(b)), ok
}
