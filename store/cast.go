package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"neuralzip/dtype"
)

// Casts. A BF16 or F16 export of an F32 model holds, tensor for tensor, the
// round-to-nearest-even cast of the F32 values. The store keeps such a
// tensor as the relation "cast of unit X to BF16/F16" (no payload): in a
// version 1 store, when an F32 unit is stored, the SHA-256 of its two
// casts is indexed (cast hints), and a later BF16/F16 unit with that
// SHA-256 is the cast; a version 2 store finds casts from the
// fingerprints (below) and confirms them on the bytes. The relation is exact
// by construction: it is recorded only when the cast's bytes hash to the
// unit's own address, and decoding checks that hash again. NaN payloads
// are cast by the rule below; an exporter that writes another NaN simply
// does not match, and its tensor is coded normally.

// castable reports whether F32 values can be cast to t here.
func castable(t dtype.DType) bool { return t == dtype.BF16 || t == dtype.F16 }

// CastF32 appends the round-to-nearest-even cast of little-endian F32
// values src to t (BF16 or F16), the relation the store records as a cast
// (the workbench's Hub screen compares models by it).
func CastF32(dst, src []byte, t dtype.DType) []byte { return castF32(dst, src, t) }

// castF32 appends the cast of little-endian F32 values src to t.
func castF32(dst, src []byte, t dtype.DType) []byte {
	n := len(src) / 4
	start := len(dst)
	dst = slices.Grow(dst, 2*n)[:start+2*n]
	out := dst[start:]
	src = src[:4*n]
	// one loop per target type, two words per step (no per-value branch
	// on the type, no bounds checks in the loop)
	i, to := 0, f32ToF16
	if t == dtype.BF16 {
		to = f32ToBF16
		for ; i+8 <= len(src); i += 8 {
			v := binary.LittleEndian.Uint64(src[i : i+8 : i+8])
			binary.LittleEndian.PutUint32(out[i/2:i/2+4:i/2+4], uint32(f32ToBF16(uint32(v)))|uint32(f32ToBF16(uint32(v>>32)))<<16)
		}
	} else {
		for ; i+8 <= len(src); i += 8 {
			v := binary.LittleEndian.Uint64(src[i : i+8 : i+8])
			// f32ToF16's common case inline, for both words at once
			y := v & 0x7fffffff7fffffff
			if uint32(y)-0x38800000 >= 0x47800000-0x38800000 || uint32(y>>32)-0x38800000 >= 0x47800000-0x38800000 {
				binary.LittleEndian.PutUint32(out[i/2:i/2+4:i/2+4], uint32(f32ToF16(uint32(v)))|uint32(f32ToF16(uint32(v>>32)))<<16)
				continue
			}
			// (each word minus the rebias stays positive and its sum
			// below 2^28, so nothing borrows or carries across; after
			// the shift the low word's result is its low 16 bits)
			r := (y - 0x3800000038000000 + 0x00000fff00000fff + (y>>13)&0x0000000100000001) >> 13
			h := uint32(v>>16)&0x8000 | uint32(r)&0xffff | (uint32(v>>48)&0x8000|uint32(r>>32))<<16
			binary.LittleEndian.PutUint32(out[i/2:i/2+4:i/2+4], h)
		}
	}
	if i < len(src) {
		binary.LittleEndian.PutUint16(out[i/2:], to(binary.LittleEndian.Uint32(src[i:])))
	}
	return dst
}

// f32ToBF16 rounds to nearest, ties to even; a NaN keeps its sign and top
// payload bits and is made quiet (torch's rule for non-canonical NaNs is
// not assumed: a mismatch is just not a cast).
func f32ToBF16(x uint32) uint16 {
	if x&0x7fffffff > 0x7f800000 {
		return uint16(x>>16) | 0x40
	}
	return uint16((x + 0x7fff + (x>>16)&1) >> 16)
}

// f32ToF16 rounds to nearest, ties to even, with subnormals and overflow
// to infinity; NaNs keep sign and top payload bits, made quiet. Values
// whose result is a normal F16 or infinity by overflow (magnitudes from
// 2^-14 below 2^16) take one rounding addition; the rest f32ToF16Rare.
func f32ToF16(x uint32) uint16 {
	if y := x & 0x7fffffff; y-0x38800000 < 0x47800000-0x38800000 {
		// rebias the exponent (127 → 15) and round the 13 dropped bits
		// to nearest, ties to even; a carry may reach infinity, as it
		// should
		return uint16(x>>16)&0x8000 | uint16((y-0x38000000+0xfff+(y>>13)&1)>>13)
	}
	return f32ToF16Rare(x)
}

