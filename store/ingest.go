package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// Ingestion in steps: what Add does for one model after another, cut into
// the steps of a distributed pipeline (cmd/nzip-beam) that runs each step
// on many workers:
//
//  1. Describe every unit of every file (Spans, Describe): its hash,
//     fingerprint and, for F32, the hashes of its BF16 and F16 casts.
//  2. Group the units by hash: the first in the ingest order (Before) is
//     new unless the store holds it (Has); the others reference it.
//  3. Group the new units by Family and plan each family (PlanFamily):
//     which unit is a cast of an F32 unit, which is tried as a delta to
//     which base, which is coded alone.
//  4. Code each planned unit (Code), reading its base's bytes from the
//     input that holds it or from the store (UnitBytes).
//  5. Write one pack per model (Pack, PutPack).
//  6. Commit the models in order (CommitModels): each model is in the
//     index in full or not at all.
//
// The store this makes is the one Add makes adding the same models one by
// one in the same order: the same units, kinds, bases, depths, packs and
// manifests, recasts of 16-bit units stored or added before their F32
// originals included: Add and the planner decide through one routine
// (plan.go, which also says where a planned ingest can still differ).

// Span is one unit of a file: a byte range and its element type
// (dtype.Invalid for opaque bytes).
type Span struct {
	Off, N int64
	DType  dtype.DType
}

// Spans cuts a file of size bytes with layout segs into its units, as Add
// does: each tensor one unit, the bytes between tensors opaque units of
// at most 16 MiB.
func Spans(size int64, segs []codec.Segment) []Span {
	sp := spans(size, segs)
	out := make([]Span, len(sp))
	for i, s := range sp {
		out[i] = Span{Off: s.off, N: s.n, DType: s.t}
	}
	return out
}

// UnitInfo describes one unit of an ingest: where it lies and what its
// bytes are (without the bytes).
type UnitInfo struct {
	Model int // the model's place in the ingest order: earlier models are the bases of later ones
	File  int // the file's place in its model
	Index int // the unit's place in its file
	Src   string
	Span
	Hash  Hash
	FP    []float32 // fingerprint (float tensors)
	Casts []Hash    // F32: the addresses of its BF16 and F16 casts
}

// Describe hashes and fingerprints the bytes of a unit of type t for a
// version 2 store (the pipeline's; version.go): its BLAKE3, its
// fingerprint and, for F32, the BLAKE3 of its BF16 and F16 casts. (Add
// and AddBatch hash an F32 unit's casts only when a 16-bit unit's
// fingerprint matches; extra cast hashes change nothing: a recast needs
// a stored unit with the cast's address, whose fingerprint then matches.)
func Describe(raw []byte, t dtype.DType) (h Hash, fp []float32, casts []Hash) {
	fp = describeFP(raw, t)
	if t == dtype.F32 && len(raw)%4 == 0 {
		casts = castHashes(raw, blake3Sum)
	}
	return blake3Sum(raw), fp, casts
}

// describeFP is a unit's fingerprint (nil for types without one).
func describeFP(raw []byte, t dtype.DType) fingerprint {
	if fingerprintable(t) && len(raw)%t.Size() == 0 {
		return fingerprintOf(raw, t)
	}
	return nil
}

// describeValues is Describe without the hash, on this store: the
// fingerprint and, in a version 1 store, the F32 cast hashes of the cast
// hints (a version 2 store hashes casts only where a fingerprint matches:
// castMatches).
func (s *Store) describeValues(raw []byte, t dtype.DType) (fp []float32, casts []Hash) {
	fp = describeFP(raw, t)
	if s.ver == Version1 && t == dtype.F32 && len(raw)%4 == 0 {
		casts = castHashes(raw, sha256Sum)
	}
	return fp, casts
}

// castTypes are the types an F32 unit's casts are recorded for, in the
// order of castHashes and UnitInfo.Casts.
var castTypes = []dtype.DType{dtype.BF16, dtype.F16}

// castHashes is the address (sum) of each cast (castTypes) of F32 bytes.
func castHashes(raw []byte, sum func([]byte) Hash) []Hash {
	out := make([]Hash, len(castTypes))
	buf := getBuf(len(raw) / 2)
	for i, ct := range castTypes {
		out[i] = sum(castF32(buf[:0], raw, ct))
	}
	putBuf(buf)
	return out
}

// Before reports whether u comes before v in the ingest order.
func (u UnitInfo) Before(v UnitInfo) bool {
	if u.Model != v.Model {
		return u.Model < v.Model
	}
	if u.File != v.File {
		return u.File < v.File
	}
	return u.Index < v.Index
}

