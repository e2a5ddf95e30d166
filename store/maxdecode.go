package store

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The decode bound. A get decodes each unit of a file with its base
// chain: a cast decodes its F32 unit first (twice its bytes), a delta its
// base (its own size). A unit's decode cost is the sum of the original
// bytes (RawLen) along its chain, itself included; its ratio is that cost
// over its own bytes. A store may be made with a bound R (bytes decoded
// per byte restored, per unit; Init's InitOptions.MaxDecode, nzip store
// init -max-decode): every path that gives a unit a base — planUnit (a
// cast, a delta against the nearest candidate or its chain's root),
// recastStored (an F32 unit arriving after its 16-bit export) and Repack —
// keeps that unit's ratio, and those of the units decoded from it, within
// R; then every model's bytes decoded per byte restored are within R (a
// model's ratio is a mean of its units', weighted by their bytes). 0 is
// unbounded (stores made without it).
//
// A cast's ratio is 1 + 2 × its F32 unit's (≥ 3), a delta's 1 + its
// base's (≥ 2): under R < 3 a store holds no casts, under R < 2 no deltas.
//
// The bound is the value of key maxDecodeKey in the fingerprint bucket,
// beside the format record, written by Init only (a store's bound does not
// change: its units were planned under it).

// maxDecodeKey holds the store's decode bound (bFP, like formatKey).
var maxDecodeKey = []byte("\xffmaxdecode")

// maxDecodeRec is the record of decode bound r: recVersion · u64 bits of
// r (float64, little-endian) · CRC-32C.
func maxDecodeRec(r float64) []byte {
	return seal(binary.LittleEndian.AppendUint64([]byte{recVersion}, math.Float64bits(r)))
}

// validMaxDecode reports whether r may be a store's decode bound: 0
// (unbounded) or a finite number ≥ 1.
func validMaxDecode(r float64) bool { return r == 0 || (r >= 1 && !math.IsInf(r, 0)) }

// parseMaxDecode reads the decode bound record (nil: 0, unbounded).
func parseMaxDecode(b []byte) (float64, error) {
	if b == nil {
		return 0, nil
	}
	f, err := open(b)
	if err != nil {
		return 0, err
	}
	if len(f) != 8 {
		return 0, fmt.Errorf("%w (decode bound of %d bytes)", errRecord, len(f))
	}
	r := math.Float64frombits(binary.LittleEndian.Uint64(f))
	if !validMaxDecode(r) || r == 0 {
		return 0, fmt.Errorf("%w (decode bound %v)", errRecord, r)
	}
	return r, nil
}

// maxDecodeOf is the decode bound of index t (0: unbounded).
func maxDecodeOf(t tx) (float64, error) {
	r, err := parseMaxDecode(t.get(bFP, maxDecodeKey))
	if err != nil {
		return 0, fmt.Errorf("%w: decode bound record: %v", ErrIndexDamaged, err)
	}
	return r, nil
}

// within reports whether a unit of raw bytes whose chain decodes cost
// bytes keeps bound r.
func within(r float64, cost, raw int64) bool {
	return r == 0 || float64(cost) <= r*float64(raw)
}

// chainCost is the decode cost of stored unit u: its bytes and those of
// its base chain (read from t); -1 when the chain is missing, damaged or
// too deep.
func chainCost(t tx, u unit) int64 {
	n := u.RawLen
	for range maxDepth + 1 {
		if !hasBase(u.Kind) {
			return n
		}
		v := t.get(bUnits, u.Base[:])
		if v == nil {
			return -1
		}
		b, err := parseUnit(v)
		if err != nil {
			return -1
		}
		n += b.RawLen
		u = b
	}
	return -1
}

// costOf is the decode cost of stored unit h (-1: see chainCost).
func costOf(t tx, h Hash) int64 {
	v := t.get(bUnits, h[:])
	if v == nil {
		return -1
	}
	u, err := parseUnit(v)
	if err != nil {
		return -1
	}
	return chainCost(t, u)
}

// baseWithin reports whether a unit of raw bytes may be decoded from
// stored unit base under bound r.
func baseWithin(t tx, r float64, base Hash, raw int64) bool {
	if r == 0 {
		return true
	}
	c := costOf(t, base)
	return c >= 0 && within(r, raw+c, raw)
}

// InitOptions are the settings of a new store (InitWith); the zero value
// is Init's.
type InitOptions struct {
	// MaxDecode is the decode bound (above): bytes decoded per byte
	// restored, per unit; 0 is unbounded, else at least 1.
	MaxDecode float64
}

// initRecords is the first transaction of a new store of format version
// v: the fingerprints' index, the format record and the decode bound.
func initRecords(v int, o InitOptions) func(t tx) error {
	return func(t tx) error {
		if err := buildLSH(t); err != nil {
			return err
		}
		if err := setFormat(v)(t); err != nil {
			return err
		}
		if o.MaxDecode == 0 {
			return nil
		}
		return t.put(bFP, maxDecodeKey, maxDecodeRec(o.MaxDecode))
	}
}

// check validates the settings of a new store.
func (o InitOptions) check() error {
	if !validMaxDecode(o.MaxDecode) {
		return fmt.Errorf("store: decode bound %v: want 0 (unbounded) or a number at least 1", o.MaxDecode)
	}
	return nil
}

// MaxDecode is the store's decode bound (0: unbounded).
func (s *Store) MaxDecode() float64 { return s.maxDecode }
