package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// Model returns the manifest of a stored model.
func (s *Store) Model(name string) (*Manifest, error) {
	var m *Manifest
	err := s.kv.view(func(t tx) error {
		v := t.get(bModels, []byte(name))
		if v == nil {
			return fmt.Errorf("%w: %q", ErrNotFound, name)
		}
		var err error
		m, err = parseManifest(v)
		if err != nil {
			return fmt.Errorf("%w: model %q: manifest: %v", ErrIndexDamaged, name, err)
		}
		if m.Name != name {
			return fmt.Errorf("%w: model %q: manifest names %q", ErrIndexDamaged, name, m.Name)
		}
		return nil
	})
	return m, err
}

// unitRec reads unit h's record.
func (s *Store) unitRec(h Hash) (unit, error) {
	var u unit
	err := s.kv.view(func(t tx) error {
		v := t.get(bUnits, h[:])
		if v == nil {
			return fmt.Errorf("%w: unit %s missing", ErrIndexDamaged, h)
		}
		var err error
		u, err = parseUnit(v)
		if err != nil {
			return fmt.Errorf("%w: unit %s: %v", ErrIndexDamaged, h, err)
		}
		return nil
	})
	return u, err
}

// restoring is what the units of one restore share: their records and
// their bases', read ahead in one transaction (a unit not there is read
// from the index when needed), and whether every unit decoded, bases
// too, is checked against its address and kept in the cache, so that a
// base shared by many units and models is decoded once (Verify).
type restoring struct {
	recs map[Hash]unit
	keep bool
	bufs *bufSet // where its buffers come from and go back to (nil: the shared pools)
}

// buffers is r's buffer set; r may be nil.
func (r *restoring) buffers() *bufSet {
	if r == nil {
		return nil
	}
	return r.bufs
}

// rec is unit h's record; r may be nil.
func (r *restoring) rec(s *Store, h Hash) (unit, error) {
	if r != nil {
		if u, ok := r.recs[h]; ok {
			return u, nil
		}
	}
	return s.unitRec(h)
}

// readRecords reads the records of units hs and of their bases, as deep
// as a chain may go, in one transaction. What is missing or damaged is
// left out: reading it again later gives the error.
func (s *Store) readRecords(hs []Hash) map[Hash]unit {
	r := make(map[Hash]unit, len(hs))
	s.kv.view(func(t tx) error {
		// a step of every chain at a time, its records read ahead together
		for range maxDepth + 2 {
			prefetch(t, unitKeys(nil, hs...)...)
			var bases []Hash
			for _, h := range hs {
				if _, ok := r[h]; ok {
					continue
				}
				v := t.get(bUnits, h[:])
				if v == nil {
					continue
				}
				u, err := parseUnit(v)
				if err != nil {
					continue
				}
				r[h] = u
				if u.Kind == KindDelta || u.Kind == KindCast {
					bases = append(bases, u.Base)
				}
			}
			if hs = bases; len(hs) == 0 {
				break
			}
		}
		return nil
	})
	return r
}

// payload reads and checks unit u's stored bytes, into a buffer of
// bs's.
func (s *Store) payload(h Hash, u unit, bs *bufSet) ([]byte, error) {
	if u.Len > u.RawLen+u.RawLen/8+(1<<20) {
		return nil, fmt.Errorf("%w: unit %s: payload of %d bytes for %d", ErrIndexDamaged, h, u.Len, u.RawLen)
	}
	if sz, ok := blobSize(s.bl, u.Pack); ok && (u.Off > sz || u.Len > sz-u.Off) {
		return nil, fmt.Errorf("%w: unit %s: bytes %d..%d beyond chunk %x (%d bytes)", ErrChunkDamaged, h, u.Off, u.Off+u.Len, u.Pack[:8], sz)
	}
	p := bs.get(int(u.Len))
	if err := s.bl.readAt(u.Pack, p, u.Off); err != nil {
		bs.put(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: unit %s: chunk %x is missing: %w", ErrChunkDamaged, h, u.Pack[:8], errPackGone)
		}
		return nil, fmt.Errorf("%w: unit %s in chunk %x: %v", ErrChunkDamaged, h, u.Pack[:8], err)
	}
	s.read.Add(u.Len)
	if crcOf(p) != u.CRC {
		bs.put(p)
		return nil, fmt.Errorf("%w: unit %s in chunk %x: checksum mismatch", ErrChunkDamaged, h, u.Pack[:8])
	}
	return p, nil
}

