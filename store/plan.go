package store

import (
	"fmt"
	"slices"
	"sort"

	"neuralzip/dtype"
)

// Planning: how a new unit is stored. One routine decides it (planUnit)
// for Add, AddBatch and the ingest steps of cmd/nzip-beam: it reads the
// index as it stands when the unit's model is added. Add plans each unit
// on the store's index; PlanFamily plans the models of an ingest one
// after another on an overlay of the index (overlay.go) into which it
// commits each planned model with commitModel, the code of the real
// commit — so a later model sees the units of the earlier ones, their
// cast hints, and the recasts their F32 units make of stored 16-bit
// units with the depths those move (recast.go), as Add would.
//
// Where a planned ingest can still differ from Add: a planned delta that
// is not smaller than its unit coded alone is stored alone when it is
// coded, but the overlay holds it as a delta, so a later model's plan
// may see a chain (its depth, its root, a recast it blocks) that Add's
// index would not hold.

// Plan says how a new unit is to be stored.
type Plan struct {
	Unit UnitInfo
	// Kind is KindCast (the bytes are the cast of Base), KindDelta (coded
	// against Base, or alone when that is smaller) or KindNzip (coded
	// alone; raw when nzip does not shrink it).
	Kind uint8
	Base Hash
	// BaseAt is the base when it is a unit of this ingest (read from its
	// input); nil when the store holds it.
	BaseAt *UnitInfo
}

// candidate is a possible base: a unit of the index (or of the planner's
// overlay).
type candidate struct {
	h     Hash
	fp    fingerprint
	depth int
	u     unit       // its record
	root  *candidate // a delta: the first unit of its chain that is not a delta (nil: itself)
}

// rootOf is the unit a new delta is coded against instead of c when c's
// chain is too deep: c's chain's root.
func (c candidate) rootOf() candidate {
	if c.root != nil {
		return *c.root
	}
	return c
}

// storedRoot is the root of stored delta u's chain: the first unit down
// its bases that is not a delta (of u's type: a delta's base has its
// type). roots remembers the ones found.
func storedRoot(t tx, u unit, roots map[Hash]*candidate) *candidate {
	var path []Hash
	var r *candidate
	for range maxDepth + 1 {
		if u.Kind != KindDelta {
			break
		}
		h := u.Base
		if c, ok := roots[h]; ok {
			r = c
			break
		}
		path = append(path, h)
		v := t.get(bUnits, h[:])
		if v == nil {
			return nil
		}
		bu, err := parseUnit(v)
		if err != nil || bu.DType != u.DType {
			return nil // a damaged chain: no root to offer
		}
		if bu.Kind != KindDelta {
			r = &candidate{h: h, depth: int(bu.Depth), u: bu}
			break
		}
		u = bu
	}
	if r == nil {
		return nil
	}
	for _, h := range path {
		roots[h] = r
	}
	return r
}

