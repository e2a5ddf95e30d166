package store

import "fmt"

// Listed is one model of a listing (Store.List): its manifest and, when
// asked for, its files' unit lengths.
type Listed struct {
	*Manifest
	// Lens holds, per file, the original length of each of its units
	// (UnitLens); nil where List's caller did not ask for them.
	Lens [][]int64
	// Err says why Lens could not be read (a unit record missing or
	// damaged); the other models are listed all the same.
	Err error
}

// List returns every stored model in name order and, for those for which
// lens returns true (nil: all), their units' lengths, all read in one
// transaction of the index whatever the number of models: a long-lived
// reader (nzip serve, nzip mount) reads its listing again with it, asking
// for the lengths of the models whose manifests changed only. A damaged
// manifest fails the listing.
func (s *Store) List(lens func(*Manifest) bool) ([]Listed, error) {
	var out []Listed
	err := s.kv.view(func(t tx) error {
		out = out[:0]
		if err := t.scan(bModels, nil, func(k, v []byte) error {
			m, err := parseManifest(v)
			if err != nil {
				return fmt.Errorf("%w: model %q: manifest: %v", ErrIndexDamaged, k, err)
			}
			if m.Name != string(k) {
				return fmt.Errorf("%w: model %q: manifest names %q", ErrIndexDamaged, k, m.Name)
			}
			out = append(out, Listed{Manifest: m})
			return nil
		}); err != nil {
			return err
		}
		var keys []bucketKey
		for i := range out {
			if lens != nil && !lens(out[i].Manifest) {
				continue
			}
			out[i].Lens = make([][]int64, len(out[i].Files))
			for _, f := range out[i].Files {
				keys = unitKeys(keys, f.Units...)
			}
		}
		prefetch(t, keys...) // an s3:// store's shards, read together
		for i := range out {
			l := &out[i]
			if l.Lens == nil {
				continue
			}
			for fi, f := range l.Files {
				ls := make([]int64, len(f.Units))
				for ui, h := range f.Units {
					v := t.get(bUnits, h[:])
					if v == nil {
						l.Err = fmt.Errorf("%w: unit %s: not in the index", ErrIndexDamaged, h)
						break
					}
					u, err := parseUnit(v)
					if err != nil {
						l.Err = fmt.Errorf("%w: unit %s: %v", ErrIndexDamaged, h, err)
						break
					}
					ls[ui] = u.RawLen
				}
				if l.Err != nil {
					l.Lens = nil
					break
				}
				l.Lens[fi] = ls
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
