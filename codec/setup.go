package codec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/klauspost/compress/huff0"

	"neuralzip/codec/huff"
	"neuralzip/codec/search"
	"neuralzip/dtype"
)

// A Setup holds shared Huffman tables for the exponent streams of float
// blocks, built once from sample models (BuildSetup) and reused by every
// later encode: a block picks the cheapest table from its histogram instead
// of building one of its own. Tables are per dtype (a SetupSection).
//
// Exponent histograms of weight tensors have much the same shape at every
// scale: a tensor with twice the standard deviation has its exponents one
// higher. Tables therefore live in an aligned alphabet, and a block names a
// shift that moves its exponents there (see align). Every table codes single
// symbols and may also code pairs of consecutive symbols; symbols outside a
// table's alphabet escape to an exception stream, so any block is encodable
// with any table.
//
// A Setup is immutable once built or parsed and safe for concurrent use.
type Setup struct {
	ChunkValues int           // chunk size the setup was built with
	Builder     string        // program that built it
	Sources     []SetupSource // the files it was built from
	Sections    []*SetupSection
	// Programs chooses the program of the tensors it names (choice.go):
	// the encoder codes them so under this setup, unless
	// EncodeOptions.Programs says otherwise. Setup files of versions 1
	// and 2 have none; a setup with programs is written as version 3.
	Programs []SetupProgram
	// Prior counts which program won the search (searchprog.go) on the
	// tensors the setup was built from, by dtype, shape class and parent
	// node: EncodeOptions.Search expands candidates in its order. Setup
	// files before version 4 have none; a setup with a prior is written
	// as version 4.
	Prior *search.Prior

	progs map[string]Program // Programs by tensor (parseSetup)
	id    [16]byte
	raw   []byte // the encoded file
}

// SetupProgram is one tensor's chosen program in a setup.
type SetupProgram struct {
	Tensor  string // the tensor's name, as the checkpoint's layout gives it
	Program Program
}

// prior is s.Prior (nil for a nil setup).
func (s *Setup) prior() *search.Prior {
	if s == nil {
		return nil
	}
	return s.Prior
}

// programs is s.Programs (nil for a nil setup).
func (s *Setup) programs() []SetupProgram {
	if s == nil {
		return nil
	}
	return s.Programs
}

// ProgramFor is the program the setup chooses for the tensor called name,
// ProgramAuto where it names none.
func (s *Setup) ProgramFor(name string) Program {
	if s == nil {
		return ProgramAuto
	}
	if s.progs == nil {
		for _, p := range s.Programs { // a setup not made by parseSetup
			if p.Tensor == name {
				return p.Program
			}
		}
	}
	return s.progs[name]
}

// WithPrograms returns a setup with the tables of s (none when s is nil:
// a setup of programs only) and chunk values per block (0: s's, or
// DefaultChunkValues without s), whose Programs are s's with the given ones set (a
// tensor named again takes its new program; ProgramAuto removes it),
// sorted by tensor name. The result has its own ID.
func (s *Setup) WithPrograms(chunk int, set []SetupProgram) (*Setup, error) {
	n := &Setup{ChunkValues: chunk, Builder: "neuralzip programs"}
	if n.ChunkValues == 0 {
		n.ChunkValues = DefaultChunkValues
	}
	byName := map[string]Program{}
	if s != nil {
		n.ChunkValues, n.Builder, n.Sources, n.Sections, n.Prior = s.ChunkValues, s.Builder, s.Sources, s.Sections, s.Prior
		for _, p := range s.Programs {
			byName[p.Tensor] = p.Program
		}
		if chunk != 0 {
			n.ChunkValues = chunk
		}
	}
	for _, p := range set {
		if p.Program >= numPrograms {
			return nil, fmt.Errorf("%w: program %d for %q", ErrSetup, p.Program, p.Tensor)
		}
		byName[p.Tensor] = p.Program
	}
	for name, p := range byName {
		if p != ProgramAuto {
			n.Programs = append(n.Programs, SetupProgram{Tensor: name, Program: p})
		}
	}
	sort.Slice(n.Programs, func(i, j int) bool { return n.Programs[i].Tensor < n.Programs[j].Tensor })
	return parseSetup(n.marshal())
}

