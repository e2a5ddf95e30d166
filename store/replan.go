package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// Re-planning a store in place (nzip store repack). An add plans each unit
// on the index as it stands then: a 16-bit export added before its F32
// original is coded as a tensor of its own, and becomes a cast when the
// F32 unit arrives only if moving the deltas coded against it keeps their
// chains within maxChain (recast.go); a unit is coded against the nearest
// unit stored at its add, never against one added later. Repack plans the
// store again, on every unit it holds:
//
//  1. Casts. Every 16-bit unit that is not a cast and whose bytes are the
//     round-to-nearest-even cast of a stored F32 unit (named by a cast hint,
//     or found by fingerprints: the cast of the F32 unit's sampled values
//     equals the 16-bit unit's, exactly; then the cast's SHA-256 equals the
//     unit's address) becomes that cast. The deltas whose chains pass
//     through it move with it; one that would end deeper than maxChain (and
//     than it was) is coded again, against the new cast (the first unit of
//     its new chain that is not a delta) or alone, whichever is smaller. A
//     recast is made only when those codings cost less than the payload it
//     frees. Deepest units first, so that a 16-bit delta that is itself a
//     cast leaves its base's chain before its base is considered.
//  2. Nearer bases. Every delta is coded against the nearest unit of its
//     type and size (fingerprints) that is not its base already, not one
//     of its own dependants, and makes its chain no deeper (a get decodes
//     no more); the new delta is kept when smaller.
//
// Under a decode bound (maxdecode.go) a recast, a move and a new coding
// are made only when every unit they change keeps the bound.
//
// The units' addresses, and so the manifests, never change. Crash safety:
// the new payloads are written first, as one chunk file (temporary file,
// fsync, rename, fsync of the directory); then one index transaction
// switches every changed record (reference counts and depths included),
// after checking that each is still the record it planned from; then gc
// (gc.go) drops the units nothing uses any more and rewrites or removes
// the chunk files whose payloads are no longer used. A crash before the
// switch leaves the new chunk file an orphan, one after it old payloads
// that nothing references: either way every record names a complete
// payload, every get restores its model, and the next gc removes the
// leftovers. Every byte repack codes is decoded back and checked against
// the unit's SHA-256 before the switch, and every unit it reads is decoded
// through its old record and checked too: a damaged chunk or record is an
// error (nothing switched), never a wrong record.

// RepackStats says what Repack did.
type RepackStats struct {
	Recast   int // 16-bit units made casts of a stored F32 unit
	Declined int // 16-bit units left as they were: coding their dependants again would cost more than they free
	Moved    int // dependants of recast units coded again (against the cast or alone) to keep chains bounded
	Nearer   int // units coded again against a nearer base (smaller)
	Changed  int // unit records switched (depths that moved included)
	// Before and After are the payload bytes of the units in the index
	// (After once gc has removed what nothing uses).
	Before, After int64
	// DecodedBefore and DecodedAfter are the bytes a get of every model
	// decodes, bases included (Stats.Decoded); Restored the bytes it
	// restores.
	DecodedBefore, DecodedAfter, Restored int64
	GC                                    GCStats // the gc after the switch
}

// hasBase reports whether a unit of kind k decodes from a base.
func hasBase(k uint8) bool { return k == KindDelta || k == KindCast }

// replan is the state of one Repack: every unit record as read (old, and
// its encoding, oldRaw) and as planned (recs), the planned change of each
// unit's reference count and the new payloads.
type replan struct {
	s      *Store
	old    map[Hash]unit
	oldRaw map[Hash][]byte
	recs   map[Hash]*unit
	fps    map[Hash]fingerprint
	fams   map[string][]Hash // fingerprint key prefix (type, size) → its units, in hash order
	kids   map[Hash][]Hash   // base → the units decoded from it
	hints  map[Hash]castRec
	refs   map[Hash]int64  // change of each unit's reference count
	pay    map[Hash][]byte // new payloads (units coded again)
	bases  map[[2]string]bool
	maxDec float64 // the store's decode bound (0: unbounded)
	st     RepackStats
}

