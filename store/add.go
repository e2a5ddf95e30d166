package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// Input is one file of a model to add: its bytes and its layout (the
// checkpoint loader's segments, as nzip compress hands them to the codec).
type Input struct {
	Name     string // slash-separated name within the model (the base name for one file)
	R        io.ReaderAt
	Size     int64
	Format   string
	Segments []codec.Segment // nil: all opaque
}

// AddOptions configures one Add.
type AddOptions struct {
	// Compare also compresses every file on its own with nzip and records
	// the archive's size in the manifest (Manifest.Alone), for stats.
	Compare bool
	// BeforeCommit, when set, runs after every unit is coded and before
	// the model enters the index; an error abandons the add (the CLI
	// checks there that no input changed while it was read).
	BeforeCommit func() error
}

// AddStats counts what an Add did with the model's units.
type AddStats struct {
	Units   int   // units in the model's files
	Dedup   int   // already stored (or repeated in the model): referenced
	Casts   int   // stored as the cast of a stored F32 unit
	Deltas  int   // coded against a near stored unit
	Coded   int   // coded alone (nzip or raw)
	Added   int64 // payload bytes stored
	Raw     int64 // bytes of the files
	Skipped int64 // bytes of units not coded (dedup and casts)
}

// testHook, when set (tests), is called at named points of an add, where
// the kill test ends the process.
var testHook func(phase string)

func hook(phase string) {
	if testHook != nil {
		testHook(phase)
	}
}

// maxOpaqueUnit cuts opaque runs (and files without a layout) into units of
// at most this many bytes.
const maxOpaqueUnit = 16 << 20

// nearThreshold: a stored tensor whose fingerprint lies within this squared
// relative L2 distance is tried as the base of a new tensor (fine-tunes lie
// at 0.0001–0.1; unrelated tensors of one shape near 2).
const nearThreshold = 0.5

// span is one unit of a file: a byte range and its element type.
type span struct {
	off, n int64
	t      dtype.DType
}

