package codec

import "encoding/binary"

// Pure-Go split and merge for 2- and 4-byte floats with any join width and
// any count of dropped bits (the cases the fixed-layout fast paths in
// fast.go leave out: F32 or BF16 whose residuals end in zero bits, as in
// weights cast up from a narrower type), and for the 1-byte floats (FP8
// E4M3, E5M2, E8M0: every spec, through 256-entry tables of the byte's
// symbol and plane). They compute what splitGeneric and mergeGeneric do,
// bit for bit, with the plane count fixed outside the loop and 32-bit
// arithmetic (every valid spec's residual fits in 31 bits); the twin tests
// compare them over every spec.

// mergeTable returns, for every symbol byte, the bits it contributes to the
// value: the exponent and the joined top residual bits in their places.
// The residual's place in the value, (r>>m)<<(m+e) | r&mmask, distributes
// over OR, so the value is tab[sym] | place(rest planes << tz).
func mergeTable(f fieldSpec, tab *[256]uint32) {
	rest := f.w() - f.j
	emask := uint64(1)<<f.e - 1
	mmask := uint64(1)<<f.m - 1
	for s := range uint64(256) {
		r := (s & (1<<f.j - 1)) << rest
		e := (s >> f.j) & emask
		tab[s] = uint32((r>>f.m)<<(f.m+f.e) | e<<f.m | r&mmask)
	}
}

// fieldsFast reports whether mergeFields and splitFields have a loop for f.
func fieldsFast(f fieldSpec) bool {
	np := f.planes()
	return (f.size == 1 || f.size == 2 && np <= 2 || f.size == 4 && np <= 3) && f.w() < 32 && f.e < 32
}

// fieldPlace holds what a value needs beyond its symbol: the mantissa mask,
// the exponent width and the dropped bits.
type fieldPlace struct{ mm, e, tz uint32 }

// value places the coded residual bits rt in a value.
func (p fieldPlace) value(rt uint32) uint32 {
	x := rt << (p.tz & 31)
	return x&p.mm | (x&^p.mm)<<(p.e&31)
}

// mergeFields is mergeGeneric for the specs fieldsFast accepts (and
// mergeGeneric for the others).
func mergeFields(dst []byte, n int, f fieldSpec, syms []byte, planes [][]byte) {
	if n == 0 || !fieldsFast(f) {
		mergeGeneric(dst, n, f, syms, planes)
		return
	}
	var tab [256]uint32
	mergeTable(f, &tab)
	pl := fieldPlace{mm: uint32(1)<<f.m - 1, e: uint32(f.e), tz: uint32(f.tz)}
	syms = syms[:n]
	if f.size == 1 {
		var t8 [256]byte
		for i, v := range tab {
			t8[i] = byte(v)
		}
		if f.planes() == 0 {
			merge1x0(dst[:n], syms, &t8)
			return
		}
		var pt [256]byte
		for i := range pt {
			pt[i] = byte(pl.value(uint32(i)))
		}
		merge1x1(dst[:n], syms, planes[0][:n], &t8, &pt)
		return
	}
	if f.size == 4 {
		dst = dst[:4*n]
		switch f.planes() {
		case 0:
			merge4x0(dst, syms, &tab)
		case 1:
			merge4x1(dst, syms, planes[0][:n], &tab, pl)
		case 2:
			merge4x2(dst, syms, planes[0][:n], planes[1][:n], &tab, pl)
		case 3:
			merge4x3(dst, syms, planes[0][:n], planes[1][:n], planes[2][:n], &tab, pl)
		}
		return
	}
	dst = dst[:2*n]
	switch f.planes() {
	case 0:
		merge2x0(dst, syms, &tab)
	case 1:
		merge2x1(dst, syms, planes[0][:n], &tab, pl)
	case 2:
		merge2x2(dst, syms, planes[0][:n], planes[1][:n], &tab, pl)
	}
}

// merge1x0 and merge1x1 are the 1-byte merges: the value's bits from
// the symbol's table and the plane byte's.
func merge1x0(dst, syms []byte, tab *[256]byte) {
	n := min(len(syms), len(dst))
	for i := 0; i < n; i++ {
		dst[i] = tab[syms[i]]
	}
}

func merge1x1(dst, syms, p0 []byte, tab, pt *[256]byte) {
	n := min(len(syms), len(p0), len(dst))
	for i := 0; i < n; i++ {
		dst[i] = tab[syms[i]] | pt[p0[i]]
	}
}

func merge4x0(dst, syms []byte, tab *[256]uint32) {
	n := min(len(syms), len(dst)/4)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(dst[4*i:4*i+4], tab[syms[i]])
	}
}

func merge4x1(dst, syms, p0 []byte, tab *[256]uint32, pl fieldPlace) {
	n := min(len(syms), len(p0), len(dst)/4)
	for i := 0; i < n; i++ {
		v := tab[syms[i]] | pl.value(uint32(p0[i]))
		binary.LittleEndian.PutUint32(dst[4*i:4*i+4], v)
	}
}