// edit is a planned record of one unit; coded: payload replaces the old
// one (nil for a cast).
type edit struct {
	h       Hash
	u       unit
	coded   bool
	payload []byte
}

// Repack re-plans the store in place (above) and runs gc. It needs a
// directory or in-memory store opened for writing; an s3:// store is not
// repacked (it has no lock: a reader holding the old index would read
// payloads that gc removes).
func (s *Store) Repack() (RepackStats, error) {
	if s.opt.ReadOnly {
		return RepackStats{}, errors.New("store: repack needs the store opened for writing")
	}
	if _, ok := s.bl.(interface{ young(Hash) bool }); ok {
		return RepackStats{}, errors.New("store: repack: s3:// stores are not repacked (no lock: a reader holding the old index would read payloads that are gone)")
	}
	r := &replan{s: s, old: map[Hash]unit{}, oldRaw: map[Hash][]byte{}, recs: map[Hash]*unit{},
		fps: map[Hash]fingerprint{}, fams: map[string][]Hash{}, kids: map[Hash][]Hash{}, hints: map[Hash]castRec{},
		refs: map[Hash]int64{}, pay: map[Hash][]byte{}, bases: map[[2]string]bool{}}
	if err := r.read(); err != nil {
		return r.st, err
	}
	if err := r.recastAll(); err != nil {
		return r.st, err
	}
	if err := r.nearerAll(); err != nil {
		return r.st, err
	}
	if err := r.commit(); err != nil {
		return r.st, err
	}
	gs, err := s.GC()
	r.st.GC = gs
	if err != nil {
		return r.st, err
	}
	st, err := s.Stats()
	if err != nil {
		return r.st, err
	}
	r.st.After, r.st.DecodedAfter = st.Stored, st.Decoded
	return r.st, nil
}

