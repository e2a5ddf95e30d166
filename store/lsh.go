package store

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"

	"neuralzip/dtype"
)

// The fingerprints' index: a new delta's base is searched among a bounded
// number of stored units of its family (type and size), not among all of
// them, so that an add costs the same at 10 and at 1,000 models of one
// family (the exhaustive search, which Options.Exhaustive still runs, is
// linear in them).
//
// It is an LSH forest (Bawa et al., "LSH Forest", WWW 2005) kept in the
// index's key order. A fingerprint, scaled to unit L2 norm, is projected
// on lshTrees×lshDims fixed ±1 vectors (deterministic seed); each tree's
// lshDims projections, in fixed point, are interleaved bit by bit (a
// Z-order code: the sign bits first, then finer and finer cells), and the
// unit is entered under
//
//	0 · family (fpKey's prefix) · tree · Z-order code (8 bytes BE) · Hash → (empty)
//
// in the fingerprint bucket (the 0 sorts before every type name, so a
// family's prefix scan never meets them). Units whose fingerprints are
// near share long prefixes of their codes in some tree; a query takes the
// lshWindow keys on each side of its own code in every tree, reads their
// fingerprints and records, and chooses among those with the exhaustive
// search's rule (nearestOf, on the candidates in hash order). The entries
// are written and deleted with the fingerprints (putFP, delFP), in the
// transactions that add and remove units, so a planner's overlay sees
// them as the commit leaves them. A store made before the index has none
// (no lshMeta key): it is built when the store is opened for writing, and
// a reader of such a store searches exhaustively. Entries are hints: a
// stale one (its unit or fingerprint gone) is skipped.
const (
	lshTrees  = 8
	lshDims   = 4  // projections per tree, 16 bits each in the code
	lshWindow = 4  // keys taken on each side of the query's code in each tree
	lshScale  = 12 // fixed point: 2^-12 of the unit-norm projection
)

// lshVersion names the projections and the key layout; a store whose
// lshMeta holds another is rebuilt when opened for writing.
const lshVersion = 1

// lshMeta is the key that says the index is there (value: lshVersion).
var lshMeta = []byte("\x00\x00lsh")

// lshVecs are the ±1 projection vectors: bit i of word i/64 set is +1.
var lshVecs = func() (v [lshTrees * lshDims][fpSamples / 64]uint64) {
	x := uint64(0x6e7a6970_6c736831) // a fixed seed ("nzip" "lsh1"); splitmix64 below
	for i := range v {
		for j := range v[i] {
			x += 0x9e3779b97f4a7c15
			z := x
			z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
			z = (z ^ z>>27) * 0x94d049bb133111eb
			v[i][j] = z ^ z>>31
		}
	}
	return v
}()

// lshSigns are lshVecs as ±1.
var lshSigns = func() (s [lshTrees * lshDims][fpSamples]float64) {
	for v := range s {
		for i := range s[v] {
			s[v][i] = -1
			if lshVecs[v][i>>6]>>(i&63)&1 != 0 {
				s[v][i] = 1
			}
		}
	}
	return s
}()

// lshCodes are fingerprint fp's Z-order codes, one per tree.
func lshCodes(fp fingerprint) [lshTrees]uint64 {
	var norm float64
	for _, x := range fp {
		norm += float64(float64(x) * float64(x)) // the conversion forbids a fused multiply-add: the same bits everywhere
	}
	norm = math.Sqrt(norm)
	var out [lshTrees]uint64
	for t := range out {
		p := lshProject(fp, t)
		var q [lshDims]uint64
		for d := range q {
			if norm > 0 {
				p[d] /= norm
			}
			// p is about N(0, 1): [-8, 8) in 16 bits
			f := math.Floor((p[d] + 8) * (1 << lshScale))
			q[d] = uint64(min(max(f, 0), 1<<16-1))
		}
		out[t] = zorder(q)
	}
	return out
}

// zorder interleaves the 16-bit values q bit by bit, the highest bits
// first and q[0]'s before q[1]'s: bit b of q[d] is bit 4b+3-d of the code.
// Each value's bits are spread 4 apart by shifts and masks (a loop over
// the 64 bits took ~10,000 instructions a unit, 1 % of a large model's
// add); TestZOrder checks it against that loop.
func zorder(q [lshDims]uint64) uint64 {
	var z uint64
	for d, x := range q {
		x &= 0xffff
		x = (x | x<<24) & 0x000000ff000000ff
		x = (x | x<<12) & 0x000f000f000f000f
		x = (x | x<<6) & 0x0303030303030303
		x = (x | x<<3) & 0x1111111111111111
		z |= x << (lshDims - 1 - d)
	}
	return z
}

