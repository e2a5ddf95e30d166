package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// s3KV is the index of an s3:// store as a root object and immutable
// shard objects (s3shard.go), on any s3Objects: S3 (s3.go) or memory
// (tests).
//
// Reads: the root is read at open (and again by a read that finds it
// older than s3RootMaxAge, and by every update); a shard is read on the
// first access to a key in its range and kept while the root the store
// holds names it (it never changes: its name is its SHA-256). A get of one
// model reads the root, the shard of its manifest and the shards of its
// units' records, not the whole index. A batch of reads names its keys
// first (prefetch, kv.go) and the shards still to read are fetched
// s3Parallel at a time, so that it waits about one round trip, not one
// per shard; a commit reads the shards it rewrites the same way.
//
// Writes: an update runs on the root it just read, with its writes in an
// overlay; the commit rewrites only the shards whose key range holds a
// written key (cut in equal pieces of at most about s3ShardMax/2 when one
// grows past s3ShardMax, merged with a neighbour when deletions leave it
// small, dropped when it empties), writes them as new objects, then
// replaces the root with a conditional PUT (If-Match the ETag it was
// read with). A writer that lost the race waits a random while, reads
// the new root and redoes its update, up to s3Retries times.
//
// Shards never change; a commit that lands lists the shards it took out
// of the root, and those its lost tries wrote, in a retired object named
// by the time (s3shard.go). Every s3SweepEvery commits, a commit lists
// the retired objects and deletes the shards of those older than
// s3GCGrace (never one its root names), then the lists. A reader holds a
// root at most s3RootMaxAge before reading it again, so a shard it may
// still read is never deleted under it as long as one read (one view)
// takes less than s3GCGrace − s3RootMaxAge (8 minutes). Shards of a
// commit that crashed before its root landed are named by nothing: every
// s3AdoptEvery sweeps, a commit lists the shards and retires those that
// its root does not name and that are older than s3GCGrace (adopt).
//
// A store written by the single-object index (s3index.go: prefix/index
// holding every bucket) opens as it is, read whole; its first update
// writes it as shards and replaces prefix/index with the root (If-Match
// the old index's ETag, so a writer of either kind racing it loses and
// redoes). Versions before the root read it as a damaged index.
type s3KV struct {
	o    s3Objects
	name string // bucket/prefix, for messages

	mu  sync.Mutex // updates, one at a time in this process
	rmu sync.Mutex // root reads

	smu    sync.RWMutex // guards the fields below
	root   *s3Root      // nil while legacy
	legacy *memKV       // the single-object index, until the first update converts it
	etag   string       // of the object at "index"; "" when none (init)
	readAt time.Time    // when the root was read

	cmu   sync.Mutex
	cache map[Hash]*s3ShardEntry

	// format, when pinned, is the format version the store was opened
	// with: an update or view on a root of another format
	// (a migration switched the store under this open) fails with
	// ErrMigrated instead of writing units of one format into the other's
	// index; checked is the ETag of the last root found right
	pinned  bool
	format  int
	checked string
	// noSweep: commits never sweep or adopt (the index a migration builds
	// beside the store's: shards its root does not name are the live
	// store's)
	noSweep bool
}

type s3ShardEntry struct {
	once sync.Once
	s    *s3Shard
	err  error
}

// s3Objects is the object storage of an s3:// index; keys are relative
// to the store's prefix.
type s3Objects interface {
	// get reads object key (at most max bytes, else ErrIndexDamaged); when
	// its ETag is etag it returns nil bytes and that ETag.
	get(ctx context.Context, key string, max int64, etag string) ([]byte, string, error)
	// put writes object key, if its ETag is match ("": any), or if it does
	// not exist (noneMatch); errS3Precondition when it is not so.
	put(ctx context.Context, key string, data []byte, match string, noneMatch bool) (string, error)
	del(ctx context.Context, key string) error
	// list calls fn with the key and the time written of each object
	// under prefix.
	list(ctx context.Context, prefix string, fn func(key string, mod time.Time) error) error
}

var (
	// errS3NotFound: no such object.
	errS3NotFound = errors.New("store: no such object")
	// errS3Precondition: a conditional write found another ETag.
	errS3Precondition = errors.New("store: precondition failed")
)

// s3Retries bounds the index writes an update tries against concurrent writers.
const s3Retries = 20