// read loads every unit record, fingerprint and cast hint.
func (r *replan) read() error {
	st, err := r.s.Stats()
	if err != nil {
		return err
	}
	r.st.Before, r.st.DecodedBefore, r.st.Restored = st.Stored, st.Decoded, st.Raw
	return r.s.kv.view(func(t tx) error {
		var err error
		if r.maxDec, err = maxDecodeOf(t); err != nil {
			return err
		}
		if err := t.scan(bUnits, nil, func(k, v []byte) error {
			u, err := parseUnit(v)
			if err != nil || len(k) != 32 {
				return fmt.Errorf("%w: unit %x: %v", ErrIndexDamaged, k, err)
			}
			h := Hash(k)
			r.old[h], r.oldRaw[h] = u, slices.Clone(v)
			c := u
			r.recs[h] = &c
			if hasBase(u.Kind) {
				r.kids[u.Base] = append(r.kids[u.Base], h)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := t.scan(bFP, nil, func(k, v []byte) error {
			if len(k) < 32 {
				return nil
			}
			h := Hash(k[len(k)-32:])
			u, ok := r.old[h]
			if !ok || !fingerprintable(u.DType) || !bytes.Equal(k, fpKey(u.DType, u.RawLen/int64(u.DType.Size()), h)) {
				return nil // a stale or damaged hint is only a missed chance
			}
			f, err := parseFingerprint(v)
			if err != nil {
				return nil
			}
			r.fps[h] = f
			fam := string(k[:len(k)-32])
			r.fams[fam] = append(r.fams[fam], h)
			return nil
		}); err != nil {
			return err
		}
		return t.scan(bCasts, nil, func(k, v []byte) error {
			if c, err := parseCast(v); err == nil && len(k) == 32 {
				r.hints[Hash(k)] = c
			}
			return nil
		})
	})
}

// orig is unit h's original bytes, decoded through its old record and
// checked against h (bases too), kept in the store's cache.
func (r *replan) orig(h Hash) ([]byte, error) {
	u, ok := r.old[h]
	if !ok {
		return nil, fmt.Errorf("%w: unit %s missing", ErrIndexDamaged, h)
	}
	b, pooled, err := r.s.decodeCheck(h, u, maxDepth, true, &restoring{recs: r.old, keep: true})
	if err != nil {
		return nil, fmt.Errorf("store: repack: unit %s (of model %q): %w", h, u.Owner, err)
	}
	if pooled {
		b = bytes.Clone(b) // not kept (too large for the cache): ours now
	}
	return b, nil
}

// allowed reports whether unit u may sit at depth d: within maxChain (a
// cast one step more), or not deeper than it was (old).
func allowed(u unit, d int, old unit) bool {
	lim := maxChain
	if u.Kind == KindCast {
		lim++
	}
	return d <= maxDepth && (d <= lim || d <= int(old.Depth))
}

// cost is the decode cost of unit h as planned: its bytes and those of
// its base chain (maxdecode.go); -1 when the chain is broken.
func (r *replan) cost(h Hash) int64 {
	var n int64
	for range maxDepth + 1 {
		u, ok := r.recs[h]
		if !ok {
			return -1
		}
		n += u.RawLen
		if !hasBase(u.Kind) {
			return n
		}
		h = u.Base
	}
	return -1
}

// within reports whether a unit of raw bytes decoded from a base whose
// cost is bc keeps the store's decode bound.
func (r *replan) within(bc, raw int64) bool { return bc >= 0 && within(r.maxDec, bc+raw, raw) }

// famKey is the fingerprint family (type and size) of a unit.
func famKey(u unit) string { return string(fpKey(u.DType, u.RawLen/int64(u.DType.Size()), Hash{})) }

// castFrom finds the F32 unit whose cast 16-bit unit y (hash h) is: the
// one its cast hint names, else one whose fingerprint casts to y's. The
// cast's SHA-256 is checked against h; the F32 unit's bytes come back too.
func (r *replan) castFrom(h Hash, y unit) (Hash, []byte, error) {
	var cands []Hash
	if c, ok := r.hints[h]; ok && c.DType == y.DType {
		cands = append(cands, c.From)
	}
	if fy, ok := r.fps[h]; ok {
		for _, x := range r.fams[string(fpKey(dtype.F32, y.RawLen/2, Hash{}))] {
			if castsTo(r.fps[x], fy, y.DType) && !slices.Contains(cands, x) {
				cands = append(cands, x)
			}
		}
	}
	for _, x := range cands {
		xu, ok := r.recs[x]
		if !ok || xu.DType != dtype.F32 || xu.RawLen != 2*y.RawLen {
			continue
		}
		raw, err := r.orig(x)
		if err != nil {
			return Hash{}, nil, err
		}
		if r.s.sum(castF32(nil, raw, y.DType)) == h {
			return x, raw, nil
		}
	}
	return Hash{}, nil, nil
}

// recastAll makes every 16-bit unit that is the cast of a stored F32 unit
// a cast (step 1), deepest first, in passes until none changes.
func (r *replan) recastAll() error {
	for {
		var ys []Hash
		for h, u := range r.recs {
			if castable(u.DType) && u.Kind != KindCast {
				ys = append(ys, h)
			}
		}
		slices.SortFunc(ys, func(a, b Hash) int {
			if da, db := r.recs[a].Depth, r.recs[b].Depth; da != db {
				return int(db) - int(da)
			}
			return bytes.Compare(a[:], b[:])
		})
		made := 0
		r.st.Declined = 0
		for _, h := range ys {
			x, xraw, err := r.castFrom(h, *r.recs[h])
			if err != nil {
				return err
			}
			if xraw == nil {
				continue
			}
			edits, cost, ok, err := r.recastPlan(h, x)
			if err != nil {
				return err
			}
			if !ok || cost > r.recs[h].Len {
				r.st.Declined++
				continue
			}
			for _, e := range edits {
				r.apply(e)
				if e.coded && e.h != h {
					r.st.Moved++
				}
			}
			r.st.Recast++
			made++
		}
		if made == 0 {
			return nil
		}
	}
}

// recastPlan plans unit y (hash h) as the cast of F32 unit x: its record,
// and those of the units whose chains pass through it, moved or coded
// again (against y or alone) where they would end too deep; cost is the
// payload bytes those codings add (y's own payload not counted).
func (r *replan) recastPlan(h, x Hash) (edits []edit, cost int64, ok bool, err error) {
	nu := *r.recs[h]
	nu.Kind, nu.Base, nu.Depth = KindCast, x, r.recs[x].Depth+1
	nu.Pack, nu.Off, nu.Len, nu.CRC = Hash{}, 0, 0, 0
	if !allowed(nu, int(nu.Depth), r.old[h]) || !r.within(r.cost(x), nu.RawLen) {
		return nil, 0, false, nil
	}
	edits = append(edits, edit{h: h, u: nu, coded: true})
	var yraw []byte
	queue := []Hash{h}
	depth := map[Hash]int{h: int(nu.Depth)}
	costs := map[Hash]int64{h: nu.RawLen + r.cost(x)} // decode costs as planned
	for len(queue) > 0 && len(edits) <= len(r.recs) {
		p := queue[0]
		queue = queue[1:]
		for _, c := range r.kids[p] {
			cu := *r.recs[c]
			d := depth[p] + 1
			cc := costs[p] + cu.RawLen
			if allowed(cu, d, r.old[c]) && r.within(costs[p], cu.RawLen) {
				cu.Depth = uint8(d)
				edits = append(edits, edit{h: c, u: cu})
			} else {
				if cu.Kind != KindDelta {
					return nil, 0, false, nil
				}
				if yraw == nil {
					if yraw, err = r.orig(h); err != nil {
						return nil, 0, false, err
					}
				}
				e, err := r.recode(c, cu, h, int(nu.Depth), costs[h], yraw)
				if err != nil {
					return nil, 0, false, err
				}
				cost += e.u.Len - cu.Len
				edits = append(edits, e)
				d, cc = int(e.u.Depth), cu.RawLen
				if e.u.Kind == KindDelta {
					cc += costs[h]
				}
			}
			depth[c], costs[c] = d, cc
			queue = append(queue, c)
		}
	}
	return edits, cost, true, nil
}

// recode codes unit c (record cu) again: against base b (at depth bd,
// decode cost bc, bytes braw) when that is allowed and smaller, else
// alone.
func (r *replan) recode(c Hash, cu unit, b Hash, bd int, bc int64, braw []byte) (edit, error) {
	raw, err := r.orig(c)
	if err != nil {
		return edit{}, err
	}
	payload, kind := codeAlone(raw, cu.DType, nil)
	nu := cu
	nu.Kind, nu.Base, nu.Depth = kind, Hash{}, 0
	if allowed(unit{Kind: KindDelta}, bd+1, r.old[c]) && r.within(bc, cu.RawLen) {
		delta, err := codeDelta(raw, cu.DType, b, braw, nil)
		if err != nil {
			return edit{}, fmt.Errorf("store: repack: unit %s: %w", c, err)
		}
		if len(delta) < len(payload) {
			payload, nu.Kind, nu.Base, nu.Depth = delta, KindDelta, b, uint8(bd+1)
		}
	}
	if err := checkPayload(r.s.sum, c, nu, payload, braw); err != nil {
		return edit{}, err
	}
	nu.Len = int64(len(payload))
	return edit{h: c, u: nu, coded: true, payload: payload}, nil
}

// checkPayload decodes a new payload (against braw for a delta) and checks
// it against the unit's address.
func checkPayload(sum func([]byte) Hash, h Hash, u unit, payload, braw []byte) error {
	out := payload
	switch u.Kind {
	case KindNzip, KindDelta:
		opt := codec.DecodeOptions{Threads: 1}
		if u.Kind == KindDelta {
			segs := unitSegs(len(braw), u.DType)
			ref, err := codec.NewReferenceSums([]codec.Input{{Name: "base", R: bytes.NewReader(braw), Size: int64(len(braw)), Segments: segs}}, [][32]byte{u.Base})
			if err != nil {
				return err
			}
			opt.Ref = ref
		}
		var err error
		if out, err = codec.DecompressBytesTo(context.Background(), nil, payload, opt); err != nil {
			return fmt.Errorf("store: repack: unit %s: its new coding does not decode: %v", h, err)
		}
	}
	if sum(out) != h {
		return fmt.Errorf("store: repack: unit %s: its new coding decodes to other bytes", h)
	}
	return nil
}

// apply makes an edit part of the plan: the unit's record, its base's
// references and children.
func (r *replan) apply(e edit) {
	o := r.recs[e.h]
	if hasBase(o.Kind) {
		r.refs[o.Base]--
		r.kids[o.Base] = slices.DeleteFunc(r.kids[o.Base], func(k Hash) bool { return k == e.h })
	}
	if hasBase(e.u.Kind) {
		r.refs[e.u.Base]++
		r.kids[e.u.Base] = append(r.kids[e.u.Base], e.h)
		if bo := r.recs[e.u.Base].Owner; e.coded && bo != e.u.Owner {
			r.bases[[2]string{e.u.Owner, bo}] = true
		}
	}
	if e.coded {
		r.pay[e.h] = e.payload
	}
	u := e.u
	r.recs[e.h] = &u
}

// subtree is the set of units whose chains pass through h (h included).
func (r *replan) subtree(h Hash) map[Hash]bool {
	in := map[Hash]bool{h: true}
	queue := []Hash{h}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range r.kids[p] {
			if !in[c] {
				in[c] = true
				queue = append(queue, c)
			}
		}
	}
	return in
}

// moveTo plans unit h (record nu, at its new depth) and the depths of the
// units whose chains pass through it; ok is false when one would end too
// deep or past the decode bound.
func (r *replan) moveTo(h Hash, nu unit, coded bool, payload []byte) ([]edit, bool) {
	if !allowed(nu, int(nu.Depth), r.old[h]) {
		return nil, false
	}
	var bc int64
	if hasBase(nu.Kind) {
		bc = r.cost(nu.Base)
	}
	if !r.within(bc, nu.RawLen) {
		return nil, false
	}
	edits := []edit{{h: h, u: nu, coded: coded, payload: payload}}
	depth := map[Hash]int{h: int(nu.Depth)}
	costs := map[Hash]int64{h: bc + nu.RawLen}
	queue := []Hash{h}
	for len(queue) > 0 && len(edits) <= len(r.recs) {
		p := queue[0]
		queue = queue[1:]
		for _, c := range r.kids[p] {
			cu := *r.recs[c]
			d := depth[p] + 1
			if !allowed(cu, d, r.old[c]) || !r.within(costs[p], cu.RawLen) {
				return nil, false
			}
			cu.Depth = uint8(d)
			depth[c], costs[c] = d, costs[p]+cu.RawLen
			edits = append(edits, edit{h: c, u: cu})
			queue = append(queue, c)
		}
	}
	return edits, true
}

// nearest is the unit nearest h (a float unit that is not a cast) that
// may be its base: of its type and size, not its base already, not in its
// subtree, and making its chain shorter or no longer (so that a get
// decodes no more than before: a nearer base that made the chain deeper
// saved 1–160 bytes of tensors of 8–44 KB on the hub, for 2 % more bytes
// decoded).
func (r *replan) nearest(h Hash) (Hash, bool) {
	u := r.recs[h]
	fp := r.fps[h]
	if fp == nil || u.Kind == KindCast || !fingerprintable(u.DType) {
		return Hash{}, false
	}
	sub := r.subtree(h)
	var best Hash
	bestD := nearThreshold
	found := false
	for _, c := range r.fams[famKey(*u)] {
		if sub[c] || (hasBase(u.Kind) && c == u.Base) || r.recs[c].Depth >= u.Depth || !allowed(unit{Kind: KindDelta}, int(r.recs[c].Depth)+1, r.old[h]) || !r.within(r.cost(c), u.RawLen) {
			continue
		}
		if d := distance(r.fps[c], fp); d < bestD {
			best, bestD, found = c, d, true
		}
	}
	return best, found
}

// nearerAll codes every float unit that is not a cast against its nearest
// possible base (step 2), threads at a time, and keeps the smaller codings
// in hash order, each checked again against the plan as it stands; in
// passes until no unit has a nearest base not tried yet (a move changes
// what is possible for the units around it).
func (r *replan) nearerAll() error {
	tried := map[[2]Hash]bool{}
	for pass := 0; pass < 2*maxDepth; pass++ {
		n, err := r.nearerPass(tried)
		if err != nil || n == 0 {
			return err
		}
	}
	return nil
}

// nearerPass is one pass of nearerAll; it returns the codings tried.
func (r *replan) nearerPass(tried map[[2]Hash]bool) (int, error) {
	type try struct {
		h, b    Hash
		payload []byte
	}
	var tries []*try
	for h := range r.recs {
		if b, ok := r.nearest(h); ok && !tried[[2]Hash{h, b}] {
			tried[[2]Hash{h, b}] = true
			tries = append(tries, &try{h: h, b: b})
		}
	}
	slices.SortFunc(tries, func(a, b *try) int { return bytes.Compare(a.h[:], b.h[:]) })
	// the originals first, one at a time (the cache is shared)
	for _, t := range tries {
		if _, err := r.orig(t.h); err != nil {
			return 0, err
		}
		if _, err := r.orig(t.b); err != nil {
			return 0, err
		}
	}
	err := parallel(len(tries), r.s.opt.threads(), func(i int) error {
		t := tries[i]
		raw, err := r.orig(t.h)
		if err != nil {
			return err
		}
		braw, err := r.orig(t.b)
		if err != nil {
			return err
		}
		u := *r.recs[t.h]
		delta, err := codeDelta(raw, u.DType, t.b, braw, nil)
		if err != nil {
			return fmt.Errorf("store: repack: unit %s: %w", t.h, err)
		}
		if int64(len(delta)) >= u.Len {
			return nil
		}
		u.Kind, u.Base = KindDelta, t.b
		if err := checkPayload(r.s.sum, t.h, u, delta, braw); err != nil {
			return err
		}
		t.payload = delta
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, t := range tries {
		u := *r.recs[t.h]
		if t.payload == nil || int64(len(t.payload)) >= u.Len || u.Kind == KindCast || r.recs[t.b].Depth >= u.Depth || r.subtree(t.h)[t.b] {
			continue
		}
		u.Kind, u.Base, u.Depth, u.Len = KindDelta, t.b, r.recs[t.b].Depth+1, int64(len(t.payload))
		edits, ok := r.moveTo(t.h, u, true, t.payload)
		if !ok {
			continue
		}
		for _, e := range edits {
			r.apply(e)
		}
		r.st.Nearer++
	}
	return len(tries), nil
}

// commit writes the new payloads as one chunk file, then switches every
// changed record in one index transaction.
func (r *replan) commit() error {
	var changed []Hash
	for h, u := range r.recs {
		if *u != r.old[h] || r.refs[h] != 0 {
			changed = append(changed, h)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	slices.SortFunc(changed, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) })
	var pack []byte
	for _, h := range changed {
		u := r.recs[h]
		p, ok := r.pay[h]
		if !ok || u.Kind == KindCast {
			continue
		}
		u.Off, u.Len, u.CRC = int64(len(pack)), int64(len(p)), crcOf(p)
		pack = append(pack, p...)
	}
	var id Hash
	if len(pack) > 0 {
		var err error
		if id, err = r.s.bl.put(pack); err != nil {
			return fmt.Errorf("store: repack: %w", err)
		}
	}
	hook("replan-written")
	err := r.s.kv.update(func(t tx) error {
		for _, h := range changed {
			if !bytes.Equal(t.get(bUnits, h[:]), r.oldRaw[h]) {
				return fmt.Errorf("store: repack: unit %s changed while the store was repacked", h)
			}
			u := *r.recs[h]
			u.Refs += r.refs[h]
			if u.Refs < 0 {
				return fmt.Errorf("%w: unit %s: reference count below zero", ErrIndexDamaged, h)
			}
			if _, ok := r.pay[h]; ok && u.Kind != KindCast {
				u.Pack = id
			}
			if err := t.put(bUnits, h[:], u.encode()); err != nil {
				return err
			}
		}
		for ob := range r.bases {
			if err := addBase(t, ob[0], ob[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.st.Changed = len(changed)
	hook("replan-switched")
	return nil
}