// SetupSource records one file a setup was built from.
type SetupSource struct {
	Name   string
	Size   int64
	SHA256 [32]byte
	Format string
}

// A SetupSection holds the tables for one dtype.
type SetupSection struct {
	DType dtype.DType
	Join  uint // residual bits joined into the symbol (see doc.go), fixed for the section
	// PlaneCuts[p], when not 0, replaces the encoder's test for residual
	// plane p (bits 8p..8p+7 of the coded residual): the plane is stored
	// packed, without trying an entropy code, when the order-0 entropy of
	// its sample is at least PlaneCuts[p]/256 of its width (the default is
	// 0.985). The build sets it from its sample: as low as it can while the
	// planes it would pack saved less than PlaneMinGain when coded. Sign and
	// mantissa bits of trained weights are close to uniform, so most trials
	// are skipped; planes that compress well are still coded. Setup files of
	// version 1 have none.
	PlaneCuts []uint8
	Tables    []*SetupTable

	spec    fieldSpec
	shifts  bool       // symbols can be aligned (no join)
	selOnce sync.Once  // sel is made on first use (selectors)
	sel     []tableSel // per table, what choosing a table reads (contiguous)
}

// tableSel is what choosing a table for a block reads, kept together for
// all tables of a section.
type tableSel struct {
	mode byte       // most frequent symbol of the centroid (aligned)
	eff  [256]uint8 // cost in bits of each aligned symbol, escapes included
	eff2 [512]uint8 // eff2[a+off] = eff of symbol a (1..m) rotated by off (0..m-1)
	// rel[r+1], r in -1..m: eff of the aligned symbol of a block symbol s
	// with (s - blockMode) mod m = r, at the shift that aligns the block's
	// mode with the table's; r-1 and r+1 are the neighbouring shifts
	rel [256]uint8
}

// A SetupTable is one cluster's code, in the aligned alphabet.
type SetupTable struct {
	// Singles: the symbols with a code, increasing, and their code lengths
	// (1..11), plus the escape's length last. The huff0 symbol of a code is
	// the (aligned) symbol itself; the escape is the smallest byte value not
	// in the alphabet.
	Alphabet []byte
	Lengths  []uint8
	// Pairs, when PairTop is not empty: code a*k+b is the pair
	// (PairTop[a], PairTop[b]), the last code (k*k) the escape; a code of
	// length 0 does not exist (its pair escapes).
	PairTop     []byte
	PairLengths []uint8
	Centroid    [256]uint64 // aligned symbol histogram of the cluster's sample chunks
	Chunks      int         // sample chunks in the cluster

	// derived
	selOnce sync.Once // mode and sel are made on first use (selInit)
	mode    byte      // most frequent symbol of the centroid (aligned)
	sel     tableSel
	single  tableCode
	pair    tableCode
	hasPair bool
}

// tableCode is the coding state of one code of a table.
type tableCode struct {
	huff   huff.Table
	dec    *huff0.Decoder
	hdr    []byte      // the huff0 table description
	expand [256]uint32 // pairs: code -> two symbols, bit 16 = escape/invalid
	esc    byte        // the escape's huff0 symbol
	lens   [256]uint8  // singles: aligned symbol -> code length (0 = escapes)

	// The code's huff0 description and decoder are made on first use
	// (ready): a setup has tens of codes and an archive's blocks use a
	// few, so parsing an embedded setup for a small archive must not pay
	// for all of them. huff.Decoder's tables (12 KB each) likewise. Both are then shared by every goroutine, which only
	// read them.
	readyOnce sync.Once
	readyErr  error
	hxOnce    sync.Once
	hx        *huff.Decoder
	hxErr     error
}