// Tunables (variables so that tests can make shards small).
var (
	// s3GCGrace: gc keeps unused packs younger than this (an add in flight
	// writes its pack before its index, and S3 has no lock to hold it off);
	// a commit deletes shards retired longer ago than this.
	s3GCGrace = 10 * time.Minute
	// s3GCRecheck: a gc, sweep or adopt deleting checks again that no
	// migration is in flight once this long has passed since its last
	// check; a migration waits 2×s3GCRecheck after its root appeared
	// before it checks its objects exist (s3hold.go).
	s3GCRecheck = 15 * time.Second
	// s3ShardMax: a shard grown past it is split.
	s3ShardMax = 256 << 10
	// s3RootMaxAge: a read re-reads a root older than this.
	s3RootMaxAge = 2 * time.Minute
	// s3SweepEvery: every so many commits (by generation), the commit
	// deletes what was retired more than s3GCGrace ago.
	s3SweepEvery = 16
	// s3AdoptEvery: every so many sweeps, the commit also looks for
	// shards that nothing names (adopt).
	s3AdoptEvery = 16
	// s3Parallel bounds the shard objects written, and read, at once.
	s3Parallel = 8
)

const (
	s3RootKey       = "index"
	s3ShardPrefix   = "shards/"
	s3RetiredPrefix = "retired/"
	// s3MigratePrefix holds the roots of the indexes migrations build
	// (migrate_s3.go), one per migration (<unix time>-<random>), so that
	// two migrations at once never share one: the first switch fails the
	// other's.
	s3MigratePrefix = "migrate/"
	maxRootBytes    = 64 << 20
)

func s3ShardKey(id Hash) string { return s3ShardPrefix + hex.EncodeToString(id[:]) }

func newS3KV(o s3Objects, name string) *s3KV {
	return &s3KV{o: o, name: name, cache: map[Hash]*s3ShardEntry{}}
}

// initS3KV makes a new index: an empty root with the fingerprints' index,
// written if no object is at "index".
func initS3KV(o s3Objects, name string) error { return initS3KVWith(o, name, buildLSH) }

// initS3KVWith makes a new index whose first transaction is first.
func initS3KVWith(o s3Objects, name string, first func(tx) error) error {
	k := newS3KV(o, name)
	k.root = newS3Root()
	k.readAt = time.Now()
	if err := k.update(first); err != nil {
		if errors.Is(err, errS3Precondition) {
			return fmt.Errorf("store: %s already holds a store", name)
		}
		return err
	}
	return nil
}

// refresh reads the object at "index" when it changed since it was read.
func (k *s3KV) refresh(ctx context.Context) error {
	k.rmu.Lock()
	defer k.rmu.Unlock()
	k.smu.RLock()
	etag := k.etag
	k.smu.RUnlock()
	raw, tag, err := k.o.get(ctx, s3RootKey, maxIndexBytes, etag)
	if err != nil {
		return err
	}
	now := time.Now()
	if raw == nil && tag == etag && etag != "" {
		k.smu.Lock()
		k.readAt = now
		k.smu.Unlock()
		return nil
	}
	var root *s3Root
	var legacy *memKV
	if isRoot(raw) {
		if len(raw) > maxRootBytes {
			return fmt.Errorf("%w: %s: a root of %d bytes", ErrIndexDamaged, k.name+s3RootKey, len(raw))
		}
		if root, err = decodeRoot(raw); err != nil {
			return fmt.Errorf("%s: %w", k.name+s3RootKey, err)
		}
	} else {
		b, err := decodeIndex(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", k.name+s3RootKey, err)
		}
		legacy = &memKV{b: b}
	}
	k.smu.Lock()
	k.root, k.legacy, k.etag, k.readAt = root, legacy, tag, now
	k.smu.Unlock()
	k.prune(root)
	return nil
}

// prune drops the cached shards that root does not name (a read on an
// older root reads them again), so that a long open holds about one index.
func (k *s3KV) prune(root *s3Root) {
	in := map[Hash]bool{}
	if root != nil {
		for _, refs := range root.shards {
			for _, r := range refs {
				in[r.id] = true
			}
		}
	}
	k.cmu.Lock()
	for id := range k.cache {
		if !in[id] {
			delete(k.cache, id)
		}
	}
	k.cmu.Unlock()
}

// s3Base is a read transaction on one root (or on the legacy index).
type s3Base interface {
	tx
	failed() error
}

func (k *s3KV) snapshot() (s3Base, *s3Root, *memKV, string) {
	k.smu.RLock()
	defer k.smu.RUnlock()
	if k.root == nil {
		return &legacyTx{memTx{b: k.legacy.b}}, nil, k.legacy, k.etag
	}
	return &s3Snap{k: k, root: k.root}, k.root, nil, k.etag
}