func merge4x2(dst, syms, p0, p1 []byte, tab *[256]uint32, pl fieldPlace) {
	n := min(len(syms), len(p0), len(p1), len(dst)/4)
	for i := 0; i < n; i++ {
		v := tab[syms[i]] | pl.value(uint32(p0[i])|uint32(p1[i])<<8)
		binary.LittleEndian.PutUint32(dst[4*i:4*i+4], v)
	}
}

func merge4x3(dst, syms, p0, p1, p2 []byte, tab *[256]uint32, pl fieldPlace) {
	n := min(len(syms), len(p0), len(p1), len(p2), len(dst)/4)
	for i := 0; i < n; i++ {
		v := tab[syms[i]] | pl.value(uint32(p0[i])|uint32(p1[i])<<8|uint32(p2[i])<<16)
		binary.LittleEndian.PutUint32(dst[4*i:4*i+4], v)
	}
}

func merge2x0(dst, syms []byte, tab *[256]uint32) {
	n := min(len(syms), len(dst)/2)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(dst[2*i:2*i+2], uint16(tab[syms[i]]))
	}
}

func merge2x1(dst, syms, p0 []byte, tab *[256]uint32, pl fieldPlace) {
	n := min(len(syms), len(p0), len(dst)/2)
	for i := 0; i < n; i++ {
		v := tab[syms[i]] | pl.value(uint32(p0[i]))
		binary.LittleEndian.PutUint16(dst[2*i:2*i+2], uint16(v))
	}
}

func merge2x2(dst, syms, p0, p1 []byte, tab *[256]uint32, pl fieldPlace) {
	n := min(len(syms), len(p0), len(p1), len(dst)/2)
	for i := 0; i < n; i++ {
		v := tab[syms[i]] | pl.value(uint32(p0[i])|uint32(p1[i])<<8)
		binary.LittleEndian.PutUint16(dst[2*i:2*i+2], uint16(v))
	}
}

// fieldCut holds the shifts and masks that cut a value into its symbol and
// coded residual.
type fieldCut struct {
	m, me, j, rest, tz uint32 // shift counts
	em, mm, rm         uint32 // exponent, mantissa and residual masks
}

// cut returns the symbol and the coded residual bits of value v.
func (c *fieldCut) cut(v uint32) (byte, uint32) {
	r := (v>>(c.me&31))<<(c.m&31) | v&c.mm
	s := byte((v>>(c.m&31)&c.em)<<(c.j&31) | r>>(c.rest&31))
	return s, (r & c.rm) >> (c.tz & 31)
}

// splitFields is splitGeneric for the specs fieldsFast accepts (and
// splitGeneric for the others).
func splitFields(src []byte, n int, f fieldSpec, syms []byte, planes [][]byte, hist *[256]uint32) {
	if n == 0 || !fieldsFast(f) {
		splitGeneric(src, n, f, syms, planes, hist)
		return
	}
	*hist = [256]uint32{}
	rest := f.w() - f.j
	c := fieldCut{
		m: uint32(f.m), me: uint32(f.m + f.e), j: uint32(f.j), rest: uint32(rest), tz: uint32(f.tz),
		em: uint32(1)<<f.e - 1, mm: uint32(1)<<f.m - 1, rm: uint32(uint64(1)<<rest - 1),
	}
	syms = syms[:n]
	np := f.planes()
	var p [3][]byte
	for i := range np {
		p[i] = planes[i][:n]
	}
	if f.size == 1 {
		var st, pt [256]byte
		for v := range st {
			st[v], pt[v] = c.cutByte(byte(v))
		}
		if np == 0 {
			split1(src[:n], syms, nil, hist, &st, &pt)
		} else {
			split1(src[:n], syms, p[0], hist, &st, &pt)
		}
		return
	}
	if f.size == 4 {
		src = src[:4*n]
		switch np {
		case 0:
			split4x0(src, syms, hist, &c)
		case 1:
			split4x1(src, syms, p[0], hist, &c)
		case 2:
			split4x2(src, syms, p[0], p[1], hist, &c)
		case 3:
			split4x3(src, syms, p[0], p[1], p[2], hist, &c)
		}
		return
	}
	src = src[:2*n]
	switch np {
	case 0:
		split2x0(src, syms, hist, &c)
	case 1:
		split2x1(src, syms, p[0], hist, &c)
	case 2:
		split2x2(src, syms, p[0], p[1], hist, &c)
	}
}

// cutByte is cut for a 1-byte value: its symbol and plane byte.
func (c *fieldCut) cutByte(v byte) (byte, byte) {
	s, rt := c.cut(uint32(v))
	return s, byte(rt)
}

