// Package huff is a Huffman coder that writes huff0's block format (the
// zstd literals format: a table description followed by a 1-stream or
// 4-stream bit stream), so huff0's decoder reads everything it writes, and
// a decoder for that format that takes up to two symbols per lookup
// (Decoder). Building the code here lets an encoder pass a histogram it
// already has (huff0 recounts its input) and use a faster encoding loop.
// Beside huff0's FSE-coded table descriptions it writes and reads a
// compact one for wide token tables (AppendCompactTable).
//
// Every fast path (assembly on amd64) has a pure-Go twin, and huff0 itself
// is the reference: its encoder, given the same table through
// huff0.ReadTable, writes the same streams (huff_test.go), and its decoder
// reads every block as Decoder does (FuzzHuffX, FuzzHuffX1).
package huff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/klauspost/compress/fse"
)

// MaxBits is the longest code (huff0's tableLogMax).
const MaxBits = 11

// Errors of building or writing a code.
var (
	ErrTooFew   = errors.New("huffman: fewer than two symbols")
	ErrTable    = errors.New("huffman: table cannot be described")
	ErrTooLarge = errors.New("huffman: stream too large for the 4-stream layout")
)

// ErrCorrupt is what every error reading a table description or a stream
// wraps.
var ErrCorrupt = errors.New("huffman: corrupt input")

type corruptError struct{ msg string }

func (e *corruptError) Error() string { return e.msg }
func (e *corruptError) Unwrap() error { return ErrCorrupt }

func errf(format string, args ...any) error {
	return &corruptError{msg: fmt.Sprintf(format, args...)}
}

// grow extends dst by n bytes.
func grow(dst []byte, n int) []byte { return slices.Grow(dst, n)[:len(dst)+n] }

// Table is a canonical, length-limited Huffman code in huff0's form.
type Table struct {
	Limit  int         // the longest code build may make; 0: MaxBits
	Enc    [256]uint32 // code | length<<16, 0 for absent symbols
	EncL   [256]uint64 // code<<(64-length) | length, for W (present symbols only)
	TL     uint8       // table log: the longest code length
	MaxSym int         // largest symbol present
	// scratch
	fs   fse.Scratch
	keys []uint64
	tmp  []uint64 // radixSort's scratch
	Lens [256]uint8
	wts  [256]byte // makeHeader's weights (a local array escapes through fse.Compress)
	// the table description, made once per build
	hdr      []byte
	hdrErr   error
	hdrValid bool
}

// Build makes a code for hist, which must hold at least two symbols: a
// Huffman code (Moffat–Katajainen, in place on the sorted counts) whose
// lengths above MaxBits are then folded back the way JPEG (ITU T.81
// annex K.3) does it. The code stays complete (Kraft sum exactly 1), as
// huff0 requires. BuildOptimal (package-merge) is the exact reference.
func (t *Table) Build(hist *[256]uint32) error {
	n, err := t.sortKeys(hist)
	if err != nil {
		return err
	}
	var a [256]uint64
	for i, k := range t.keys {
		a[i] = k >> 8
	}
	huffmanLengths(a[:n])
	// a[i] is now the length of the i-th least frequent symbol
	var count [64]int
	maxLen := 0
	for _, l := range a[:n] {
		count[l]++
		maxLen = max(maxLen, int(l))
	}
	lim := MaxBits
	if t.Limit > 0 {
		lim = min(t.Limit, MaxBits)
	}
	for i := maxLen; i > lim; i-- {
		for count[i] > 0 {
			j := i - 2
			for count[j] == 0 {
				j--
			}
			count[i] -= 2
			count[i-1]++
			count[j+1] += 2
			count[j]--
		}
	}
	// longest codes to the least frequent symbols
	t.Lens = [256]uint8{}
	t.MaxSym = 0
	l := min(maxLen, lim)
	t.TL = uint8(l)
	for _, k := range t.keys {
		for count[l] == 0 {
			l--
		}
		count[l]--
		s := byte(k)
		t.Lens[s] = uint8(l)
		t.MaxSym = max(t.MaxSym, int(s))
	}
	t.assignCodes()
	return nil
}