// Family is the key of the units planned together: float tensors of one
// element count (an F32 tensor meets its BF16 and F16 casts and its fine-
// tunes). Units of other types have none ("") and are coded alone.
func (u UnitInfo) Family() string {
	if !fingerprintable(u.DType) || u.FP == nil {
		return ""
	}
	return fmt.Sprintf("%d", u.N/int64(u.DType.Size()))
}

// Has reports whether the store holds a unit with hash h.
func (s *Store) Has(h Hash) (bool, error) {
	found := false
	err := s.kv.view(func(t tx) error {
		found = t.get(bUnits, h[:]) != nil
		return nil
	})
	return found, err
}

// NewUnit is a coded unit on its way into the store: where its payload
// lies (Pack, Off, Len, CRC are set by Pack).
type NewUnit struct {
	Unit UnitInfo
	Kind uint8
	Base Hash // delta and cast
	Pack Hash
	Off  int64
	Len  int64
	CRC  uint32
}

// Code codes a planned unit of a version 2 store: raw is its bytes, base
// the bytes of its base (for a delta or cast plan; nil for others; a
// planned cast whose base does not cast to raw is coded alone). It returns the unit and its payload.
func Code(p Plan, raw, base []byte) (NewUnit, []byte, error) {
	u := p.Unit
	if int64(len(raw)) != u.N {
		return NewUnit{}, nil, fmt.Errorf("store: unit %s: %d bytes, planned %d", u.Hash, len(raw), u.N)
	}
	if blake3Sum(raw) != u.Hash {
		return NewUnit{}, nil, fmt.Errorf("store: unit %s: its input changed since it was described", u.Hash)
	}
	return codePlan(p, raw, base, true)
}

// codePlan is Code for bytes known to be the planned unit's; blake3 says
// that the unit's hash is their BLAKE3 (a version 2 address: the
// archives store it as their digest, unitOptions).
func codePlan(p Plan, raw, base []byte, blake3 bool) (NewUnit, []byte, error) {
	u := p.Unit
	var sum *Hash
	if blake3 {
		sum = &u.Hash
	}
	nu := NewUnit{Unit: u}
	if p.Kind == KindCast {
		// a cast found from the fingerprints (version 2) is confirmed on
		// the bytes; one from a cast hint (version 1, base nil) is exact
		if base == nil || castIs(base, raw, u.DType) {
			nu.Kind, nu.Base = KindCast, p.Base
			return nu, nil, nil
		}
		p.Kind = KindNzip
	}
	payload, kind := codeAlone(raw, u.DType, sum)
	nu.Kind = kind
	if p.Kind == KindDelta {
		if base == nil {
			return NewUnit{}, nil, fmt.Errorf("store: unit %s: no bytes for its base %s", u.Hash, p.Base)
		}
		delta, err := codeDelta(raw, u.DType, p.Base, base, sum)
		if err != nil {
			return NewUnit{}, nil, err
		}
		if len(delta) < len(payload) {
			payload, nu.Kind, nu.Base = delta, KindDelta, p.Base
		}
	}
	return nu, payload, nil
}

// Pack lays the payloads of a model's new units (in the ingest order) out
// as one pack and sets each unit's place in it; the caller stores the pack
// with PutPack and sets Pack to its address.
func Pack(units []NewUnit, payloads [][]byte) []byte {
	return bytes.Join(packParts(units, payloads), nil)
}

// packParts is Pack as the payloads in pack order, not joined (a chunk
// file is written from its parts).
func packParts(units []NewUnit, payloads [][]byte) [][]byte {
	var parts [][]byte
	off := int64(0)
	for i := range units {
		if units[i].Kind == KindCast {
			continue
		}
		off = placeUnit(&units[i], off, payloads[i])
		parts = append(parts, payloads[i])
	}
	return parts
}

// placeUnit places a unit's payload at off of its pack and returns the
// offset after it.
func placeUnit(u *NewUnit, off int64, payload []byte) int64 {
	u.Off, u.Len, u.CRC = off, int64(len(payload)), crcOf(payload)
	return off + u.Len
}

// PutPack stores a pack and returns its address (storing one already
// there does nothing).
func (s *Store) PutPack(data []byte) (Hash, error) {
	if s.opt.ReadOnly {
		return Hash{}, errors.New("store: opened read-only")
	}
	return s.bl.put(data)
}

