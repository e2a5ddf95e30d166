package codec

// Decoding of symbol streams (their layout: layout.go, doc.go).

import (
	"encoding/binary"

	"github.com/klauspost/compress/huff0"

	"neuralzip/codec/huff"
)

// streamDecoder holds the reusable state of one worker's stream decoding.
type streamDecoder struct {
	huf   huff0.Scratch
	hx    *huff.Decoder // Huffman blocks (where use.huffX)
	codes []byte
	exc   []byte
	sec   *SetupSection // the setup section of the block's dtype, for modes 6 and 7
	lz    bool          // zstd streams (mode 8) allowed: an archive of version ≥ lzPlanesVersion
	// shared-table state cached between blocks (blocks of a tensor mostly
	// share a table and a shift)
	rotInv  [256]byte
	rotD    int
	rotW    uint
	rotOK   bool
	tab     [256]uint32 // pair expansion of tabCode at shift tabD
	tabCode *tableCode
	tabD    int
	tabW    uint
}

// inverse returns the map aligned symbol -> symbol for shift d and width w.
func (d *streamDecoder) inverse(sh int, w uint) *[256]byte {
	if !d.rotOK || d.rotD != sh || d.rotW != w {
		_, d.rotInv = rotation(sh, w)
		d.rotD, d.rotW, d.rotOK = sh, w, true
	}
	return &d.rotInv
}

// readUvarint reads a uvarint that must be ≤ max.
func readUvarint(src []byte, max uint64) (uint64, []byte, error) {
	v, k := binary.Uvarint(src)
	if k <= 0 {
		return 0, nil, errf("bad varint")
	}
	if v > max {
		return 0, nil, errf("length %d exceeds %d", v, max)
	}
	return v, src[k:], nil
}

// readLen reads a uvarint length of the bytes that follow it, which must
// all be there (a slice of a larger buffer must not be read past its end).
func readLen(src []byte) (uint64, []byte, error) {
	l, rest, err := readUvarint(src, uint64(len(src)))
	if err == nil && l > uint64(len(rest)) {
		return 0, nil, errf("length %d exceeds the %d bytes left", l, len(rest))
	}
	return l, rest, err
}

// decodeStream decodes len(dst) symbols of width w from src into dst and
// returns the rest of src.
func (d *streamDecoder) decodeStream(dst, src []byte, w uint) ([]byte, error) {
	return d.decode(dst, src, w, true)
}

// decodeStreamRef is decodeStream, except that a packed stream of width 8
// is returned as a slice of src instead of being copied into dst. It
// returns the symbols and the rest of src.
func (d *streamDecoder) decodeStreamRef(dst, src []byte, w uint) (syms, rest []byte, err error) {
	n := len(dst)
	if w == 8 && len(src) > n && src[0] == smPacked {
		return src[1 : 1+n], src[1+n:], nil
	}
	rest, err = d.decode(dst, src, w, true)
	return dst, rest, err
}

func (d *streamDecoder) decode(dst, src []byte, w uint, allowPairs bool) ([]byte, error) {
	s, err := ReadStream(src, 0, len(dst), w, allowPairs)
	if err != nil {
		return nil, err
	}
	n := len(dst)
	switch s.Mode {
	case StreamPacked:
		unpack(dst, src[s.Data:], w)
	case StreamConst:
		for i := range dst {
			dst[i] = s.Symbol
		}
	case StreamHuff1, StreamHuff4:
		if err := d.huffDecode(dst[:0:n], src[s.Data:s.DataEnd], s.Mode.X4()); err != nil {
			return nil, err
		}
		if w < 8 && !symbolsFit(dst, w) {
			return nil, errf("huffman stream: symbol out of range")
		}
	case StreamPair1, StreamPair4:
		err = d.decodePairs(dst, src, s, w)
	case StreamShared1, StreamShared4:
		err = d.decodeShared(dst, src, s, w)
	case StreamZstd:
		if !d.lz {
			return nil, errf("zstd stream in an archive of version < %d", lzPlanesVersion)
		}
		if err = zstdDecodeInto(dst, src[s.Data:s.DataEnd]); err == nil && w < 8 && !symbolsFit(dst, w) {
			err = errf("zstd stream: symbol out of range")
		}
	}
	if err != nil {
		return nil, err
	}
	return src[s.End:], nil
}

func symbolsFit(p []byte, w uint) bool {
	var or byte
	for _, s := range p {
		or |= s
	}
	return or < 1<<w
}

