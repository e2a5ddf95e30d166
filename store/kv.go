package store

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// The index is an ordered key-value store with named buckets. Directory
// stores keep it in bbolt (kv_bolt.go); the in-memory store (and the
// browser build, where bbolt does not compile) in memKV.

// Buckets of the index.
const (
	bUnits  = "units"  // Hash → unit record
	bModels = "models" // model name → manifest
	bFP     = "fp"     // dtype name · 0 · numel (8 bytes BE) · Hash → fingerprint; 0 · …: the fingerprints' index (lsh.go)
	bCasts  = "casts"  // version 1: SHA-256 of a cast's bytes → castRec (version 2: empty)
)

var buckets = []string{bUnits, bModels, bFP, bCasts}

// kv is the index backend.
type kv interface {
	view(fn func(tx) error) error
	update(fn func(tx) error) error
	close() error
}

// versioned is an index that tells when it changed (Store.IndexVersion).
type versioned interface {
	version() (string, error)
}

// tx is one transaction: reads see its own writes; an update's writes
// land together or not at all.
type tx interface {
	get(bucket string, key []byte) []byte // nil when absent; valid during the transaction
	put(bucket string, key, val []byte) error
	del(bucket string, key []byte) error
	// scan calls fn for each key with the prefix, in key order.
	scan(bucket string, prefix []byte, fn func(k, v []byte) error) error
	// walk calls fn for each key with the prefix, in key order from the
	// first key ≥ from (back: in reverse order from the last key < from),
	// while fn returns true.
	walk(bucket string, prefix, from []byte, back bool, fn func(k, v []byte) (bool, error)) error
}

// prefetcher is a read transaction that can read ahead, several at once,
// the parts of its index that hold keys (an s3:// store's shards), so that
// a batch of reads waits for one round trip instead of one each.
type prefetcher interface {
	prefetchKeys(want []bucketKey)
}

// readsAhead reports whether t does anything with a prefetch: an
// overlay passes its hints on to the index below it, so it reads ahead
// only where that index does. Callers that compute keys only to hint
// (prefetchPlans: the fingerprints' codes of every unit) ask first.
func readsAhead(t tx) bool {
	for {
		o, ok := t.(*overlay)
		if !ok {
			_, ok := t.(prefetcher)
			return ok
		}
		t = o.base
	}
}

// bucketKey is a key of a bucket.
type bucketKey struct {
	bucket string
	key    []byte
}

// prefetch asks t to read ahead the parts of its index holding want. A
// hint: a transaction that reads nothing ahead ignores it, and what
// cannot be read is reported by the reads that follow.
func prefetch(t tx, want ...bucketKey) {
	if p, ok := t.(prefetcher); ok && len(want) > 0 {
		p.prefetchKeys(want)
	}
}

// unitKeys is the keys of units hs' records, appended to to.
func unitKeys(to []bucketKey, hs ...Hash) []bucketKey {
	for i := range hs {
		to = append(to, bucketKey{bUnits, hs[i][:]})
	}
	return to
}

// memKV is an in-memory kv: updates work on a copy, swapped in on success.
type memKV struct {
	mu  sync.RWMutex
	b   map[string]map[string][]byte
	gen int // updates committed
}

func newMemKV() *memKV {
	m := &memKV{b: map[string]map[string][]byte{}}
	for _, name := range buckets {
		m.b[name] = map[string][]byte{}
	}
	return m
}

type memTx struct {
	b        map[string]map[string][]byte
	writable bool
}

func (m *memKV) view(fn func(tx) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return fn(&memTx{b: m.b})
}

func (m *memKV) update(fn func(tx) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := make(map[string]map[string][]byte, len(m.b))
	for name, bk := range m.b {
		c := make(map[string][]byte, len(bk))
		for k, v := range bk {
			c[k] = v
		}
		cp[name] = c
	}
	if err := fn(&memTx{b: cp, writable: true}); err != nil {
		return err
	}
	m.b = cp
	m.gen++
	return nil
}

// version counts the updates committed.
func (m *memKV) version() (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return strconv.Itoa(m.gen), nil
}

func (m *memKV) close() error { return nil }

func (t *memTx) bucket(name string) (map[string][]byte, error) {
	bk, ok := t.b[name]
	if !ok {
		return nil, fmt.Errorf("store: no bucket %q", name)
	}
	return bk, nil
}

func (t *memTx) get(bucket string, key []byte) []byte {
	bk, err := t.bucket(bucket)
	if err != nil {
		return nil
	}
	return bk[string(key)]
}

func (t *memTx) put(bucket string, key, val []byte) error {
	bk, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	if !t.writable {
		return fmt.Errorf("store: write in a read-only transaction")
	}
	bk[string(key)] = bytes.Clone(val)
	return nil
}

func (t *memTx) del(bucket string, key []byte) error {
	bk, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	if !t.writable {
		return fmt.Errorf("store: write in a read-only transaction")
	}
	delete(bk, string(key))
	return nil
}

func (t *memTx) scan(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	bk, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	var keys []string
	for k := range bk {
		if bytes.HasPrefix([]byte(k), prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := fn([]byte(k), bk[k]); err != nil {
			return err
		}
	}
	return nil
}

func (t *memTx) walk(bucket string, prefix, from []byte, back bool, fn func(k, v []byte) (bool, error)) error {
	bk, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	var keys []string
	for k := range bk {
		if bytes.HasPrefix([]byte(k), prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	i, _ := slices.BinarySearch(keys, string(from))
	step := 1
	if back {
		i, step = i-1, -1
	}
	for ; i >= 0 && i < len(keys); i += step {
		more, err := fn([]byte(keys[i]), bk[keys[i]])
		if err != nil || !more {
			return err
		}
	}
	return nil
}