// UnitBytes returns the original bytes of stored unit h.
func (s *Store) UnitBytes(h Hash) ([]byte, error) {
	var u unit
	err := s.kv.view(func(t tx) error {
		v := t.get(bUnits, h[:])
		if v == nil {
			return fmt.Errorf("store: unit %s: not in the index", h)
		}
		var err error
		u, err = parseUnit(v)
		if err != nil {
			return fmt.Errorf("%w: unit %s: %v", ErrIndexDamaged, h, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b, err := s.decode(h, u, maxDepth)
	if errors.Is(err, errPackGone) {
		b, _, err = s.decodeAgain(h, false, nil)
	}
	return b, err
}

// ModelCommit is one model of an ingest, ready to enter the index.
type ModelCommit struct {
	Name  string
	Files []FileEntry // each file's units (hashes, in order), size, SHA-256, format
	New   []NewUnit   // the units this model stores, packed
	Alone int64       // Manifest.Alone: its files' own nzip archives (0: not measured)
}

// CommitModels enters models into the index in the order given, in one
// transaction (so each model is there in full or absent). Their packs
// must be stored. A model already stored with the same files (an earlier
// try of the same ingest) is left as it is and reported in skipped; one
// stored with other files is an ErrExists.
func (s *Store) CommitModels(ms []ModelCommit) (skipped []string, err error) {
	_, skipped, err = s.commitModels(ms)
	return skipped, err
}

// commitModels is CommitModels, also returning the manifest of each model
// of ms as committed (nil for one skipped).
func (s *Store) commitModels(ms []ModelCommit) (out []*Manifest, skipped []string, err error) {
	if s.opt.ReadOnly {
		return nil, nil, errors.New("store: opened read-only")
	}
	var sizer func(Hash) (int64, bool)
	if z, ok := s.bl.(interface{ stat(Hash) (int64, bool) }); ok {
		sizer = z.stat
	} else if z, ok := s.bl.(interface{ size(Hash) (int64, bool) }); ok {
		sizer = z.size
	}
	ms = slices.Clone(ms)
	for _, mc := range ms {
		if err := checkName(mc.Name); err != nil {
			return nil, nil, err
		}
		for _, f := range mc.Files {
			if err := checkFileName(f.Name); err != nil {
				return nil, nil, fmt.Errorf("store: model %q: %w", mc.Name, err)
			}
		}
		if sizer == nil {
			continue
		}
		end := map[Hash]int64{} // each chunk once (an s3:// stat is a request)
		for _, nu := range mc.New {
			if nu.Kind != KindCast {
				end[nu.Pack] = max(end[nu.Pack], nu.Off+nu.Len)
			}
		}
		for id, e := range end {
			if n, ok := sizer(id); !ok || n < e {
				return nil, nil, fmt.Errorf("store: model %q: chunk %s is missing or short (a gc removed it while the ingest ran?): ingest again", mc.Name, id)
			}
		}
	}
	err = s.kv.update(func(bt tx) error {
		// the writes gathered, then made in key order (overlay.flush)
		t := newOverlay(bt)
		skipped = skipped[:0]
		out = make([]*Manifest, len(ms))
		for mi, mc := range ms {
			m := &Manifest{Name: mc.Name, Files: mc.Files, Alone: mc.Alone}
			for _, f := range mc.Files {
				m.Raw += f.Size
			}
			if v := t.get(bModels, []byte(mc.Name)); v != nil {
				old, err := parseManifest(v)
				if err == nil && sameFiles(old.Files, mc.Files) {
					skipped = append(skipped, mc.Name)
					continue
				}
				return fmt.Errorf("%w: %q", ErrExists, mc.Name)
			}
			news := make([]*coded, len(mc.New))
			for i, nu := range mc.New {
				news[i] = newCoded(nu)
				if nu.Kind != KindCast {
					m.Added += nu.Len
				}
			}
			if err := commitModel(t, m, news); err != nil {
				return fmt.Errorf("model %q: %w", mc.Name, err)
			}
			out[mi] = m
		}
		return t.flush(bt)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: commit: %w", err)
	}
	return out, skipped, nil
}

// newCoded is new unit nu as commitModel enters it.
func newCoded(nu NewUnit) *coded {
	u := nu.Unit
	c := &coded{h: u.Hash, fp: u.FP, casts: u.Casts, u: unit{Kind: nu.Kind, DType: u.DType, Pack: nu.Pack, Off: nu.Off, Len: nu.Len, CRC: nu.CRC, RawLen: u.N, Base: nu.Base}}
	if c.u.Kind == KindCast {
		c.u.Pack = Hash{}
	}
	if !fingerprintable(u.DType) {
		c.fp = nil
	}
	if u.DType == dtype.F32 && len(u.Casts) == len(castTypes) {
		c.castTs = castTypes
	} else {
		c.casts = nil
	}
	return c
}

func sameFiles(a, b []FileEntry) bool {
	return slices.EqualFunc(a, b, func(x, y FileEntry) bool {
		return x.Name == y.Name && x.Size == y.Size && x.SHA256 == y.SHA256 && slices.Equal(x.Units, y.Units)
	})
}