// lshProject is fp's projections on tree t's lshDims vectors: each
// p ± x as p + (±1)·x (the product is exact, so the sum rounds as the
// additions and subtractions did, without a branch per value), in fp's
// order, the tree's sums side by side — four independent chains of
// additions rather than one after another (a unit's codes are computed
// when it is committed, and when it is planned where its family is in
// the index or the index reads ahead: for a model of thousands of small
// tensors this was ~5 % of an add's CPU). TestLSHCodesSums
// checks the bits against the sums taken one at a time.
func lshProject(fp fingerprint, t int) [lshDims]float64 {
	w0, w1, w2, w3 := &lshSigns[t*lshDims], &lshSigns[t*lshDims+1], &lshSigns[t*lshDims+2], &lshSigns[t*lshDims+3]
	var p0, p1, p2, p3 float64
	for i, x := range fp {
		y := float64(x)
		p0 += w0[i] * y
		p1 += w1[i] * y
		p2 += w2[i] * y
		p3 += w3[i] * y
	}
	return [lshDims]float64{p0, p1, p2, p3}
}

// lshProject's four chains are lshDims.
var _ = [1]struct{}{}[lshDims-4]

// lshPrefix is the start of the index keys of family fam (fpKey's
// prefix) in tree t.
func lshPrefix(fam []byte, t int) []byte {
	return lshPrefixCap(fam, t, 0)
}

// lshPrefixCap is lshPrefix with room for more bytes after it.
func lshPrefixCap(fam []byte, t, more int) []byte {
	k := make([]byte, 1, 1+len(fam)+1+more)
	k = append(k, fam...)
	return append(k, byte(t))
}

func lshKey(fam []byte, t int, code uint64, h Hash) []byte {
	k := binary.BigEndian.AppendUint64(lshPrefixCap(fam, t, 8+len(h)), code)
	return append(k, h[:]...)
}

// putFP stores unit h's fingerprint and its index entries.
func putFP(t tx, ty dtype.DType, numel int64, h Hash, fp fingerprint) error {
	if err := t.put(bFP, fpKey(ty, numel, h), fp.encode()); err != nil {
		return err
	}
	return putLSH(t, fpKey(ty, numel, Hash{}), h, fp)
}

func putLSH(t tx, fam []byte, h Hash, fp fingerprint) error {
	for i, c := range lshCodes(fp) {
		if err := t.put(bFP, lshKey(fam, i, c, h), nil); err != nil {
			return err
		}
	}
	return nil
}

// delFP removes unit h's fingerprint and its index entries (those of a
// damaged fingerprint cannot be found: stale, skipped by queries).
func delFP(t tx, ty dtype.DType, numel int64, h Hash) error {
	k := fpKey(ty, numel, h)
	if fp, err := parseFingerprint(t.get(bFP, k)); err == nil {
		fam := fpKey(ty, numel, Hash{})
		for i, c := range lshCodes(fp) {
			if err := t.del(bFP, lshKey(fam, i, c, h)); err != nil {
				return err
			}
		}
	}
	return t.del(bFP, k)
}

// hasLSH reports whether index t holds the current fingerprint index.
func hasLSH(t tx) bool {
	v := t.get(bFP, lshMeta)
	return len(v) == 1 && v[0] == lshVersion
}

// buildLSH (re)builds the fingerprint index from the fingerprints.
func buildLSH(t tx) error {
	var old [][]byte
	if err := t.scan(bFP, []byte{0}, func(k, _ []byte) error {
		old = append(old, bytes.Clone(k))
		return nil
	}); err != nil {
		return err
	}
	for _, k := range old {
		if err := t.del(bFP, k); err != nil {
			return err
		}
	}
	type entry struct {
		fam []byte
		h   Hash
		fp  fingerprint
	}
	var es []entry
	if err := t.scan(bFP, nil, func(k, v []byte) error {
		if len(k) <= 32 || k[0] == 0 {
			return nil
		}
		fp, err := parseFingerprint(v)
		if err != nil {
			return nil // a damaged fingerprint is only a missed chance
		}
		es = append(es, entry{bytes.Clone(k[:len(k)-32]), Hash(k[len(k)-32:]), fp})
		return nil
	}); err != nil {
		return err
	}
	for _, e := range es {
		if err := putLSH(t, e.fam, e.h, e.fp); err != nil {
			return err
		}
	}
	return t.put(bFP, lshMeta, []byte{lshVersion})
}

