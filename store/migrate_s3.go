//go:build !js

package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Migration of an s3:// store (Migrate's steps on object storage, with no
// lock): the index's root (prefix/index) is the whole store's state, and
// the format record (formatKey, version.go) is an entry of the index it
// names, so one conditional write of the root switches versions.
//
//  1. The version 1 store is opened and its root's ETag read. The version
//     2 index is built beside it with its root at prefix/migrate/<unix
//     time>-<random> (one per migration; gc removes those of crashed or
//     failed migrations once unwritten for s3GCGrace: s3Blobs.clean), its
//     shards in prefix/shards/ and its chunk files in prefix/packs/, all
//     under new names (shards by their SHA-256, chunk files by BLAKE3):
//     every model restored from the old store (every unit checked) and
//     added to the new one, as the directory migration does. Its commits
//     never sweep or adopt (the shards its root does not name are the
//     live store's). The version 1 store stays whole and usable
//     throughout: writers may add, readers read. While the root is
//     younger than s3GCGrace (each batch rewrites it), no gc, shard
//     sweep or adopt of the store deletes (s3hold.go): its objects are
//     named by no index but this one.
//  2. No sooner than 2×s3GCRecheck after its root appeared (by then any
//     deletion a gc or sweep decided before it has landed), the root is
//     written again (young until the switch), and every shard it names
//     and every chunk file its units name are checked to exist.
//  3. The switch: the new root's bytes are written to prefix/index,
//     If-Match the ETag read in step 1. If any writer changed the store
//     meanwhile, the write fails and nothing is lost (the version 1 store
//     is as that writer left it): the store is read again (its root's
//     ETag first), the new index takes the models it gained and drops
//     those it lost or whose files changed (syncModels), and the switch
//     is tried again If-Match that ETag, s3MigrateTries times in all;
//     then Migrate gives up with ErrMigrateRaced (the migration's root is
//     deleted, its objects are orphans gc and the shard sweeps remove,
//     and a migrate run again starts over). Before the switch the store
//     is version 1,
//     after it version 2: a crash anywhere leaves one of the two whole,
//     with orphans at most.
//  4. After it: the old root's shards are listed as retired (a sweep
//     deletes them s3GCGrace later), the temporary root is deleted and gc
//     on the new store removes the old chunk files (those older than
//     s3GCGrace; younger ones wait for a later gc). A Store that had
//     the version 1 store open fails its next update, and its views once
//     it reads the root again, with ErrMigrated (s3KV.pinFormat) instead
//     of mixing the two formats. Two migrations at once build two
//     indexes; the first switch fails the other's.

// ErrMigrateRaced: writers changed an s3:// store before every switch a
// migration tried (s3MigrateTries); the store is left as version 1 with
// their changes, and a migrate run again starts over.
var ErrMigrateRaced = errors.New("store: migrate: writers changed the store before every switch tried (nothing switched, nothing lost: run migrate again)")

// s3MigrateTries bounds the switches a migration tries: after each
// that a writer's commit fails, the new index takes the models the store
// gained and drops those it lost (syncModels), and the switch is tried
// again If-Match the root as it is then.
const s3MigrateTries = 3

// migrateObjs is the store's objects with the root at root.
type migrateObjs struct {
	s3Objects
	root string
}

func (m migrateObjs) key(k string) string {
	if k == s3RootKey {
		return m.root
	}
	return k
}

func (m migrateObjs) get(ctx context.Context, key string, max int64, etag string) ([]byte, string, error) {
	return m.s3Objects.get(ctx, m.key(key), max, etag)
}

func (m migrateObjs) put(ctx context.Context, key string, data []byte, match string, noneMatch bool) (string, error) {
	return m.s3Objects.put(ctx, m.key(key), data, match, noneMatch)
}

func (m migrateObjs) del(ctx context.Context, key string) error {
	return m.s3Objects.del(ctx, m.key(key))
}

