//go:build !js

package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// boltKV is the index of a directory store: one bbolt file. bbolt holds
// an exclusive file lock while it is open for writing, so the processes
// that open one store take turns (Options.LockWait bounds the wait).
type boltKV struct {
	db   *bolt.DB
	path string
}

func openBolt(path string, create bool, wait time.Duration) (kv, error) {
	k, err := openBoltDB(path, create, wait)
	if err != nil {
		return nil, err
	}
	return k, nil
}

func openBoltDB(path string, create bool, wait time.Duration) (k *boltKV, err error) {
	defer func() {
		if r := recover(); r != nil {
			k, err = nil, fmt.Errorf("%w: %s: %v", ErrIndexDamaged, path, r)
		}
	}()
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: wait, NoGrowSync: false, InitialMmapSize: initialMmap()})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, lockedError(path, wait)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrIndexDamaged, path, err)
	}
	if err := checkBoltSize(db, path); err != nil {
		db.Close()
		return nil, err
	}
	k = &boltKV{db: db, path: path}
	err = db.Update(func(t *bolt.Tx) error {
		for _, name := range buckets {
			if t.Bucket([]byte(name)) != nil {
				continue
			}
			if !create {
				return fmt.Errorf("%w: %s: bucket %q missing", ErrIndexDamaged, path, name)
			}
			if _, err := t.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return k, nil
}

// guard turns a panic inside bbolt (it panics on some damaged pages) into
// ErrIndexDamaged.
func (k *boltKV) guard(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: %v", ErrIndexDamaged, k.path, r)
	}
}

func (k *boltKV) view(fn func(tx) error) (err error) {
	defer k.guard(&err)
	return k.db.View(func(t *bolt.Tx) error { return fn(boltTx{t}) })
}

func (k *boltKV) update(fn func(tx) error) (err error) {
	defer k.guard(&err)
	return k.db.Update(func(t *bolt.Tx) error { return fn(boltTx{t}) })
}

func (k *boltKV) close() error { return k.db.Close() }

// version is bbolt's transaction id, one more per commit.
func (k *boltKV) version() (v string, err error) {
	err = k.view(func(t tx) error {
		v = strconv.Itoa(t.(boltTx).t.ID())
		return nil
	})
	return v, err
}

type boltTx struct{ t *bolt.Tx }

func (b boltTx) bucket(name string) (*bolt.Bucket, error) {
	bk := b.t.Bucket([]byte(name))
	if bk == nil {
		return nil, fmt.Errorf("%w: bucket %q missing", ErrIndexDamaged, name)
	}
	return bk, nil
}

func (b boltTx) get(bucket string, key []byte) []byte {
	bk, err := b.bucket(bucket)
	if err != nil {
		return nil
	}
	return bk.Get(key)
}

func (b boltTx) put(bucket string, key, val []byte) error {
	bk, err := b.bucket(bucket)
	if err != nil {
		return err
	}
	return bk.Put(key, val)
}

func (b boltTx) del(bucket string, key []byte) error {
	bk, err := b.bucket(bucket)
	if err != nil {
		return err
	}
	return bk.Delete(key)
}

func (b boltTx) scan(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	bk, err := b.bucket(bucket)
	if err != nil {
		return err
	}
	c := bk.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (b boltTx) walk(bucket string, prefix, from []byte, back bool, fn func(k, v []byte) (bool, error)) error {
	bk, err := b.bucket(bucket)
	if err != nil {
		return err
	}
	c := bk.Cursor()
	k, v := c.Seek(from)
	next := c.Next
	if back {
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		next = c.Prev
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = next() {
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func openKV(path string, opt Options) (kv, error) {
	if opt.ReadOnly && opt.Release {
		k, err := openReleased(path, opt.LockWait)
		if err != nil {
			return nil, err
		}
		return k, nil
	}
	if opt.ReadOnly {
		k, err := openBoltRO(path, opt.LockWait)
		if err != nil {
			return nil, err
		}
		return k, nil
	}
	return openBolt(path, false, opt.LockWait)
}

func openBoltRO(path string, wait time.Duration) (*boltKV, error) {
	k, err := tryBoltRO(path, wait)
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, lockedError(path, wait)
	}
	return k, err
}

// lockedError says that the index at path stayed locked for wait.
func lockedError(path string, wait time.Duration) error {
	return fmt.Errorf("store: %s: locked by another process (waited %v)", path, wait)
}

// tryBoltRO is openBoltRO, bolt.ErrTimeout itself when a writer held the
// lock for wait (0: no limit).
func tryBoltRO(path string, wait time.Duration) (k *boltKV, err error) {
	defer func() {
		if r := recover(); r != nil {
			k, err = nil, fmt.Errorf("%w: %s: %v", ErrIndexDamaged, path, r)
		}
	}()
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: wait, ReadOnly: true})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrIndexDamaged, path, err)
	}
	if err := checkBoltSize(db, path); err != nil {
		db.Close()
		return nil, err
	}
	return &boltKV{db: db, path: path}, nil
}

// checkBoltSize refuses an index file shorter than the pages its meta
// page names (a truncated index.db): bbolt would read them from beyond the
// end of its memory map, a fault that is not always a recoverable panic
// (under qemu on arm64 it killed the process).
func checkBoltSize(db *bolt.DB, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return db.View(func(t *bolt.Tx) error {
		if n := t.Size(); n > st.Size() {
			return fmt.Errorf("%w: %s: truncated (%d bytes, its pages need %d)", ErrIndexDamaged, path, st.Size(), n)
		}
		return nil
	})
}

// boltMmap is the index's initial mapping for writing (address space
// only): bbolt remaps as its file grows, and every remap first copies
// every node the transaction touched to the heap (a large model's commit
// grew the map eight times on the way to 16 MiB; ~10 % of its add's CPU).
// On Windows bbolt extends the file to the mapping, and 32-bit address
// spaces are short: there it stays 0.
const boltMmap = 1 << 30

func initialMmap() int {
	if runtime.GOOS == "windows" || math.MaxInt == math.MaxInt32 {
		return 0
	}
	return boltMmap
}
