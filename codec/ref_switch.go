package codec

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"neuralzip/codec/huff"
)

// Method 3 of difference blocks (see doc.go, "Difference blocks in value
// order"): the same tokens, groups and extra bits as method 1, but the
// tokens stay in value order, value i in stream i mod 8, each token coded
// with the Huffman table of its value's group. The group of a value
// follows from its reference, which the decoder has before it reads the
// token, so switching tables costs two loads beside each lookup, not a
// step in the chain of lookups; eight streams make eight independent
// chains; and the decoder neither counts the groups nor puts tokens back
// in value order, which method 1 needs. Method 4 is method 3 with compact
// table descriptions (ctab.go) and codes of at most 10 bits; the encoder
// writes it unless method 1's pair codes make method 1 clearly smaller.

const refMethodSwitch = 3

// refMethodCompact is method 3 with compact table descriptions (ctab.go):
// what the encoder writes since format version 6.
const refMethodCompact = 4

// refCompactBits is the longest token code of method 4: tables of 2^10
// entries build and fill the cache faster than 2^11, for 0.06 % more
// bytes (the bf16 run, one-core 10-frame chain in turns: with 11 bits
// method 4 decoded 2–4 % slower than method 3, with 10 within ±1.5 %).
const refCompactBits = 10

// refTableHuff0 introduces a huff0 table description among compact ones
// (method 4), where the compact form would be longer: a compact
// description starts with its count of lengths, which is below 255 (at
// most maxTok ≤ 246).
const refTableHuff0 = 255

// refSwitchSlack: the encoder takes method 4 unless it is larger than
// method 1 by more than 1/refSwitchSlack of method 1's size.
const refSwitchSlack = 64

// refForceMethod, when not 0, makes the encoder write method 1 or method
// 3 (where it can) instead of the smaller; tests set it.
var refForceMethod byte

// refSwitchSingle marks a group's table description as a single token
// (byte 0 cannot start a huff0 description): u8 0, u8 token. Its code
// has length 0.
const refSwitchSingle = 0

// appendRefSwitch appends method 3 or 4 (method) of the G groups
// prepareGroups made: header, context map, one table per group, the
// stream sizes and the streams (without the extra bits). ok is false when
// a table cannot be described.
func (e *refEncoder) appendRefSwitch(dst []byte, p *refSpec, G, n int, method byte) ([]byte, bool) {
	dst = e.appendRefHeader(dst, method, p, G)
	for len(e.swTabs) < G {
		e.swTabs = append(e.swTabs, new(huff.Table))
	}
	if len(e.swEnc) < G*256 {
		e.swEnc = make([]uint64, G*256)
	}
	enc := e.swEnc[:G*256]
	for g := 0; g < G; g++ {
		h := &e.ghist[g]
		t := e.swTabs[g]
		t.Limit = 0
		if method == refMethodCompact {
			t.Limit = refCompactBits
		}
		err := t.Build(h)
		if err == huff.ErrTooFew {
			sym := 0
			for s, c := range h {
				if c != 0 {
					sym = s
				}
			}
			dst = append(dst, refSwitchSingle, byte(sym))
			enc[g<<8|sym] = 0 // no bits
			continue
		}
		if err != nil {
			return dst, false
		}
		if method == refMethodCompact {
			dst = appendRefTable(dst, t)
		} else if dst, err = t.AppendHeader(dst); err != nil {
			return dst, false
		}
		copy(enc[g<<8:g<<8+256], t.EncL[:])
	}
	var gof [256]byte
	copy(gof[:], e.groupOf[:p.nctx])
	S := refSwitchStreams(n)
	var lens [refSwitchMaxStreams]int
	var off [refSwitchMaxStreams + 1]int
	for k := range S {
		off[k+1] = off[k] + huff.StreamMax((n-k+S-1)/S)
	}
	e.swOut = grow(e.swOut[:0], off[S])
	out := e.swOut[:off[S]]
	for k := range S {
		lens[k] = encodeSwitch(out[off[k]:off[k+1]], e.toks, e.ctxs, k, S, &gof, enc)
	}
	for k := range S {
		dst = binary.AppendUvarint(dst, uint64(lens[k]))
	}
	for k := range S {
		dst = append(dst, out[off[k]:off[k]+lens[k]]...)
	}
	return dst, true
}