// sortKeys fills t.keys with count<<8 | symbol of the symbols present, in
// ascending order (by count, then symbol), and returns how many there are.
func (t *Table) sortKeys(hist *[256]uint32) (int, error) {
	t.hdrValid = false
	t.keys = t.keys[:0]
	for s, c := range hist {
		if c != 0 {
			t.keys = append(t.keys, uint64(c)<<8|uint64(s))
		}
	}
	if len(t.keys) < 2 {
		return 0, ErrTooFew
	}
	if len(t.keys) < radixSortMin {
		slices.Sort(t.keys)
	} else {
		t.tmp = radixSort(t.keys, t.tmp)
	}
	return len(t.keys), nil
}

// radixSortMin: from this many keys on, radixSort beats slices.Sort.
const radixSortMin = 16

// radixSort sorts keys (count<<8 | symbol, in increasing symbol order, at
// most one per symbol) ascending: a stable sort by count with passes of 8
// bits, skipping a pass whose digit is the same in every key. It returns
// the scratch slice for reuse.
func radixSort(keys, tmp []uint64) []uint64 {
	n := len(keys)
	tmp = slices.Grow(tmp[:0], n)[:n]
	var or uint64
	for _, k := range keys {
		or |= k
	}
	src, dst := keys, tmp
	for shift := uint(8); shift < 64 && or>>shift != 0; shift += 8 {
		var count [256]uint32
		for _, k := range src {
			count[k>>shift&255]++
		}
		if count[src[0]>>shift&255] == uint32(n) {
			continue // every key has this digit
		}
		var sum uint32
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			d := k >> shift & 255
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
	return tmp
}

// huffmanLengths replaces the ascending counts in a (at least two) by the
// code lengths of a Huffman code for them (Moffat and Katajainen, "In-place
// calculation of minimum-redundancy codes", 1995).
func huffmanLengths(a []uint64) {
	n := len(a)
	a[0] += a[1]
	root, leaf := 0, 2
	for next := 1; next < n-1; next++ {
		if leaf >= n || a[root] < a[leaf] {
			a[next] = a[root]
			a[root] = uint64(next)
			root++
		} else {
			a[next] = a[leaf]
			leaf++
		}
		if leaf >= n || (root < next && a[root] < a[leaf]) {
			a[next] += a[root]
			a[root] = uint64(next)
			root++
		} else {
			a[next] += a[leaf]
			leaf++
		}
	}
	a[n-2] = 0
	for next := n - 3; next >= 0; next-- {
		a[next] = a[a[next]] + 1
	}
	avbl, used, dpth := 1, 0, uint64(0)
	root, next := n-2, n-1
	for avbl > 0 {
		for root >= 0 && a[root] == dpth {
			used++
			root--
		}
		for avbl > used {
			a[next] = dpth
			next--
			avbl--
		}
		avbl = 2 * used
		dpth++
		used = 0
	}
}

// BuildOptimal makes the optimal length-limited code (package-merge). It is
// slower than Build and serves as its reference in tests.
func (t *Table) BuildOptimal(hist *[256]uint32) error {
	n, err := t.sortKeys(hist)
	if err != nil {
		return err
	}
	// Level 0 holds the leaves; each higher level merges the leaves with
	// the pairs of the level below. An item is its weight<<1, plus 1 for a
	// leaf. The first 2n-2 items of the top level are the solution; a
	// leaf's code length is the number of levels at which it is selected.
	const L = MaxBits
	var pm [L][]uint64
	for _, k := range t.keys {
		pm[0] = append(pm[0], (k>>8)<<1|1)
	}
	for l := 1; l < L; l++ {
		prev := pm[l-1]
		li, pi, np := 0, 0, len(prev)/2
		for li < n || pi < np {
			var pw uint64
			if pi < np {
				pw = (prev[2*pi]>>1 + prev[2*pi+1]>>1) << 1
			}
			if pi >= np || (li < n && pm[0][li] <= pw|1) {
				pm[l] = append(pm[l], pm[0][li])
				li++
			} else {
				pm[l] = append(pm[l], pw)
				pi++
			}
		}
	}
	var lens [256]uint8
	m := 2*n - 2
	for l := L - 1; l >= 0 && m > 0; l-- {
		c := 0
		for _, it := range pm[l][:m] {
			c += int(it & 1)
		}
		for i := 0; i < c; i++ {
			lens[i]++
		}
		m = 2 * (m - c)
	}
	t.Lens = [256]uint8{}
	t.TL, t.MaxSym = 0, 0
	for i, k := range t.keys {
		s := byte(k)
		t.Lens[s] = lens[i]
		t.TL = max(t.TL, lens[i])
		t.MaxSym = max(t.MaxSym, int(s))
	}
	t.assignCodes()
	return nil
}

// SetLengths makes the canonical code of the given code lengths, one per
// symbol from 0 (0: the symbol is absent). It fails unless they form a
// complete code of at most MaxBits bits.
func (t *Table) SetLengths(lens []uint8) error {
	if len(lens) > 256 {
		return fmt.Errorf("huffman: %d code lengths", len(lens))
	}
	*t = Table{Limit: t.Limit}
	var kraft uint64
	for i, l := range lens {
		if l > MaxBits {
			return fmt.Errorf("huffman: code length %d", l)
		}
		if l != 0 {
			kraft += 1 << (MaxBits - l)
			t.Lens[i] = l
			t.TL = max(t.TL, l)
			t.MaxSym = i
		}
	}
	if kraft != 1<<MaxBits {
		return errors.New("huffman: the lengths do not form a complete code")
	}
	t.assignCodes()
	return nil
}

// assignCodes computes the canonical codes exactly as huff0.ReadTable
// derives them from the weights (weight = tl+1-length): ranks are laid out
// by increasing weight, symbols in increasing order within a weight.
func (t *Table) assignCodes() {
	var count [MaxBits + 2]uint32
	for s := 0; s <= t.MaxSym; s++ {
		if l := t.Lens[s]; l != 0 {
			count[t.TL+1-l]++
		}
	}
	var start [MaxBits + 2]uint32
	var next uint32
	for w := uint8(1); w <= t.TL; w++ {
		start[w] = next
		next += count[w] << (w - 1)
	}
	t.Enc = [256]uint32{}
	for s := 0; s <= t.MaxSym; s++ {
		l := t.Lens[s]
		if l == 0 {
			continue
		}
		w := t.TL + 1 - l
		code := start[w] >> (w - 1)
		t.Enc[s] = code | uint32(l)<<16
		t.EncL[s] = uint64(code)<<(64-l) | uint64(l)
		start[w] += 1 << (w - 1)
	}
}

// Cost returns the coded size in bits of a stream with histogram hist, or
// -1 when the code lacks a symbol of hist.
func (t *Table) Cost(hist *[256]uint32) int64 {
	var b int64
	for s, c := range hist {
		if c == 0 {
			continue
		}
		l := t.Enc[s] >> 16
		if l == 0 {
			return -1
		}
		b += int64(c) * int64(l)
	}
	return b
}

// AppendHeader appends the table description huff0.ReadTable reads: one
// byte, then either FSE-compressed weights (byte < 128 is their size) or
// 4-bit weights (byte-127 of them). The last symbol's weight is implied.
func (t *Table) AppendHeader(dst []byte) ([]byte, error) {
	if !t.hdrValid {
		t.hdr, t.hdrErr = t.makeHeader(t.hdr[:0])
		t.hdrValid = true
	}
	if t.hdrErr != nil {
		return dst, t.hdrErr
	}
	return append(dst, t.hdr...), nil
}

func (t *Table) makeHeader(dst []byte) ([]byte, error) {
	weights := &t.wts
	*weights = [256]byte{}
	nw := t.MaxSym // weights written: symbols 0..MaxSym-1
	for s := 0; s < nw; s++ {
		if l := t.Lens[s]; l != 0 {
			weights[s] = t.TL + 1 - l
		}
	}
	direct := nw <= 128 && nw >= 1
	if nw >= 2 {
		t.fs.TableLog = 6
		t.fs.Out = t.fs.Out[:0]
		b, err := fse.Compress(weights[:nw], &t.fs)
		if err == nil && len(b) < 128 && (!direct || len(b) < (nw+1)/2) {
			dst = append(dst, byte(len(b)))
			return append(dst, b...), nil
		}
	}
	if !direct {
		return dst, ErrTable
	}
	dst = append(dst, byte(127+nw))
	for s := 0; s < nw; s += 2 {
		dst = append(dst, weights[s]<<4|weights[s+1])
	}
	return dst, nil
}

// StreamMax is the most bytes a stream of n symbols can take.
func StreamMax(n int) int { return (n*MaxBits+7)/8 + 16 }

// AppendStream1 appends one huff0 bit stream of src (symbols coded last to
// first, then a 1 end bit) and returns dst.
func (t *Table) AppendStream1(dst, src []byte) []byte {
	start := len(dst)
	dst = grow(dst, StreamMax(len(src)))
	n := encodeHuffStreamFast(dst[start:], src, &t.Enc)
	return dst[:start+n]
}

// putCode adds one code (code | length<<16) to a bit container and flushes
// its whole bytes to out at pos.
func putCode(out []byte, c uint64, nb uint, pos int, e uint32) (uint64, uint, int) {
	c |= uint64(e&0xffff) << (nb & 63)
	nb += uint(e >> 16)
	binary.LittleEndian.PutUint64(out[pos:], c)
	pos += int(nb >> 3)
	return c >> ((nb &^ 7) & 63), nb & 7, pos
}

// endStream adds the end-of-stream 1 bit and writes the last bytes; it
// returns the stream length.
func endStream(out []byte, c uint64, nb uint, pos int) int {
	c |= 1 << nb
	nb++
	binary.LittleEndian.PutUint64(out[pos:], c)
	return pos + int(nb+7)/8
}

// encodeHuffStream writes the stream into out (which has StreamMax
// bytes) and returns its length.
func encodeHuffStream(out, src []byte, enc *[256]uint32) int {
	var c uint64
	var nb uint
	pos := 0
	i := len(src)
	_ = out[StreamMax(len(src))-1]
	// Five codes of at most 11 bits fit on top of the ≤7 bits a flush
	// leaves.
	for ; i >= 5; i -= 5 {
		s := src[i-5 : i]
		e4, e3, e2, e1, e0 := enc[s[4]], enc[s[3]], enc[s[2]], enc[s[1]], enc[s[0]]
		c |= uint64(e4&0xffff) << (nb & 63)
		nb += uint(e4 >> 16)
		c |= uint64(e3&0xffff) << (nb & 63)
		nb += uint(e3 >> 16)
		c |= uint64(e2&0xffff) << (nb & 63)
		nb += uint(e2 >> 16)
		c |= uint64(e1&0xffff) << (nb & 63)
		nb += uint(e1 >> 16)
		c |= uint64(e0&0xffff) << (nb & 63)
		nb += uint(e0 >> 16)
		binary.LittleEndian.PutUint64(out[pos:], c)
		pos += int(nb >> 3)
		c >>= (nb &^ 7) & 63
		nb &= 7
	}
	for i > 0 {
		i--
		c, nb, pos = putCode(out, c, nb, pos, enc[src[i]])
	}
	return endStream(out, c, nb, pos)
}

// Append1X appends header and a 1-stream block.
func (t *Table) Append1X(dst, src []byte) ([]byte, error) {
	dst, err := t.AppendHeader(dst)
	if err != nil {
		return dst, err
	}
	return t.AppendStream1(dst, src), nil
}

// Append4X appends header and a 4-stream block: a jump table of three
// little-endian uint16 stream sizes, then the four streams, each coding a
// quarter ((n+3)/4 symbols; the last one the rest).
func (t *Table) Append4X(dst, src []byte) ([]byte, error) {
	mark := len(dst)
	dst, err := t.AppendHeader(dst)
	if err != nil {
		return dst, err
	}
	dst, err = t.AppendData4X(dst, src)
	if err != nil {
		return dst[:mark], err
	}
	return dst, nil
}

// AppendData4X appends the 4-stream data of src without a table
// description (for tables the decoder already has).
func (t *Table) AppendData4X(dst, src []byte) ([]byte, error) {
	mark := len(dst)
	seg := (len(src) + 3) / 4
	jt := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0)
	var parts [4][]byte
	var off [5]int // where each stream is coded, after the jump table
	for k := range parts {
		parts[k] = src[min(k*seg, len(src)):min((k+1)*seg, len(src))]
		off[k+1] = off[k] + StreamMax(len(parts[k]))
	}
	// streams 0+1 and 2+3 are coded in pairs, each into its own space,
	// then closed up
	base := len(dst)
	dst = grow(dst, off[4])
	out := dst[base : base+off[4]]
	var lens [4]int
	for k := 0; k < 4; k += 2 {
		lens[k], lens[k+1] = encodeHuff2(out[off[k]:off[k+1]], out[off[k+1]:off[k+2]], parts[k], parts[k+1], &t.EncL)
	}
	p := lens[0]
	for k := 1; k < 4; k++ {
		p += copy(out[p:], out[off[k]:off[k]+lens[k]])
	}
	dst = dst[:base+p]
	for k := 0; k < 3; k++ {
		if lens[k] > 0xffff {
			return dst[:mark], ErrTooLarge
		}
		binary.LittleEndian.PutUint16(dst[jt+2*k:], uint16(lens[k]))
	}
	return dst, nil
}

