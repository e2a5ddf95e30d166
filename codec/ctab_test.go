package codec

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"neuralzip/dtype"
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
	var ht huffTable
	var h1, h2 huffX
	var sum, sumHuff0 int
	tables := 0
	for _, h := range ctabHists(r) {
		if err := ht.build(&h); err != nil {
			continue // one symbol
		}
		tables++
		c := appendCompactTable(nil, &ht)
		hd, err := ht.appendHeader(nil)
		if err != nil {
			t.Fatal(err)
		}
		sum += len(c)
		sumHuff0 += len(hd)
		rest, err := h1.readCompactTable(append(bytes.Clone(c), 0xAB), nil)
		if err != nil {
			t.Fatalf("table %d: %v", tables, err)
		}
		if !bytes.Equal(rest, []byte{0xAB}) {
			t.Fatalf("table %d: %d bytes left after the description, want 1", tables, len(rest))
		}
		if _, err := h2.readWeights(hd); err != nil {
			t.Fatal(err)
		}
		if h1.tl != h2.tl || h1.nsym != h2.nsym || !slices.Equal(h1.single[:1<<h1.tl], h2.single[:1<<h2.tl]) {
			t.Fatalf("table %d: compact tl %d nsym %d, huff0 tl %d nsym %d, or their tables differ", tables, h1.tl, h1.nsym, h2.tl, h2.nsym)
		}
		for k := range len(c) {
			if _, err := h1.readCompactTable(c[:k], nil); err == nil {
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
		if _, err := h1.readCompactTable(b, nil); err == nil && (h1.tl < 1 || h1.tl > huffMaxBits || h1.nsym < 2) {
			t.Fatalf("accepted %x as tl %d, %d symbols", b, h1.tl, h1.nsym)
		}
		checkCompactSpec(t, b)
	}
	// descriptions whose lengths leave the last token no length of 1..11
	// (Kraft sum below 1/2, or 1 and above): once taken as other lengths
	for _, b := range [][]byte{{1, 0x04}, {2, 0x26}, {7, 0x24, 0x30, 0x30}} {
		if _, err := h1.readCompactTable(b, nil); err == nil {
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
	var h huffX
	rest, err := h.readCompactTable(b, nil)
	lens, nbits, ok := compactSpec(b)
	if (err == nil) != ok {
		t.Fatalf("%x: readCompactTable: %v; the spec: ok %v", b, err, ok)
	}
	if !ok {
		return
	}
	if h.nsym != len(lens) || len(rest) != len(b)-1-(nbits+7)/8 {
		t.Fatalf("%x: %d symbols, %d bytes left; the spec: %d symbols, %d bits", b, h.nsym, len(rest), len(lens), nbits)
	}
	for s, l := range lens {
		got := 0
		if w := int(h.w[s]); w > 0 {
			got = int(h.tl) + 1 - w
		}
		if got != l {
			t.Fatalf("%x: token %d has length %d; the spec: %d (all: %v)", b, s, got, l, lens)
		}
	}
}

// realTables are the token tables of real difference blocks (bf16 steps
// 500 → 550), as compact and as huff0 descriptions.
func realTables(tb testing.TB) (compact, huff0 [][]byte) {
	dir := trajDir(tb)
	prev, cur := readStep(tb, dir, 500, "bf16"), readStep(tb, dir, 550, "bf16")
	plans, _ := planBlocks(safetensorsSegments(cur), int64(len(cur)), DefaultChunkValues)
	be := &blockEncoder{}
	var ht huffTable
	for _, pl := range plans {
		if !pl.float || pl.dtype != dtype.BF16 {
			continue
		}
		be.encodeRefFloat(nil, cur[pl.off:pl.off+pl.length], prev[pl.off:pl.off+pl.length], dtype.BF16)
		e := be.ref
		for g := range e.ghist[:len(e.own)+1] {
			if ht.build(&e.ghist[g]) != nil {
				continue
			}
			hd, _ := ht.appendHeader(nil)
			compact = append(compact, appendCompactTable(nil, &ht))
			huff0 = append(huff0, hd)
		}
	}
	return compact, huff0
}

// BenchmarkTableRead reads the token tables of a real frame: compact
// descriptions against huff0's (FSE-coded weights), each building the
// decoding table.
func BenchmarkTableRead(b *testing.B) {
	compact, huff0 := realTables(b)
	var h huffX
	run := func(name string, descs [][]byte, read func([]byte) error) {
		b.Run(name, func(b *testing.B) {
			n := 0
			for _, c := range descs {
				n += len(c)
			}
			b.ReportMetric(float64(n)/float64(len(descs)), "B/table")
			for i := 0; i < b.N; i++ {
				for _, c := range descs {
					if err := read(c); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	run("compact", compact, func(c []byte) error { _, err := h.readCompactTable(c, nil); return err })
	run("huff0", huff0, func(c []byte) error { _, err := h.readWeights(c); return err })
}

// TestCompactTableReal reads the compact descriptions of real token tables
// (bf16 steps 500 → 550): the same decoding tables as their huff0
// descriptions, in well under two thirds of the bytes.
func TestCompactTableReal(t *testing.T) {
	compact, huff0 := realTables(t)
	var h1, h2 huffX
	nc, nh := 0, 0
	for i := range compact {
		if _, err := h1.readCompactTable(compact[i], nil); err != nil {
			t.Fatalf("table %d: %v", i, err)
		}
		if _, err := h2.readWeights(huff0[i]); err != nil {
			t.Fatal(err)
		}
		if h1.tl != h2.tl || h1.nsym != h2.nsym || !slices.Equal(h1.single[:1<<h1.tl], h2.single[:1<<h2.tl]) {
			t.Fatalf("table %d: the two descriptions differ", i)
		}
		nc += len(compact[i])
		nh += len(huff0[i])
	}
	if len(compact) < 50 || 3*nc > 2*nh {
		t.Fatalf("%d tables: compact %d bytes, huff0 %d", len(compact), nc, nh)
	}
	t.Logf("%d tables: compact %d bytes, huff0 %d", len(compact), nc, nh)
}

// FuzzCompactTable reads arbitrary compact table descriptions: an error,
// or a complete code of at most 11 bits whose table covers every entry.
func FuzzCompactTable(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 9))
	var ht huffTable
	for i, h := range ctabHists(r) {
		if i%20 == 0 && ht.build(&h) == nil {
			f.Add(appendCompactTable(nil, &ht))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// the lengths doc.go's rules give, or a refusal where they do
		checkCompactSpec(t, b)
		var h huffX
		rest, err := h.readCompactTable(b, nil)
		if err != nil {
			return
		}
		if h.tl < 1 || h.tl > huffMaxBits || h.nsym < 2 || h.nsym > int(b[0])+1 || len(rest) > len(b)-1 {
			t.Fatalf("accepted: tl %d, %d symbols, %d bytes left of %d", h.tl, h.nsym, len(rest), len(b))
		}
		// every entry of the table decodes a described symbol with a
		// length within the table
		for _, e := range h.single[:1<<h.tl] {
			if l := uint(e & 0xFF); l < 1 || l > h.tl || int(e>>8) >= h.nsym {
				t.Fatalf("entry %#x in a table of %d bits, %d symbols", e, h.tl, h.nsym)
			}
		}
	})
}