// ready makes the code's decoding state (see tableCode): its huff0
// description and huff0 decoder. init has checked that the
// lengths form a complete code, so an error here means a bug, not damage.
func (c *tableCode) ready() error {
	c.readyOnce.Do(func() {
		hdr, err := c.huff.AppendHeader(nil)
		if err != nil {
			c.readyErr = errf("setup table: %v", err)
			return
		}
		var s huff0.Scratch
		s2, rest, err := huff0.ReadTable(hdr, &s)
		if err != nil || len(rest) != 0 {
			c.readyErr = errf("setup table description: %v", err)
			return
		}
		c.dec = s2.Decoder()
		c.hdr = hdr
	})
	return c.readyErr
}

// huffX returns the code's huff.Decoder, with its two-symbol table where
// that pays (it is made once, so it pays for every block).
func (c *tableCode) huffX() (*huff.Decoder, error) {
	c.hxOnce.Do(func() {
		if err := c.ready(); err != nil {
			c.hxErr = err
			return
		}
		h := new(huff.Decoder)
		if _, err := h.ReadTable(c.hdr, huff.TwoMin); err != nil {
			c.hxErr = errf("setup table: %v", err)
			return
		}
		c.hx = h
	})
	return c.hx, c.hxErr
}

// ID identifies a setup: the first 16 bytes of the SHA-256 of its encoding.
func (s *Setup) ID() [16]byte { return s.id }

// IDString is the ID in hex.
func (s *Setup) IDString() string { return hex.EncodeToString(s.id[:]) }

// Bytes returns the encoded setup (the .nzsetup file).
func (s *Setup) Bytes() []byte { return s.raw }

// Section returns the section for dtype d, or nil.
func (s *Setup) Section(d dtype.DType) *SetupSection {
	if s == nil {
		return nil
	}
	for _, sec := range s.Sections {
		if sec.DType == d {
			return sec
		}
	}
	return nil
}

// HasPairs reports whether the table codes pairs.
func (t *SetupTable) HasPairs() bool { return len(t.PairTop) > 0 }

// Setup file constants.
var setupMagic = [8]byte{0x89, 'N', 'Z', 'S', 'E', 'T', '\r', '\n'}

const (
	setupVersion   = 4 // 1 (no PlaneCuts), 2 (no Programs) and 3 (no Prior) are read too; 2 is written where there are no Programs nor a Prior, 3 where there is no Prior
	maxSetupTables = 256
)

// Sentinel errors of setups.
var (
	// ErrSetup means a setup file is damaged or not a setup.
	ErrSetup = errors.New("codec: invalid setup")
	// ErrSetupMissing means an archive needs a setup that was not given.
	ErrSetupMissing = errors.New("codec: archive needs its setup")
	// ErrSetupMismatch means the given setup is not the one an archive was written with.
	ErrSetupMismatch = errors.New("codec: wrong setup for this archive")
)

// Alignment. For a symbol width w, the symbols 0 (zero and subnormal
// exponents) and 2^w-1 (infinity, NaN) keep their place; the others rotate
// within 1..2^w-2 by a shift d: aligned(s) = 1 + (s-1-d) mod (2^w-2). A
// block's shift moves its most frequent symbol to the table's.

// rotation returns the maps symbol -> aligned and aligned -> symbol for a
// shift d and width w (identity when w < 3 or d == 0).
func rotation(d int, w uint) (fwd, inv [256]byte) {
	for s := range 256 {
		fwd[s], inv[s] = byte(s), byte(s)
	}
	m := 1<<w - 2
	if w < 3 || d == 0 {
		return
	}
	// aligned(1) = 1 + (-d mod m), then consecutive, wrapping after m
	a := 1 + ((-d)%m+m)%m
	for s := 1; s <= m; s++ {
		fwd[s], inv[a] = byte(a), byte(s)
		if a++; a > m {
			a = 1
		}
	}
	return
}