// W writes one huff0 bit stream the way zstd's Huffman encoder does:
// the bits are kept left-aligned in a 64-bit container, each code entering
// at the top (c = c>>length | code<<(64-length)). One table entry,
// code<<(64-length) | length (Table.EncL), then serves the shift
// (which reads its low 6 bits), the OR (its low byte lands below the
// valid bits, which are shifted out before they could reach them) and the
// bit count (of which only the low byte is kept). Flushing writes the top
// nb bits; the container itself is never shifted back. At most 60 bits may
// be pending (the length noise stays in the low 4 bits): four codes of ≤ 11
// bits on top of the ≤ 7 a flush leaves.
type W struct {
	c   uint64 // the pending bits at the top
	nb  uint64 // pending bits in the low byte; the rest is noise
	pos int    // bytes written
}

// Put adds one code, in Table.EncL form.
func (w *W) Put(e uint64) {
	w.c = w.c>>(e&63) | e
	w.nb += e
}

// Flush writes the whole bytes of the pending bits to out.
func (w *W) Flush(out []byte) {
	nb := w.nb & 0xff
	binary.LittleEndian.PutUint64(out[w.pos:], w.c>>((64-nb)&63))
	w.pos += int(nb >> 3)
	w.nb = nb & 7
}

// End adds the End-of-stream 1 bit, writes the last bytes and returns the
// stream length.
func (w *W) End(out []byte) int {
	w.Put(1<<63 | 1)
	nb := w.nb & 0xff
	binary.LittleEndian.PutUint64(out[w.pos:], w.c>>((64-nb)&63))
	return w.pos + int(nb+7)/8
}