func (k *s3KV) view(fn func(tx) error) error {
	k.smu.RLock()
	old := time.Since(k.readAt) > s3RootMaxAge
	k.smu.RUnlock()
	if old {
		if err := k.refresh(context.Background()); err != nil {
			return err
		}
	}
	base, _, _, etag := k.snapshot()
	if err := k.checkFormat(base, etag); err != nil {
		return err
	}
	err := fn(base)
	if e := base.failed(); e != nil {
		return e
	}
	return err
}

// ErrMigrated: a store was migrated to another format version while this
// Store had it open (nzip store migrate switched its index: an s3://
// store's, or a directory store's opened with Options.Release): open it
// again.
var ErrMigrated = errors.New("store: the store was migrated to another format version while open (open it again)")

// pinFormat makes every later view and update check that the root is of
// format version v.
func (k *s3KV) pinFormat(v int) {
	k.smu.Lock()
	defer k.smu.Unlock()
	k.pinned, k.format, k.checked = true, v, ""
}

// checkFormat is ErrMigrated when base (the root with ETag etag) is not
// of the pinned format (read once per root).
func (k *s3KV) checkFormat(base s3Base, etag string) error {
	k.smu.RLock()
	pinned, want, checked := k.pinned, k.format, k.checked
	k.smu.RUnlock()
	if !pinned || (etag == checked && etag != "") {
		return nil
	}
	got, err := formatOf(base)
	if e := base.failed(); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	if got != want {
		return ErrMigrated
	}
	k.smu.Lock()
	k.checked = etag
	k.smu.Unlock()
	return nil
}

func (k *s3KV) close() error { return nil }

// version reads the root again if it changed (a conditional GET) and
// returns its ETag, which every commit changes.
func (k *s3KV) version() (string, error) {
	if err := k.refresh(context.Background()); err != nil {
		return "", err
	}
	k.smu.RLock()
	defer k.smu.RUnlock()
	return k.etag, nil
}

// update runs fn on the current root and commits its writes (see s3KV).
func (k *s3KV) update(fn func(tx) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	ctx := context.Background()
	var lost []Hash // shards written by tries that did not land
	for try := 0; ; try++ {
		// the latest root: a writer that has just landed and committed
		// again on its own root without reading it would win every race
		// against writers that must read theirs (TestS3ConcurrentWriters
		// starved one of four); init has nothing to read yet
		k.smu.RLock()
		fresh := k.etag == "" && k.root != nil
		k.smu.RUnlock()
		if !fresh {
			if err := k.refresh(ctx); err != nil {
				return err
			}
		}
		base, root, legacy, etag := k.snapshot()
		if err := k.checkFormat(base, etag); err != nil {
			return err
		}
		o := newOverlay(base)
		err := fn(o)
		if e := base.failed(); e != nil {
			return e
		}
		if err != nil {
			return err
		}
		if !o.wrote() {
			return nil // nothing to write (a legacy index stays as it is)
		}
		now := time.Now()
		next, puts, err := k.commit(root, legacy, o.w)
		if err != nil {
			return err
		}
		if err := k.putShards(ctx, puts); err != nil {
			return fmt.Errorf("store: writing an index shard of %s: %w", k.name, err)
		}
		tag, err := k.o.put(ctx, s3RootKey, encodeRoot(next), etag, etag == "")
		if err == nil {
			k.cmu.Lock()
			for _, p := range puts {
				e := &s3ShardEntry{s: p.s}
				e.once.Do(func() {})
				k.cache[p.id] = e
			}
			k.cmu.Unlock()
			k.smu.Lock()
			k.root, k.legacy, k.etag, k.readAt = next, nil, tag, now
			k.smu.Unlock()
			k.prune(next)
			// best effort from here: what is left behind is only bytes
			if ids := retire(root, next, lost); len(ids) > 0 {
				k.o.put(ctx, fmt.Sprintf("%s%012d-%016x", s3RetiredPrefix, now.Unix(), next.gen), encodeRetired(ids), "", false)
			}
			if next.gen%uint64(s3SweepEvery) == 0 && !k.noSweep {
				k.sweep(ctx, next, now)
			}
			if next.gen%uint64(s3SweepEvery*s3AdoptEvery) == 0 && !k.noSweep {
				k.adopt(ctx, next, now)
			}
			return nil
		}
		for _, p := range puts {
			lost = append(lost, p.id)
		}
		if !errors.Is(err, errS3Precondition) || try >= s3Retries || etag == "" {
			return fmt.Errorf("store: writing the index of %s: %w", k.name, err)
		}
		// another writer landed first: wait a random while, growing with
		// the tries (up to 320 ms), so that writers racing on and on
		// spread out instead of one losing every time
		time.Sleep(rand.N(5 * time.Millisecond << min(try, 6)))
	}
}

