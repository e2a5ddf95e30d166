package store

import (
	"cmp"
	"slices"
)

// Repacking. A chunk file is immutable; when most of its bytes belong to
// no unit (their units recast, or removed while others in the file live
// on), gc writes the live payloads to a new chunk file and moves their
// records to it: first the new file (temporary file, fsync, rename), then
// one index transaction switching every record (the payload bytes, and
// so each record's CRC, unchanged; only chunk and offset move), then the
// old file is removed. A crash before the switch leaves the new file an
// orphan, one after it the old file: the next gc removes either, and
// every get in between reads a complete file through a record that names
// it. An s3:// store is not repacked: it has no lock, and a reader holding
// the index from before the switch would still read the old file.

// packUse is one live payload in a chunk file.
type packUse struct {
	h      Hash
	off, n int64
	crc    uint32
}

// repackable reports whether gc rewrites a chunk file of size bytes of
// which live are used: at least half of it unused, some of it used.
func repackable(live, size int64) bool { return live > 0 && 2*(size-live) >= size }

// rewritePack rewrites chunk file id (its live payloads uses) as a new one and
// switches their records to it. It returns the bytes saved (0: nothing
// done, e.g. a payload that no longer matches its CRC, left to verify).
func (s *Store) rewritePack(id Hash, size int64, uses []packUse) (int64, error) {
	slices.SortFunc(uses, func(a, b packUse) int { return cmp.Compare(a.off, b.off) })
	var data []byte
	newOff := make([]int64, len(uses))
	for i, u := range uses {
		if i > 0 && u.off == uses[i-1].off && u.n == uses[i-1].n {
			newOff[i] = newOff[i-1]
			continue
		}
		p := make([]byte, u.n)
		if err := s.bl.readAt(id, p, u.off); err != nil || crcOf(p) != u.crc {
			return 0, nil
		}
		newOff[i] = int64(len(data))
		data = append(data, p...)
	}
	nid, err := s.bl.put(data)
	if err != nil {
		return 0, err
	}
	hook("repack-written")
	moved := 0
	err = s.kv.update(func(t tx) error {
		moved = 0
		for i, u := range uses {
			v := t.get(bUnits, u.h[:])
			if v == nil {
				continue
			}
			r, err := parseUnit(v)
			if err != nil || r.Kind == KindCast || r.Pack != id || r.Off != u.off || r.Len != u.n || r.CRC != u.crc {
				continue
			}
			r.Pack, r.Off = nid, newOff[i]
			if err := t.put(bUnits, u.h[:], r.encode()); err != nil {
				return err
			}
			moved++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	hook("repack-switched")
	if moved < len(uses) {
		return 0, nil // something else moved meanwhile: the old file stays for a later gc
	}
	if err := s.bl.remove(id); err != nil {
		return 0, err
	}
	return size - int64(len(data)), nil
}