// appendRefTable appends t's description in a method-4 block: the compact
// one, or refTableHuff0 and the huff0 one where that is shorter (or the
// compact one cannot say it).
func appendRefTable(dst []byte, t *huff.Table) []byte {
	mark := len(dst)
	if t.MaxSym < refTableHuff0 {
		dst = huff.AppendCompactTable(dst, t)
	}
	hd, err := t.AppendHeader(nil)
	if err == nil && (len(dst) == mark || len(hd)+1 < len(dst)-mark) {
		dst = append(append(dst[:mark], refTableHuff0), hd...)
	}
	return dst
}

// refTableLen is the length of appendRefTable's description of t (1<<30
// if it has none), written into *scratch to be measured.
func refTableLen(t *huff.Table, scratch *[]byte) int {
	*scratch = appendRefTable((*scratch)[:0], t)
	if len(*scratch) == 0 {
		return 1 << 30
	}
	return len(*scratch)
}

// refSwitchStreams is the number of token streams of a method-3 or -4 block of n
// values: 8 (value i in stream i mod 8: eight independent chains of
// lookups for the decoder), or 1 for blocks below refSwitchWide values,
// where 7 more stream sizes and end bytes would cost more than the chains
// save.
func refSwitchStreams(n int) int {
	if n < refSwitchWide {
		return 1
	}
	return refSwitchMaxStreams
}

const (
	refSwitchWide       = 512
	refSwitchMaxStreams = 8
)

// encodeSwitch writes one huff0-style bit stream (the last symbol first,
// then a 1 end bit) of the tokens toks[k], toks[k+S], ..., each with the
// code of its context's group (enc[group<<8 | token], huff.Table.EncL
// form), into out (which has huff.StreamMax bytes) and returns its length.
func encodeSwitch(out, toks, ctxs []byte, k, S int, gof *[256]byte, enc []uint64) int {
	var w huff.W
	ctxs = ctxs[:len(toks)]
	m := (len(toks) - k + S - 1) / S // values of the stream
	_ = out[huff.StreamMax(m)-1]
	code := func(i int) uint64 { return enc[int(gof[ctxs[i]])<<8|int(toks[i])] }
	i := k + (m-1)*S // the last value
	// four codes of at most 11 bits on top of the ≤ 7 a flush leaves
	for ; m >= 4; m -= 4 {
		w.Put(code(i))
		w.Put(code(i - S))
		w.Put(code(i - 2*S))
		w.Put(code(i - 3*S))
		w.Flush(out)
		i -= 4 * S
	}
	for ; m > 0; m-- {
		w.Put(code(i))
		i -= S
	}
	w.Flush(out)
	return w.End(out)
}

// refSwitchDec is a worker's state for methods 3 and 4: every group's single-symbol
// decoding table (huff.Decoder form: symbol<<8 | code length, little-endian
// uint16s) in tabs, and per context key the table of its group, as
// start<<6 | shift: the entry for the next code is the one at byte start
// + 2·(the window's top 64-shift bits). Each table starts shift bytes
// past a multiple of 64 from tabs' 64-byte aligned base, so that its
// address holds the shift in its low 6 bits: the assembly rounds take one
// word per context for both (refSwitchRounds).
type refSwitchDec struct {
	hx    huff.Decoder
	raw   []byte // tabs' allocation
	tabs  []byte // 64-byte aligned
	cinfo [256]uint32
}