// f32ToF16Rare is f32ToF16 for any value, one case at a time.
func f32ToF16Rare(x uint32) uint16 {
	sign := uint16(x>>16) & 0x8000
	exp := int(x>>23) & 0xff
	mant := x & 0x7fffff
	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(mant>>13)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// subnormal: the value in units of 2^-24
		m := mant | 0x800000
		if exp == 0 {
			m = mant // F32 subnormals are far below F16's range
		}
		shift := uint(14 - e)
		if shift >= 32 {
			return sign
		}
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
		return sign | uint16(q)
	}
	q := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && q&1 == 1) {
		q++ // may carry into the exponent, up to infinity: as it should
	}
	return sign | uint16(q)
}

// toFloat32 reads value i of a float tensor of type t.
func toFloat32(b []byte, t dtype.DType, i int) float32 {
	switch t {
	case dtype.F32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	case dtype.BF16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
	case dtype.F16:
		return f16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return 0
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// fingerprintable: float types whose tensors get a fingerprint and may be
// coded against a near one (the codec's difference blocks).
func fingerprintable(t dtype.DType) bool {
	return t == dtype.F32 || t == dtype.BF16 || t == dtype.F16
}

// fingerprintOf samples fpSamples values at fixed positions; non-finite
// values count as 0.
func fingerprintOf(b []byte, t dtype.DType) fingerprint {
	n := len(b) / t.Size()
	k := min(n, fpSamples)
	fp := make(fingerprint, k)
	for j := range fp {
		v := toFloat32(b, t, int(int64(j)*int64(n)/int64(k)))
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			v = 0
		}
		fp[j] = v
	}
	return fp
}

// distance is the squared relative L2 distance of two fingerprints:
// Σ(a−b)² / Σa², +Inf when they cannot be compared.
func distance(a, b fingerprint) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return math.Inf(1)
	}
	var num, den float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(a[i]) * float64(a[i])
	}
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return num / den
}

// Casts found from fingerprints (version 2 stores, and repack in both):
// an F32 unit's sampled values cast to BF16/F16 equal, value for value,
// the sampled values of its 16-bit cast (the samples sit at the same
// positions: both have one element count). Equal fingerprints only name
// a candidate; the bytes confirm it (castIs) before a cast is recorded.

// castFP is the cast of fingerprint fx (F32 values) to t, as
// fingerprintOf reads the cast's values (non-finite values count as 0).
func castFP(fx fingerprint, t dtype.DType) fingerprint {
	out := make(fingerprint, len(fx))
	for i, v := range fx {
		x := math.Float32bits(v)
		var c float32
		if t == dtype.BF16 {
			c = math.Float32frombits(uint32(f32ToBF16(x)) << 16)
		} else {
			c = f16ToF32(f32ToF16(x))
		}
		if math.IsNaN(float64(c)) || math.IsInf(float64(c), 0) {
			c = 0
		}
		out[i] = c
	}
	return out
}

// castsTo reports whether the cast of fingerprint fx (F32 values) to t is
// fingerprint fy, value for value.
func castsTo(fx, fy fingerprint, t dtype.DType) bool {
	if len(fx) != len(fy) || len(fx) == 0 {
		return false
	}
	return sameFP(castFP(fx, t), fy)
}

