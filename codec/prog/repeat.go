package prog

import (
	"encoding/binary"
	"errors"
	"fmt"

	rc "neuralzip/codec/rangecoder"
)

// Repeat is the row-match operator (issue 48): a tensor of rows × cols
// words (16- or 32-bit floats) whose words are exact copies, or copies
// with the sign bit flipped, of words elsewhere in it — the windowed DFT
// and DCT bases of audio front ends, where value(k, n) = w[n]·cos(2πkn/N)
// equals the value of another row k' at the same column wherever
// (k ∓ k')·n ≡ 0 mod N, and mirrors itself about the centre column — is
// coded as, for each row, up to RepeatMaxSources sources (an earlier row
// at the same column, or a row up to this one read mirrored), and for
// each word one symbol: a literal, or equal to source i, or source i with
// the sign bit flipped. The symbols are range coded (package
// codec/rangecoder) with adaptive models; the literals, the words no
// source gives, in order, are returned to the caller (the codec codes
// them as a dense float tensor). Matches are defined on bits, not
// values, so any words round-trip: NaN payloads, −0 and +0.
//
// A repeat payload (codec/doc.go, "Repeat blocks"):
//
//	uvarint cols    the row length (> 0; rows = words / cols)
//	uvarint lits    the number of literal words
//	uvarint len     the range-coded stream's bytes (FinishShort form)
//	[len]byte       the stream: per row its sources, then its symbols
//
// The caller's bytes (the literals' coding) follow.

// RepeatMaxSources is the most sources a row may have.
const RepeatMaxSources = 4

// Source kinds: where source (row s, kind) reads for column c.
const (
	repSame    = iota // column c of row s (s before the current row)
	repMirror         // column cols−c of row s (c ≥ 1): the DFT's mirror
	repMirror1        // column cols−1−c of row s: the DCT's mirror
	repKinds
)

// ErrRepeat is the error of a damaged repeat payload.
var ErrRepeat = errors.New("prog: damaged repeat payload")

// repeatMinRows: tensors of fewer rows than this are not coded as repeat
// (nothing to match against).
const repeatMinRows = 2

// repSource is one source of a row.
type repSource struct {
	row  int32
	kind uint8
}

// srcCol is the column source kind k reads for column c of a row of
// cols words, or -1 where it reads outside the row.
func srcCol(k uint8, c, cols int) int {
	switch k {
	case repSame:
		return c
	case repMirror:
		if c == 0 {
			return -1
		}
		return cols - c
	}
	return cols - 1 - c
}

// firstCol is the first column at which source s is available in row r:
// a source in row r itself is read only where its column is already
// decoded (before c).
func (s repSource) firstCol(r, cols int) int {
	if int(s.row) < r {
		if s.kind == repMirror {
			return 1
		}
		return 0
	}
	// cols−c < c ⇔ c > cols/2; cols−1−c < c ⇔ c > (cols−1)/2
	if s.kind == repMirror {
		return cols/2 + 1
	}
	return (cols-1)/2 + 1
}

// repModels are the adaptive models of a repeat stream. Their use is the
// stream's format (codec/doc.go, "Repeat blocks").
type repModels struct {
	count [RepeatMaxSources][2]rc.Model       // source count, unary: (position, the previous row had more)
	same  [RepeatMaxSources]rc.Model          // slot j is the predicted source
	kind  [RepeatMaxSources][4]rc.Model       // kind, a 2-bit tree
	gamma [RepeatMaxSources][2][32]rc.Model   // the row distance's length (Elias gamma), by kind == repSame
	match [repDict + 1][2][2]rc.Model         // a source gives the word: (symbol at c−1, c−2 matched, above matched)
	dict  [repDict + 1][2]rc.Model            // no source does, an earlier literal's magnitude does: (symbol at c−1, the last such word was one)
	dgam  [32]rc.Model                        // its distance back in the literals' list (Elias gamma)
	dsign [2]rc.Model                         // its sign (column parity)
	which [RepeatMaxSources][2][2]rc.Model    // slot j: (symbol at c−1 is j, above is j)
	sign  [RepeatMaxSources][3][3][2]rc.Model // flipped: (slot, sign at c−1 by this slot or 2, at c−2, column parity)
}

