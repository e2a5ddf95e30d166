package codec

import (
	"encoding/binary"
	"errors"
	"sort"

	"github.com/klauspost/compress/fse"
)

// A Huffman coder that writes huff0's block format (the zstd literals
// format: a table description followed by a 1-stream or 4-stream bit
// stream), so huff0's decoder — with its assembly fast path — reads
// everything this package writes. Building the code ourselves lets the
// encoder take a histogram it already has (huff0 recounts its input) and
// use a faster encoding loop. huff0's own encoder, given the same table
// through huff0.ReadTable, is the pure reference twin (see huff_test.go).

const huffMaxBits = 11 // huff0's tableLogMax

var (
	errHuffTooFew   = errors.New("huffman: fewer than two symbols")
	errHuffTable    = errors.New("huffman: table cannot be described")
	errHuffTooLarge = errors.New("huffman: stream too large for the 4-stream layout")
)

// huffTable is a canonical, length-limited Huffman code in huff0's form.
type huffTable struct {
	enc    [256]uint32 // code | length<<16, 0 for absent symbols
	tl     uint8       // table log: the longest code length
	maxSym int         // largest symbol present
	// scratch
	fs    fse.Scratch
	order []uint16
	freq  []uint64
	lens  [256]uint8
	pm    [huffMaxBits][]pmItem
}

type pmItem struct {
	w    uint64
	leaf bool
}

// build makes a code for hist, which must hold at least two symbols. Code
// lengths are optimal under the huffMaxBits limit (package-merge).
func (t *huffTable) build(hist *[256]uint32) error {
	t.order = t.order[:0]
	for s, c := range hist {
		if c != 0 {
			t.order = append(t.order, uint16(s))
		}
	}
	n := len(t.order)
	if n < 2 {
		return errHuffTooFew
	}
	sort.Slice(t.order, func(i, j int) bool {
		a, b := t.order[i], t.order[j]
		return hist[a] < hist[b] || hist[a] == hist[b] && a < b
	})
	t.freq = t.freq[:0]
	for _, s := range t.order {
		t.freq = append(t.freq, uint64(hist[s]))
	}
	// Package-merge: level 0 holds the leaves; each higher level merges the
	// leaves with the pairs of the level below. The first 2n-2 items of the
	// top level are the solution; a leaf's code length is the number of
	// levels at which it is selected.
	const L = huffMaxBits
	prev := t.pm[0][:0]
	for _, f := range t.freq {
		prev = append(prev, pmItem{f, true})
	}
	t.pm[0] = prev
	for l := 1; l < L; l++ {
		cur := t.pm[l][:0]
		li, pi := 0, 0
		np := len(prev) / 2
		for li < n || pi < np {
			if pi >= np || (li < n && t.freq[li] <= prev[2*pi].w+prev[2*pi+1].w) {
				cur = append(cur, pmItem{t.freq[li], true})
				li++
			} else {
				cur = append(cur, pmItem{prev[2*pi].w + prev[2*pi+1].w, false})
				pi++
			}
		}
		t.pm[l] = cur
		prev = cur
	}
	var lens [256]uint8
	m := 2*n - 2
	for l := L - 1; l >= 0 && m > 0; l-- {
		list := t.pm[l]
		if m > len(list) {
			return errHuffTable // cannot happen for n ≤ 2^L
		}
		c := 0
		for _, it := range list[:m] {
			if it.leaf {
				c++
			}
		}
		for i := 0; i < c; i++ {
			lens[i]++
		}
		m = 2 * (m - c)
	}
	// map back to symbols
	t.lens = [256]uint8{}
	tl := uint8(0)
	for i, s := range t.order {
		t.lens[s] = lens[i]
		tl = max(tl, lens[i])
	}
	t.tl = tl
	t.maxSym = int(t.order[0])
	for _, s := range t.order {
		t.maxSym = max(t.maxSym, int(s))
	}
	t.assignCodes()
	return nil
}

