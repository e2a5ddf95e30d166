package huff

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// ctabHists are token histograms of the shapes difference blocks have:
// smooth in the bucket, one sign's tokens missing in places, runs of
// absent tokens, a few far-out tokens, and random ones.
func ctabHists(r *rand.Rand) [][256]uint32 {
	var out [][256]uint32
	for range 400 {
		var h [256]uint32
		n := 2 + r.IntN(254)
		switch r.IntN(4) {
		case 0: // geometric around a centre, both signs
			c, w := r.IntN(n), 1+r.IntN(40)
			for s := range n {
				d := s - c
				if d < 0 {
					d = -d
				}
				if d < 3*w {
					h[s] = uint32(1 + 100000>>(d*8/w))
				}
			}
		case 1: // one sign only in the tail, far-out tokens
			for s := range n {
				if s < n/2 || s%2 == 1 {
					h[s] = uint32(1 + r.IntN(1000))
				}
			}
			h[n-1] = 1
		case 2: // sparse
			for range 2 + r.IntN(10) {
				h[r.IntN(n)] = uint32(1 + r.IntN(100000))
			}
		default:
			for s := range n {
				if r.IntN(3) > 0 {
					h[s] = uint32(r.IntN(1 << (r.IntN(16) + 1)))
				}
			}
		}
		out = append(out, h)
	}
	return out
}

// TestCompactTable codes the tables of many histograms in the compact form
// and reads them back: the same decoding table as from the huff0
// description of the same code; every shorter prefix of a description
// fails, and arbitrary bytes give an error or a valid code, never a panic.
func TestCompactTable(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var ht Table
	var h1, h2 Decoder
	var sum, sumHuff0 int
	tables := 0
	for _, h := range ctabHists(r) {
		if err := ht.Build(&h); err != nil {
			continue // one symbol
		}
		tables++
		c := AppendCompactTable(nil, &ht)
		hd, err := ht.AppendHeader(nil)
		if err != nil {
			t.Fatal(err)
		}
		sum += len(c)
		sumHuff0 += len(hd)
		rest, err := h1.ReadCompactTable(append(bytes.Clone(c), 0xAB), nil)
		if err != nil {
			t.Fatalf("table %d: %v", tables, err)
		}
		if !bytes.Equal(rest, []byte{0xAB}) {
			t.Fatalf("table %d: %d bytes left after the description, want 1", tables, len(rest))
		}
		if _, err := h2.ReadWeights(hd); err != nil {
			t.Fatal(err)
		}
		if h1.TL != h2.TL || h1.NSym != h2.NSym || !slices.Equal(h1.Single[:1<<h1.TL], h2.Single[:1<<h2.TL]) {
			t.Fatalf("table %d: compact tl %d nsym %d, huff0 tl %d nsym %d, or their tables differ", tables, h1.TL, h1.NSym, h2.TL, h2.NSym)
		}
		for k := range len(c) {
			if _, err := h1.ReadCompactTable(c[:k], nil); err == nil {
				// a prefix may happen to describe a code when the last
				// byte held only padding
				if k < len(c)-1 {
					t.Fatalf("table %d: a prefix of %d of %d bytes was accepted", tables, k, len(c))
				}
			}
		}
	}
	if tables < 300 {
		t.Fatalf("only %d tables", tables)
	}
	t.Logf("%d tables: compact %d bytes, huff0 %d", tables, sum, sumHuff0)
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 && len(b) > 0 {
			b[0] = byte(1 + r.IntN(20))
		}
		if _, err := h1.ReadCompactTable(b, nil); err == nil && (h1.TL < 1 || h1.TL > MaxBits || h1.NSym < 2) {
			t.Fatalf("accepted %x as tl %d, %d symbols", b, h1.TL, h1.NSym)
		}
		checkCompactSpec(t, b)
	}
	// descriptions whose lengths leave the last token no length of 1..11
	// (Kraft sum below 1/2, or 1 and above): once taken as other lengths
	for _, b := range [][]byte{{1, 0x04}, {2, 0x26}, {7, 0x24, 0x30, 0x30}} {
		if _, err := h1.ReadCompactTable(b, nil); err == nil {
			t.Fatalf("accepted %x, whose lengths make no complete code", b)
		}
		checkCompactSpec(t, b)
	}
}