// putShards writes the shard objects of a commit, s3Parallel at a time.
func (k *s3KV) putShards(ctx context.Context, puts []s3Put) error {
	return parallelOrdered(len(puts), s3Parallel, func(i int) error {
		_, err := k.o.put(ctx, s3ShardKey(puts[i].id), puts[i].raw, "", false)
		return err
	})
}

// s3ShardAt is shard i of a bucket whose shards are refs.
type s3ShardAt struct {
	bucket string
	refs   []s3ShardRef
	i      int
}

// fetchShards reads shards at into the cache, s3Parallel at a time (one
// GET after another would add their latencies); its error is that of the
// first shard in at's order that could not be read, naming it.
func (k *s3KV) fetchShards(at []s3ShardAt) error {
	return parallelOrdered(len(at), s3Parallel, func(i int) error {
		_, err := k.shard(at[i].bucket, at[i].refs, at[i].i)
		return err
	})
}

// shardsAt is shards idx of bucket's refs.
func shardsAt(bucket string, refs []s3ShardRef, idx []int) []s3ShardAt {
	at := make([]s3ShardAt, len(idx))
	for x, i := range idx {
		at[x] = s3ShardAt{bucket, refs, i}
	}
	return at
}

// cached reports whether shard id has been read (or is being read).
func (k *s3KV) cached(id Hash) bool {
	k.cmu.Lock()
	defer k.cmu.Unlock()
	return k.cache[id] != nil
}

// sweep deletes the shards that commits retired more than s3GCGrace
// before now (by the times in the names of the lists), unless root names
// them, and then the lists; it deletes none while a migration is in
// flight (s3hold.go).
func (k *s3KV) sweep(ctx context.Context, root *s3Root, now time.Time) {
	in := map[Hash]bool{}
	for _, refs := range root.shards {
		for _, r := range refs {
			in[r.id] = true
		}
	}
	var old []string
	k.o.list(ctx, s3RetiredPrefix, func(key string, _ time.Time) error {
		var at int64
		var gen uint64
		if _, err := fmt.Sscanf(key[len(s3RetiredPrefix):], "%012d-%016x", &at, &gen); err == nil && now.Sub(time.Unix(at, 0)) >= s3GCGrace {
			old = append(old, key)
		}
		return nil
	})
	h := &s3Hold{k: k}
	for _, key := range old {
		raw, _, err := k.o.get(ctx, key, maxRootBytes, "")
		if err != nil {
			continue
		}
		ids, err := decodeRetired(raw)
		if err != nil {
			continue // kept: never guess what to delete
		}
		for _, id := range ids {
			if in[id] {
				continue
			}
			if h.check(ctx) != nil {
				return // a migration in flight: a later sweep deletes them
			}
			k.o.del(ctx, s3ShardKey(id))
		}
		if h.check(ctx) != nil {
			return
		}
		k.o.del(ctx, key)
	}
}

// adopt lists the shard objects that root does not name and that were
// written more than s3GCGrace before now (those of commits that died
// before their root landed, and shards already retired) in a retired
// list of their own, for a later sweep to delete; it lists none while a
// migration is in flight (s3hold.go). A retired shard so
// listed again is deleted twice, the second time no earlier than the
// first: still s3GCGrace after it left the root. A shard of a commit in
// flight is younger; a writer stalled for longer between its shards and
// its root cannot land them: this commit changed the root, so its
// conditional PUT fails and it redoes its update.
func (k *s3KV) adopt(ctx context.Context, root *s3Root, now time.Time) {
	known := map[Hash]bool{}
	for _, refs := range root.shards {
		for _, r := range refs {
			known[r.id] = true
		}
	}
	var orphans []Hash
	if k.o.list(ctx, s3ShardPrefix, func(key string, mod time.Time) error {
		raw, err := hex.DecodeString(key[len(s3ShardPrefix):])
		if err == nil && len(raw) == len(Hash{}) && !known[Hash(raw)] && now.Sub(mod) >= s3GCGrace {
			orphans = append(orphans, Hash(raw))
		}
		return nil
	}) != nil || len(orphans) == 0 {
		return
	}
	if h := (&s3Hold{k: k}); h.check(ctx) != nil {
		return // a migration in flight: its shards are named by its root only
	}
	k.o.put(ctx, fmt.Sprintf("%s%012d-%016x-adopted", s3RetiredPrefix, now.Unix(), root.gen), encodeRetired(orphans), "", false)
}

// wrote reports whether the overlay holds a write.
func (o *overlay) wrote() bool {
	for _, bk := range o.w {
		if len(bk) > 0 {
			return true
		}
	}
	return false
}

// s3Put is a shard object a commit writes.
type s3Put struct {
	id  Hash
	raw []byte
	s   *s3Shard
}