// modeOf returns the most frequent symbol of a histogram among 1..2^w-2
// (ties: the smallest), or 1<<(w-1)-1 when there is none.
func modeOf(h *[256]uint32, w uint) int {
	best, bc := 1<<(w-1)-1, uint32(0)
	for s := 1; s <= 1<<w-2 && s < 256; s++ {
		if h[s] > bc {
			best, bc = s, h[s]
		}
	}
	return best
}

// costShifted is the exact size in bits of coding a histogram with the
// table's singles code after aligning it by shift d (escapes cost their
// code and the raw symbol).
func (t *SetupTable) costShifted(h *[256]uint32, d int, w uint) uint64 {
	var nz [256]byte
	k := 0
	for s, c := range h {
		if c != 0 {
			nz[k] = byte(s)
			k++
		}
	}
	return t.costNonzero(h, nz[:k], d, w)
}

// costNonzero is costShifted for a histogram whose nonzero symbols are
// listed in nz.
func (t *SetupTable) costNonzero(h *[256]uint32, nz []byte, d int, w uint) uint64 {
	t.selInit(w)
	return t.sel.cost(h, nz, d, w)
}

// selInit makes the table's selection data (mode and sel) on first use:
// only encoders choose tables, so decoders never pay for it.
func (t *SetupTable) selInit(w uint) {
	t.selOnce.Do(func() {
		var h [256]uint32
		for s, n := range t.Centroid {
			h[s] = uint32(min(n, math.MaxUint32))
		}
		t.mode = byte(modeOf(&h, w))
		t.sel.init(t, w)
	})
}

// selectors returns the selection data of every table of the section (for
// pick), made on first use.
func (sec *SetupSection) selectors() []tableSel {
	sec.selOnce.Do(func() {
		w := sec.spec.symW()
		sel := make([]tableSel, len(sec.Tables))
		for i, t := range sec.Tables {
			t.selInit(w)
			sel[i] = t.sel
		}
		sec.sel = sel
	})
	return sec.sel
}

// init fills the selection data of table t.
func (sel *tableSel) init(t *SetupTable, w uint) {
	sel.mode = t.mode
	escBits := t.single.huff.Lens[t.single.esc] + uint8(w)
	for a := range sel.eff {
		sel.eff[a] = escBits
		if l := t.single.lens[a]; l != 0 {
			sel.eff[a] = l
		}
	}
	if w >= 3 {
		m := 1<<w - 2
		for i := 1; i < 2*m && i < len(sel.eff2); i++ {
			sel.eff2[i] = sel.eff[1+(i-1)%m]
		}
		for r := -1; r <= m; r++ {
			sel.rel[r+1] = sel.eff[1+((r+int(sel.mode)-1)%m+m)%m]
		}
	}
}

// costRel is cost for a block whose rotating symbols are given by their
// relative index ri (rel's index at the mode-aligning shift) and count rc,
// at that shift plus delta (-1, 0 or 1), without the non-rotating symbols.
func (sel *tableSel) costRel(ri []uint8, rc []uint32, delta int) uint64 {
	var bits uint64
	rc = rc[:len(ri)]
	switch delta {
	case 0:
		for j, r := range ri {
			bits += uint64(rc[j]) * uint64(sel.rel[r])
		}
	case 1:
		for j, r := range ri {
			bits += uint64(rc[j]) * uint64(sel.rel[r-1])
		}
	default:
		for j, r := range ri {
			bits += uint64(rc[j]) * uint64(sel.rel[r+1])
		}
	}
	return bits
}

// cost is the exact size in bits of coding the histogram h (nonzero
// symbols nz) with the table's singles code after aligning by shift d.
func (sel *tableSel) cost(h *[256]uint32, nz []byte, d int, w uint) uint64 {
	m := 1<<w - 2
	off := 0
	if w >= 3 && d != 0 {
		off = ((-d)%m + m) % m
	}
	var bits uint64
	if off == 0 {
		for _, s := range nz {
			bits += uint64(h[s]) * uint64(sel.eff[s])
		}
		return bits
	}
	for _, s := range nz {
		a := int(s)
		l := sel.eff[a]
		if a >= 1 && a <= m {
			l = sel.eff2[a+off]
		}
		bits += uint64(h[s]) * uint64(l)
	}
	return bits
}