// nativeLE: the CPU stores integers little-endian (a table's uint16
// entries copy into tabs as they are).
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// refSwitchTabBytes is the most bytes one group's table takes in tabs:
// up to 63 to the next multiple of 64, the shift (< 64) and the entries.
const refSwitchTabBytes = 128 + 2<<huff.MaxBits

// readTables reads the G table descriptions of src (method 4: compact
// ones, compact) and sets up cinfo for the groups of gtab; every token a
// table can yield must be at most maxTok. It returns the rest of src.
func (d *refSwitchDec) readTables(src []byte, G int, gtab *[256]byte, maxTok int, compact bool) ([]byte, error) {
	if need := G*refSwitchTabBytes + 64; cap(d.raw) < need {
		d.raw = make([]byte, need)
		a := int(uintptr(unsafe.Pointer(unsafe.SliceData(d.raw))) & 63)
		d.tabs = d.raw[(64-a)&63 : need-a]
	}
	var ginfo [256]uint32
	pos := 0 // end of the tables so far
	for g := 0; g < G; g++ {
		if len(src) < 2 {
			return nil, errf("reference block: group %d: table missing", g)
		}
		var tl uint
		var tab []uint16
		var one [2]uint16
		if src[0] == refSwitchSingle {
			s := src[1]
			if int(s) > maxTok {
				return nil, errf("reference block: token %d out of range", s)
			}
			tl = 1
			one[0], one[1] = uint16(s)<<8, uint16(s)<<8 // length 0
			tab = one[:]
			src = src[2:]
		} else {
			// the table is built in place (where the CPU stores uint16
			// little-endian, as the rounds read them), else copied
			var dst func(tl uint) *[1 << huff.MaxBits]uint16
			placed := -1
			if nativeLE {
				dst = func(tl uint) *[1 << huff.MaxBits]uint16 {
					start := (pos+63)&^63 + int(64-tl)
					if start+2<<huff.MaxBits > len(d.tabs) {
						return &d.hx.Single
					}
					placed = start
					return (*[1 << huff.MaxBits]uint16)(unsafe.Pointer(&d.tabs[start]))
				}
			}
			var rest []byte
			var err error
			switch {
			case !compact:
				rest, err = d.hx.ReadWeightsTo(src, dst)
			case src[0] == refTableHuff0:
				rest, err = d.hx.ReadWeightsTo(src[1:], dst)
			default:
				rest, err = d.hx.ReadCompactTable(src, dst)
			}
			if err != nil {
				return nil, errf("reference block: group %d: %v", g, err)
			}
			if d.hx.NSym-1 > maxTok {
				return nil, errf("reference block: token %d out of range", d.hx.NSym-1)
			}
			tl = d.hx.TL
			src = rest
			if placed >= 0 {
				ginfo[g] = uint32(placed)<<6 | uint32(64-tl)
				pos = placed + 2<<tl
				continue
			}
			tab = d.hx.Single[:1<<tl]
		}
		sh := 64 - tl
		start := (pos+63)&^63 + int(sh)
		ginfo[g] = uint32(start)<<6 | uint32(sh)
		out := d.tabs[start : start+2*len(tab)]
		if nativeLE {
			copy(out, unsafe.Slice((*byte)(unsafe.Pointer(&tab[0])), len(out)))
		} else {
			for i, e := range tab {
				binary.LittleEndian.PutUint16(out[2*i:], e)
			}
		}
		pos = start + 2*len(tab)
	}
	for c := range d.cinfo {
		d.cinfo[c] = ginfo[gtab[c]]
	}
	return src, nil
}

// swStream is one backward bitstream of methods 3 and 4: the unread bits end c
// bits below the top of the 8-byte window src[p-8:p] (the stream starts at
// src[lo]); its next token is that of value o, then o+S, ... below n.
type swStream struct {
	p, lo, o int
	c        uint
}