// errPackGone marks a unit whose chunk file is not there: damage, or, for
// a reader that does not hold the index (Options.Release), a gc or repack
// that moved the unit after its record was read (decodeAgain).
var errPackGone = errors.New("removed since its record was read, or lost")

// decodeAgain decodes unit h from its record and its bases' read afresh,
// after a decode found a chunk file missing: a writer (gc, repack) may
// have moved them meanwhile. Chunk files are named by their bytes, so a
// record of either time decodes to the same bytes, checked against h.
func (s *Store) decodeAgain(h Hash, keep bool, bs *bufSet) ([]byte, bool, error) {
	u, err := s.unitRec(h)
	if err != nil {
		return nil, false, err
	}
	return s.decodeCheck(h, u, maxDepth, true, &restoring{keep: keep, bufs: bs})
}

// blobSize is a pack's size where the backend knows it cheaply.
func blobSize(b blobs, id Hash) (int64, bool) {
	if z, ok := b.(interface{ size(Hash) (int64, bool) }); ok {
		return z.size(id)
	}
	return 0, false
}

// decode returns unit h's original bytes (u its record), decoding its base
// chain (at most depth more units), and checks them against h. The bases
// are not hashed on the way: a wrong base makes the unit decode to other
// bytes (or fail), which its own check catches. The caller owns the
// result.
func (s *Store) decode(h Hash, u unit, depth int) ([]byte, error) {
	b, _, err := s.decodeCheck(h, u, depth, true, nil)
	return b, err
}

// decodeCheck is decode, checking the result against h only if check (or
// r.keep; r may be nil). pooled says that the result is a buffer of
// r's buffer set (getBuf's where r or its set is nil), which the caller
// may give back to it once done with it (a unit from the cache is not).
func (s *Store) decodeCheck(h Hash, u unit, depth int, check bool, r *restoring) (out []byte, pooled bool, err error) {
	if b, ok := s.cache.get(h); ok {
		return b, false, nil
	}
	bs := r.buffers()
	if depth < 0 {
		return nil, false, fmt.Errorf("%w: unit %s: base chain longer than %d", ErrIndexDamaged, h, maxDepth)
	}
	switch u.Kind {
	case KindRaw:
		if out, err = s.payload(h, u, bs); err != nil {
			return nil, false, err
		}
	case KindNzip:
		p, err := s.payload(h, u, bs)
		if err != nil {
			return nil, false, err
		}
		out, err = decodeUnit(outBuf(u, bs), p, nil)
		bs.put(p)
		if err != nil {
			return nil, false, fmt.Errorf("%w: unit %s: %v", ErrChunkDamaged, h, err)
		}
	case KindDelta, KindCast:
		bu, err := r.rec(s, u.Base)
		if err != nil {
			return nil, false, fmt.Errorf("base of unit %s: %w", h, err)
		}
		base, basePooled, err := s.decodeCheck(u.Base, bu, depth-1, false, r)
		if err != nil {
			return nil, false, err
		}
		out, err = s.fromBase(h, u, bu, base, bs)
		if basePooled {
			bs.put(base)
		}
		if err != nil {
			return nil, false, err
		}
	default:
		return nil, false, fmt.Errorf("%w: unit %s: kind %d", ErrIndexDamaged, h, u.Kind)
	}
	s.decoded.Add(int64(len(out)))
	keep := r != nil && r.keep
	if int64(len(out)) != u.RawLen || ((check || keep) && s.sum(out) != h) {
		bs.put(out)
		return nil, false, fmt.Errorf("%w: unit %s decodes to other bytes", ErrChunkDamaged, h)
	}
	if keep {
		// checked: the cache may serve it as a base (it owns it now)
		s.cache.put(h, out)
		return out, false, nil
	}
	return out, true, nil
}