// compactSpec reads a compact table description (count 1..254) as doc.go
// words it, bit by bit: the code lengths of tokens 0..count (0: absent),
// the last one's completing the code, and the bits read; ok is false where
// the description breaks a rule.
func compactSpec(b []byte) (lens []int, nbits int, ok bool) {
	if len(b) < 1 || b[0] == 0 || b[0] == 255 {
		return nil, 0, false
	}
	count, pos := int(b[0]), 0
	bit := func() int {
		if pos >= 8*(len(b)-1) {
			pos++
			return -1
		}
		v := int(b[1+pos/8] >> (pos % 8) & 1)
		pos++
		return v
	}
	num := func(n int) int { // n bits, LSB first
		v := 0
		for i := range n {
			x := bit()
			if x < 0 {
				return -1
			}
			v |= x << i
		}
		return v
	}
	// the delta code: D, or absent, or a raw length (raw true)
	delta := func() (d int, absent, raw bool, good bool) {
		switch {
		case bit() != 1:
			return 0, false, false, pos <= 8*(len(b)-1)
		case bit() != 1:
			s := bit()
			return 1 - 2*s, false, false, s >= 0
		case bit() != 1:
			s := bit()
			return 2 - 4*s, false, false, s >= 0
		case bit() != 1:
			return 0, true, false, pos <= 8*(len(b)-1)
		}
		v := num(4)
		return v, false, true, v >= 0
	}
	lens = make([]int, 0, count+1)
	at := func(i int) int {
		if i < 0 {
			return 0
		}
		return lens[i]
	}
	for s := 0; s < count; {
		a, c := at(s-2), at(s-1)
		l, absent := 0, false
		switch {
		case a == 0 && c == 0:
			k := 0
			for {
				x := bit()
				if x < 0 {
					return nil, 0, false
				}
				if x == 0 {
					break
				}
				k++
			}
			if k > 8 {
				return nil, 0, false
			}
			low := num(k)
			if low < 0 {
				return nil, 0, false
			}
			r := (1<<k | low) - 1
			if s+r > count {
				return nil, 0, false
			}
			for range r {
				lens = append(lens, 0)
			}
			s += r
			if s == count {
				continue
			}
			if l = num(4); l < 1 || l > 11 {
				return nil, 0, false
			}
		case a == 0:
			f := bit()
			if f < 0 {
				return nil, 0, false
			}
			absent = f == 0
			if f == 1 {
				d, abs, raw, good := delta()
				if !good || abs {
					return nil, 0, false
				}
				if l = c + d; raw {
					l = d
				}
			}
		default:
			d, abs, raw, good := delta()
			if !good {
				return nil, 0, false
			}
			if l = a + d; raw {
				l = d
			}
			if absent = abs; absent {
				l = 0
			}
		}
		if !absent && (l < 1 || l > 11) {
			return nil, 0, false
		}
		lens = append(lens, l)
		s++
	}
	if pos > 8*(len(b)-1) {
		return nil, 0, false
	}
	// the last token completes the code: 2^-l = 1 - the others' sum
	const one = 1 << 11
	sum := 0
	for _, l := range lens {
		if l > 0 {
			sum += one >> l
		}
	}
	last := 0
	for l := 1; l <= 11; l++ {
		if one>>l == one-sum {
			last = l
		}
	}
	if last == 0 {
		return nil, 0, false
	}
	lens = append(lens, last)
	// huff0's rules: at least two longest codes, an even number
	longest, n := 0, 0
	for _, l := range lens {
		longest = max(longest, l)
	}
	for _, l := range lens {
		if l == longest {
			n++
		}
	}
	if n < 2 || n%2 != 0 {
		return nil, 0, false
	}
	return lens, pos, true
}

// checkCompactSpec fails unless readCompactTable accepts b exactly when
// compactSpec does, with the same lengths and bytes read.
func checkCompactSpec(t *testing.T, b []byte) {
	t.Helper()
	if len(b) > 0 && b[0] == 255 {
		return // a huff0 description follows (readTables), not a compact one
	}
	var h Decoder
	rest, err := h.ReadCompactTable(b, nil)
	lens, nbits, ok := compactSpec(b)
	if (err == nil) != ok {
		t.Fatalf("%x: readCompactTable: %v; the spec: ok %v", b, err, ok)
	}
	if !ok {
		return
	}
	if h.NSym != len(lens) || len(rest) != len(b)-1-(nbits+7)/8 {
		t.Fatalf("%x: %d symbols, %d bytes left; the spec: %d symbols, %d bits", b, h.NSym, len(rest), len(lens), nbits)
	}
	for s, l := range lens {
		got := 0
		if w := int(h.w[s]); w > 0 {
			got = int(h.TL) + 1 - w
		}
		if got != l {
			t.Fatalf("%x: token %d has length %d; the spec: %d (all: %v)", b, s, got, l, lens)
		}
	}
}

// FuzzCompactTable reads arbitrary compact table descriptions: an error,
// or a complete code of at most 11 bits whose table covers every entry.
func FuzzCompactTable(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 9))
	var ht Table
	for i, h := range ctabHists(r) {
		if i%20 == 0 && ht.Build(&h) == nil {
			f.Add(AppendCompactTable(nil, &ht))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// the lengths doc.go's rules give, or a refusal where they do
		checkCompactSpec(t, b)
		var h Decoder
		rest, err := h.ReadCompactTable(b, nil)
		if err != nil {
			return
		}
		if h.TL < 1 || h.TL > MaxBits || h.NSym < 2 || h.NSym > int(b[0])+1 || len(rest) > len(b)-1 {
			t.Fatalf("accepted: tl %d, %d symbols, %d bytes left of %d", h.TL, h.NSym, len(rest), len(b))
		}
		// every entry of the table decodes a described symbol with a
		// length within the table
		for _, e := range h.Single[:1<<h.TL] {
			if l := uint(e & 0xFF); l < 1 || l > h.TL || int(e>>8) >= h.NSym {
				t.Fatalf("entry %#x in a table of %d bits, %d symbols", e, h.TL, h.NSym)
			}
		}
	})
}