// commit makes the root that follows root (or the legacy index) with the
// writes w, and the shard objects it adds.
func (k *s3KV) commit(root *s3Root, legacy *memKV, w map[string]map[string]*[]byte) (*s3Root, []s3Put, error) {
	next := newS3Root()
	if root != nil {
		next.gen = root.gen + 1
	}
	var puts []s3Put
	for bi, name := range buckets {
		writes := w[name]
		if legacy != nil {
			// the whole bucket as one shard to rewrite
			var s s3Shard
			for key, v := range legacy.b[name] {
				s.keys = append(s.keys, key)
				s.vals = append(s.vals, v)
			}
			sortShard(&s)
			pieces := mergeShard(&s, "", writes, nil)
			refs, ps := k.encodePieces(name, next.gen, pieces)
			next.shards[bi], puts = refs, append(puts, ps...)
			continue
		}
		refs := root.shards[bi]
		if len(writes) == 0 {
			next.shards[bi] = refs
			continue
		}
		keys := make([]string, 0, len(writes))
		for key := range writes {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		if len(refs) == 0 {
			rs, ps := k.encodePieces(name, next.gen, mergeShard(&s3Shard{}, "", writes, keys))
			next.shards[bi], puts = rs, append(puts, ps...)
			continue
		}
		span, touched := writeSpans(refs, keys)
		if err := k.fetchShards(shardsAt(name, refs, touched)); err != nil {
			return nil, nil, err
		}
		var out []s3Out
		for i, ref := range refs {
			lo, hi := span[i], span[i+1]
			if lo == hi {
				out = append(out, s3Out{ref: ref, at: i})
				continue
			}
			s, err := k.shard(name, refs, i)
			if err != nil {
				return nil, nil, err
			}
			pieces := mergeShard(s, ref.low, writes, keys[lo:hi])
			if len(pieces) == 1 && sameShard(pieces[0].s, s) {
				out = append(out, s3Out{ref: ref, at: i}) // the writes changed nothing here
				continue
			}
			for _, p := range pieces {
				out = append(out, s3Out{ref: s3ShardRef{low: p.low}, s: p.s, at: -1})
			}
		}
		out, err := k.mergeSmall(name, refs, out)
		if err != nil {
			return nil, nil, err
		}
		next.shards[bi] = make([]s3ShardRef, len(out))
		for i, x := range out {
			if x.at < 0 {
				rs, ps := k.encodePieces(name, next.gen, []s3Piece{{low: x.ref.low, s: x.s}})
				x.ref, puts = rs[0], append(puts, ps...)
			}
			next.shards[bi][i] = x.ref
		}
		if len(out) > 0 {
			next.shards[bi][0].low = ""
		}
	}
	return next, puts, nil
}

// writeSpans splits keys (sorted) by the shards of refs (not empty)
// whose ranges hold them: shard i's are keys[span[i]:span[i+1]];
// touched lists the shards that hold any.
func writeSpans(refs []s3ShardRef, keys []string) (span, touched []int) {
	span = make([]int, len(refs)+1)
	j := 0
	for i := range refs {
		span[i] = j
		for j < len(keys) && (i == len(refs)-1 || keys[j] < refs[i+1].low) {
			j++
		}
		if j > span[i] {
			touched = append(touched, i)
		}
	}
	span[len(refs)] = j
	return span, touched
}

// s3Out is a shard of a bucket as a commit leaves it: one of the root's
// (at: its index there; s nil until read) or a new one (at −1: its
// entries and low key).
type s3Out struct {
	ref s3ShardRef
	s   *s3Shard
	at  int
}

// mergeSmall merges each new shard smaller than s3ShardMax/4 (what
// deletions leave) with a neighbour, new or the root's (read for it),
// when the two together take at most s3ShardMax/2 (so that the merged
// shard is not split again soon).
func (k *s3KV) mergeSmall(bucket string, refs []s3ShardRef, out []s3Out) ([]s3Out, error) {
	load := func(x *s3Out) error {
		if x.s != nil {
			return nil
		}
		s, err := k.shard(bucket, refs, x.at)
		x.s = s
		return err
	}
	for i := 0; i < len(out); i++ {
		if out[i].at >= 0 || shardBytes(out[i].s) >= s3ShardMax/4 {
			continue
		}
		for _, n := range []int{i + 1, i - 1} {
			if n < 0 || n >= len(out) {
				continue
			}
			if err := load(&out[n]); err != nil {
				return nil, err
			}
			if shardBytes(out[i].s)+shardBytes(out[n].s) > s3ShardMax/2 {
				continue
			}
			a, b := min(i, n), max(i, n)
			m := &s3Shard{
				keys: append(slices.Clip(out[a].s.keys), out[b].s.keys...),
				vals: append(slices.Clip(out[a].s.vals), out[b].s.vals...),
			}
			out[a] = s3Out{ref: s3ShardRef{low: out[a].ref.low}, s: m, at: -1}
			out = slices.Delete(out, b, b+1)
			i = a - 1 // look at the merged shard again
			break
		}
	}
	return out, nil
}

// shardBytes is the bytes of s's entries.
func shardBytes(s *s3Shard) int {
	n := 0
	for i, k := range s.keys {
		n += entrySize(k, s.vals[i])
	}
	return n
}

// s3Piece is a shard's entries after a commit, with its low key.
type s3Piece struct {
	low string
	s   *s3Shard
}

func sortShard(s *s3Shard) {
	idx := make([]int, len(s.keys))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return s.keys[idx[a]] < s.keys[idx[b]] })
	keys, vals := make([]string, len(idx)), make([][]byte, len(idx))
	for i, x := range idx {
		keys[i], vals[i] = s.keys[x], s.vals[x]
	}
	s.keys, s.vals = keys, vals
}