// ExpectedBits is the mean singles code length per symbol of the table on
// its own cluster's sample.
func (t *SetupTable) ExpectedBits(w uint) float64 {
	var h [256]uint32
	var total uint64
	for s, c := range t.Centroid {
		h[s] = uint32(min(c, math.MaxUint32))
		total += uint64(h[s])
	}
	if total == 0 {
		return 0
	}
	return float64(t.costShifted(&h, 0, w)) / float64(total)
}

// prepare derives the coding state of a table and checks it.
func (t *SetupTable) prepare(w uint) error {
	if err := checkAlphabet(t.Alphabet, w, 255); err != nil {
		return err
	}
	if len(t.Lengths) != len(t.Alphabet)+1 {
		return fmt.Errorf("%d singles code lengths for %d symbols", len(t.Lengths), len(t.Alphabet))
	}
	var lens [256]uint8
	var in [256]bool
	for i, s := range t.Alphabet {
		if i > 0 && s <= t.Alphabet[i-1] {
			return errors.New("singles alphabet not increasing")
		}
		if t.Lengths[i] == 0 {
			return fmt.Errorf("symbol %d without a code", s)
		}
		lens[s] = t.Lengths[i]
		in[s] = true
	}
	esc := 0
	for in[esc] {
		esc++
	}
	lens[esc] = t.Lengths[len(t.Alphabet)]
	n := max(esc, int(t.Alphabet[len(t.Alphabet)-1])) + 1
	if err := t.single.init(lens[:n], esc); err != nil {
		return fmt.Errorf("singles code: %v", err)
	}
	for _, s := range t.Alphabet {
		t.single.lens[s] = lens[s]
	}
	t.hasPair = len(t.PairTop) > 0
	if t.hasPair {
		k := len(t.PairTop)
		if err := checkAlphabet(t.PairTop, w, maxPairK); err != nil {
			return fmt.Errorf("pairs: %v", err)
		}
		if len(t.PairLengths) != k*k+1 {
			return fmt.Errorf("%d pair code lengths for %d symbols", len(t.PairLengths), k)
		}
		if err := t.pair.init(t.PairLengths, k*k); err != nil {
			return fmt.Errorf("pairs code: %v", err)
		}
		for a, x := range t.PairTop {
			for b, y := range t.PairTop {
				if t.PairLengths[a*k+b] != 0 {
					t.pair.expand[a*k+b] = uint32(x) | uint32(y)<<8
				}
			}
		}
	} else if len(t.PairLengths) != 0 {
		return errors.New("pair code lengths without pair symbols")
	}
	return nil
}

func checkAlphabet(a []byte, w uint, max int) error {
	if len(a) == 0 || len(a) > max {
		return fmt.Errorf("alphabet of %d symbols", len(a))
	}
	var seen [256]bool
	for _, s := range a {
		if w < 8 && uint(s) >= 1<<w {
			return fmt.Errorf("symbol %d wider than %d bits", s, w)
		}
		if seen[s] {
			return fmt.Errorf("symbol %d twice", s)
		}
		seen[s] = true
	}
	return nil
}

// init checks the code lengths (0 = no code; the escape esc must have one)
// for a complete code of at most huff.MaxBits bits and makes the code; ready
// makes its description and decoder.
func (c *tableCode) init(lengths []uint8, esc int) error {
	if err := c.huff.SetLengths(lengths); err != nil {
		return err
	}
	if esc >= len(lengths) || lengths[esc] == 0 {
		return errors.New("lengths do not form a complete code with an escape")
	}
	c.esc = byte(esc)
	// (the description and decoder follow on first use: ready)
	for i := range c.expand {
		c.expand[i] = 1 << 16
	}
	return nil
}

