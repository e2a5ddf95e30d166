package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
)

// Remove deletes model name from the index and drops one reference from
// each of its units; units no longer referenced leave the index (and drop
// their base's reference in turn). Their bytes stay in the chunk files
// until GC. One transaction: a crash leaves the model either there or gone.
func (s *Store) Remove(name string) error {
	err := s.kv.update(func(t tx) error {
		v := t.get(bModels, []byte(name))
		if v == nil {
			return fmt.Errorf("%w: %q", ErrNotFound, name)
		}
		m, err := parseManifest(v)
		if err != nil {
			return fmt.Errorf("%w: model %q: manifest: %v", ErrIndexDamaged, name, err)
		}
		for _, f := range m.Files {
			for _, h := range f.Units {
				if err := decRef(t, h, maxDepth); err != nil {
					return fmt.Errorf("model %q: %w", name, err)
				}
			}
		}
		return t.del(bModels, []byte(name))
	})
	return err
}

// decRef drops one reference of unit h; at zero the unit leaves the index.
func decRef(t tx, h Hash, depth int) error {
	v := t.get(bUnits, h[:])
	if v == nil {
		return fmt.Errorf("%w: unit %s missing", ErrIndexDamaged, h)
	}
	u, err := parseUnit(v)
	if err != nil {
		return fmt.Errorf("%w: unit %s: %v", ErrIndexDamaged, h, err)
	}
	if u.Refs <= 0 {
		return fmt.Errorf("%w: unit %s: reference count below zero", ErrIndexDamaged, h)
	}
	u.Refs--
	if u.Refs > 0 {
		return t.put(bUnits, h[:], u.encode())
	}
	if err := t.del(bUnits, h[:]); err != nil {
		return err
	}
	if fingerprintable(u.DType) {
		if err := delFP(t, u.DType, u.RawLen/int64(u.DType.Size()), h); err != nil {
			return err
		}
	}
	if u.Kind == KindDelta || u.Kind == KindCast {
		if depth <= 0 {
			return fmt.Errorf("%w: unit %s: base chain too long", ErrIndexDamaged, h)
		}
		return decRef(t, u.Base, depth-1)
	}
	return nil
}

// GCStats says what GC removed and what it kept.
type GCStats struct {
	Packs, PackBytes int64 // chunk files removed and their bytes
	Temps            int   // leftovers of interrupted writes removed
	Casts            int   // cast hints of removed units dropped
	LiveBytes        int64 // payload bytes of units in the index
	DeadBytes        int64 // bytes of kept chunk files no unit uses
	Repacked         int   // chunk files rewritten with their live payloads only (repack.go)
	RepackedBytes    int64 // bytes that saved
	Released         int   // units no model or unit used any more (a recast's old bases), removed from the index
	Young            int   // s3://: unused chunk files kept because they are younger than the grace period (an add in flight may not have committed its index yet)
	Migrating        int   // s3://: unused chunk files kept because a migration of the store is in flight (they may be its new ones: s3hold.go)
}