// migrateS3 is Migrate of the s3:// store at loc.
func migrateS3(loc string, opt Options) (MigrateStats, error) {
	var st MigrateStats
	ctx := context.Background()
	l, err := parseS3(loc)
	if err != nil {
		return st, err
	}
	opt.ReadOnly = false
	old, err := openS3(loc, opt)
	if err != nil {
		return st, err
	}
	defer old.Close()
	if old.ver != Version1 {
		return st, fmt.Errorf("store: migrate: %s is a version %d store already", loc, old.ver)
	}
	ok := old.kv.(*s3KV)
	if _, err := ok.version(); err != nil {
		return st, err
	}
	_, root0, _, etag0 := ok.snapshot() // root0 nil: a single-object index
	if err := oldStats(old, &st); err != nil {
		return st, err
	}

	objs := s3Objs{l}
	name := l.bucket + "/" + l.prefix
	tmp := migrateObjs{objs, fmt.Sprintf("%s%012d-%016x", s3MigratePrefix, time.Now().Unix(), rand.Uint64())}
	if err := initS3KVWith(tmp, name, initRecords(Version2, InitOptions{})); err != nil {
		return st, fmt.Errorf("store: migrate: %w", err)
	}
	born := time.Now() // the root is there (s3hold.go)
	nk := newS3KV(tmp, name)
	nk.noSweep = true
	if err := nk.refresh(ctx); err != nil {
		return st, err
	}
	n := &Store{dir: loc, kv: nk, bl: &s3Blobs{l: l}, opt: opt, cache: newRawCache(256 << 20)}
	if err := n.readFormat(); err != nil {
		return st, err
	}
	if err := copyModels(old, n, &st); err != nil {
		return st, err
	}
	hook("migrate-copied")
	var next *s3Root
	for try := 1; ; try++ {
		nst, err := n.Stats()
		if err != nil {
			return st, err
		}
		st.After = nst.Stored
		// deletions a gc or sweep decided before the root appeared have
		// landed 2×s3GCRecheck after it (s3hold.go): s3Complete sees them
		if d := 2*s3GCRecheck - time.Since(born); d > 0 {
			time.Sleep(d)
		}
		raw, _, err := objs.get(ctx, tmp.root, maxRootBytes, "")
		if err != nil {
			return st, fmt.Errorf("store: migrate: the new root: %w", err)
		}
		if next, err = decodeRoot(raw); err != nil {
			return st, fmt.Errorf("store: migrate: the new root: %w", err)
		}
		// written again, so that it is young until the switch: no gc,
		// sweep or adopt deletes meanwhile
		if _, err := objs.put(ctx, tmp.root, raw, "", false); err != nil {
			return st, fmt.Errorf("store: migrate: the new root: %w", err)
		}
		if err := s3Complete(ctx, objs, nk, n); err != nil {
			return st, err
		}
		hook("migrate-built")
		// the switch
		_, err = objs.put(ctx, s3RootKey, raw, etag0, false)
		if err == nil {
			break
		}
		if !errors.Is(err, errS3Precondition) {
			return st, fmt.Errorf("store: migrate: %w", err)
		}
		if try == s3MigrateTries {
			objs.del(ctx, tmp.root) // its objects are orphans now
			return st, ErrMigrateRaced
		}
		// a writer landed: bring the new index up to the store as it is now
		if _, err := ok.version(); err != nil {
			return st, err
		}
		_, root0, _, etag0 = ok.snapshot()
		if err := oldStats(old, &st); err != nil {
			return st, err
		}
		if err := syncModels(old, n, &st); err != nil {
			return st, err
		}
	}
	// what the store held at the switch
	if err := n.kv.view(func(t tx) error {
		st.Models, st.Raw = 0, 0
		return t.scan(bModels, nil, func(k, v []byte) error {
			m, err := parseManifest(v)
			if err != nil {
				return fmt.Errorf("%w: model %q: manifest: %v", ErrIndexDamaged, k, err)
			}
			st.Models++
			st.Raw += m.Raw
			return nil
		})
	}); err != nil {
		return st, err
	}
	hook("migrate-switched")
	// best effort from here: what is left behind is only bytes
	if ids := retire(root0, next, nil); len(ids) > 0 {
		objs.put(ctx, fmt.Sprintf("%s%012d-%016x-migrated", s3RetiredPrefix, time.Now().Unix(), next.gen), encodeRetired(ids), "", false)
	}
	objs.del(ctx, tmp.root)
	old.Close()
	s, err := openS3(loc, opt)
	if err != nil {
		return st, err
	}
	defer s.Close()
	st.GC, err = s.GC()
	return st, err
}