// decodeTokens decodes the token streams of src (after the tables) into
// tv, one token per value, the table of value i that of its context ex[i],
// and returns the rest of src.
func (d *refSwitchDec) decodeTokens(tv, ex, src []byte) ([]byte, error) {
	n := len(tv)
	ex = ex[:n]
	S := refSwitchStreams(n)
	var size [refSwitchMaxStreams]uint64
	total := uint64(0)
	for k := range S {
		var err error
		if size[k], src, err = readUvarint(src, uint64(len(src))); err != nil {
			return nil, errf("reference block: stream sizes: %v", err)
		}
		total += size[k]
	}
	if total > uint64(len(src)) {
		return nil, errf("reference block: streams of %d bytes, have %d", total, len(src))
	}
	var st [refSwitchMaxStreams]swStream
	pos := 0
	for k := range S {
		end := pos + int(size[k])
		if end == pos || src[end-1] == 0 {
			return nil, errf("reference block: token stream %d: no end marker", k)
		}
		st[k] = swStream{p: end, c: 8 - uint(bits.Len8(src[end-1])-1), o: k, lo: pos}
		pos = end
	}
	streams := src[:pos]
	if S == refSwitchMaxStreams && use.switchRounds {
		d.fast8(tv, ex, streams, &st)
	}
	for k := range S {
		if err := d.tail(tv, ex, streams, &st[k], S); err != nil {
			return nil, errf("reference block: token stream %d: %v", k, err)
		}
	}
	return src[pos:], nil
}

// window takes k ≤ 5 tokens of stream s (values S apart) from its next
// 8-byte window, if that lies above src[0], and reports whether it did.
// Five codes of at most 11 bits fit the window's 57 unread bits.
func (d *refSwitchDec) window(tv, ex, src []byte, s *swStream, k, S int) bool {
	p := s.p - int(s.c>>3)
	if p < 8 {
		return false
	}
	s.p, s.c = p, s.c&7
	w := binary.LittleEndian.Uint64(src[p-8:])
	c, o := s.c, s.o
	for range k {
		inf := d.cinfo[ex[o]]
		e := binary.LittleEndian.Uint16(d.tabs[int(inf>>6)+2*int((w<<c)>>(inf&63)):])
		tv[o] = byte(e >> 8)
		c += uint(e) & 0xFF
		o += S
	}
	s.c, s.o = c, o
	return true
}

// fast8Go decodes the eight streams in step, five tokens each per round,
// while every stream has a full window above src[0] and five tokens to
// go: the pure-Go twin of refSwitchRounds. Four streams at a time, with
// their state in locals, so that their chains of lookups overlap (in
// pure Go: 17 % faster than one stream at a time, a BF16 block of 64 Ki
// values; two at a time: 9 %). The streams go in step (stream k's next
// value is o+k), which decodeTokens starts and every round keeps.
//
// The table entries are read without bounds checks (swLookup), as the
// assembly does, except under noasm, where this is the checked reference
// (ref_switch_lookup*.go): every context's cinfo names a table that readTables
// placed within tabs (a context outside the map is group 0), and the
// index, the top tl bits of a window, stays below the table's 2^tl
// entries. The shift counts are masked to 6 bits, which they are anyway
// (c ≤ 7 + 5·11), so that the compiler needs no code for counts of 64 or
// more.
func (d *refSwitchDec) fast8Go(tv, ex, src []byte, st *[refSwitchMaxStreams]swStream) {
	const S = refSwitchMaxStreams
	tb := swTabsOf(d.tabs)
	ci := &d.cinfo
	for {
		for i := range st {
			s := &st[i]
			if s.p-int(s.c>>3) < 8 || s.o+4*S >= len(tv) || s.o != st[0].o+i {
				return
			}
		}
		for i := 0; i < S; i += 4 {
			a, b, c, e := &st[i], &st[i+1], &st[i+2], &st[i+3]
			pa, pb, pc, pe := a.p-int(a.c>>3), b.p-int(b.c>>3), c.p-int(c.c>>3), e.p-int(e.c>>3)
			ca, cb, cc, ce := a.c&7, b.c&7, c.c&7, e.c&7
			wa, wb := binary.LittleEndian.Uint64(src[pa-8:]), binary.LittleEndian.Uint64(src[pb-8:])
			wc, we := binary.LittleEndian.Uint64(src[pc-8:]), binary.LittleEndian.Uint64(src[pe-8:])
			o := a.o
			xs := (*[4*S + 4]byte)(ex[o:])
			ts := (*[4*S + 4]byte)(tv[o:])
			for j := 0; j <= 4*S; j += S {
				ea := swLookup(tb, ci[xs[j]], wa, ca)
				eb := swLookup(tb, ci[xs[j+1]], wb, cb)
				ec := swLookup(tb, ci[xs[j+2]], wc, cc)
				ee := swLookup(tb, ci[xs[j+3]], we, ce)
				ts[j], ts[j+1], ts[j+2], ts[j+3] = byte(ea>>8), byte(eb>>8), byte(ec>>8), byte(ee>>8)
				ca += uint(ea) & 0xFF
				cb += uint(eb) & 0xFF
				cc += uint(ec) & 0xFF
				ce += uint(ee) & 0xFF
			}
			a.p, a.c, a.o = pa, ca, o+5*S
			b.p, b.c, b.o = pb, cb, o+1+5*S
			c.p, c.c, c.o = pc, cc, o+2+5*S
			e.p, e.c, e.o = pe, ce, o+3+5*S
		}
	}
}