// repDict is the symbol of a word whose magnitude is an earlier
// literal's (the DCT's values recur at other columns); symbols 1 to
// RepeatMaxSources are the sources', 0 a literal.
const repDict = RepeatMaxSources + 1

// repState is what the encoder and the decoder both track.
type repState struct {
	m        repModels
	prev     [RepeatMaxSources]repSource // the previous row's sources
	step     [RepeatMaxSources]int32     // their row steps from the row before
	nprev    int
	src      [RepeatMaxSources]repSource
	nsrc     int
	above    []uint8 // the previous row's symbols: 0 literal, 1+slot
	cur      []uint8
	signs    []uint8 // this row's signs: 0, 1, or 2 where no source gave the word
	dictLast int     // 1: the last word no source gave was an earlier literal's
	minCol   [RepeatMaxSources]int
	srcBase  [RepeatMaxSources]int // flat index of the source row's start
}

func (s *repState) reset(cols int) {
	s.m = repModels{}
	s.nprev, s.dictLast = 0, 0
	if cap(s.above) < cols {
		s.above, s.cur, s.signs = make([]uint8, cols), make([]uint8, cols), make([]uint8, cols)
	}
	s.above, s.cur, s.signs = s.above[:cols], s.cur[:cols], s.signs[:cols]
	clear(s.above)
	clear(s.cur)
	clear(s.signs)
}

// predicted is slot j's predicted source in row r, and whether there is one.
func (s *repState) predicted(j, r int) (repSource, bool) {
	if j >= s.nprev {
		return repSource{}, false
	}
	p := s.prev[j]
	p.row += s.step[j]
	return p, valid(p, r)
}

// valid says whether source p may be a source of row r.
func valid(p repSource, r int) bool {
	if p.row < 0 || int(p.row) > r || p.kind >= repKinds {
		return false
	}
	return int(p.row) < r || p.kind != repSame
}

// endRow makes row r's sources the previous ones and its symbols the row above.
func (s *repState) endRow() {
	var step [RepeatMaxSources]int32
	for j := 0; j < s.nsrc; j++ {
		step[j] = 1
		if j < s.nprev && s.prev[j].kind == s.src[j].kind {
			step[j] = s.src[j].row - s.prev[j].row
		}
	}
	s.prev, s.step, s.nprev = s.src, step, s.nsrc
	s.above, s.cur = s.cur, s.above
}

// symCtx are the contexts of column c's symbol.
func (s *repState) ctx(c int) (a, b, u int) {
	if c > 0 {
		a = int(s.cur[c-1])
	}
	if c > 1 && s.cur[c-2] != 0 && s.cur[c-2] != repDict {
		b = 1
	}
	if s.above[c] != 0 && s.above[c] != repDict {
		u = 1
	}
	return
}

func (s *repState) signCtx(j, c int) *rc.Model {
	s1, s2 := 2, 2
	if c > 0 && int(s.cur[c-1]) == j+1 {
		s1 = int(s.signs[c-1])
	}
	if c > 1 && int(s.cur[c-2]) == j+1 {
		s2 = int(s.signs[c-2])
	}
	return &s.m.sign[j][s1][s2][c&1]
}

// RepeatEncoder codes repeat payloads. Its zero value is ready; reuse it.
type RepeatEncoder struct {
	st       repState
	enc      rc.Encoder
	words    []uint32
	head     []int32  // hash table: flat index + 1 of the latest word of a (column, |word|) key
	keys     []uint64 // and the key, column<<32 | |word|
	chain    []int32  // the previous flat index of the same key, -1 for none
	cand     []repSource
	cidx     []int32 // per column of the row: its candidates' end in cand
	votes    []int32
	touch    []int32
	cover    []bool
	lits     []byte
	out      []byte
	dict     []uint32 // the literals' magnitudes, in order
	dictHead []int32  // hash table: 1 + their index
}