// split1 is the 1-byte split through the tables of each byte's symbol
// (st) and plane byte (pt; p0 nil where the spec has no plane). The
// histogram is of the bytes, in four tables (a run of one byte, the
// zeros of activations, would wait on one counter), then of their
// symbols.
func split1(src, syms, p0 []byte, hist *[256]uint32, st, pt *[256]byte) {
	n := min(len(src), len(syms))
	if p0 != nil {
		n = min(n, len(p0))
		p0 = p0[:n]
	}
	src, syms = src[:n], syms[:n]
	var cnt [4][256]uint32
	i := 0
	for ; i+4 <= n; i += 4 {
		v0, v1, v2, v3 := src[i], src[i+1], src[i+2], src[i+3]
		cnt[0][v0]++
		cnt[1][v1]++
		cnt[2][v2]++
		cnt[3][v3]++
		syms[i], syms[i+1], syms[i+2], syms[i+3] = st[v0], st[v1], st[v2], st[v3]
	}
	for ; i < n; i++ {
		cnt[0][src[i]]++
		syms[i] = st[src[i]]
	}
	if p0 != nil {
		for i, v := range src {
			p0[i] = pt[v]
		}
	}
	for v := range 256 {
		hist[st[v]] += cnt[0][v] + cnt[1][v] + cnt[2][v] + cnt[3][v]
	}
}

// statsFields is statsGeneric, for 1-byte values from the bytes'
// histogram: the top byte and the residual are functions of the byte, and
// the residual's bits are the value's, so their OR is of the bytes
// present.
func statsFields(src []byte, n int, f fieldSpec, st *fieldStats) {
	if f.size != 1 || n == 0 {
		statsGeneric(src, n, f, st)
		return
	}
	var cnt [4][256]uint32
	src = src[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		cnt[0][src[i]]++
		cnt[1][src[i+1]]++
		cnt[2][src[i+2]]++
		cnt[3][src[i+3]]++
	}
	for ; i < n; i++ {
		cnt[0][src[i]]++
	}
	*st = fieldStats{jmax: f.maxJoin()}
	W := f.w()
	emask := uint64(1)<<f.e - 1
	mmask := uint64(1)<<f.m - 1
	for v := range uint64(256) {
		c := cnt[0][v] + cnt[1][v] + cnt[2][v] + cnt[3][v]
		if c == 0 {
			continue
		}
		e := v >> f.m & emask
		r := (v>>(f.m+f.e))<<f.m | v&mmask
		st.orR |= r
		st.top[e<<st.jmax|r>>(W-st.jmax)] += c
	}
}

func split4x0(src, syms []byte, hist *[256]uint32, c *fieldCut) {
	n := min(len(syms), len(src)/4)
	for i := 0; i < n; i++ {
		s, _ := c.cut(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
		syms[i] = s
		hist[s]++
	}
}

func split4x1(src, syms, p0 []byte, hist *[256]uint32, c *fieldCut) {
	n := min(len(syms), len(p0), len(src)/4)
	for i := 0; i < n; i++ {
		s, rt := c.cut(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
		syms[i] = s
		hist[s]++
		p0[i] = byte(rt)
	}
}

func split4x2(src, syms, p0, p1 []byte, hist *[256]uint32, c *fieldCut) {
	n := min(len(syms), len(p0), len(p1), len(src)/4)
	for i := 0; i < n; i++ {
		s, rt := c.cut(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
		syms[i] = s
		hist[s]++
		p0[i] = byte(rt)
		p1[i] = byte(rt >> 8)
	}
}

func split4x3(src, syms, p0, p1, p2 []byte, hist *[256]uint32, c *fieldCut) {
	n := min(len(syms), len(p0), len(p1), len(p2), len(src)/4)
	for i := 0; i < n; i++ {
		s, rt := c.cut(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
		syms[i] = s
		hist[s]++
		p0[i] = byte(rt)
		p1[i] = byte(rt >> 8)
		p2[i] = byte(rt >> 16)
	}
}

func split2x0(src, syms []byte, hist *[256]uint32, c *fieldCut) {
	n := min(len(syms), len(src)/2)
	for i := 0; i < n; i++ {
		s, _ := c.cut(uint32(binary.LittleEndian.Uint16(src[2*i : 2*i+2])))
		syms[i] = s
		hist[s]++
	}
}

func split2x1(src, syms, p0 []byte, hist *[256]uint32, c *fieldCut) {
	n := min(len(syms), len(p0), len(src)/2)
	for i := 0; i < n; i++ {
		s, rt := c.cut(uint32(binary.LittleEndian.Uint16(src[2*i : 2*i+2])))
		syms[i] = s
		hist[s]++
		p0[i] = byte(rt)
	}
}

func split2x2(src, syms, p0, p1 []byte, hist *[256]uint32, c *fieldCut) {
	n := min(len(syms), len(p0), len(p1), len(src)/2)
	for i := 0; i < n; i++ {
		s, rt := c.cut(uint32(binary.LittleEndian.Uint16(src[2*i : 2*i+2])))
		syms[i] = s
		hist[s]++
		p0[i] = byte(rt)
		p1[i] = byte(rt >> 8)
	}
}