// spans cuts a file into units: each tensor segment one unit, the bytes
// between them opaque units. Segments that overlap an earlier one are
// left to the opaque cover.
func spans(size int64, segs []codec.Segment) []span {
	segs = slices.Clone(segs)
	slices.SortStableFunc(segs, func(a, b codec.Segment) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	var out []span
	opaque := func(from, to int64) {
		for from < to {
			n := min(to-from, maxOpaqueUnit)
			out = append(out, span{off: from, n: n})
			from += n
		}
	}
	cur := int64(0)
	for _, s := range segs {
		if s.Offset < cur || s.Length <= 0 || s.Offset > size || s.Length > size-s.Offset {
			continue
		}
		opaque(cur, s.Offset)
		t := s.DType
		if !s.IsTensor() {
			t = dtype.Invalid
		}
		if sz := t.Size(); t != dtype.Invalid && (sz <= 0 || s.Length%int64(sz) != 0) {
			t = dtype.Invalid
		}
		if t == dtype.Invalid {
			opaque(s.Offset, s.Offset+s.Length)
		} else {
			out = append(out, span{off: s.Offset, n: s.Length, t: t})
		}
		cur = s.Offset + s.Length
	}
	opaque(cur, size)
	return out
}

// coded is what adding found for one unit.
type coded struct {
	h       Hash
	dup     bool // stored already (index or earlier in this add)
	u       unit // the new record (Refs set at commit)
	payload []byte
	fp      fingerprint
	casts   []Hash // F32: the addresses of its BF16 and F16 casts (version 2: only when a fingerprint matches)
	castTs  []dtype.DType
}

// Add stores a model under name: every file split into units, each unit
// referenced when stored already, else stored as a cast, a delta against a
// near stored unit, or alone, whichever is smallest. The model appears in
// the index with its units in one transaction: after a crash it is either
// there in full or absent (its chunk file then an orphan that GC removes).
func (s *Store) Add(name string, files []Input, opt AddOptions) (*Manifest, AddStats, error) {
	var st AddStats
	if err := checkModel(name, files); err != nil {
		return nil, st, err
	}
	if err := s.kv.view(func(t tx) error {
		// with the decode bound, which planning reads first
		prefetch(t, bucketKey{bModels, []byte(name)}, bucketKey{bFP, maxDecodeKey})
		if t.get(bModels, []byte(name)) != nil {
			return fmt.Errorf("%w: %q", ErrExists, name)
		}
		return nil
	}); err != nil {
		return nil, st, err
	}
	m := &Manifest{Name: name}
	seen := map[Hash]*coded{}
	var news []*coded
	var local castFPs
	if s.ver == Version2 {
		var err error
		if local, err = localCastFPs(files); err != nil {
			return nil, st, fmt.Errorf("store: model %q: %w", name, err)
		}
	}
	for _, in := range files {
		fe, err := s.addFile(in, seen, &news, &st, local)
		if err != nil {
			return nil, st, fmt.Errorf("store: model %q: file %q: %w", name, in.Name, err)
		}
		if opt.Compare {
			alone, err := archiveSize(in)
			if err != nil {
				return nil, st, fmt.Errorf("store: model %q: file %q: %w", name, in.Name, err)
			}
			m.Alone += alone
		}
		m.Files = append(m.Files, fe)
		m.Raw += in.Size
	}
	// one chunk file for the payloads of every new unit
	var pack [][]byte
	added := int64(0)
	for _, c := range news {
		if c.u.Kind == KindCast {
			continue
		}
		c.u.Off = added
		c.u.Len = int64(len(c.payload))
		c.u.CRC = crcOf(c.payload)
		pack = append(pack, c.payload)
		added += c.u.Len
	}
	var packID Hash
	if added > 0 {
		id, err := s.bl.put(pack...)
		if err != nil {
			return nil, st, fmt.Errorf("store: model %q: %w", name, err)
		}
		packID = id
	}
	hook("packed")
	if opt.BeforeCommit != nil {
		if err := opt.BeforeCommit(); err != nil {
			return nil, st, fmt.Errorf("store: model %q: %w", name, err)
		}
	}
	m.Added = added
	st.Added = m.Added
	for _, c := range news {
		if c.u.Kind != KindCast {
			c.u.Pack = packID
		}
	}
	err := s.kv.update(func(t tx) error {
		if t.get(bModels, []byte(name)) != nil {
			return fmt.Errorf("%w: %q", ErrExists, name)
		}
		return commitModel(t, m, news)
	})
	if err != nil {
		return nil, st, fmt.Errorf("store: model %q: %w", name, err)
	}
	return m, st, nil
}

// commitModel enters model m and its new units (payloads already in their
// packs) into the index, in the caller's transaction: records of units
// not yet there (their depth one more than their base's), a reference per
// use, and the manifest with the models its units are coded against.
func commitModel(t tx, m *Manifest, news []*coded) error {
	bases := map[string]bool{}
	v2 := isV2(t)
	// the records this reads, read ahead together
	var want []bucketKey
	for _, c := range news {
		want = unitKeys(want, c.h)
		if c.u.Kind == KindDelta || c.u.Kind == KindCast {
			want = unitKeys(want, c.u.Base)
		}
	}
	for _, f := range m.Files {
		want = unitKeys(want, f.Units...)
	}
	prefetch(t, want...)
	for _, c := range news {
		if t.get(bUnits, c.h[:]) != nil {
			// stored meanwhile by another writer (an S3 store's index
			// update is redone on the index that writer left): its
			// record and base references stand; this model only
			// references it, below (its payload in this pack is unused)
			continue
		}
		c.u.Owner = m.Name
		if c.u.Kind == KindDelta || c.u.Kind == KindCast {
			b, err := incRef(t, c.u.Base)
			if err != nil {
				return fmt.Errorf("base %s of unit %s: %w", c.u.Base, c.h, err)
			}
			if b.Depth >= maxDepth {
				return fmt.Errorf("%w: base %s of unit %s: chain deeper than %d", ErrIndexDamaged, c.u.Base, c.h, maxDepth)
			}
			c.u.Depth = b.Depth + 1
			if b.Owner != m.Name {
				bases[b.Owner] = true
			}
		}
		if err := t.put(bUnits, c.h[:], c.u.encode()); err != nil {
			return err
		}
		if c.fp != nil {
			if err := putFP(t, c.u.DType, c.u.RawLen/int64(c.u.DType.Size()), c.h, c.fp); err != nil {
				return err
			}
		}
		if c.u.DType == dtype.F32 && len(c.casts) > 0 {
			if _, err := recastStored(t, c.h, c.u, c.casts, c.castTs, m.Name); err != nil {
				return fmt.Errorf("recast against unit %s: %w", c.h, err)
			}
		}
		for i, ch := range c.casts {
			if v2 {
				break // no cast hints: casts are found from the fingerprints
			}
			if t.get(bCasts, ch[:]) == nil {
				if err := t.put(bCasts, ch[:], castRec{From: c.h, DType: c.castTs[i]}.encode()); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range m.Files {
		for _, h := range f.Units {
			if _, err := incRef(t, h); err != nil {
				return fmt.Errorf("unit %s: %w", h, err)
			}
		}
	}
	m.Bases = m.Bases[:0]
	for b := range bases {
		m.Bases = append(m.Bases, b)
	}
	slices.Sort(m.Bases)
	return t.put(bModels, []byte(m.Name), m.encode())
}

// incRef adds one reference to unit h (which must be in the index).
func incRef(t tx, h Hash) (unit, error) {
	v := t.get(bUnits, h[:])
	if v == nil {
		return unit{}, errors.New("not in the index")
	}
	u, err := parseUnit(v)
	if err != nil {
		return unit{}, err
	}
	u.Refs++
	return u, t.put(bUnits, h[:], u.encode())
}

func fpKey(t dtype.DType, numel int64, h Hash) []byte {
	name := dtName(t)
	k := make([]byte, 0, len(name)+1+8+len(h))
	k = append(append(k, name...), 0)
	k = binary.BigEndian.AppendUint64(k, uint64(numel))
	if h != (Hash{}) {
		k = append(k, h[:]...)
	}
	return k
}

func checkName(name string) error {
	if name == "" || len(name) > 4096 || !utf8.ValidString(name) {
		return fmt.Errorf("store: model name %q: empty, too long or not UTF-8", name)
	}
	// a newline would split a line of ls, an escape would reach the
	// terminal of whoever lists the store
	if strings.ContainsFunc(name, unicode.IsControl) {
		return fmt.Errorf("store: model name %q: control characters are not allowed", name)
	}
	return nil
}

// checkModel checks a model to add: its name, that it has files, their
// names and sizes.
func checkModel(name string, files []Input) error {
	if err := checkName(name); err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("store: model %q: no files", name)
	}
	for _, in := range files {
		if err := checkFileName(in.Name); err != nil {
			return fmt.Errorf("store: model %q: %w", name, err)
		}
		if in.Size < 0 {
			return fmt.Errorf("store: model %q: file %q: size %d", name, in.Name, in.Size)
		}
	}
	return nil
}

func checkFileName(name string) error {
	if name == "" || len(name) > 4096 || !utf8.ValidString(name) || bytes.IndexByte([]byte(name), 0) >= 0 {
		return fmt.Errorf("file name %q: empty, too long or not UTF-8", name)
	}
	return nil
}

// addFile codes the units of one file, threads at a time.
func (s *Store) addFile(in Input, seen map[Hash]*coded, news *[]*coded, st *AddStats, local castFPs) (FileEntry, error) {
	fe := FileEntry{Name: in.Name, Size: in.Size, Format: in.Format}
	sp := spans(in.Size, in.Segments)
	res := make([]*coded, len(sp))
	var mu sync.Mutex // guards seen
	fileHash := sha256.New()
	var hashMu sync.Mutex
	next := 0 // next unit to add to fileHash, in order
	pending := map[int][]byte{}
	err := parallel(len(sp), s.opt.threads(), func(i int) error {
		raw := make([]byte, sp[i].n)
		if _, err := in.R.ReadAt(raw, sp[i].off); err != nil && !(errors.Is(err, io.EOF) && int64(len(raw)) == sp[i].n) {
			return err
		}
		h := s.sum(raw)
		c := &coded{h: h}
		res[i] = c
		// the file's SHA-256, in order
		hashMu.Lock()
		pending[i] = raw
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			fileHash.Write(b)
			delete(pending, next)
			next++
		}
		hashMu.Unlock()
		mu.Lock()
		_, dup := seen[h]
		if !dup {
			seen[h] = c
		}
		mu.Unlock()
		if dup {
			c.dup = true
			return nil
		}
		stored := false
		if err := s.kv.view(func(t tx) error {
			stored = t.get(bUnits, h[:]) != nil
			return nil
		}); err != nil {
			return err
		}
		if stored {
			c.dup = true
			return nil
		}
		return s.code(c, raw, sp[i].t, local)
	})
	if err != nil {
		return fe, err
	}
	copy(fe.SHA256[:], fileHash.Sum(nil))
	for i, c := range res {
		fe.Units = append(fe.Units, c.h)
		st.Units++
		st.Raw += sp[i].n
		switch {
		case c.dup:
			st.Dedup++
			st.Skipped += sp[i].n
		case c.u.Kind == KindCast:
			st.Casts++
			st.Skipped += sp[i].n
		case c.u.Kind == KindDelta:
			st.Deltas++
		default:
			st.Coded++
		}
		if !c.dup {
			*news = append(*news, c)
		}
	}
	return fe, nil
}

// code decides how a new unit is stored (planUnit, on the store's index)
// and codes it.
func (s *Store) code(c *coded, raw []byte, t dtype.DType, local castFPs) error {
	info := UnitInfo{Span: Span{N: int64(len(raw)), DType: t}, Hash: c.h}
	info.FP, info.Casts = s.describeValues(raw, t)
	var p Plan
	var bu unit // a delta's base, or a version 2 cast's (confirmed on its bytes)
	if err := s.kv.view(func(tx tx) error {
		prefetchPlans(tx, info)
		cands := s.candidates(tx)
		if s.ver == Version2 && t == dtype.F32 && info.FP != nil {
			ok := local.castOf(info.FP, int64(len(raw)/4))
			if !ok {
				var err error
				if ok, err = castMatches(tx, info.FP, int64(len(raw)/4), cands); err != nil {
					return err
				}
			}
			if ok {
				info.Casts = castHashes(raw, s.sum)
			}
		}
		var err error
		p, err = planUnit(tx, info, cands)
		if err != nil || !(p.Kind == KindDelta || p.Kind == KindCast && s.ver == Version2) {
			return err
		}
		v := tx.get(bUnits, p.Base[:])
		if v == nil {
			return fmt.Errorf("base %s: not in the index", p.Base)
		}
		if bu, err = parseUnit(v); err != nil {
			return fmt.Errorf("%w: base %s: %v", ErrIndexDamaged, p.Base, err)
		}
		return nil
	}); err != nil {
		return err
	}
	if info.FP != nil {
		// a base for later deltas, a cast included
		c.fp = info.FP
		s.cache.put(c.h, raw)
	}
	if t == dtype.F32 && len(info.Casts) == len(castTypes) {
		c.casts, c.castTs = info.Casts, castTypes
	}
	var braw []byte
	pooled := false
	if p.Kind == KindDelta || p.Kind == KindCast && s.ver == Version2 {
		var err error
		if braw, pooled, err = s.decodeCheck(p.Base, bu, maxDepth, true, nil); err != nil {
			return fmt.Errorf("base %s: %w", p.Base, err)
		}
	}
	nu, payload, err := codePlan(p, raw, braw, s.ver == Version2)
	if pooled {
		putBuf(braw)
	}
	if err != nil {
		return err
	}
	c.u = unit{DType: t, RawLen: int64(len(raw)), Kind: nu.Kind, Base: nu.Base}
	c.payload = payload
	return nil
}

// unitSegs is the layout of a unit of type t for the codec (nil: opaque).
func unitSegs(n int, t dtype.DType) []codec.Segment {
	if t == dtype.Invalid {
		return nil
	}
	return []codec.Segment{{Offset: 0, Length: int64(n), Name: "t", DType: t, Shape: []int64{int64(n / t.Size())}}}
}

// codeAlone is a unit's payload coded on its own: a one-file nzip archive,
// or the bytes themselves when that is not smaller. sum, when set, is the
// BLAKE3 of raw (unitOptions).
func codeAlone(raw []byte, t dtype.DType, sum *Hash) ([]byte, uint8) {
	if plain, err := codec.CompressBytes(context.Background(), raw, unitSegs(len(raw), t), unitOptions(sum)); err == nil && len(plain) < len(raw) {
		return plain, KindNzip
	}
	return raw, KindRaw
}

// codeDelta is a unit's payload coded against the bytes of unit base.
func codeDelta(raw []byte, t dtype.DType, base Hash, braw []byte, sum *Hash) ([]byte, error) {
	segs := unitSegs(len(raw), t)
	ref, err := codec.NewReferenceSums([]codec.Input{{Name: "base", R: bytes.NewReader(braw), Size: int64(len(braw)), Segments: segs}}, [][32]byte{base})
	if err != nil {
		return nil, err
	}
	opt := unitOptions(sum)
	opt.Ref = ref
	return codec.CompressBytes(context.Background(), raw, segs, opt)
}

// unitOptions codes a unit's archive on one thread; sum, when set, is the
// BLAKE3 of its bytes (a version 2 address, computed by the store), which
// the archive stores without hashing the bytes again.
func unitOptions(sum *Hash) codec.EncodeOptions {
	opt := codec.EncodeOptions{Threads: 1}
	if sum != nil {
		opt.Sums = [][32]byte{*sum}
	}
	return opt
}

// archiveSize is the size of the file's own nzip archive.
func archiveSize(in Input) (int64, error) {
	res, err := codec.Encode(context.Background(), io.Discard, []codec.Input{{Name: in.Name, R: in.R, Size: in.Size, Format: in.Format, Segments: in.Segments}}, codec.EncodeOptions{})
	return res.Compressed, err
}

// parallel runs fn(0..n-1) on up to threads goroutines; the first error
// stops further calls and is returned. A memory fault in fn (a mapped
// input cut short) is ErrInputChanged.
func parallel(n, threads int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		ferr error
	)
	for range min(threads, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer guardFaults()()
			for {
				mu.Lock()
				if ferr != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := guarded(fn, i); err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return ferr
}

// parallelOrdered is parallel whose error is that of the lowest i that
// failed, not the first in time: the same whatever the schedule, where
// the failures are (every i below a failed one has been run, as parallel
// hands them out in order).
func parallelOrdered(n, threads int, fn func(i int) error) error {
	errs := make([]error, n)
	parallel(n, threads, func(i int) error {
		errs[i] = fn(i)
		return errs[i]
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// guarded is fn(i), a memory fault in it ErrInputChanged.
func guarded(fn func(i int) error, i int) (err error) {
	defer recoverFault(&err)
	return fn(i)
}
