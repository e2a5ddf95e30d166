package store

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// IsStore reports whether loc names a store: s3://bucket/prefix, or a
// directory holding a store's index. It does not open it.
func IsStore(loc string) bool {
	if IsS3(loc) {
		return true
	}
	st, err := os.Stat(filepath.Join(loc, indexName))
	return err == nil && st.Mode().IsRegular()
}

// UnitLens returns the original length of each unit, read from the index
// (for readers that address a file's bytes by unit, as nzip serve does).
func (s *Store) UnitLens(hs []Hash) ([]int64, error) {
	metas, err := s.UnitMetas(hs)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(metas))
	for i, m := range metas {
		out[i] = m.RawLen
	}
	return out, nil
}

// ModTime is the time a directory store's index last changed; ok is false
// for s3:// (whose index has no cheap modification time) and on errors.
func ModTime(loc string) (t time.Time, ok bool) {
	if IsS3(loc) {
		return time.Time{}, false
	}
	st, err := os.Stat(filepath.Join(loc, indexName))
	if err != nil {
		return time.Time{}, false
	}
	return st.ModTime(), true
}

// IndexVersion is a string that changes whenever a write to the index
// commits (bbolt's transaction id, with Options.Release also the index
// file's identity, since one renamed over it starts its ids again; an
// s3:// store's root ETag, read again
// by a conditional GET): a long-lived reader (a Release store) compares it
// to know whether the models changed, without reading them.
func (s *Store) IndexVersion() (string, error) {
	if v, ok := s.kv.(versioned); ok {
		return v.version()
	}
	return "", fmt.Errorf("store: this index has no version")
}

// UnitMeta is what the index records of a unit, for readers that show a
// store (the workbench's Hub screen).
type UnitMeta struct {
	Kind   uint8 // KindRaw, KindNzip, KindDelta or KindCast
	Depth  int   // length of its base chain (0: decodes alone)
	Base   Hash  // delta and cast: the unit it is coded against
	RawLen int64 // original bytes
	Len    int64 // payload bytes (0 for a cast)
}

// UnitMetas returns the index records of units hs, in order.
func (s *Store) UnitMetas(hs []Hash) ([]UnitMeta, error) {
	out := make([]UnitMeta, len(hs))
	err := s.kv.view(func(t tx) error {
		prefetch(t, unitKeys(nil, hs...)...)
		for i, h := range hs {
			v := t.get(bUnits, h[:])
			if v == nil {
				return fmt.Errorf("%w: unit %s: not in the index", ErrIndexDamaged, h)
			}
			u, err := parseUnit(v)
			if err != nil {
				return fmt.Errorf("%w: unit %s: %v", ErrIndexDamaged, h, err)
			}
			out[i] = UnitMeta{Kind: u.Kind, Depth: int(u.Depth), Base: u.Base, RawLen: u.RawLen, Len: u.Len}
		}
		return nil
	})
	return out, err
}
