package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// Store errors.
var (
	// ErrNotFound: no model of that name.
	ErrNotFound = errors.New("store: no such model")
	// ErrExists: a model of that name is already stored.
	ErrExists = errors.New("store: model already stored")
	// ErrIndexDamaged: the index cannot be read or holds a damaged record.
	ErrIndexDamaged = errors.New("store: index damaged")
	// ErrChunkDamaged: a chunk's bytes do not match what the index says.
	ErrChunkDamaged = errors.New("store: chunk damaged")
	// ErrNotStore: the directory is not a store (no index).
	ErrNotStore = errors.New("store: not a store (run nzip store init)")
)

// maxDepth bounds the base chains the index may hold (a delta of a delta
// of ...): decoding a unit decodes at most this many others. Stores made
// before chains were bounded hold chains up to this long.
const maxDepth = 16

// maxChain bounds the chains an add makes: a new delta's base chain is at
// most this deep; a unit whose nearest base would make it deeper is coded
// against that chain's root (or alone, whichever is smaller). A cast adds
// one more step (no payload: decoding it decodes its F32 base).
const maxChain = 3

// indexName is the index file in a directory store.
const indexName = "index.db"

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// Threads bounds the units coded or decoded at once; 0 means GOMAXPROCS.
	Threads int
	// ReadOnly opens the index shared: readers run side by side, a writer
	// waits for them.
	ReadOnly bool
	// Release, with ReadOnly, holds a directory store's index (and its
	// shared lock) only while a read needs it, for long-lived readers such
	// as nzip serve: each read opens it, waiting while a writer holds it,
	// and the last read in progress closes it, so that writers (add, rm,
	// gc, repack) take their turns between reads instead of waiting until
	// Close, and every read sees what the last writer committed. Reads
	// that follow each other without a pause make room for a waiting
	// writer (release.go). A chunk file that a writer removed after its
	// record was read is looked up again in the index once; an index
	// migrated meanwhile (nzip store migrate) fails the reads with
	// ErrMigrated. Close does not wait for a writer: reads waiting for
	// the lock then fail. s3:// stores hold no lock: it changes nothing
	// there.
	Release bool
	// LockWait bounds how long Open (and, with Release, each read) waits
	// for another process holding the store; 0 waits as long as it takes.
	LockWait time.Duration
	// Exhaustive finds a new delta's base among every stored unit of its
	// type and size, as stores did before the fingerprints' index
	// (lsh.go), instead of among the few the index puts near it: for
	// measuring the index.
	Exhaustive bool
}

func (o Options) threads() int {
	if o.Threads > 0 {
		return o.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Store is a set of models kept as deduplicated, cross-coded units. A
// directory store holds its index (bbolt) and its chunk files; while a
// Store is open for writing no other process can open it.
type Store struct {
	dir       string // "" for an in-memory store
	kv        kv
	bl        blobs
	opt       Options
	read      atomic.Int64 // payload bytes read from chunks
	decoded   atomic.Int64 // unit bytes decoded (bases included)
	cache     *rawCache
	ver       int               // format version (version.go)
	maxDecode float64           // decode bound (maxdecode.go; 0: unbounded)
	sum       func([]byte) Hash // the address of bytes: BLAKE3 (v2) or SHA-256 (v1)
}

// IsS3 reports whether a store location names a store on S3-compatible
// object storage (s3://bucket/prefix; s3.go) rather than a directory.
func IsS3(loc string) bool { return strings.HasPrefix(loc, "s3://") }

// Init creates an empty store at dir: a directory (made if missing) or
// s3://bucket/prefix (the bucket must exist), of the latest format
// (version 2, version.go). It must not hold a store already.
func Init(dir string) error { return initVersion(dir, latestVersion) }

// InitWith is Init making a store with settings o (a decode bound).
func InitWith(dir string, o InitOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	return initAt(dir, latestVersion, o)
}

// initVersion is Init making a store of format version v (tests make
// version 1 stores with it, as builds before version 2 made them).
func initVersion(dir string, v int) error { return initAt(dir, v, InitOptions{}) }

// initAt makes a store of format version v with settings o.
func initAt(dir string, v int, o InitOptions) error {
	if IsS3(dir) {
		return initS3(dir, v, o)
	}
	if _, err := os.Stat(filepath.Join(dir, indexName)); err == nil {
		return fmt.Errorf("store: %s already holds a store", dir)
	}
	for _, d := range []string{dir, filepath.Join(dir, "packs"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	k, err := openBolt(filepath.Join(dir, indexName), true, time.Second)
	if err != nil {
		return err
	}
	err = k.update(initRecords(v, o))
	if cerr := k.close(); err == nil {
		err = cerr
	}
	return err
}

// Open opens the store at dir: a directory or s3://bucket/prefix.
func Open(dir string, opt Options) (*Store, error) {
	if IsS3(dir) {
		return openS3(dir, opt)
	}
	p := filepath.Join(dir, indexName)
	if _, err := os.Stat(p); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotStore, dir)
	}
	k, err := openKV(p, opt)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, kv: k, bl: &dirBlobs{dir: dir}, opt: opt, cache: newRawCache(256 << 20)}
	if err := s.readFormat(); err != nil {
		s.Close()
		return nil, err
	}
	if !opt.ReadOnly {
		if err := s.ensureLSH(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// NewMem returns an empty in-memory store (the browser's, tests') of the
// latest format.
func NewMem(opt Options) *Store { return newMemVersion(opt, latestVersion) }

// newMemVersion is NewMem of format version v.
func newMemVersion(opt Options, v int) *Store { return newMemWith(opt, v, InitOptions{}) }

// newMemWith is NewMem of format version v with settings o (tests).
func newMemWith(opt Options, v int, o InitOptions) *Store {
	k := newMemKV()
	k.update(initRecords(v, o)) // cannot fail in memory
	s := &Store{kv: k, bl: &memBlobs{}, opt: opt, cache: newRawCache(256 << 20)}
	s.readFormat()
	return s
}

// Close releases the store (and its lock).
func (s *Store) Close() error {
	if d, ok := s.bl.(*dirBlobs); ok {
		d.close()
	}
	return s.kv.close()
}

// BytesRead is the payload bytes read from chunk files so far.
func (s *Store) BytesRead() int64 { return s.read.Load() }

// BytesDecoded is the original bytes of the units decoded so far, the
// bases of deltas and casts included.
func (s *Store) BytesDecoded() int64 { return s.decoded.Load() }

// Dir is the store's directory ("" for an in-memory store).
func (s *Store) Dir() string { return s.dir }