// mergeShard applies writes (of keys, in order; nil: every key of writes)
// to shard s, whose range starts at low, and cuts the result in equal
// pieces of at most about s3ShardMax/2 when it outgrows s3ShardMax; none
// when it is empty.
func mergeShard(s *s3Shard, low string, writes map[string]*[]byte, keys []string) []s3Piece {
	if keys == nil {
		for key := range writes {
			keys = append(keys, key)
		}
		slices.Sort(keys)
	}
	var m s3Shard
	i, j := 0, 0
	for i < len(s.keys) || j < len(keys) {
		switch {
		case j == len(keys) || i < len(s.keys) && s.keys[i] < keys[j]:
			m.keys, m.vals = append(m.keys, s.keys[i]), append(m.vals, s.vals[i])
			i++
		default:
			if i < len(s.keys) && s.keys[i] == keys[j] {
				i++
			}
			if v := writes[keys[j]]; v != nil {
				m.keys, m.vals = append(m.keys, keys[j]), append(m.vals, *v)
			}
			j++
		}
	}
	if len(m.keys) == 0 {
		return nil
	}
	total := 0
	for x, key := range m.keys {
		total += entrySize(key, m.vals[x])
	}
	if total <= s3ShardMax {
		return []s3Piece{{low: low, s: &m}}
	}
	// pieces of equal size, each at most about s3ShardMax/2 and at least
	// s3ShardMax/4 (not small enough for mergeSmall to merge)
	n := (total + s3ShardMax/2 - 1) / (s3ShardMax / 2)
	var out []s3Piece
	start, size := 0, 0
	for x := range m.keys {
		size += entrySize(m.keys[x], m.vals[x])
		if size >= total/n || x == len(m.keys)-1 {
			pl := low
			if start > 0 {
				pl = separator(m.keys[start-1], m.keys[start])
			}
			out = append(out, s3Piece{low: pl, s: &s3Shard{keys: m.keys[start : x+1], vals: m.vals[start : x+1]}})
			start, size = x+1, 0
		}
	}
	return out
}

// separator is the shortest prefix of b above a (a < b): the low key of a
// shard starting at b after one ending at a, short in the root.
func separator(a, b string) string {
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	return b[:i+1]
}

func sameShard(a, b *s3Shard) bool {
	if len(a.keys) != len(b.keys) {
		return false
	}
	for i := range a.keys {
		if a.keys[i] != b.keys[i] || !bytes.Equal(a.vals[i], b.vals[i]) {
			return false
		}
	}
	return true
}

// encodePieces makes the shard objects of pieces.
func (k *s3KV) encodePieces(bucket string, gen uint64, pieces []s3Piece) ([]s3ShardRef, []s3Put) {
	refs := make([]s3ShardRef, len(pieces))
	puts := make([]s3Put, len(pieces))
	for i, p := range pieces {
		raw := encodeShard(bucket, gen, p.s.keys, p.s.vals)
		id := shardID(raw)
		refs[i] = s3ShardRef{low: p.low, id: id, size: int64(len(raw)), entries: int64(len(p.s.keys))}
		puts[i] = s3Put{id: id, raw: raw, s: p.s}
	}
	return refs, puts
}