// GC removes units without references (old bases of recast units,
// releaseRef), chunk files that no unit in the index uses (left by Remove
// or by an add that died before its commit), temporary files, and index
// hints about removed units. A chunk file that any unit still uses is kept
// whole, or rewritten when at least half of it is unused (repack.go). The
// caller must hold the store for writing (Open without
// ReadOnly), so no add runs meanwhile; an s3:// store has no lock, so
// there unused chunk files younger than a grace period (10 minutes) are
// kept for a later gc: an add in flight writes its pack before its index;
// and while a migration of it is in flight gc deletes no chunk file
// (Migrating: they may be the migration's, s3hold.go).
func (s *Store) GC() (GCStats, error) {
	var st GCStats
	if s.opt.ReadOnly {
		return st, errors.New("store: gc needs the store opened for writing")
	}
	n, err := s.bl.clean()
	if err != nil {
		return st, err
	}
	st.Temps = n
	if st.Released, err = s.sweepReleased(); err != nil {
		return st, err
	}
	live := map[Hash]int64{}
	uses := map[Hash][]packUse{}
	var stale [][]byte
	err = s.kv.view(func(t tx) error {
		if err := t.scan(bUnits, nil, func(k, v []byte) error {
			u, err := parseUnit(v)
			if err != nil {
				return fmt.Errorf("%w: unit %x: %v", ErrIndexDamaged, k, err)
			}
			if u.Kind != KindCast {
				live[u.Pack] += u.Len
				st.LiveBytes += u.Len
				uses[u.Pack] = append(uses[u.Pack], packUse{h: Hash(k), off: u.Off, n: u.Len, crc: u.CRC})
			}
			return nil
		}); err != nil {
			return err
		}
		return t.scan(bCasts, nil, func(k, v []byte) error {
			c, err := parseCast(v)
			if err != nil || t.get(bUnits, c.From[:]) == nil {
				stale = append(stale, slices.Clone(k))
			}
			return nil
		})
	})
	if err != nil {
		return st, err
	}
	if len(stale) > 0 {
		if err := s.kv.update(func(t tx) error {
			for _, k := range stale {
				// still stale (an s3:// update may run on another writer's index)
				if c, err := parseCast(t.get(bCasts, k)); err == nil && t.get(bUnits, c.From[:]) != nil {
					continue
				}
				if err := t.del(bCasts, k); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return st, err
		}
		st.Casts = len(stale)
	}
	young, _ := s.bl.(interface{ young(Hash) bool })
	type sized struct {
		id   Hash
		size int64
	}
	var drop, rewrite []sized
	err = s.bl.list(func(id Hash, size int64) error {
		if l, ok := live[id]; ok {
			if young == nil && repackable(l, size) {
				rewrite = append(rewrite, sized{id, size})
			} else {
				st.DeadBytes += size - l
			}
			return nil
		}
		if young != nil && young.young(id) {
			st.Young++
			return nil
		}
		drop = append(drop, sized{id, size})
		return nil
	})
	if err != nil {
		return st, err
	}
	hook("gc-listed")
	var hold *s3Hold
	if k, ok := s.kv.(*s3KV); ok {
		hold = &s3Hold{k: k}
	}
	for i, d := range drop {
		if hold != nil {
			if err := hold.check(context.Background()); errors.Is(err, errS3Migrating) {
				st.Migrating = len(drop) - i
				break
			} else if err != nil {
				return st, err
			}
		}
		if err := s.bl.remove(d.id); err != nil {
			return st, err
		}
		st.Packs++
		st.PackBytes += d.size
	}
	for _, r := range rewrite {
		saved, err := s.rewritePack(r.id, r.size, uses[r.id])
		if err != nil {
			return st, err
		}
		if saved == 0 {
			st.DeadBytes += r.size - live[r.id]
			continue
		}
		st.Repacked++
		st.RepackedBytes += saved
	}
	return st, nil
}

// Verify decodes every file of every model and checks its SHA-256 and
// size, and checks the index's reference counts. It returns one error per
// damaged model (each naming it) and an error for the index as a whole.
func (s *Store) Verify() ([]error, error) {
	s.cache = newRawCache(s.cache.max) // read every chunk again
	names, err := s.Names()
	if err != nil {
		return nil, err
	}
	var bad []error
	for _, name := range names {
		if err := s.verifyModel(name); err != nil {
			bad = append(bad, err)
		}
	}
	return bad, s.checkRefs()
}

func (s *Store) verifyModel(name string) error {
	m, err := s.Model(name)
	if err != nil {
		return fmt.Errorf("store: model %q: %w", name, err)
	}
	for fi, f := range m.Files {
		h := sha256.New()
		cw := &countWriter{w: h}
		if err := s.writeFile(m, fi, cw, true); err != nil {
			return err
		}
		if cw.n != f.Size || Hash(h.Sum(nil)) != f.SHA256 {
			return fmt.Errorf("store: model %q: file %q: %w: restores to other bytes", name, f.Name, ErrChunkDamaged)
		}
	}
	return nil
}

type countWriter struct {
	w hash.Hash
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

var _ io.Writer = (*countWriter)(nil)

// sweepReleased removes the units that nothing references (releaseRef
// leaves them), in one transaction; their bases lose a reference each
// (decRef: those left without one go too). It returns the units removed.
func (s *Store) sweepReleased() (int, error) {
	var zero []Hash
	if err := s.kv.view(func(t tx) error {
		return t.scan(bUnits, nil, func(k, v []byte) error {
			if u, err := parseUnit(v); err == nil && u.Refs == 0 && len(k) == 32 {
				zero = append(zero, Hash(k))
			}
			return nil // a damaged record is verify's to report
		})
	}); err != nil || len(zero) == 0 {
		return 0, err
	}
	n := 0
	err := s.kv.update(func(t tx) error {
		n = 0
		for _, h := range zero {
			v := t.get(bUnits, h[:])
			if v == nil {
				continue
			}
			u, err := parseUnit(v)
			if err != nil || u.Refs != 0 {
				continue // referenced again meanwhile (an s3:// add)
			}
			u.Refs = 1
			if err := t.put(bUnits, h[:], u.encode()); err != nil {
				return err
			}
			if err := decRef(t, h, maxDepth); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// checkRefs recomputes every unit's reference count from the manifests
// and bases and compares.
func (s *Store) checkRefs() error {
	return s.kv.view(func(t tx) error {
		want := map[Hash]int64{}
		if err := t.scan(bModels, nil, func(k, v []byte) error {
			m, err := parseManifest(v)
			if err != nil {
				return fmt.Errorf("%w: model %q: manifest: %v", ErrIndexDamaged, k, err)
			}
			for _, f := range m.Files {
				for _, h := range f.Units {
					want[h]++
				}
			}
			return nil
		}); err != nil {
			return err
		}
		have := map[Hash]int64{}
		if err := t.scan(bUnits, nil, func(k, v []byte) error {
			u, err := parseUnit(v)
			if err != nil || len(k) != 32 {
				return fmt.Errorf("%w: unit %x: %v", ErrIndexDamaged, k, err)
			}
			have[Hash(k)] = u.Refs
			if u.Kind == KindDelta || u.Kind == KindCast {
				want[u.Base]++
			}
			return nil
		}); err != nil {
			return err
		}
		for h, n := range want {
			if have[h] != n {
				return fmt.Errorf("%w: unit %s has %d references, the models and bases make %d", ErrIndexDamaged, h, have[h], n)
			}
		}
		for h, n := range have {
			// a unit without references (a recast's old base) is gc's
			if want[h] == 0 && n != 0 {
				return fmt.Errorf("%w: unit %s (%d references) used by nothing", ErrIndexDamaged, h, n)
			}
		}
		return nil
	})
}

// Names lists the stored models in name order.
func (s *Store) Names() ([]string, error) {
	var names []string
	err := s.kv.view(func(t tx) error {
		return t.scan(bModels, nil, func(k, v []byte) error {
			names = append(names, string(k))
			return nil
		})
	})
	return names, err
}