// decodePairs decodes the pair stream s of src into dst.
func (d *streamDecoder) decodePairs(dst, src []byte, s Stream, w uint) error {
	n := len(dst)
	k := s.K
	top := src[s.Top : s.Top+k]
	m := n / 2
	if cap(d.codes) < m {
		d.codes = make([]byte, m)
	}
	codes := d.codes[:0:m]
	if err := d.huffDecode(codes, src[s.Data:s.DataEnd], s.Mode.X4()); err != nil {
		return err
	}
	codes = codes[:m]
	x := s.X
	if cap(d.exc) < x {
		d.exc = make([]byte, x)
	}
	exc := d.exc[:x]
	// The exceptions are a plain stream; d.codes is still in use, but
	// decode does not touch it for non-pair modes.
	if _, err := d.decode(exc, src[s.Exc:], w, false); err != nil {
		return err
	}
	var tab [256]uint32
	for c := range tab {
		tab[c] = 1 << 16 // escape or invalid
	}
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			tab[a*k+b] = uint32(top[a]) | uint32(top[b])<<8
		}
	}
	if !expandPairs(dst, codes, &tab, byte(k*k), exc) {
		return errf("pair stream: codes and %d exceptions do not make %d symbols", x, n)
	}
	return nil
}

// expandPairs writes the symbol pairs of codes into dst, taking escaped
// pairs (and an odd last symbol) from exc, which must be used up exactly.
// tab maps a pair code to its two symbols and marks the escape and invalid
// codes with bit 16. Codes above esc are invalid.
func expandPairs(dst, codes []byte, tab *[256]uint32, esc byte, exc []byte) bool {
	m := len(codes)
	if len(dst) < 2*m {
		return false
	}
	x := 0
	// AVX-512 where it can (escapes included), then the assembly runs until
	// an escape; the Go loop below handles it and anything the assembly
	// left
	i := expandPairsWide(dst, codes, tab, esc, exc, &x)
	for i < m {
		i = expandPairsFast(dst, codes, i, tab)
		if i >= m || !use.avx2 {
			break
		}
		if !expandOne(dst, codes[i], i, tab, esc, exc, &x) {
			return false
		}
		i++
	}
	// four codes at a time with one 8-byte store when none escapes
	for ; i+4 <= m; i += 4 {
		c := codes[i : i+4 : i+4]
		t0, t1, t2, t3 := tab[c[0]], tab[c[1]], tab[c[2]], tab[c[3]]
		if (t0|t1|t2|t3)>>16 == 0 {
			binary.LittleEndian.PutUint64(dst[2*i:], uint64(t0)|uint64(t1)<<16|uint64(t2)<<32|uint64(t3)<<48)
			continue
		}
		for j := i; j < i+4; j++ {
			if !expandOne(dst, codes[j], j, tab, esc, exc, &x) {
				return false
			}
		}
	}
	for ; i < m; i++ {
		if !expandOne(dst, codes[i], i, tab, esc, exc, &x) {
			return false
		}
	}
	if len(dst)&1 != 0 {
		if x >= len(exc) {
			return false
		}
		dst[len(dst)-1] = exc[x]
		x++
	}
	return x == len(exc)
}

func expandOne(dst []byte, c byte, i int, tab *[256]uint32, esc byte, exc []byte, x *int) bool {
	t := tab[c]
	if t>>16 == 0 {
		dst[2*i], dst[2*i+1] = byte(t), byte(t>>8)
		return true
	}
	if c != esc || *x+2 > len(exc) {
		return false
	}
	dst[2*i], dst[2*i+1] = exc[*x], exc[*x+1]
	*x += 2
	return true
}

// huffDecode decodes a huff0 block (table + data) into dst, whose capacity
// is the exact symbol count.
func (d *streamDecoder) huffDecode(dst, src []byte, x4 bool) error {
	n := cap(dst)
	if n == 0 {
		return errf("huffman block for no symbols")
	}
	if use.huffX {
		if d.hx == nil {
			d.hx = new(huff.Decoder)
		}
		rest, err := d.hx.ReadTable(src, n)
		if err != nil {
			return err
		}
		if x4 {
			return d.hx.Decode4(dst[:n], rest)
		}
		return d.hx.Decode1(dst[:n], rest)
	}
	d.huf.MaxDecodedSize = n
	s, rest, err := huff0.ReadTable(src, &d.huf)
	if err != nil {
		return errf("huffman table: %v", err)
	}
	var out []byte
	if x4 {
		out, err = s.Decoder().Decompress4X(dst, rest)
	} else {
		out, err = s.Decoder().Decompress1X(dst, rest)
	}
	if err != nil {
		return errf("huffman data: %v", err)
	}
	if len(out) != n {
		return errf("huffman data: %d symbols, want %d", len(out), n)
	}
	return nil
}