// tail decodes the rest of a stream and checks that it ends exactly with
// its bits. While an 8-byte window lies above src[0] it takes up to five
// tokens from each window without checking the bits left: the window may
// reach below the stream's start, but a stream that ends exactly with its
// bits decodes the same whatever lies below it, and one that does not
// comes out with its unread bits below zero or above it (as huff.Decoder's tail;
// a code may have length 0 here, so a stream may run out of bits before
// its last tokens).
func (d *refSwitchDec) tail(tv, ex, src []byte, s *swStream, S int) error {
	n := len(tv)
	for s.o < n {
		k := min(5, (n-s.o+S-1)/S)
		if !d.window(tv, ex, src, s, k, S) {
			break
		}
	}
	pos := 8*(s.p-s.lo) - int(s.c) // unread bits of the stream
	for ; s.o < n && pos >= 0; s.o += S {
		inf := d.cinfo[ex[s.o]]
		tl := 64 - uint(inf&63)
		x := huff.PeekBack(src, s.lo, pos, tl)
		e := binary.LittleEndian.Uint16(d.tabs[int(inf>>6)+2*int(x):])
		tv[s.o] = byte(e >> 8)
		pos -= int(e & 0xFF)
	}
	if pos < 0 {
		return errf("%d bits short", -pos)
	}
	if pos != 0 {
		return errf("%d bits left over", pos)
	}
	return nil
}

// pairsMayPay reports whether method 1 may code the G groups prepareGroups
// made smaller than method 4: its streams may use pair codes, which pay
// where one token is most of a group (the Huffman code cannot spend less
// than a bit on it), as with mostly unchanged values; otherwise its streams
// are method 4's codes with a header each.
func (e *refEncoder) pairsMayPay(G int) bool {
	for g := 0; g < G; g++ {
		var n, top uint32
		for _, c := range e.ghist[g] {
			n += c
			top = max(top, c)
		}
		if n >= minPairSymbols && uint64(top)*refPairShare >= uint64(n) {
			return true
		}
	}
	return false
}

// refPairShare: method 1 is tried when a group's most frequent token is at
// least 1/refPairShare of it. On the real bf16 trajectory, trying it only
// then gives the same archive as trying it for every block (4: 16,984,615
// bytes with one keyframe; 3: +0.01 %; never: +0.14 %, the last step
// +8.6 %).
const refPairShare = 4