func (sec *SetupSection) prepare() error {
	f, ok := specFor(sec.DType)
	if !ok {
		return fmt.Errorf("%w: section for %v, which has no field split", ErrSetup, sec.DType)
	}
	if sec.Join > f.maxJoin() {
		return fmt.Errorf("%w: join %d for %v", ErrSetup, sec.Join, sec.DType)
	}
	f.j = sec.Join
	if len(sec.PlaneCuts) > f.planes() {
		return fmt.Errorf("%w: %d plane cuts for %v with %d planes", ErrSetup, len(sec.PlaneCuts), sec.DType, f.planes())
	}
	sec.spec = f
	sec.shifts = f.j == 0 && f.symW() >= 3
	if len(sec.Tables) == 0 || len(sec.Tables) > maxSetupTables {
		return fmt.Errorf("%w: %v section with %d tables", ErrSetup, sec.DType, len(sec.Tables))
	}
	for i, t := range sec.Tables {
		if err := t.prepare(f.symW()); err != nil {
			return fmt.Errorf("%w: %v table %d: %v", ErrSetup, sec.DType, i, err)
		}
	}
	return nil
}

func appendNibbles(p []byte, v []uint8) []byte {
	for i := 0; i < len(v); i += 2 {
		b := v[i] << 4
		if i+1 < len(v) {
			b |= v[i+1]
		}
		p = append(p, b)
	}
	return p
}

func (r *indexReader) nibbles(n int, what string) []uint8 {
	b := r.bytes((n+1)/2, what)
	if b == nil {
		return nil
	}
	out := make([]uint8, n)
	for i := range out {
		v := b[i/2]
		if i%2 == 0 {
			v >>= 4
		}
		out[i] = v & 15
	}
	return out
}

// marshal encodes s (see doc.go, "Setup files").
func (s *Setup) marshal() []byte {
	var p []byte
	p = binary.AppendUvarint(p, uint64(s.ChunkValues))
	p = appendString(p, s.Builder)
	p = binary.AppendUvarint(p, uint64(len(s.Sources)))
	for _, src := range s.Sources {
		p = appendString(p, src.Name)
		p = binary.AppendUvarint(p, uint64(src.Size))
		p = append(p, src.SHA256[:]...)
		p = appendString(p, src.Format)
	}
	p = binary.AppendUvarint(p, uint64(len(s.Sections)))
	for _, sec := range s.Sections {
		p = append(p, byte(sec.DType), byte(sec.Join), byte(len(sec.PlaneCuts)))
		p = append(p, sec.PlaneCuts...)
		p = binary.AppendUvarint(p, uint64(len(sec.Tables)))
		for _, t := range sec.Tables {
			p = append(p, byte(len(t.Alphabet)))
			p = append(p, t.Alphabet...)
			p = appendNibbles(p, t.Lengths)
			p = append(p, byte(len(t.PairTop)))
			p = append(p, t.PairTop...)
			p = appendNibbles(p, t.PairLengths)
			p = binary.AppendUvarint(p, uint64(t.Chunks))
			nz := 0
			for _, c := range t.Centroid {
				if c != 0 {
					nz++
				}
			}
			p = binary.AppendUvarint(p, uint64(nz))
			for sym, c := range t.Centroid {
				if c != 0 {
					p = append(p, byte(sym))
					p = binary.AppendUvarint(p, c)
				}
			}
		}
	}
	version := uint16(2)
	if len(s.Programs) > 0 || s.Prior.Len() > 0 {
		version = 3
		p = binary.AppendUvarint(p, uint64(len(s.Programs)))
		for _, pr := range s.Programs {
			p = appendString(p, pr.Tensor)
			p = append(p, byte(pr.Program))
		}
	}
	if s.Prior.Len() > 0 {
		version = 4
		p, _ = s.Prior.AppendBinary(p)
	}
	out := make([]byte, 0, len(p)+20)
	out = append(out, setupMagic[:]...)
	out = binary.LittleEndian.AppendUint16(out, version)
	out = binary.LittleEndian.AppendUint16(out, 0)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
	out = append(out, p...)
	out = binary.LittleEndian.AppendUint32(out, crc32c(out))
	return out
}