// ensureLSH builds the fingerprint index of a store that lacks it (made
// before it), in one update.
func (s *Store) ensureLSH() error {
	need := false
	if err := s.kv.view(func(t tx) error {
		need = !hasLSH(t)
		return nil
	}); err != nil || !need {
		return err
	}
	return s.kv.update(func(t tx) error {
		if hasLSH(t) {
			return nil
		}
		return buildLSH(t)
	})
}

// indexedCandidates lists the stored units of type ty and numel values
// that the index puts near fingerprint fp (at most 2·lshWindow per tree),
// in hash order, as bases to choose from.
func indexedCandidates(t tx, ty dtype.DType, numel int64, fp fingerprint, roots map[Hash]*candidate) ([]candidate, error) {
	hs, err := lshNear(t, ty, numel, fp)
	if err != nil {
		return nil, err
	}
	prefetch(t, unitKeys(fpKeys(nil, ty, numel, hs), hs...)...)
	out := make([]candidate, 0, len(hs))
	for _, h := range hs {
		f, err := parseFingerprint(t.get(bFP, fpKey(ty, numel, h)))
		if err != nil {
			continue // stale or damaged: only a missed chance
		}
		if c, ok := candidateOf(t, h, f, ty, roots); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// lshNear lists the units of type ty and numel values that the index puts
// near fingerprint fp (at most 2·lshWindow per tree), in hash order; their
// records are not read.
func lshNear(t tx, ty dtype.DType, numel int64, fp fingerprint) ([]Hash, error) {
	fam := fpKey(ty, numel, Hash{})
	if !hasFamily(t, fam) {
		return nil, nil // (most new tensors' shapes are new: no codes to compute)
	}
	codes := lshCodes(fp)
	prefetch(t, lshStarts(nil, fam, codes)...)
	var hs []Hash
	for i, c := range codes {
		p := lshPrefix(fam, i)
		from := lshStart(fam, i, c)
		for _, back := range []bool{false, true} {
			n := 0
			err := t.walk(bFP, p, from, back, func(k, _ []byte) (bool, error) {
				if len(k) == len(p)+8+32 {
					hs = append(hs, Hash(k[len(k)-32:]))
				}
				n++
				return n < lshWindow, nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(hs, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(hs), nil
}

// lshStart is where the walks of tree i look for the neighbours of code c
// in family fam.
func lshStart(fam []byte, i int, c uint64) []byte {
	return binary.BigEndian.AppendUint64(lshPrefixCap(fam, i, 8), c)
}

// lshStarts is the keys where lshNear's walks for codes start, appended to to.
func lshStarts(to []bucketKey, fam []byte, codes [lshTrees]uint64) []bucketKey {
	for i, c := range codes {
		to = append(to, bucketKey{bFP, lshStart(fam, i, c)})
	}
	return to
}

// fpKeys is the keys of the fingerprints of units hs (type ty, numel
// values), appended to to.
func fpKeys(to []bucketKey, ty dtype.DType, numel int64, hs []Hash) []bucketKey {
	for _, h := range hs {
		to = append(to, bucketKey{bFP, fpKey(ty, numel, h)})
	}
	return to
}

// lshMatch is the first unit (hash order) of type ty and numel values
// near fingerprint fp in the index whose fingerprint satisfies match:
// the cast lookups (cast.go), which read a unit's record only once its
// fingerprint matches. ok is false when the index is absent (a store
// made before it, opened to read): the caller searches otherwise.
func lshMatch(t tx, ty dtype.DType, numel int64, fp fingerprint, match func(h Hash, f fingerprint) bool) (h Hash, found, ok bool, err error) {
	if !hasLSH(t) {
		return Hash{}, false, false, nil
	}
	hs, err := lshNear(t, ty, numel, fp)
	if err != nil {
		return Hash{}, false, true, err
	}
	prefetch(t, fpKeys(nil, ty, numel, hs)...)
	for _, h := range hs {
		f, err := parseFingerprint(t.get(bFP, fpKey(ty, numel, h)))
		if err == nil && match(h, f) {
			return h, true, true, nil
		}
	}
	return Hash{}, false, true, nil
}

// hasFamily reports whether index t holds a fingerprint of family fam
// (fpKey's prefix): one seek.
func hasFamily(t tx, fam []byte) bool {
	found := false
	t.walk(bFP, fam, fam, false, func(k, _ []byte) (bool, error) {
		found = len(k) == len(fam)+32
		return false, nil
	})
	return found
}
