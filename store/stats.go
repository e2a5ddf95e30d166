package store

import "fmt"

// ModelStats is one model's line in ls and stats.
type ModelStats struct {
	Name  string   `json:"name"`
	Files int      `json:"files"`
	Raw   int64    `json:"raw_bytes"`
	Added int64    `json:"added_bytes"`          // payload its add stored
	Alone int64    `json:"nzip_bytes,omitempty"` // its files' own nzip archives (add -compare)
	Bases []string `json:"bases,omitempty"`      // models its deltas and casts are coded against
}

// Stats summarises a store.
type Stats struct {
	Version    int              `json:"format_version"` // 1 or 2 (version.go)
	Models     []ModelStats     `json:"models"`
	Raw        int64            `json:"raw_bytes"`        // bytes of every stored file
	Stored     int64            `json:"stored_bytes"`     // payload bytes of the units in the index
	Alone      int64            `json:"nzip_bytes"`       // Σ own nzip archives (0 unless every model has it)
	Units      map[string]int   `json:"units"`            // units by kind
	UnitBytes  map[string]int64 `json:"unit_raw_bytes"`   // their original bytes by kind
	ChunkBytes int64            `json:"chunk_file_bytes"` // bytes of the chunk files (incl. unused until gc)
	Chunks     int              `json:"chunk_files"`
	// Decoded is the bytes a get of every model decodes: each unit of
	// each file and its base chain (casts and deltas decode their bases
	// first); Decoded/Raw is the store's bytes decoded per byte restored.
	Decoded int64 `json:"decoded_bytes"`
	// MaxDecode is the store's decode bound: bytes decoded per byte
	// restored, per unit (maxdecode.go); 0 is unbounded.
	MaxDecode float64 `json:"max_decode"`
}

// Stats reads the index and lists the chunk files.
func (s *Store) Stats() (*Stats, error) {
	st := &Stats{Version: s.ver, MaxDecode: s.maxDecode, Units: map[string]int{}, UnitBytes: map[string]int64{}}
	allAlone := true
	recs := map[Hash]unit{}
	var ms []*Manifest
	err := s.kv.view(func(t tx) error {
		if err := t.scan(bModels, nil, func(k, v []byte) error {
			m, err := parseManifest(v)
			if err != nil {
				return fmt.Errorf("%w: model %q: manifest: %v", ErrIndexDamaged, k, err)
			}
			ms = append(ms, m)
			st.Models = append(st.Models, ModelStats{Name: m.Name, Files: len(m.Files), Raw: m.Raw, Added: m.Added, Alone: m.Alone, Bases: m.Bases})
			st.Raw += m.Raw
			st.Alone += m.Alone
			allAlone = allAlone && m.Alone > 0
			return nil
		}); err != nil {
			return err
		}
		return t.scan(bUnits, nil, func(k, v []byte) error {
			u, err := parseUnit(v)
			if err != nil {
				return fmt.Errorf("%w: unit %x: %v", ErrIndexDamaged, k, err)
			}
			st.Units[KindName(u.Kind)]++
			st.UnitBytes[KindName(u.Kind)] += u.RawLen
			st.Stored += u.Len
			if len(k) == 32 {
				recs[Hash(k)] = u
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	st.Decoded = decodedBytes(ms, recs)
	if !allAlone {
		st.Alone = 0
	}
	err = s.bl.list(func(id Hash, size int64) error {
		st.Chunks++
		st.ChunkBytes += size
		return nil
	})
	return st, err
}

// decodedBytes is the bytes a get of every model of ms decodes (records
// recs): each unit of each file with its base chain, as many times as
// the files list it (a get decodes each unit of a file in turn).
func decodedBytes(ms []*Manifest, recs map[Hash]unit) int64 {
	chain := map[Hash]int64{}
	var of func(h Hash, depth int) int64
	of = func(h Hash, depth int) int64 {
		if n, ok := chain[h]; ok {
			return n
		}
		u, ok := recs[h]
		if !ok || depth < 0 {
			return 0 // missing or too deep: the get fails, verify reports it
		}
		n := u.RawLen
		if hasBase(u.Kind) {
			n += of(u.Base, depth-1)
		}
		chain[h] = n
		return n
	}
	var n int64
	for _, m := range ms {
		for _, f := range m.Files {
			for _, h := range f.Units {
				n += of(h, maxDepth)
			}
		}
	}
	return n
}

// ChainBytes is the payload bytes of the units model name needs: its own
// and those of their base chains, each counted once.
func (s *Store) ChainBytes(name string) (int64, error) {
	m, err := s.Model(name)
	if err != nil {
		return 0, err
	}
	seen := map[Hash]bool{}
	var n int64
	var walk func(h Hash, depth int) error
	walk = func(h Hash, depth int) error {
		if seen[h] || depth < 0 {
			return nil
		}
		seen[h] = true
		u, err := s.unitRec(h)
		if err != nil {
			return err
		}
		if u.Kind != KindCast {
			n += u.Len
		}
		if u.Kind == KindDelta || u.Kind == KindCast {
			return walk(u.Base, depth-1)
		}
		return nil
	}
	for _, f := range m.Files {
		for _, h := range f.Units {
			if err := walk(h, maxDepth); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}