// finish prepares a built setup's tables and computes its encoding and ID.
func (s *Setup) finish() error {
	for _, sec := range s.Sections {
		if err := sec.prepare(); err != nil {
			return err
		}
	}
	s.raw = s.marshal()
	sum := sha256.Sum256(s.raw)
	copy(s.id[:], sum[:16])
	return nil
}

// ParseSetup reads a setup file. A process that decodes (or encodes) many
// archives with one setup parses it once: the setups parsed last are kept
// (at most setupCacheSize) with what their first use built (decoding
// tables), and the same bytes return the same *Setup, which is immutable.
func ParseSetup(b []byte) (*Setup, error) {
	sum := sha256.Sum256(b)
	setupCache.Lock()
	for i, c := range setupCache.list {
		if c.sum == sum && bytes.Equal(c.s.raw, b) {
			// most recent first
			copy(setupCache.list[1:i+1], setupCache.list[:i])
			setupCache.list[0] = c
			setupCache.Unlock()
			return c.s, nil
		}
	}
	setupCache.Unlock()
	s, err := parseSetup(b)
	if err != nil {
		return nil, err
	}
	setupCache.Lock()
	if len(setupCache.list) < setupCacheSize {
		setupCache.list = append(setupCache.list, cachedSetup{})
	}
	copy(setupCache.list[1:], setupCache.list)
	setupCache.list[0] = cachedSetup{sum, s}
	setupCache.Unlock()
	return s, nil
}

// setupCacheSize bounds the setups ParseSetup keeps.
const setupCacheSize = 8

type cachedSetup struct {
	sum [32]byte
	s   *Setup
}

var setupCache struct {
	sync.Mutex
	list []cachedSetup
}