// archiveDecoders decode units' archives (each its index's buffer and
// a block decoder, kept from unit to unit: a DecompressBytesTo per unit
// set up a reader and its worker afresh each time). Neither the units'
// digests (SkipHash) nor their blocks' CRC-32Cs (SkipCRC) are checked
// there: payload checks the stored bytes' CRC before they are decoded,
// and decodeCheck the decoded bytes against the unit's address (a base
// through the units decoded from it, which every get checks).
var archiveDecoders = sync.Pool{New: func() any { return &codec.ArchiveDecoder{SkipCRC: true} }}

// decodeUnit decodes a unit's archive p into dst (when it has the
// capacity) with a pooled decoder, against ref where it is a delta.
func decodeUnit(dst, p []byte, ref *codec.Reference) ([]byte, error) {
	ad := archiveDecoders.Get().(*codec.ArchiveDecoder)
	defer archiveDecoders.Put(ad)
	return ad.Decode(dst, p, codec.DecodeOptions{Threads: 1, SkipHash: true, Ref: ref})
}

// outBuf is a buffer of bs's for the decoded bytes of unit u, or nil
// (the codec then allocates what its archive makes plausible) when the
// record's length is beyond the pools or far beyond what its payload
// could plausibly hold.
func outBuf(u unit, bs *bufSet) []byte {
	if u.RawLen <= 0 || u.RawLen > 1<<maxPoolShift || u.RawLen > 64*u.Len+1<<16 {
		return nil
	}
	return bs.get(int(u.RawLen))[:0]
}

// fromBase decodes unit h (record u), a cast or a delta, from the bytes
// of its base (record bu), into a buffer of bs's.
func (s *Store) fromBase(h Hash, u, bu unit, base []byte, bs *bufSet) ([]byte, error) {
	if u.Kind == KindCast {
		if bu.DType != dtype.F32 || !castable(u.DType) {
			return nil, fmt.Errorf("%w: unit %s: cast of %v to %v", ErrIndexDamaged, h, bu.DType, u.DType)
		}
		return castF32(bs.get(len(base) / 2)[:0], base, u.DType), nil
	}
	p, err := s.payload(h, u, bs)
	if err != nil {
		return nil, err
	}
	defer bs.put(p)
	var segs []codec.Segment
	if u.DType != dtype.Invalid && u.DType.Size() > 0 {
		segs = []codec.Segment{{Length: int64(len(base)), Name: "t", DType: u.DType, Shape: []int64{int64(len(base) / u.DType.Size())}}}
	}
	ref, err := codec.NewReferenceSums([]codec.Input{{Name: "base", R: bytes.NewReader(base), Size: int64(len(base)), Segments: segs}}, [][32]byte{u.Base})
	if err != nil {
		return nil, err
	}
	out, err := decodeUnit(outBuf(u, bs), p, ref)
	if err != nil {
		return nil, fmt.Errorf("%w: unit %s: %v", ErrChunkDamaged, h, err)
	}
	return out, nil
}

// WriteFile writes file fi of model m to w, decoding units threads at a
// time, in order. Every unit is checked against its address, so a damaged
// chunk or index is an error, never other bytes.
func (s *Store) WriteFile(m *Manifest, fi int, w io.Writer) error {
	return s.writeFile(m, fi, w, false)
}