// dictSlot is the slot of magnitude a in the literals' hash table: the
// one holding it, or the empty one where it goes.
func (e *RepeatEncoder) dictSlot(a uint32) uint32 {
	mask := uint32(len(e.dictHead) - 1)
	h := (a * 0x9E3779B1 >> 5) & mask
	for {
		k := e.dictHead[h]
		if k == 0 || e.dict[k-1] == a {
			return h
		}
		h = (h + 1) & mask
	}
}

func b2i32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// repChain is how many earlier occurrences of a word's key the search
// follows per source kind.
const repChain = 8

// RepeatWorth reports whether a tensor of n words of width bytes in rows
// of cols may be coded as repeat.
func RepeatWorth(n, cols, width int) bool {
	return (width == 2 || width == 4) && cols > 0 && n%cols == 0 && n/cols >= repeatMinRows
}

// Append appends the repeat payload of src (rows of cols words of width
// 2 or 4 bytes, little-endian) to dst, and returns it with the literal
// words (in src's width, valid until the next call).
func (e *RepeatEncoder) Append(dst, src []byte, cols, width int) (out, lits []byte) {
	n := len(src) / width
	rows := n / cols
	e.load(src, width)
	sign := uint32(1) << (8*width - 1)
	e.initChains(n)
	if cap(e.dictHead) < len(e.head) {
		e.dictHead = make([]int32, len(e.head))
	}
	e.dictHead = e.dictHead[:len(e.head)]
	clear(e.dictHead)
	e.dict = e.dict[:0]
	st := &e.st
	st.reset(cols)
	e.enc.Reset(e.out[:0])
	e.lits = e.lits[:0]
	if cap(e.votes) < repKinds*rows {
		e.votes = make([]int32, repKinds*rows)
	}
	e.votes = e.votes[:repKinds*rows]
	if cap(e.cover) < cols {
		e.cover = make([]bool, cols)
	}
	e.cover = e.cover[:cols]
	if cap(e.cidx) < cols {
		e.cidx = make([]int32, cols)
	}
	e.cidx = e.cidx[:cols]
	w := e.words
	nlits := 0
	for r := 0; r < rows; r++ {
		e.chooseSources(r, cols, sign)
		e.codeSources(r)
		for j := 0; j < st.nsrc; j++ {
			st.minCol[j] = st.src[j].firstCol(r, cols)
			st.srcBase[j] = int(st.src[j].row) * cols
		}
		base := r * cols
		for c := 0; c < cols; c++ {
			v := w[base+c]
			a, b, u := st.ctx(c)
			sym, sg, avail := 0, uint8(2), 0
			for j := 0; j < st.nsrc; j++ {
				if c < st.minCol[j] {
					continue
				}
				avail++
				if sym != 0 {
					continue
				}
				x := w[st.srcBase[j]+srcCol(st.src[j].kind, c, cols)]
				if x == v {
					sym, sg = j+1, 0
				} else if x^sign == v {
					sym, sg = j+1, 1
				}
			}
			if avail > 0 {
				m := uint32(0)
				if sym != 0 {
					m = 1
				}
				e.enc.Encode(&st.m.match[a][b][u], m)
				if sym != 0 {
					left := avail
					for j := 0; j < st.nsrc && left > 1; j++ {
						if c < st.minCol[j] {
							continue
						}
						left--
						bit := uint32(0)
						if sym == j+1 {
							bit = 1
						}
						e.enc.Encode(&st.m.which[j][b2i(a == j+1)][b2i(st.above[c] == uint8(j+1))], bit)
						if bit == 1 {
							break
						}
					}
					e.enc.Encode(st.signCtx(sym-1, c), uint32(sg))
				}
			}
			if sym == 0 {
				// an earlier literal's magnitude, or a new literal
				h := e.dictSlot(v &^ sign)
				if len(e.dict) > 0 {
					k := e.dictHead[h]
					e.enc.Encode(&st.m.dict[a][st.dictLast], b2i32(k != 0))
					st.dictLast = b2i(k != 0)
					if k != 0 {
						sym, sg = repDict, uint8(v>>(8*width-1))
						gammaEnc(&e.enc, &st.m.dgam, uint32(len(e.dict)-int(k)+1))
						e.enc.Encode(&st.m.dsign[c&1], uint32(sg))
					}
				}
				if sym == 0 {
					nlits++
					e.lits = appendWord(e.lits, v, width)
					e.dict = append(e.dict, v&^sign)
					e.dictHead[h] = int32(len(e.dict))
				}
			}
			st.cur[c], st.signs[c] = uint8(sym), sg
		}
		st.endRow()
		e.insertRow(r, cols, sign)
	}
	e.out = e.enc.FinishShort()
	dst = binary.AppendUvarint(dst, uint64(cols))
	dst = binary.AppendUvarint(dst, uint64(nlits))
	dst = binary.AppendUvarint(dst, uint64(len(e.out)))
	dst = append(dst, e.out...)
	return dst, e.lits
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func appendWord(b []byte, v uint32, width int) []byte {
	if width == 4 {
		return binary.LittleEndian.AppendUint32(b, v)
	}
	return binary.LittleEndian.AppendUint16(b, uint16(v))
}

// load reads src's words into e.words.
func (e *RepeatEncoder) load(src []byte, width int) {
	n := len(src) / width
	if cap(e.words) < n {
		e.words = make([]uint32, n)
	}
	e.words = e.words[:n]
	if width == 4 {
		for i := range e.words {
			e.words[i] = binary.LittleEndian.Uint32(src[4*i:])
		}
		return
	}
	for i := range e.words {
		e.words[i] = uint32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// initChains sizes the hash table of (column, |word|) keys for n words.
func (e *RepeatEncoder) initChains(n int) {
	bits := 4
	for 1<<bits < 2*n {
		bits++
	}
	if cap(e.head) < 1<<bits {
		e.head = make([]int32, 1<<bits)
	}
	e.head = e.head[:1<<bits]
	clear(e.head)
	if cap(e.keys) < 1<<bits {
		e.keys = make([]uint64, 1<<bits)
	}
	e.keys = e.keys[:1<<bits]
	if cap(e.chain) < n {
		e.chain = make([]int32, n)
	}
	e.chain = e.chain[:n]
}

// slot is the hash table's slot of key (column c, magnitude a): the one
// holding it, or the empty one where it goes.
func (e *RepeatEncoder) slot(a uint32, c, cols int, sign uint32) uint32 {
	mask := uint32(len(e.head) - 1)
	h := ((a*0x9E3779B1 ^ uint32(c)*0x85EBCA77) >> 7) & mask
	key := uint64(c)<<32 | uint64(a)
	for {
		if e.head[h] == 0 || e.keys[h] == key {
			return h
		}
		h = (h + 1) & mask
	}
}

// insertRow links the words of row r into the chains: each to the
// previous word of its column with the same magnitude.
func (e *RepeatEncoder) insertRow(r, cols int, sign uint32) {
	base := r * cols
	for c := 0; c < cols; c++ {
		a := e.words[base+c] &^ sign
		h := e.slot(a, c, cols, sign)
		e.chain[base+c] = e.head[h] - 1
		e.head[h] = int32(base+c) + 1
		e.keys[h] = uint64(c)<<32 | uint64(a)
	}
}

// chooseSources picks row r's sources: greedily the source that gives
// the most words of the row not yet given, among the candidates the
// chains name (up to repChain earlier words of the same key per kind),
// while it gives at least two; then ordered so that the slots the
// previous row predicts keep them.
func (e *RepeatEncoder) chooseSources(r, cols int, sign uint32) {
	st := &e.st
	w := e.words
	base := r * cols
	e.cand = e.cand[:0]
	for c := 0; c < cols; c++ {
		v := w[base+c] &^ sign
		for k := uint8(0); k < repKinds; k++ {
			sc := srcCol(k, c, cols)
			if sc < 0 {
				continue
			}
			if k != repSame && sc < c && w[base+sc]&^sign == v {
				e.cand = append(e.cand, repSource{row: int32(r), kind: k})
			}
			// earlier rows: the chains hold rows before r only
			i := int(e.head[e.slot(v, sc, cols, sign)]) - 1
			for d := 0; i >= 0 && d < repChain; d++ {
				e.cand = append(e.cand, repSource{row: int32(i / cols), kind: k})
				i = int(e.chain[i])
			}
		}
		e.cidx[c] = int32(len(e.cand))
	}
	clear(e.cover)
	var chosen [RepeatMaxSources]repSource
	var gains [RepeatMaxSources]int32
	n := 0
	rows := len(e.votes) / repKinds
	for n < RepeatMaxSources {
		e.touch = e.touch[:0]
		lo := int32(0)
		for c := 0; c < cols; c++ {
			hi := e.cidx[c]
			if !e.cover[c] {
				for _, s := range e.cand[lo:hi] {
					k := int32(s.kind)*int32(rows) + s.row
					if e.votes[k] == 0 {
						e.touch = append(e.touch, k)
					}
					e.votes[k]++
				}
			}
			lo = hi
		}
		best, bk := int32(0), int32(-1)
		for _, k := range e.touch {
			v := e.votes[k]
			// ties: the nearer row, then the lower kind
			if v > best || v == best && bk >= 0 && better(k, bk, rows) {
				best, bk = v, k
			}
			e.votes[k] = 0
		}
		if best < 2 {
			break
		}
		s := repSource{row: bk % int32(rows), kind: uint8(bk / int32(rows))}
		// duplicates in a word's candidates count once in coverage
		chosen[n], gains[n] = s, best
		n++
		fc := s.firstCol(r, cols)
		for c := fc; c < cols; c++ {
			if e.cover[c] {
				continue
			}
			x := w[int(s.row)*cols+srcCol(s.kind, c, cols)]
			if x&^sign == w[base+c]&^sign {
				e.cover[c] = true
			}
		}
	}
	// slots: a chosen source the previous row predicts for slot j keeps j
	var used [RepeatMaxSources]bool
	var slot [RepeatMaxSources]repSource
	var filled [RepeatMaxSources]bool
	for j := 0; j < n; j++ {
		p, ok := st.predicted(j, r)
		if !ok {
			continue
		}
		for i := 0; i < n; i++ {
			if !used[i] && chosen[i] == p {
				slot[j], filled[j], used[i] = p, true, true
				break
			}
		}
	}
	i := 0
	for j := 0; j < n; j++ {
		if filled[j] {
			continue
		}
		for used[i] {
			i++
		}
		slot[j], used[i] = chosen[i], true
	}
	st.src, st.nsrc = slot, n
}

// better says whether vote key a is preferred to b on a tie.
func better(a, b int32, rows int) bool {
	ra, rb := a%int32(rows), b%int32(rows)
	if ra != rb {
		return ra > rb
	}
	return a < b
}

// codeSources codes row r's sources (st.src) into the stream.
func (e *RepeatEncoder) codeSources(r int) {
	st := &e.st
	for j := 0; j < RepeatMaxSources; j++ {
		bit := uint32(0)
		if j < st.nsrc {
			bit = 1
		}
		e.enc.Encode(&st.m.count[j][b2i(j < st.nprev)], bit)
		if bit == 0 {
			break
		}
	}
	for j := 0; j < st.nsrc; j++ {
		s := st.src[j]
		p, ok := st.predicted(j, r)
		if ok {
			if s == p {
				e.enc.Encode(&st.m.same[j], 1)
				continue
			}
			e.enc.Encode(&st.m.same[j], 0)
		}
		k := uint32(s.kind)
		e.enc.Encode(&st.m.kind[j][1], k>>1)
		e.enc.Encode(&st.m.kind[j][2+k>>1], k&1)
		d := uint32(r - int(s.row)) // ≥ 1 for repSame
		if s.kind == repSame {
			d--
		}
		gammaEnc(&e.enc, &st.m.gamma[j][b2i(s.kind == repSame)], d+1)
	}
}

// gamma codes x ≥ 1 as its bit length in unary (adaptive) and its bits
// below the top at probability one half.
func gammaEnc(e *rc.Encoder, m *[32]rc.Model, x uint32) {
	nb := 0
	for x>>(nb+1) != 0 {
		nb++
	}
	for i := 0; i < nb; i++ {
		e.Encode(&m[i], 1)
	}
	if nb < 31 {
		e.Encode(&m[nb], 0)
	}
	for i := nb - 1; i >= 0; i-- {
		e.EncodeP(1<<15, x>>i&1)
	}
}

// RepeatHeader is a repeat payload's header.
type RepeatHeader struct {
	Cols, Lits int
	stream     []byte
}

// ReadRepeatHeader reads the header of a repeat payload of n words and
// returns it with the caller's bytes after the stream.
func ReadRepeatHeader(src []byte, n int) (RepeatHeader, []byte, error) {
	var h RepeatHeader
	cols, k := binary.Uvarint(src)
	if k <= 0 || cols == 0 || cols > uint64(n) || uint64(n)%cols != 0 {
		return h, nil, fmt.Errorf("%w: %d words in rows of %d", ErrRepeat, n, cols)
	}
	src = src[k:]
	lits, k := binary.Uvarint(src)
	if k <= 0 || lits > uint64(n) {
		return h, nil, fmt.Errorf("%w: %d literals of %d words", ErrRepeat, lits, n)
	}
	src = src[k:]
	l, k := binary.Uvarint(src)
	if k <= 0 || l > uint64(len(src)-k) {
		return h, nil, fmt.Errorf("%w: stream of %d bytes, %d left", ErrRepeat, l, len(src)-max(k, 0))
	}
	h.Cols, h.Lits, h.stream = int(cols), int(lits), src[k:k+int(l)]
	return h, src[k+int(l):], nil
}

// StreamLen is the symbol stream's bytes.
func (h RepeatHeader) StreamLen() int { return len(h.stream) }

// RepeatDecoder decodes repeat payloads. Its zero value is ready; reuse it.
type RepeatDecoder struct {
	st    repState
	dec   rc.Decoder
	words []uint32 // the words decoded
	litw  []uint32 // the literals
}

// Decode writes the words of a repeat payload with header h into dst
// (its length: the words × width), taking the literals from lits (h.Lits
// words of width bytes).
func (d *RepeatDecoder) Decode(dst []byte, h RepeatHeader, lits []byte, width int) error {
	if width != 2 && width != 4 || len(dst)%width != 0 || len(lits) != h.Lits*width {
		return fmt.Errorf("%w: %d literal bytes for %d literals of %d bytes", ErrRepeat, len(lits), h.Lits, width)
	}
	n := len(dst) / width
	cols := h.Cols
	if cols <= 0 || n%cols != 0 {
		return fmt.Errorf("%w: %d words in rows of %d", ErrRepeat, n, cols)
	}
	rows := n / cols
	sign := uint32(1) << (8*width - 1)
	st := &d.st
	st.reset(cols)
	d.dec.ResetShort(h.stream)
	// words and literals as uint32s: one load and store path for both widths
	if cap(d.words) < n {
		d.words = make([]uint32, n)
	}
	w := d.words[:n]
	if cap(d.litw) < h.Lits {
		d.litw = make([]uint32, h.Lits)
	}
	lw := d.litw[:h.Lits]
	for i := range lw {
		if width == 4 {
			lw[i] = binary.LittleEndian.Uint32(lits[4*i:])
		} else {
			lw[i] = uint32(binary.LittleEndian.Uint16(lits[2*i:]))
		}
	}
	li := 0
	m := &st.m
	dec := &d.dec
	for r := 0; r < rows; r++ {
		if err := d.readSources(r); err != nil {
			return err
		}
		// slot j gives column c (c ≥ minCol[j]) the word off[j] + dir[j]·c
		nsrc := st.nsrc
		var minCol, off, dir [RepeatMaxSources]int
		for j := 0; j < nsrc; j++ {
			s := st.src[j]
			minCol[j] = s.firstCol(r, cols)
			off[j], dir[j] = int(s.row)*cols, 1
			if s.kind == repMirror {
				off[j], dir[j] = off[j]+cols, -1
			} else if s.kind == repMirror1 {
				off[j], dir[j] = off[j]+cols-1, -1
			}
		}
		first := cols // the first column any slot gives
		for j := 0; j < nsrc; j++ {
			first = min(first, minCol[j])
		}
		base := r * cols
		row := w[base : base+cols]
		cur, above, signs := st.cur[:cols], st.above[:cols], st.signs[:cols]
		a, a2 := 0, 0 // the symbols at c−1 and c−2
		for c := range row {
			sym, sg := 0, uint8(2)
			if c >= first {
				b, u := 0, 0
				if a2 != 0 && a2 != repDict {
					b = 1
				}
				if x := above[c]; x != 0 && x != repDict {
					u = 1
				}
				if dec.Decode(&m.match[a][b][u]) == 1 {
					avail := 0
					for j := 0; j < nsrc; j++ {
						if c >= minCol[j] {
							avail++
						}
					}
					for j := 0; j < nsrc; j++ {
						if c < minCol[j] {
							continue
						}
						if avail == 1 {
							sym = j + 1
							break
						}
						avail--
						if dec.Decode(&m.which[j][b2i(a == j+1)][b2i(above[c] == uint8(j+1))]) == 1 {
							sym = j + 1
							break
						}
					}
					sg = uint8(dec.Decode(st.signCtx(sym-1, c)))
				}
			}
			var v uint32
			if sym != 0 {
				v = w[off[sym-1]+dir[sym-1]*c] ^ uint32(sg)*sign
			} else if li > 0 && dec.Decode(&m.dict[a][st.dictLast]) == 1 {
				st.dictLast = 1
				x, err := d.gamma(&m.dgam)
				if err != nil || int(x) > li {
					return fmt.Errorf("%w: row %d: literal %d back of %d", ErrRepeat, r, x, li)
				}
				sym = repDict
				sg = uint8(dec.Decode(&m.dsign[c&1]))
				v = lw[li-int(x)]&^sign | uint32(sg)*sign
			} else {
				if li >= len(lw) {
					return fmt.Errorf("%w: more than %d literals", ErrRepeat, h.Lits)
				}
				if li > 0 {
					st.dictLast = 0
				}
				v = lw[li]
				li++
			}
			row[c] = v
			cur[c], signs[c] = uint8(sym), sg
			a, a2 = sym, a
		}
		if dec.Overrun() {
			return fmt.Errorf("%w: the stream ends in row %d", ErrRepeat, r)
		}
		st.endRow()
	}
	if li != h.Lits || dec.Overrun() {
		return fmt.Errorf("%w: %d literals used of %d", ErrRepeat, li, h.Lits)
	}
	if width == 4 {
		for i, v := range w {
			binary.LittleEndian.PutUint32(dst[4*i:], v)
		}
	} else {
		for i, v := range w {
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(v))
		}
	}
	return nil
}

// readSources reads row r's sources.
func (d *RepeatDecoder) readSources(r int) error {
	st := &d.st
	n := 0
	for n < RepeatMaxSources && d.dec.Decode(&st.m.count[n][b2i(n < st.nprev)]) == 1 {
		n++
	}
	for j := 0; j < n; j++ {
		p, ok := st.predicted(j, r)
		if ok && d.dec.Decode(&st.m.same[j]) == 1 {
			st.src[j] = p
			continue
		}
		k := d.dec.Decode(&st.m.kind[j][1])
		k = k<<1 | d.dec.Decode(&st.m.kind[j][2+k])
		x, err := d.gamma(&st.m.gamma[j][b2i(k == repSame)])
		if err != nil {
			return err
		}
		dist := int64(x) - 1
		if k == repSame {
			dist++
		}
		s := repSource{row: int32(int64(r) - dist), kind: uint8(k)}
		if dist > int64(r) || !valid(s, r) {
			return fmt.Errorf("%w: row %d: source row %d of kind %d", ErrRepeat, r, int64(r)-dist, k)
		}
		st.src[j] = s
	}
	st.nsrc = n
	return nil
}

func (d *RepeatDecoder) gamma(m *[32]rc.Model) (uint32, error) {
	nb := 0
	for nb < 31 && d.dec.Decode(&m[nb]) == 1 {
		nb++
	}
	if nb > 30 {
		return 0, fmt.Errorf("%w: a row distance of %d bits", ErrRepeat, nb+1)
	}
	x := uint32(1)
	for i := 0; i < nb; i++ {
		x = x<<1 | d.dec.DecodeP(1<<15)
	}
	return x, nil
}