// assignCodes computes the canonical codes exactly as huff0.ReadTable
// derives them from the weights (weight = tl+1-length): ranks are laid out
// by increasing weight, symbols in increasing order within a weight.
func (t *huffTable) assignCodes() {
	var count [huffMaxBits + 2]uint32
	for s := 0; s <= t.maxSym; s++ {
		if l := t.lens[s]; l != 0 {
			count[t.tl+1-l]++
		}
	}
	var start [huffMaxBits + 2]uint32
	var next uint32
	for w := uint8(1); w <= t.tl; w++ {
		start[w] = next
		next += count[w] << (w - 1)
	}
	t.enc = [256]uint32{}
	for s := 0; s <= t.maxSym; s++ {
		l := t.lens[s]
		if l == 0 {
			continue
		}
		w := t.tl + 1 - l
		t.enc[s] = start[w]>>(w-1) | uint32(l)<<16
		start[w] += 1 << (w - 1)
	}
}

// cost returns the coded size in bits of a stream with histogram hist, or
// -1 when the code lacks a symbol of hist.
func (t *huffTable) cost(hist *[256]uint32) int64 {
	var b int64
	for s, c := range hist {
		if c == 0 {
			continue
		}
		l := t.enc[s] >> 16
		if l == 0 {
			return -1
		}
		b += int64(c) * int64(l)
	}
	return b
}

// appendHeader appends the table description huff0.ReadTable reads: one
// byte, then either FSE-compressed weights (byte < 128 is their size) or
// 4-bit weights (byte-127 of them). The last symbol's weight is implied.
func (t *huffTable) appendHeader(dst []byte) ([]byte, error) {
	var weights [256]byte
	nw := t.maxSym // weights written: symbols 0..maxSym-1
	for s := 0; s < nw; s++ {
		if l := t.lens[s]; l != 0 {
			weights[s] = t.tl + 1 - l
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
		return dst, errHuffTable
	}
	dst = append(dst, byte(127+nw))
	for s := 0; s < nw; s += 2 {
		dst = append(dst, weights[s]<<4|weights[s+1])
	}
	return dst, nil
}

// huffStreamMax is the most bytes a stream of n symbols can take.
func huffStreamMax(n int) int { return (n*huffMaxBits+7)/8 + 16 }

// appendStream1 appends one huff0 bit stream of src (symbols coded last to
// first, then a 1 end bit) and returns dst.
func (t *huffTable) appendStream1(dst, src []byte) []byte {
	start := len(dst)
	dst = grow(dst, huffStreamMax(len(src)))
	n := encodeHuffStream(dst[start:], src, &t.enc)
	return dst[:start+n]
}

// encodeHuffStream writes the stream into out (which has huffStreamMax
// bytes) and returns its length.
func encodeHuffStream(out, src []byte, enc *[256]uint32) int {
	var c uint64
	var nb uint
	pos := 0
	i := len(src)
	_ = out[huffStreamMax(len(src))-1]
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
		e := enc[src[i]]
		c |= uint64(e&0xffff) << (nb & 63)
		nb += uint(e >> 16)
		binary.LittleEndian.PutUint64(out[pos:], c)
		pos += int(nb >> 3)
		c >>= (nb &^ 7) & 63
		nb &= 7
	}
	c |= 1 << nb
	nb++
	binary.LittleEndian.PutUint64(out[pos:], c)
	return pos + int(nb+7)/8
}

// append1X appends header and a 1-stream block.
func (t *huffTable) append1X(dst, src []byte) ([]byte, error) {
	dst, err := t.appendHeader(dst)
	if err != nil {
		return dst, err
	}
	return t.appendStream1(dst, src), nil
}

// append4X appends header and a 4-stream block: a jump table of three
// little-endian uint16 stream sizes, then the four streams, each coding a
// quarter ((n+3)/4 symbols; the last one the rest).
func (t *huffTable) append4X(dst, src []byte) ([]byte, error) {
	mark := len(dst)
	dst, err := t.appendHeader(dst)
	if err != nil {
		return dst, err
	}
	seg := (len(src) + 3) / 4
	jt := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0)
	for k := 0; k < 4; k++ {
		part := src[min(k*seg, len(src)):min((k+1)*seg, len(src))]
		s := len(dst)
		dst = t.appendStream1(dst, part)
		if k < 3 {
			l := len(dst) - s
			if l > 0xffff {
				return dst[:mark], errHuffTooLarge
			}
			binary.LittleEndian.PutUint16(dst[jt+2*k:], uint16(l))
		}
	}
	return dst, nil
}
