package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// Migration: nzip store migrate rewrites a version 1 store as version 2
// (version.go) in place, crash-safe:
//
//  1. With the store open for writing (its lock held throughout), a new
//     index is built beside the old one (index.db.v2, removed first if an
//     earlier migration died) with the chunk files of version 2 in the
//     same packs directory: every model restored from the old store
//     (every unit checked against its SHA-256) and added to the new one,
//     as nzip store add adds models (batches; sorted by name), with its
//     -compare size carried over.
//  2. One rename puts the new index in the old one's place (atomic; the
//     directory synced): before it the old store is whole (the new chunk
//     files are orphans its gc removes), after it the new one is.
//  3. gc on the new store removes the old chunk files (orphans now; a
//     crash before it leaves them for the next gc).
//
// An s3:// store has no lock to hold writers off: it is migrated beside
// the live store and switched by one conditional write of its index's
// root (migrate_s3.go).

// MigrateStats is what a migration did.
type MigrateStats struct {
	Models      int
	Raw         int64 // bytes of the models' files
	Before      int64 // payload bytes of the version 1 store's units
	After       int64 // of the version 2 store's
	PacksBefore int   // chunk files before (version 1; of an s3:// store, those its index names)
	GC          GCStats
}

// migrateName is the new index while it is built.
const migrateName = indexName + ".v2"

// Migrate rewrites the version 1 store at dir as version 2 (opt: threads,
// lock wait). A version 2 store is left as it is (an error says so).
func Migrate(dir string, opt Options) (MigrateStats, error) {
	var st MigrateStats
	if IsS3(dir) {
		return migrateS3(dir, opt) // migrate_s3.go
	}
	opt.ReadOnly = false
	old, err := Open(dir, opt)
	if err != nil {
		return st, err
	}
	defer func() {
		if old != nil {
			old.Close()
		}
	}()
	if old.ver != Version1 {
		return st, fmt.Errorf("store: migrate: %s is a version %d store already", dir, old.ver)
	}
	ost, err := old.Stats()
	if err != nil {
		return st, err
	}
	st.Before, st.PacksBefore = ost.Stored, int(ost.Chunks)
	tmp := filepath.Join(dir, migrateName)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, err
	}
	n, err := newMigrationTarget(dir, tmp, opt)
	if err != nil {
		return st, err
	}
	if err := copyModels(old, n, &st); err != nil {
		n.Close()
		os.Remove(tmp)
		return st, err
	}
	nst, err := n.Stats()
	if err == nil {
		st.After = nst.Stored
	}
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return st, err
	}
	hook("migrate-built")
	// the switch, while the old index is still open and locked
	if err := os.Rename(tmp, filepath.Join(dir, indexName)); err != nil {
		return st, fmt.Errorf("store: migrate: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return st, err
	}
	old.Close()
	old = nil
	hook("migrate-switched")
	s, err := Open(dir, opt)
	if err != nil {
		return st, err
	}
	defer s.Close()
	st.GC, err = s.GC()
	return st, err
}

// newMigrationTarget makes the empty version 2 store whose index is file
// path, its chunk files in dir's.
func newMigrationTarget(dir, path string, opt Options) (*Store, error) {
	k, err := openBolt(path, true, time.Second)
	if err != nil {
		return nil, err
	}
	if err := k.update(func(t tx) error {
		if err := buildLSH(t); err != nil {
			return err
		}
		return setFormat(Version2)(t)
	}); err != nil {
		k.close()
		return nil, err
	}
	s := &Store{dir: dir, kv: k, bl: &dirBlobs{dir: dir}, opt: opt, cache: newRawCache(256 << 20)}
	if err := s.readFormat(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// copyModels adds every model of old to n (sorted by name, in batches as
// nzip store add makes them), each restored from old in memory, and
// carries the -compare sizes over.
func copyModels(old, n *Store, st *MigrateStats) error {
	names, err := old.Names()
	if err != nil {
		return err
	}
	return copyNamed(old, n, names, st)
}

// copyNamed is copyModels of the models names.
func copyNamed(old, n *Store, names []string, st *MigrateStats) error {
	alone := map[string]int64{}
	b := &Batcher{Store: n}
	for _, name := range names {
		m, err := old.Model(name)
		if err != nil {
			return err
		}
		ins, err := old.restoreInputs(m)
		if err != nil {
			return fmt.Errorf("store: migrate: %w", err)
		}
		if m.Alone > 0 {
			alone[name] = m.Alone
		}
		st.Models++
		st.Raw += m.Raw
		if err := b.Add(name, ins, nil, nil); err != nil {
			return fmt.Errorf("store: migrate: %w", err)
		}
		hook("migrate-model")
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return n.kv.update(func(t tx) error {
		for name, a := range alone {
			mm, err := parseManifest(t.get(bModels, []byte(name)))
			if err != nil {
				return fmt.Errorf("%w: model %q: %v", ErrIndexDamaged, name, err)
			}
			mm.Alone = a
			if err := t.put(bModels, []byte(name), mm.encode()); err != nil {
				return err
			}
		}
		return nil
	})
}

// restoreInputs restores model m's files into memory, every unit checked,
// each with the layout of its units (every unit a segment: Spans cuts the
// file into the same units).
func (s *Store) restoreInputs(m *Manifest) ([]Input, error) {
	ins := make([]Input, len(m.Files))
	for fi, f := range m.Files {
		var buf bytes.Buffer
		buf.Grow(int(min(f.Size, 1<<40)))
		if err := s.WriteFile(m, fi, &buf); err != nil {
			return nil, err
		}
		if int64(buf.Len()) != f.Size || sha256Sum(buf.Bytes()) != f.SHA256 {
			return nil, fmt.Errorf("%w: model %q: file %q restores to other bytes", ErrChunkDamaged, m.Name, f.Name)
		}
		metas, err := s.unitTypes(f.Units)
		if err != nil {
			return nil, fmt.Errorf("model %q: file %q: %w", m.Name, f.Name, err)
		}
		var segs []codec.Segment
		off := int64(0)
		for i, u := range metas {
			// each unit a segment (an opaque one without a name), so
			// that Spans cuts the file into the same units
			sg := codec.Segment{Offset: off, Length: u.n}
			if u.t != dtype.Invalid {
				sg.Name, sg.DType, sg.Shape = fmt.Sprintf("unit%d", i), u.t, []int64{u.n / int64(u.t.Size())}
			}
			segs = append(segs, sg)
			off += u.n
		}
		ins[fi] = Input{Name: f.Name, R: bytes.NewReader(buf.Bytes()), Size: f.Size, Format: f.Format, Segments: segs}
	}
	return ins, nil
}

// unitTypes is the type and length of each unit of hs, from the index.
func (s *Store) unitTypes(hs []Hash) ([]struct {
	t dtype.DType
	n int64
}, error) {
	out := make([]struct {
		t dtype.DType
		n int64
	}, len(hs))
	err := s.kv.view(func(t tx) error {
		for i, h := range hs {
			u, err := parseUnit(t.get(bUnits, h[:]))
			if err != nil {
				return fmt.Errorf("%w: unit %s: %v", ErrIndexDamaged, h, err)
			}
			out[i].t, out[i].n = u.DType, u.RawLen
		}
		return nil
	})
	return out, err
}