// encodeHuff2 writes two streams at once (two dependency chains for the
// CPU to overlap). Each out must have StreamMax bytes; it returns the
// two lengths. The output is that of encodeHuffStream on each.
func encodeHuff2(out0, out1, src0, src1 []byte, enc *[256]uint64) (int, int) {
	var w [2]W
	_ = out0[StreamMax(len(src0))-1]
	_ = out1[StreamMax(len(src1))-1]
	// the longer stream first codes down to the shorter one's length
	for len(src0) > len(src1) {
		w[0].Put(enc[src0[len(src0)-1]])
		w[0].Flush(out0)
		src0 = src0[:len(src0)-1]
	}
	for len(src1) > len(src0) {
		w[1].Put(enc[src1[len(src1)-1]])
		w[1].Flush(out1)
		src1 = src1[:len(src1)-1]
	}
	if len(src0) > 0 {
		if use.Enc2 {
			huffEnc2Asm(&out0[0], &out1[0], &src0[0], &src1[0], len(src0), enc, &w)
		} else {
			huffEnc2Go(out0, out1, src0, src1, enc, &w)
		}
	}
	return w[0].End(out0), w[1].End(out1)
}

// huffEnc2Go is huffEnc2Asm's twin: both streams, of equal length, from
// the states in w.
func huffEnc2Go(out0, out1, src0, src1 []byte, enc *[256]uint64, w *[2]W) {
	w0, w1 := w[0], w[1]
	i := len(src0)
	src1 = src1[:i]
	for ; i >= 4; i -= 4 {
		s, t := src0[i-4:i], src1[i-4:i]
		w0.Put(enc[s[3]])
		w1.Put(enc[t[3]])
		w0.Put(enc[s[2]])
		w1.Put(enc[t[2]])
		w0.Put(enc[s[1]])
		w1.Put(enc[t[1]])
		w0.Put(enc[s[0]])
		w1.Put(enc[t[0]])
		w0.Flush(out0)
		w1.Flush(out1)
	}
	for ; i > 0; i-- {
		w0.Put(enc[src0[i-1]])
		w1.Put(enc[src1[i-1]])
	}
	w0.Flush(out0)
	w1.Flush(out1)
	w[0], w[1] = w0, w1
}