// s3Complete checks that every shard the root of nk names and every
// chunk file the units of n name exist (a gc or shard sweep of the old
// store that decided before the migration's root appeared may have
// deleted one the migration reuses: s3hold.go).
func s3Complete(ctx context.Context, objs s3Objs, nk *s3KV, n *Store) error {
	have := map[string]bool{}
	if err := objs.list(ctx, s3ShardPrefix, func(key string, _ time.Time) error {
		have[key] = true
		return nil
	}); err != nil {
		return err
	}
	_, root, _, _ := nk.snapshot()
	for _, refs := range root.shards {
		for _, r := range refs {
			if !have[s3ShardKey(r.id)] {
				return fmt.Errorf("store: migrate: shard %s of the new index is gone (a sweep of the store during the migration?): nothing switched, run migrate again", r.id)
			}
		}
	}
	packs := map[Hash]bool{}
	if err := n.bl.list(func(id Hash, _ int64) error {
		packs[id] = true
		return nil
	}); err != nil {
		return err
	}
	return n.kv.view(func(t tx) error {
		return t.scan(bUnits, nil, func(k, v []byte) error {
			u, err := parseUnit(v)
			if err != nil {
				return fmt.Errorf("%w: unit %x: %v", ErrIndexDamaged, k, err)
			}
			if u.Kind != KindCast && !packs[u.Pack] {
				return fmt.Errorf("store: migrate: chunk file %s of the new index is gone (a gc of the store during the migration?): nothing switched, run migrate again", u.Pack)
			}
			return nil
		})
	})
}

// syncModels makes n's models old's: a model of n that old no longer
// holds, or holds with other files, is removed from n; a model of old
// that n lacks is added (copyNamed).
func syncModels(old, n *Store, st *MigrateStats) error {
	names, err := old.Names()
	if err != nil {
		return err
	}
	have, err := n.Names()
	if err != nil {
		return err
	}
	in := map[string]bool{}
	for _, name := range names {
		in[name] = true
	}
	got := map[string]bool{}
	for _, name := range have {
		if in[name] {
			om, err := old.Model(name)
			if err != nil {
				return err
			}
			nm, err := n.Model(name)
			if err != nil {
				return err
			}
			if sameModel(om, nm) {
				got[name] = true
				continue
			}
		}
		if err := n.Remove(name); err != nil {
			return fmt.Errorf("store: migrate: %w", err)
		}
	}
	var add []string
	for _, name := range names {
		if !got[name] {
			add = append(add, name)
		}
	}
	return copyNamed(old, n, add, st)
}

// sameModel reports whether a and b hold the same files (names, sizes,
// SHA-256, formats) and -compare size: a model and its migrated copy.
func sameModel(a, b *Manifest) bool {
	if len(a.Files) != len(b.Files) || a.Alone != b.Alone {
		return false
	}
	for i, f := range a.Files {
		g := b.Files[i]
		if f.Name != g.Name || f.Size != g.Size || f.SHA256 != g.SHA256 || f.Format != g.Format {
			return false
		}
	}
	return true
}

// oldStats sets st's Before and PacksBefore from old's index: its units'
// payload and the chunk files they name (not a listing: the migration's
// own chunk files lie beside them).
func oldStats(old *Store, st *MigrateStats) error {
	packs := map[Hash]bool{}
	st.Before = 0
	err := old.kv.view(func(t tx) error {
		return t.scan(bUnits, nil, func(k, v []byte) error {
			u, err := parseUnit(v)
			if err != nil {
				return fmt.Errorf("%w: unit %x: %v", ErrIndexDamaged, k, err)
			}
			st.Before += u.Len
			if u.Kind != KindCast {
				packs[u.Pack] = true
			}
			return nil
		})
	})
	st.PacksBefore = len(packs)
	return err
}