// sameFP reports whether two fingerprints hold the same values, bit for bit.
func sameFP(a, b fingerprint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// castIs reports whether y (type t) is the cast of F32 bytes x.
func castIs(x, y []byte, t dtype.DType) bool {
	if !castable(t) || len(x) != 2*len(y) {
		return false
	}
	buf := getBuf(len(y))
	ok := bytes.Equal(castF32(buf[:0], x, t), y)
	putBuf(buf)
	return ok
}

// castOfFP is the F32 unit whose cast new 16-bit unit u may be, from the
// fingerprints (version 2): the first unit (hash order) of the F32 family
// of u's element count near u's fingerprint in the index (all of the
// family's candidates without it) whose fingerprint casts to u's and
// whose chain leaves room for one more step. The caller confirms it on
// the bytes.
func castOfFP(t tx, u UnitInfo, cands candidates) (Hash, bool, error) {
	if u.FP == nil || u.DType.Size() != 2 {
		return Hash{}, false, nil
	}
	h, found, ok, err := lshMatch(t, dtype.F32, u.N/2, u.FP, func(h Hash, f fingerprint) bool {
		if !castsTo(f, u.FP, u.DType) {
			return false
		}
		x, err := parseUnit(t.get(bUnits, h[:]))
		return err == nil && x.DType == dtype.F32 && x.Depth < maxDepth
	})
	if ok || err != nil {
		return h, found, err
	}
	cs, err := cands(dtype.F32, u.N/2, u.FP)
	if err != nil {
		return Hash{}, false, err
	}
	for _, c := range cs {
		if c.depth < maxDepth && castsTo(c.fp, u.FP, u.DType) {
			return c.h, true, nil
		}
	}
	return Hash{}, false, nil
}

// castMatches reports whether some 16-bit unit near F32 fingerprint fp
// (numel values) in index t (all candidates without the index) has the
// fingerprint of its cast: then the F32 unit's casts are hashed
// (castHashes), so that its commit may recast that unit (recastStored) —
// a version 2 store's stand-in for the cast hints.
func castMatches(t tx, fp fingerprint, numel int64, cands candidates) (bool, error) {
	if fp == nil {
		return false, nil
	}
	indexed := hasLSH(t)
	for _, ct := range castTypes {
		if indexed && !hasFamily(t, fpKey(ct, numel, Hash{})) {
			continue // what lshMatch finds: nothing (and no cast to compute)
		}
		cf := castFP(fp, ct)
		_, found, ok, err := lshMatch(t, ct, numel, cf, func(_ Hash, f fingerprint) bool { return sameFP(f, cf) })
		if err != nil || found {
			return found, err
		}
		if ok {
			continue
		}
		cs, err := cands(ct, numel, cf)
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			if sameFP(c.fp, cf) {
				return true, nil
			}
		}
	}
	return false, nil
}

// castFPs holds the fingerprints of 16-bit units being added (their type,
// element count and values): an F32 unit of the same add whose cast
// fingerprint is among them has its casts hashed (castHashes), as one
// whose cast fingerprint is a stored unit's (castMatches).
type castFPs map[string]bool

func castFPKey(t dtype.DType, numel int64, fp fingerprint) string {
	return string(fpKey(t, numel, Hash{})) + string(fp.encode())
}

func (c castFPs) add(t dtype.DType, numel int64, fp fingerprint) { c[castFPKey(t, numel, fp)] = true }

// castOf reports whether a cast of F32 fingerprint fp (numel values) is
// among c.
func (c castFPs) castOf(fp fingerprint, numel int64) bool {
	if len(c) == 0 {
		return false // (no casts to compute: an F32 model alone)
	}
	for _, ct := range castTypes {
		if c[castFPKey(ct, numel, castFP(fp, ct))] {
			return true
		}
	}
	return false
}

// localCastFPs is the castFPs of an Add's own 16-bit units that may be
// casts of its F32 units (their element count is an F32 unit's): Add
// codes one unit at a time and sees the index only, so these are read
// (only these) before the add, to decide as AddBatch does which F32
// units hash their casts.
func localCastFPs(files []Input) (castFPs, error) {
	var c castFPs
	f32 := map[int64]bool{} // the element counts of the model's F32 units
	for _, in := range files {
		for _, x := range spans(in.Size, in.Segments) {
			if x.t == dtype.F32 {
				f32[x.n/4] = true
			}
		}
	}
	for _, in := range files {
		for _, x := range spans(in.Size, in.Segments) {
			if !castable(x.t) || !f32[x.n/2] {
				continue
			}
			raw := make([]byte, x.n)
			if n, err := in.R.ReadAt(raw, x.off); err != nil && !(errors.Is(err, io.EOF) && int64(n) == x.n) {
				return nil, fmt.Errorf("file %q: %w", in.Name, err)
			}
			if c == nil {
				c = castFPs{}
			}
			c.add(x.t, x.n/2, fingerprintOf(raw, x.t))
		}
	}
	return c, nil
}