// decodeShared decodes the shared-table stream s of src into dst.
func (d *streamDecoder) decodeShared(dst, src []byte, s Stream, w uint) error {
	n := len(dst)
	sec := d.sec
	if sec == nil {
		return errf("stream uses a setup table, but no setup is loaded")
	}
	if s.Table > uint64(len(sec.Tables)-1) {
		return errf("setup table index: length %d exceeds %d", s.Table, len(sec.Tables)-1)
	}
	t := sec.Tables[s.Table]
	sh := s.Shift
	if !sec.shifts && sh != 0 {
		return errf("bad alignment shift")
	}
	pairs := s.Pairs
	if pairs && !t.hasPair {
		return errf("bad shared code kind")
	}
	x4 := s.Mode.X4()
	data := src[s.Data:s.DataEnd]
	code := &t.single
	m := n
	if pairs {
		code, m = &t.pair, n/2
	}
	var codes []byte
	if pairs {
		if cap(d.codes) < m {
			d.codes = make([]byte, m)
		}
		codes = d.codes[:0:m]
	} else {
		codes = dst[:0:n] // singles decode straight into the output
	}
	if m > 0 && use.huffX {
		hx, err := code.huffX()
		if err != nil {
			return err
		}
		if x4 {
			err = hx.Decode4(codes, data)
		} else {
			err = hx.Decode1(codes, data)
		}
		if err != nil {
			return errf("shared %v", err)
		}
	} else if m > 0 {
		if err := code.ready(); err != nil {
			return err
		}
		var out []byte
		var err error
		if x4 {
			out, err = code.dec.Decompress4X(codes, data)
		} else {
			out, err = code.dec.Decompress1X(codes, data)
		}
		if err != nil {
			return errf("shared huffman data: %v", err)
		}
		if len(out) != m {
			return errf("shared huffman data: %d codes, want %d", len(out), m)
		}
	} else if len(data) != 0 {
		return errf("shared stream: data for no codes")
	}
	codes = codes[:m]
	x := s.X
	if cap(d.exc) < x {
		d.exc = make([]byte, x)
	}
	exc := d.exc[:x]
	if _, err := d.decode(exc, src[s.Exc:], w, false); err != nil {
		return err
	}
	if !pairs {
		// align back and fill in the escapes, in one pass when needed
		if sh == 0 && x == 0 {
			return nil
		}
		inv := d.inverse(sh, w)
		if x == 0 {
			// (an escape code here is damage, which the block CRC finds)
			for i, u := range dst[:n] {
				dst[i] = inv[u]
			}
			return nil
		}
		esc := code.esc
		xi := 0
		for i, u := range dst[:n] {
			if u == esc {
				if xi >= len(exc) {
					return errf("shared stream: more escapes than %d exceptions", len(exc))
				}
				dst[i] = exc[xi]
				xi++
				continue
			}
			dst[i] = inv[u]
		}
		if xi != len(exc) {
			return errf("shared stream: %d of %d exceptions used", xi, len(exc))
		}
		return nil
	}
	if d.tabCode != code || d.tabD != sh || d.tabW != w {
		tab := &d.tab
		ncodes := int(code.esc) + 1
		if sh == 0 {
			copy(tab[:ncodes], code.expand[:ncodes])
		} else {
			inv := d.inverse(sh, w)
			for c, v := range code.expand[:ncodes] {
				if v>>16 != 0 {
					tab[c] = v
					continue
				}
				tab[c] = uint32(inv[byte(v)]) | uint32(inv[byte(v>>8)])<<8
			}
		}
		for c := ncodes; c < 256; c++ {
			tab[c] = 1 << 16
		}
		d.tabCode, d.tabD, d.tabW = code, sh, w
	}
	tab := &d.tab
	if !expandPairs(dst, codes, tab, code.esc, exc) {
		return errf("shared stream: codes and %d exceptions do not make %d symbols", x, n)
	}
	return nil
}