// retire lists the shards that root names and next does not, and those
// of lost tries (lost) that next does not name.
func retire(root, next *s3Root, lost []Hash) []Hash {
	in := map[Hash]bool{}
	for _, refs := range next.shards {
		for _, r := range refs {
			in[r.id] = true
		}
	}
	var ids []Hash
	add := func(id Hash) {
		if !in[id] {
			ids = append(ids, id)
			in[id] = true
		}
	}
	if root != nil {
		for _, refs := range root.shards {
			for _, r := range refs {
				add(r.id)
			}
		}
	}
	for _, id := range lost {
		add(id)
	}
	return ids
}

// bucketIndex is the position of a bucket in buckets, or -1.
func bucketIndex(name string) int { return slices.Index(buckets, name) }

// shard reads shard i of bucket's refs (cached): its SHA-256 must be its
// name, its bucket, entry count and keys those the root says.
func (k *s3KV) shard(bucket string, refs []s3ShardRef, i int) (*s3Shard, error) {
	ref := refs[i]
	k.cmu.Lock()
	e := k.cache[ref.id]
	if e == nil {
		e = &s3ShardEntry{}
		k.cache[ref.id] = e
	}
	k.cmu.Unlock()
	e.once.Do(func() {
		e.s, e.err = k.loadShard(bucket, ref)
	})
	if e.err != nil {
		k.cmu.Lock()
		if k.cache[ref.id] == e {
			delete(k.cache, ref.id) // the next read tries again (the error may pass)
		}
		k.cmu.Unlock()
		return nil, e.err
	}
	s := e.s
	if len(s.keys) > 0 && (s.keys[0] < ref.low || i+1 < len(refs) && s.keys[len(s.keys)-1] >= refs[i+1].low) {
		return nil, fmt.Errorf("%w: %s: index shard %x of bucket %s holds keys outside its range", ErrIndexDamaged, k.name, ref.id[:8], bucket)
	}
	return s, nil
}

func (k *s3KV) loadShard(bucket string, ref s3ShardRef) (*s3Shard, error) {
	where := fmt.Sprintf("%s: index shard %x of bucket %s", k.name, ref.id[:8], bucket)
	raw, _, err := k.o.get(context.Background(), s3ShardKey(ref.id), ref.size, "")
	if errors.Is(err, errS3NotFound) {
		return nil, fmt.Errorf("%w: %s: missing", ErrIndexDamaged, where)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	if int64(len(raw)) != ref.size || shardID(raw) != ref.id {
		return nil, fmt.Errorf("%w: %s: its bytes do not match its name", ErrIndexDamaged, where)
	}
	b, _, s, err := decodeShard(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if b != bucket || int64(len(s.keys)) != ref.entries {
		return nil, fmt.Errorf("%w: %s: holds bucket %q, %d entries; the root says %s, %d", ErrIndexDamaged, where, b, len(s.keys), bucket, ref.entries)
	}
	return s, nil
}

// s3Snap reads the index as one root names it.
type s3Snap struct {
	k    *s3KV
	root *s3Root
	mu   sync.Mutex
	err  error // the first shard that could not be read by get
}

func (t *s3Snap) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *s3Snap) fail(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.mu.Unlock()
}

// describe names a key of a bucket for an error: the model, the unit.
func describe(bucket string, key []byte) string {
	switch {
	case bucket == bModels:
		return fmt.Sprintf("model %q", key)
	case bucket == bUnits && len(key) == len(Hash{}):
		return "unit " + Hash(key).String()
	}
	return fmt.Sprintf("bucket %s key %x", bucket, key)
}

func (t *s3Snap) get(bucket string, key []byte) []byte {
	bi := bucketIndex(bucket)
	if bi < 0 {
		return nil
	}
	refs := t.root.shards[bi]
	i := shardOf(refs, key)
	if i < 0 {
		return nil
	}
	s, err := t.k.shard(bucket, refs, i)
	if err != nil {
		t.fail(fmt.Errorf("store: reading %s: %w", describe(bucket, key), err))
		return nil
	}
	if x := s.find(string(key)); x < len(s.keys) && s.keys[x] == string(key) {
		return s.vals[x]
	}
	return nil
}

func (t *s3Snap) put(string, []byte, []byte) error {
	return fmt.Errorf("store: write in a read-only transaction")
}

func (t *s3Snap) del(string, []byte) error {
	return fmt.Errorf("store: write in a read-only transaction")
}

// prefetch reads the shards whose ranges meet [lo, hi) (hi nil: no
// bound) several at once, when they are more than one: a scan reads them
// all. What fails is left for the scan to read again and report.
func (t *s3Snap) prefetch(bucket string, lo, hi []byte) {
	bi := bucketIndex(bucket)
	if bi < 0 {
		return
	}
	refs := t.root.shards[bi]
	var idx []int
	for i := max(0, shardOf(refs, lo)); i < len(refs) && (hi == nil || refs[i].low < string(hi)); i++ {
		idx = append(idx, i)
	}
	t.fetch(shardsAt(bucket, refs, idx))
}

// prefetchKeys reads the shards holding want several at once, when more
// than one of them is still to read: a batch of gets (the unit records a
// commit updates or a restore reads, the fingerprints of a search) then
// finds them read. What fails is left for the gets to read again and
// report.
func (t *s3Snap) prefetchKeys(want []bucketKey) {
	var at []s3ShardAt
	for _, w := range want {
		bi := bucketIndex(w.bucket)
		if bi < 0 {
			continue
		}
		refs := t.root.shards[bi]
		if i := shardOf(refs, w.key); i >= 0 {
			at = append(at, s3ShardAt{w.bucket, refs, i})
		}
	}
	t.fetch(at)
}

// fetch reads the shards of at not read yet, once each, several at once,
// when they are more than one (one, the caller's read takes alone).
func (t *s3Snap) fetch(at []s3ShardAt) {
	seen := map[Hash]bool{}
	at = slices.DeleteFunc(at, func(a s3ShardAt) bool {
		id := a.refs[a.i].id
		if seen[id] || t.k.cached(id) {
			return true
		}
		seen[id] = true
		return false
	})
	if len(at) >= 2 {
		t.k.fetchShards(at)
	}
}

// shardOf is the index in refs of the shard whose range holds key; -1
// when refs is empty.
func shardOf(refs []s3ShardRef, key []byte) int {
	return sort.Search(len(refs), func(i int) bool { return refs[i].low > string(key) }) - 1
}

// prefixEnd is the first key after every key with prefix p; nil when none.
func prefixEnd(p []byte) []byte {
	e := bytes.Clone(p)
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] < 0xff {
			e[i]++
			return e[:i+1]
		}
	}
	return nil
}