// parseSetup is ParseSetup without the cache.
func parseSetup(b []byte) (*Setup, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrSetup, fmt.Sprintf(format, args...))
	}
	if len(b) < 20 || !bytes.Equal(b[:8], setupMagic[:]) {
		return nil, bad("not a NeuralZip setup file")
	}
	version := binary.LittleEndian.Uint16(b[8:])
	if version < 1 || version > setupVersion {
		return nil, bad("version %d (this build reads 1..%d)", version, setupVersion)
	}
	if f := binary.LittleEndian.Uint16(b[10:]); f != 0 {
		return nil, bad("unknown flags %#x", f)
	}
	if n := binary.LittleEndian.Uint32(b[12:]); uint64(n) != uint64(len(b))-20 {
		return nil, bad("payload of %d bytes in a file of %d", n, len(b))
	}
	if crc32c(b[:len(b)-4]) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, bad("checksum mismatch")
	}
	r := &indexReader{b: b[16 : len(b)-4]}
	s := &Setup{}
	s.ChunkValues = int(r.uvarint(MaxChunkValues, "chunk size"))
	s.Builder = r.str("builder")
	ns := r.uvarint(uint64(len(r.b)/36), "source count")
	for i := uint64(0); i < ns && r.err == nil; i++ {
		var src SetupSource
		src.Name = r.str("source name")
		src.Size = int64(r.uvarint(math.MaxInt64, "source size"))
		copy(src.SHA256[:], r.bytes(32, "source SHA-256"))
		src.Format = r.str("source format")
		s.Sources = append(s.Sources, src)
	}
	// Sections and tables are checked as they are read: a table takes a
	// few bytes of the file but ~12 KiB in memory, so a file of repeated
	// or unusable sections must fail before they are allocated. With one
	// section per float type and nonempty alphabets, a setup holds at most
	// a few thousand tables, whatever the file says.
	nsec := r.uvarint(uint64(len(r.b)/3), "section count")
	seen := map[dtype.DType]bool{}
	for i := uint64(0); i < nsec && r.err == nil; i++ {
		sec := &SetupSection{}
		sec.DType = dtype.DType(r.u8("dtype"))
		sec.Join = uint(r.u8("join"))
		if r.err != nil {
			break
		}
		if _, ok := specFor(sec.DType); !ok {
			return nil, bad("section for %v, which has no field split", sec.DType)
		}
		if seen[sec.DType] {
			return nil, bad("two sections for %v", sec.DType)
		}
		seen[sec.DType] = true
		if version >= 2 {
			np := int(r.u8("plane cut count"))
			sec.PlaneCuts = append([]byte(nil), r.bytes(np, "plane cuts")...)
		}
		nt := r.uvarint(maxSetupTables, "table count")
		for j := uint64(0); j < nt && r.err == nil; j++ {
			a := int(r.u8("alphabet size"))
			if r.err == nil && a == 0 {
				r.fail("%v table %d: empty alphabet", sec.DType, j)
			}
			if r.err != nil {
				break
			}
			t := &SetupTable{}
			t.Alphabet = append([]byte(nil), r.bytes(a, "alphabet")...)
			t.Lengths = r.nibbles(a+1, "code lengths")
			k := int(r.u8("pair symbols"))
			t.PairTop = append([]byte(nil), r.bytes(k, "pair symbols")...)
			if k > 0 {
				t.PairLengths = r.nibbles(k*k+1, "pair code lengths")
			}
			t.Chunks = int(r.uvarint(math.MaxInt32, "chunk count"))
			nz := r.uvarint(256, "centroid size")
			for c := uint64(0); c < nz && r.err == nil; c++ {
				sym := r.u8("centroid symbol")
				t.Centroid[sym] = r.uvarint(math.MaxInt64, "centroid count")
			}
			sec.Tables = append(sec.Tables, t)
		}
		s.Sections = append(s.Sections, sec)
	}
	if version >= 3 && r.err == nil {
		np := r.uvarint(uint64(len(r.b)/2), "program count")
		for i := uint64(0); i < np && r.err == nil; i++ {
			name := r.str("program's tensor")
			p := Program(r.u8("program"))
			if r.err != nil {
				break
			}
			if p == ProgramAuto || p >= numPrograms {
				return nil, bad("program %d for %q", p, name)
			}
			if _, ok := s.progs[name]; ok {
				return nil, bad("two programs for %q", name)
			}
			if s.progs == nil {
				s.progs = map[string]Program{}
			}
			s.progs[name] = p
			s.Programs = append(s.Programs, SetupProgram{Tensor: name, Program: p})
		}
	}
	if version >= 4 && r.err == nil {
		pr, n, err := search.Parse(r.b)
		if err != nil {
			return nil, bad("%v", err)
		}
		if pr.Len() == 0 {
			return nil, bad("version 4 with an empty prior")
		}
		s.Prior, r.b = pr, r.b[n:]
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return nil, bad("%v", r.err)
	}
	for _, sec := range s.Sections {
		if err := sec.prepare(); err != nil {
			return nil, err
		}
	}
	s.raw = append([]byte(nil), b...)
	sum := sha256.Sum256(s.raw)
	copy(s.id[:], sum[:16])
	return s, nil
}

// SymbolBits is the width of the section's symbols: the exponent bits plus
// the joined residual bits.
func (sec *SetupSection) SymbolBits() uint { return sec.spec.symW() }

// Shifts reports whether blocks align their symbols to the tables (sections
// without joined bits).
func (sec *SetupSection) Shifts() bool { return sec.shifts }

// DescriptionBytes is the size of the table's huff0 descriptions (singles,
// plus pairs when present): what a block would otherwise store inline.
func (t *SetupTable) DescriptionBytes() int {
	n := 0
	if t.single.ready() == nil {
		n += len(t.single.hdr)
	}
	if t.hasPair && t.pair.ready() == nil {
		n += len(t.pair.hdr)
	}
	return n
}
