package serve

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// DefaultCacheBytes is the size of the block cache when Config.CacheBytes
// is 0.
const DefaultCacheBytes = 256 << 20

// blockKey names one decoded block: block bi of file fi of an archive, or
// the unit with address h of a store (src is the *archive or *storeSrc).
type blockKey struct {
	src    any
	fi, bi int
	h      [32]byte
}

// cacheEntry is a decoded block, or one being decoded (done not closed).
type cacheEntry struct {
	key  blockKey
	data []byte // set before done is closed; never changed after
	err  error
	done chan struct{}
	elem *list.Element // in the LRU list once decoded
}

// blockCache holds decoded, CRC-checked blocks, the least recently used
// dropped first once they exceed max bytes. A block being decoded is
// decoded once: other readers of it wait. Cached slices are never written
// to or reused, so a reader may keep one after it was dropped.
type blockCache struct {
	mu   sync.Mutex
	max  int64 // 0: nothing is kept
	used int64
	lru  list.List // front: most recent
	m    map[blockKey]*cacheEntry
	// decodes counts the blocks decoded (for tests: a sequential read
	// decodes each block once)
	decodes atomic.Int64
}

func newBlockCache(max int64) *blockCache {
	return &blockCache{max: max, m: map[blockKey]*cacheEntry{}}
}

// get returns the block, decoding it with fill (into a new slice of size
// bytes) unless it is cached or being decoded.
func (c *blockCache) get(k blockKey, size int64, fill func([]byte) error) ([]byte, error) {
	e, owner := c.start(k)
	if owner {
		c.fill(e, size, fill)
	}
	<-e.done
	return e.data, e.err
}

// prefetch starts decoding the block in the background unless it is cached
// or being decoded, and unless sem (the bound of background decodes) is
// full; it reports whether it started.
func (c *blockCache) prefetch(k blockKey, size int64, fill func([]byte) error, sem chan struct{}) bool {
	if c.max == 0 {
		return false
	}
	c.mu.Lock()
	if c.m[k] != nil {
		c.mu.Unlock()
		return false
	}
	select {
	case sem <- struct{}{}:
	default:
		c.mu.Unlock()
		return false
	}
	e := &cacheEntry{key: k, done: make(chan struct{})}
	c.m[k] = e
	c.mu.Unlock()
	go func() {
		defer func() { <-sem }()
		c.fill(e, size, fill)
	}()
	return true
}

// start finds the entry of k, or adds a pending one that the caller
// (owner) must fill.
func (c *blockCache) start(k blockKey) (e *cacheEntry, owner bool) {
	if c.max == 0 {
		return &cacheEntry{key: k, done: make(chan struct{})}, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[k]; e != nil {
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		return e, false
	}
	e = &cacheEntry{key: k, done: make(chan struct{})}
	c.m[k] = e
	return e, true
}

// fill decodes a pending entry and publishes it (a failed decode is not
// kept: the next reader tries again and fails again, with its own log).
func (c *blockCache) fill(e *cacheEntry, size int64, fill func([]byte) error) {
	data := make([]byte, size)
	c.decodes.Add(1)
	err := fill(data)
	defer close(e.done)
	if err != nil {
		e.err = err
	} else {
		e.data = data
	}
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.m, e.key)
		return
	}
	e.elem = c.lru.PushFront(e)
	c.used += size
	for c.used > c.max && c.lru.Len() > 1 {
		old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
		delete(c.m, old.key)
		c.used -= int64(len(old.data))
	}
}

// forget drops every block of source src (when it is closed).
func (c *blockCache) forget(src any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if k.src != src || e.elem == nil {
			continue
		}
		c.lru.Remove(e.elem)
		delete(c.m, k)
		c.used -= int64(len(e.data))
	}
}