// storedCandidates lists the stored units of type ty and numel values that
// have a fingerprint, in hash order (the index's), as bases to choose from:
// the exhaustive search, linear in the family's units.
func storedCandidates(t tx, ty dtype.DType, numel int64) ([]candidate, error) {
	var out []candidate
	roots := map[Hash]*candidate{}
	prefix := fpKey(ty, numel, Hash{})
	err := t.scan(bFP, prefix, func(k, v []byte) error {
		if len(k) != len(prefix)+32 {
			return nil
		}
		f, err := parseFingerprint(v)
		if err != nil {
			return nil // a damaged hint is only a missed chance
		}
		if c, ok := candidateOf(t, Hash(k[len(prefix):]), f, ty, roots); ok {
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// candidateOf is stored unit h (fingerprint f) as a base for a unit of
// type ty; false when it is not in the index, damaged, or of another type.
func candidateOf(t tx, h Hash, f fingerprint, ty dtype.DType, roots map[Hash]*candidate) (candidate, bool) {
	ub := t.get(bUnits, h[:])
	if ub == nil {
		return candidate{}, false
	}
	u, err := parseUnit(ub)
	if err != nil || u.DType != ty {
		return candidate{}, false
	}
	c := candidate{h: h, fp: f, depth: int(u.Depth), u: u}
	if u.Kind == KindDelta {
		if c.root = storedRoot(t, u, roots); c.root == nil {
			return candidate{}, false // a damaged chain: not a base
		}
	}
	return c, true
}

// castOf is the F32 unit whose cast new unit h of type ty is, from the
// index's cast hints: the hint's F32 unit must be in the index and leave
// room for one more step in its chain.
func castOf(t tx, h Hash, ty dtype.DType) (Hash, bool) {
	v := t.get(bCasts, h[:])
	if v == nil {
		return Hash{}, false
	}
	r, err := parseCast(v)
	if err != nil || r.DType != ty {
		return Hash{}, false // a damaged hint is only a missed chance
	}
	bu := t.get(bUnits, r.From[:])
	if bu == nil {
		return Hash{}, false
	}
	if u, err := parseUnit(bu); err != nil || u.Depth >= maxDepth {
		return Hash{}, false
	}
	return r.From, true
}

// candidates lists the possible bases of a new unit of a type and element
// count with fingerprint fp (Store.candidates).
type candidates func(ty dtype.DType, numel int64, fp fingerprint) ([]candidate, error)

// candidates is how the planner finds bases on index t: the fingerprint
// index's near units (indexedCandidates) where the index holds it, else
// (a store made before it, opened to read; Options.Exhaustive) every
// unit of the family (storedCandidates, read once per family).
func (s *Store) candidates(t tx) candidates {
	roots := map[Hash]*candidate{}
	if !s.opt.Exhaustive && hasLSH(t) {
		return func(ty dtype.DType, numel int64, fp fingerprint) ([]candidate, error) {
			return indexedCandidates(t, ty, numel, fp, roots)
		}
	}
	cache := map[string][]candidate{}
	return func(ty dtype.DType, numel int64, _ fingerprint) ([]candidate, error) {
		fam := string(fpKey(ty, numel, Hash{}))
		if cs, ok := cache[fam]; ok {
			return cs, nil
		}
		cs, err := storedCandidates(t, ty, numel)
		cache[fam] = cs
		return cs, err
	}
}

// planUnit plans new unit u (not in the index t reads): the cast of an
// F32 unit when a cast hint names one (castOf; version 1) or its
// fingerprint casts to u's (castOfFP; version 2: confirmed on the bytes
// when coded), else a delta tried against the nearest candidate
// (nearestOf), else coded alone.
//
// Under a decode bound R (maxdecode.go) a cast is made only when its
// ratio is within R, else the unit is planned as a delta or alone; a
// delta against the nearest candidate only when within R, else against
// that chain's root when within R, else the unit is coded alone.
func planUnit(t tx, u UnitInfo, cands candidates) (Plan, error) {
	p := Plan{Unit: u, Kind: KindNzip}
	r, err := maxDecodeOf(t)
	if err != nil {
		return p, err
	}
	if castable(u.DType) {
		from, ok := Hash{}, false
		if isV2(t) {
			var err error
			if from, ok, err = castOfFP(t, u, cands); err != nil {
				return p, err
			}
		} else {
			from, ok = castOf(t, u.Hash, u.DType)
		}
		if ok && baseWithin(t, r, from, u.N) {
			p.Kind, p.Base = KindCast, from
			return p, nil
		}
	}
	if !fingerprintable(u.DType) || u.FP == nil {
		return p, nil
	}
	cs, err := cands(u.DType, u.N/int64(u.DType.Size()), u.FP)
	if err != nil {
		return p, err
	}
	c, ok := nearestOf(cs, u.FP)
	if ok && !baseWithin(t, r, c.h, u.N) {
		c = c.rootOf()
		ok = baseWithin(t, r, c.h, u.N)
	}
	if ok {
		p.Kind, p.Base = KindDelta, c.h
	}
	return p, nil
}

// PlanFamily plans the new units of one family (their Family key equal,
// none stored, each hash once) as Add would meet them, one model after
// another (planUnit on the index as the earlier models leave it): a
// castable unit whose bytes are the cast of an F32 unit stored or added
// by an earlier model is a cast; a float unit is tried against the
// nearest unit of its type stored or added by an earlier model; the rest
// are coded alone. The plans come in the ingest order.
func (s *Store) PlanFamily(units []UnitInfo) ([]Plan, error) {
	units = slices.Clone(units)
	sort.Slice(units, func(i, j int) bool { return units[i].Before(units[j]) })
	for _, u := range units {
		if u.Family() == "" {
			return nil, fmt.Errorf("store: plan: unit %s of type %s has no family", u.Hash, u.DType)
		}
		if u.Family() != units[0].Family() {
			return nil, fmt.Errorf("store: plan: units of families %s and %s planned together", units[0].Family(), u.Family())
		}
	}
	plans := make([]Plan, 0, len(units))
	err := s.kv.view(func(t tx) error {
		o := newOverlay(t)
		at := map[Hash]*UnitInfo{} // the units planned so far
		for i := 0; i < len(units); {
			j := i + 1
			for j < len(units) && units[j].Model == units[i].Model {
				j++
			}
			ps, err := planModel(o, units[i:j], at, s.candidates(o))
			if err != nil {
				return err
			}
			if j == len(units) {
				// the last model: no later one plans on what it enters
				plans = append(plans, ps...)
				break
			}
			if err := enterPlans(o, units[i].Model, ps); err != nil {
				return fmt.Errorf("store: plan: %w", err)
			}
			for k := i; k < j; k++ {
				at[units[k].Hash] = &units[k]
			}
			plans = append(plans, ps...)
			i = j
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return plans, nil
}

// prefetchPlans reads ahead on t, together, what planning units us reads
// first (planKeys), where t reads ahead at all.
func prefetchPlans(t tx, us ...UnitInfo) {
	if !readsAhead(t) {
		return // (no codes to compute: ~4 % of a large model's add)
	}
	var want []bucketKey
	for _, u := range us {
		want = planKeys(want, u)
	}
	prefetch(t, want...)
}

// planKeys is the keys that planning unit u reads first, appended to
// to: the decode bound, and for the fingerprint families of u and of its
// casts where the searches for a base start (the family, the walks of
// its index).
func planKeys(to []bucketKey, u UnitInfo) []bucketKey {
	to = append(to, bucketKey{bFP, maxDecodeKey})
	if u.FP == nil || u.DType.Size() == 0 {
		return to
	}
	numel := u.N / int64(u.DType.Size())
	search := func(ty dtype.DType, fp fingerprint) {
		fam := fpKey(ty, numel, Hash{})
		to = lshStarts(append(to, bucketKey{bFP, fam}), fam, lshCodes(fp))
	}
	search(u.DType, u.FP)
	if u.DType == dtype.F32 {
		for _, ct := range castTypes {
			search(ct, castFP(u.FP, ct))
		}
	}
	return to
}

// planModel plans the units of one model on index t (they see the index
// only, not each other, as in Add), finding bases with cands (on t); at holds the units of earlier models
// of the ingest, whose bytes a plan reads from their inputs (BaseAt).
func planModel(t tx, us []UnitInfo, at map[Hash]*UnitInfo, cands candidates) ([]Plan, error) {
	ps := make([]Plan, len(us))
	prefetchPlans(t, us...)
	for k, u := range us {
		p, err := planUnit(t, u, cands)
		if err != nil {
			return nil, err
		}
		if p.Kind != KindNzip {
			p.BaseAt = at[p.Base]
		}
		ps[k] = p
	}
	return ps, nil
}

// enterPlans commits the planned units of one model (the model's place
// in the ingest) into overlay o as the commit will enter them: through
// commitModel, each referenced once by a file of a stand-in manifest (a
// name no model may have), a planned delta as a delta.
func enterPlans(o *overlay, model int, ps []Plan) error {
	news := make([]*coded, len(ps))
	var fe FileEntry
	for i, p := range ps {
		news[i] = newCoded(NewUnit{Unit: p.Unit, Kind: p.Kind, Base: p.Base})
		fe.Units = append(fe.Units, p.Unit.Hash)
	}
	m := &Manifest{Name: fmt.Sprintf("\x00planned model %d", model), Files: []FileEntry{fe}}
	return commitModel(o, m, news)
}

// nearestOf is Add's choice of base: the candidate nearest fp within
// nearThreshold, the first in hash order on a tie; when a delta against
// it would be deeper than maxChain, its chain's root, if that leaves
// room (else none: the unit is coded alone).
func nearestOf(cs []candidate, fp fingerprint) (candidate, bool) {
	var best candidate
	bestD := nearThreshold
	found := false
	for _, c := range cs {
		d := distance(c.fp, fp)
		if !(d < bestD) {
			continue
		}
		best, bestD, found = c, d, true
	}
	if !found || best.depth < maxChain {
		return best, found
	}
	if r := best.rootOf(); r.depth < maxChain {
		return r, true
	}
	return candidate{}, false
}