// writeFile is WriteFile; keep: every unit decoded is checked and kept
// (restoring.keep). Small units are joined in a buffer before they reach
// w (a large model's thousands of small tensors were a write each).
func (s *Store) writeFile(m *Manifest, fi int, w io.Writer, keep bool) error {
	if fi < 0 || fi >= len(m.Files) {
		return fmt.Errorf("store: model %q has no file %d", m.Name, fi)
	}
	f := m.Files[fi]
	pooled := make([]bool, len(f.Units))
	r := &restoring{recs: s.readRecords(f.Units), keep: keep, bufs: new(bufSet)}
	defer r.bufs.release()
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		writers.Put(bw)
	}()
	err := s.ordered(len(f.Units), func(i int) int64 {
		return r.recs[f.Units[i]].RawLen
	}, func(i int) ([]byte, error) {
		u, err := r.rec(s, f.Units[i])
		if err != nil {
			return nil, err
		}
		b, p, err := s.decodeCheck(f.Units[i], u, maxDepth, true, r)
		if errors.Is(err, errPackGone) {
			b, p, err = s.decodeAgain(f.Units[i], keep, r.bufs)
		}
		pooled[i] = p
		return b, err
	}, func(i int, b []byte) error {
		_, err := bw.Write(b)
		if pooled[i] {
			r.bufs.put(b)
		}
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("store: model %q: file %q: %w", m.Name, f.Name, err)
	}
	return nil
}

// writeBuffer: units smaller than this are joined before they are
// written (larger ones are written as they are).
const writeBuffer = 1 << 20

// writers holds writeFile's buffers (allocating one per file cost the
// small hub's get 10 % of its CPU).
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBuffer) }}

// The window of ordered: work runs at most aheadUnits units ahead of
// emit, and beyond 2×threads units only while the units ahead hold at
// most aheadBytes (by size) — so that thousands of small units keep the
// threads busy while a large one is written, without holding many large
// ones.
const (
	aheadUnits = 64
	aheadBytes = 32 << 20
)

// ordered runs work(i) for i in 0..n-1 on the store's threads, ahead of
// emit (within the window above; size(i) is unit i's bytes, a guess
// that bounds nothing but the window), which sees the results in order.
func (s *Store) ordered(n int, size func(i int) int64, work func(i int) ([]byte, error), emit func(i int, b []byte) error) error {
	type res struct {
		b   []byte
		err error
	}
	threads := s.opt.threads()
	out := make([]chan res, n)
	for i := range out {
		out[i] = make(chan res, 1)
	}
	var (
		mu        sync.Mutex
		ahead     int   // dispatched, not yet emitted (mu)
		aheadSize int64 // their sizes (mu)
		sizes     = make([]int64, n)
		freed     = make(chan struct{}, 1)
		work1     = make(chan int)
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		minAhead  = 2 * threads
		roomFor   = func(i int) bool {
			mu.Lock()
			defer mu.Unlock()
			if ahead >= minAhead && (ahead >= aheadUnits || aheadSize+sizes[i] > aheadBytes) {
				return false
			}
			ahead++
			aheadSize += sizes[i]
			return true
		}
	)
	for i := range sizes {
		sizes[i] = max(size(i), 0)
	}
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work1 {
				b, err := work(i)
				out[i] <- res{b, err}
			}
		}()
	}
	go func() {
		defer close(work1)
		for i := range n {
			for !roomFor(i) {
				select {
				case <-freed:
				case <-stop:
					return
				}
			}
			select {
			case work1 <- i:
			case <-stop:
				return
			}
		}
	}()
	var err error
	for i := 0; i < n && err == nil; i++ {
		r := <-out[i]
		mu.Lock()
		ahead--
		aheadSize -= sizes[i]
		mu.Unlock()
		select {
		case freed <- struct{}{}:
		default:
		}
		err = r.err
		if err == nil {
			err = emit(i, r.b)
		}
	}
	close(stop)
	wg.Wait()
	return err
}

// rawCache keeps recently coded or decoded units' bytes (bases of deltas
// in an add), bounded by bytes, oldest out first.
type rawCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	m     map[Hash][]byte
	order []Hash
}

func newRawCache(max int64) *rawCache { return &rawCache{max: max, m: map[Hash][]byte{}} }

func (c *rawCache) get(h Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[h]
	return b, ok
}

func (c *rawCache) put(h Hash, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[h]; ok || int64(len(b)) > c.max/4 {
		return
	}
	c.m[h] = b
	c.order = append(c.order, h)
	c.bytes += int64(len(b))
	for c.bytes > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= int64(len(c.m[old]))
		delete(c.m, old)
	}
}
