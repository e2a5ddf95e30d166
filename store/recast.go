package store

import (
	"fmt"
	"slices"

	"neuralzip/dtype"
)

// Casts found late. A BF16 or F16 export added before its F32 original is
// coded like any tensor (alone, or as a delta); when the F32 unit arrives,
// the addresses of its casts — which a version 1 add computes for the
// cast hints, a version 2 add when a stored 16-bit unit's fingerprint is
// that of a cast (castMatches) — are looked up among the stored units (one index read per cast:
// units are addressed by that hash), and a stored 16-bit unit found there
// becomes the cast of the new F32 unit, in the transaction that enters
// the F32 unit: its record is replaced (kind cast, base the F32 unit, no
// payload), the F32 unit gains a reference and the old base, if any,
// loses one. The unit's address, and so what it restores to, does not
// change; a get before the commit reads the old record and payload, one
// after it the new record. The old payload stays in its chunk file until
// gc drops or repacks that file (gc.go).
//
// A recast changes the unit's depth: the deltas coded against it (found
// by one prefix scan of its family's fingerprints, the candidates' scan)
// move with it. A recast that would make one of them deeper than
// maxChain (or than it was) is not made, nor one that would take the
// recast unit or one of them past the store's decode bound (maxdecode.go).
//
// The ingest planner (PlanFamily) runs this code too, on an overlay of the
// index (plan.go), so that an ingest's later models are planned on the
// recasts its earlier ones make, as Add plans them.

// recastStored makes the stored 16-bit units whose bytes are the casts of
// new F32 unit x (record xu, hashes of its casts to types ts) casts of x.
// model is the model entering x. It returns the units recast.
func recastStored(t tx, x Hash, xu unit, casts []Hash, ts []dtype.DType, model string) (int, error) {
	n := 0
	r, err := maxDecodeOf(t)
	if err != nil {
		return 0, err
	}
	for i, ch := range casts {
		if i >= len(ts) || ch == x {
			continue
		}
		v := t.get(bUnits, ch[:])
		if v == nil {
			continue
		}
		y, err := parseUnit(v)
		if err != nil || y.Kind == KindCast || y.DType != ts[i] || 2*y.RawLen != xu.RawLen {
			continue // a damaged record is verify's to report; a cast stays
		}
		newDepth := int(xu.Depth) + 1
		moved, ok, err := dependents(t, ch, y, newDepth-int(y.Depth))
		if err != nil {
			return n, err
		}
		if !ok || newDepth > maxDepth || !recastWithin(t, r, xu, y, newDepth, moved) {
			continue
		}
		if _, err := incRef(t, x); err != nil {
			return n, err
		}
		if y.Kind == KindDelta {
			if err := releaseRef(t, y.Base); err != nil {
				return n, err
			}
		}
		y.Kind, y.Base, y.Depth = KindCast, x, uint8(newDepth)
		y.Pack, y.Off, y.Len, y.CRC = Hash{}, 0, 0, 0
		if err := t.put(bUnits, ch[:], y.encode()); err != nil {
			return n, err
		}
		for h, u := range moved {
			if err := t.put(bUnits, h[:], u.encode()); err != nil {
				return n, err
			}
		}
		if err := addBase(t, y.Owner, model); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// recastWithin reports whether unit y, made the cast of F32 unit xu at
// depth d, and the deltas moved with it (their new depths; of y's type
// and size: a chain of deltas from y) keep decode bound r.
func recastWithin(t tx, r float64, xu, y unit, d int, moved map[Hash]unit) bool {
	if r == 0 {
		return true
	}
	xc := chainCost(t, xu)
	if xc < 0 {
		return false
	}
	yc := y.RawLen + xc
	if !within(r, yc, y.RawLen) {
		return false
	}
	for _, u := range moved {
		if !within(r, yc+int64(int(u.Depth)-d)*u.RawLen, u.RawLen) {
			return false
		}
	}
	return true
}

// releaseRef drops the reference a recast unit held on its old base h.
// Unlike decRef it leaves a unit no longer referenced in the index (GC
// removes it, sweepReleased): an ingest decided before its commit which of
// its units the store holds, and a unit a recast frees may be one of them
// (a later model of the same batch references it), or a base the planner
// chose; a commit therefore never removes a unit.
func releaseRef(t tx, h Hash) error {
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
	return t.put(bUnits, h[:], u.encode())
}

// dependents finds the units whose chains pass through stored unit y
// (hash h) — deltas of y's type and size, in its family's fingerprints —
// and returns their records with their depths moved by shift; ok is false
// when a delta would end up deeper than maxChain (and than it was).
func dependents(t tx, h Hash, y unit, shift int) (map[Hash]unit, bool, error) {
	if !fingerprintable(y.DType) {
		return nil, true, nil
	}
	children := map[Hash][]Hash{}
	recs := map[Hash]unit{}
	err := t.scan(bFP, fpKey(y.DType, y.RawLen/int64(y.DType.Size()), Hash{}), func(k, _ []byte) error {
		if len(k) < 32 {
			return nil
		}
		c := Hash(k[len(k)-32:])
		v := t.get(bUnits, c[:])
		if v == nil {
			return nil
		}
		u, err := parseUnit(v)
		if err != nil || u.Kind != KindDelta {
			return nil
		}
		children[u.Base] = append(children[u.Base], c)
		recs[c] = u
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	moved := map[Hash]unit{}
	queue := slices.Clone(children[h])
	for len(queue) > 0 && len(moved) <= len(recs) {
		c := queue[0]
		queue = queue[1:]
		if _, ok := moved[c]; ok {
			continue
		}
		u := recs[c]
		d := int(u.Depth) + shift
		if d < 1 || d > maxDepth || (d > maxChain && d > int(u.Depth)) {
			return nil, false, nil
		}
		u.Depth = uint8(d)
		moved[c] = u
		queue = append(queue, children[c]...)
	}
	return moved, true, nil
}

// addBase records in model owner's manifest that its units are coded
// against model base (a recast made after owner was added).
func addBase(t tx, owner, base string) error {
	if owner == base {
		return nil
	}
	v := t.get(bModels, []byte(owner))
	if v == nil {
		return nil // the owner was removed; its units live on in other models
	}
	m, err := parseManifest(v)
	if err != nil {
		return nil // a damaged manifest is verify's to report
	}
	if slices.Contains(m.Bases, base) {
		return nil
	}
	m.Bases = append(m.Bases, base)
	slices.Sort(m.Bases)
	return t.put(bModels, []byte(owner), m.encode())
}