// iter calls fn for the keys in [lo, hi) (hi nil: no bound), in order
// (back: reverse order), while fn returns true; it reads only the shards
// whose ranges meet [lo, hi).
func (t *s3Snap) iter(bucket string, lo, hi []byte, back bool, fn func(k, v []byte) (bool, error)) error {
	bi := bucketIndex(bucket)
	if bi < 0 {
		return fmt.Errorf("store: no bucket %q", bucket)
	}
	if hi != nil && bytes.Compare(lo, hi) >= 0 {
		return nil
	}
	refs := t.root.shards[bi]
	if !back {
		i := max(0, shardOf(refs, lo))
		for ; i < len(refs) && (hi == nil || refs[i].low < string(hi)); i++ {
			s, err := t.k.shard(bucket, refs, i)
			if err != nil {
				return err
			}
			for x := s.find(string(lo)); x < len(s.keys); x++ {
				if hi != nil && s.keys[x] >= string(hi) {
					return nil
				}
				if more, err := fn([]byte(s.keys[x]), s.vals[x]); err != nil || !more {
					return err
				}
			}
		}
		return nil
	}
	// the last shard whose low key is below hi
	i := len(refs) - 1
	if hi != nil {
		i = sort.Search(len(refs), func(i int) bool { return refs[i].low >= string(hi) }) - 1
	}
	for ; i >= 0; i-- {
		s, err := t.k.shard(bucket, refs, i)
		if err != nil {
			return err
		}
		x := len(s.keys) - 1
		if hi != nil {
			x = s.find(string(hi)) - 1
		}
		for ; x >= 0; x-- {
			if s.keys[x] < string(lo) {
				return nil
			}
			if more, err := fn([]byte(s.keys[x]), s.vals[x]); err != nil || !more {
				return err
			}
		}
		if refs[i].low <= string(lo) {
			return nil
		}
	}
	return nil
}

func (t *s3Snap) scan(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	t.prefetch(bucket, prefix, prefixEnd(prefix))
	return t.iter(bucket, prefix, prefixEnd(prefix), false, func(k, v []byte) (bool, error) {
		return true, fn(k, v)
	})
}

func (t *s3Snap) walk(bucket string, prefix, from []byte, back bool, fn func(k, v []byte) (bool, error)) error {
	hi := prefixEnd(prefix)
	if !back {
		lo := prefix
		if bytes.Compare(from, prefix) > 0 {
			lo = from
		}
		return t.iter(bucket, lo, hi, false, fn)
	}
	if hi == nil || bytes.Compare(from, hi) < 0 {
		hi = from
		if hi == nil {
			hi = []byte{}
		}
	}
	return t.iter(bucket, prefix, hi, true, fn)
}

// legacyTx reads the single-object index.
type legacyTx struct{ memTx }

func (legacyTx) failed() error { return nil }
