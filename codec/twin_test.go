package codec

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"neuralzip/dtype"
)

// Every fast path is compared with its pure-Go twin (and the generic
// reference) on random bit patterns of many lengths and on real weights.

func twinInputs(t *testing.T, size int) [][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	var out [][]byte
	for _, n := range []int{0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000, 4097} {
		b := make([]byte, n*size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		out = append(out, b)
	}
	if d := sharedDir(); d != "" {
		for _, name := range []string{"real-bf16.safetensors", "real-f32.safetensors", "real-f16.safetensors", "real-f16-native.safetensors"} {
			src := realChunk(t, name, 100003)
			if len(src)%size == 0 {
				out = append(out, src)
			}
		}
	}
	return out
}

func TestSplitMergeBF16Twins(t *testing.T) {
	if !use.avx2 {
		t.Log("no AVX2 on this machine: only the Go paths are compared")
	}
	f, _ := specFor(dtype.BF16)
	for _, src := range twinInputs(t, 2) {
		n := len(src) / 2
		e1, r1 := make([]byte, n), make([]byte, n)
		e2, r2 := make([]byte, n), make([]byte, n)
		or1 := splitBF16(src, e1, r1)
		or2 := splitBF16Go(src, e2, r2)
		if !bytes.Equal(e1, e2) || !bytes.Equal(r1, r2) || or1 != or2 {
			t.Fatalf("n=%d: splitBF16 differs from its Go twin", n)
		}
		// generic reference
		e3, r3 := make([]byte, n), make([]byte, n)
		var h [256]uint32
		splitGeneric(src, n, f, e3, [][]byte{r3}, &h)
		if !bytes.Equal(e1, e3) || !bytes.Equal(r1, r3) {
			t.Fatalf("n=%d: splitBF16 differs from splitGeneric", n)
		}
		d1, d2, d3 := make([]byte, 2*n), make([]byte, 2*n), make([]byte, 2*n)
		mergeBF16(d1, e1, r1)
		mergeBF16Go(d2, e1, r1)
		mergeGeneric(d3, n, f, e1, [][]byte{r1})
		if !bytes.Equal(d1, src) || !bytes.Equal(d2, src) || !bytes.Equal(d3, src) {
			t.Fatalf("n=%d: merge does not restore the input", n)
		}
	}
}

func TestSplitMergeF32Twins(t *testing.T) {
	f, _ := specFor(dtype.F32)
	for _, src := range twinInputs(t, 4) {
		n := len(src) / 4
		var h1, h2 [256]uint32
		e1, e2 := make([]byte, n), make([]byte, n)
		p1 := [][]byte{make([]byte, n), make([]byte, n), make([]byte, n)}
		p2 := [][]byte{make([]byte, n), make([]byte, n), make([]byte, n)}
		splitGeneric(src, n, f, e2, p2, &h2)
		var st fieldStats
		statsGeneric(src, n, f, &st)
		if use.avx2 && use.avx512 && n >= 64 {
			if k, _ := splitF32Fast(src, make([]byte, n), make([]byte, n), make([]byte, n), make([]byte, n)); k == 0 {
				t.Fatalf("n=%d: splitF32Fast split nothing", n)
			}
		}
		for _, fast := range []bool{false, true} { // splitF32Fast and its twin (the split kept is the fast one)
			restore := setFeatures(func(f *features) { f.avx512 = f.avx512 && fast })
			h1 = [256]uint32{}
			or1, ok := split(src, n, f, e1, p1, &h1)
			restore()
			if !ok || h1 != h2 || or1 != st.orR || !bytes.Equal(e1, e2) {
				t.Fatalf("n=%d fast %v: F32 split differs from the generic one", n, fast)
			}
			for p := range p1 {
				if !bytes.Equal(p1[p], p2[p]) {
					t.Fatalf("n=%d fast %v: plane %d differs", n, fast, p)
				}
			}
		}
		if use.avx2 && use.avx512 && n >= 64 && mergeF32Fast(make([]byte, 4*n), e1, p1[0], p1[1], p1[2]) == 0 {
			t.Fatalf("n=%d: mergeF32Fast merged nothing", n)
		}
		for _, fast := range []bool{true, false} { // mergeF32Fast and its twin
			restore := setFeatures(func(f *features) { f.avx512 = f.avx512 && fast })
			d1 := make([]byte, 4*n)
			merge(d1, n, f, e1, p1)
			restore()
			if !bytes.Equal(d1, src) {
				t.Fatalf("n=%d fast %v: F32 merge does not restore the input", n, fast)
			}
		}
	}
}

// The generic split/merge must invert each other for every float type, join
// and dropped-bit count the format allows.
func TestGenericFieldsAllSpecs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, d := range []dtype.DType{dtype.F16, dtype.BF16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2, dtype.F8E8M0} {
		base, ok := specFor(d)
		if !ok {
			t.Fatalf("%v: no spec", d)
		}
		n := 777
		for j := uint(0); j <= base.maxJoin(); j++ {
			for tz := uint(0); tz <= base.w()-j; tz++ {
				f := base
				f.j, f.tz = j, tz
				src := make([]byte, n*f.size)
				for i := 0; i < n; i++ {
					// residual (sign<<m | mantissa) with tz low bits zero
					e := r.Uint64() & (1<<f.e - 1)
					rr := r.Uint64() & (1<<f.w() - 1) &^ (1<<tz - 1)
					v := (rr>>f.m)<<(f.m+f.e) | e<<f.m | rr&(1<<f.m-1)
					storeValue(src, i, f.size, v)
				}
				syms := make([]byte, n)
				planes := make([][]byte, f.planes())
				for p := range planes {
					planes[p] = make([]byte, n)
				}
				var h [256]uint32
				splitGeneric(src, n, f, syms, planes, &h)
				for _, s := range syms {
					if uint(s) >= 1<<f.symW() {
						t.Fatalf("%v j=%d tz=%d: symbol %d too wide", d, j, tz, s)
					}
				}
				for p := range planes {
					for _, v := range planes[p] {
						if uint(v) >= 1<<f.planeW(p) {
							t.Fatalf("%v j=%d tz=%d: plane %d value too wide", d, j, tz, p)
						}
					}
				}
				out := make([]byte, len(src))
				mergeGeneric(out, n, f, syms, planes)
				if !bytes.Equal(out, src) {
					t.Fatalf("%v j=%d tz=%d: generic merge does not invert split", d, j, tz)
				}
			}
		}
	}
}

func TestForcedFallbackRoundTrip(t *testing.T) {
	if !use.avx2 {
		t.Skip("no assembly path to turn off")
	}
	defer setFeatures(func(f *features) { f.avx2 = false })()
	src := realisticValues(dtype.BF16, 100000, 9)
	roundTrip(t, src, []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(src))}}, EncodeOptions{})
}

func TestF16FastPathTwins(t *testing.T) {
	base, _ := specFor(dtype.F16)
	for _, src := range twinInputs(t, 2) {
		n := len(src) / 2
		var st1, st2 fieldStats
		statsF16(src, &st1)
		statsGeneric(src, n, base, &st2)
		if st1 != st2 {
			t.Fatalf("n=%d: statsF16 differs from statsGeneric", n)
		}
		for j := uint(0); j <= 3; j++ {
			f := base
			f.j = j
			s1, s2 := make([]byte, n), make([]byte, n)
			p1 := [][]byte{make([]byte, n), make([]byte, n)}
			p2 := [][]byte{make([]byte, n), make([]byte, n)}
			var h [256]uint32
			splitGeneric(src, n, f, s2, p2[:f.planes()], &h)
			if use.avx2 && use.avx512 && n >= 64 && splitF16Fast(src, j, make([]byte, n), [][]byte{make([]byte, n), make([]byte, n)}[:f.planes()]) == 0 {
				t.Fatalf("n=%d: splitF16Fast split nothing", n)
			}
			for _, fast := range []bool{false, true} { // splitF16Fast and its twin (the split kept is the fast one)
				restore := setFeatures(func(f *features) { f.avx512 = f.avx512 && fast })
				splitF16(src, j, s1, p1[:f.planes()])
				restore()
				if !bytes.Equal(s1, s2) {
					t.Fatalf("n=%d j=%d fast %v: symbols differ", n, j, fast)
				}
				for p := 0; p < f.planes(); p++ {
					if !bytes.Equal(p1[p], p2[p]) {
						t.Fatalf("n=%d j=%d fast %v: plane %d differs", n, j, fast, p)
					}
				}
			}
			if use.avx2 && use.avx512 && n >= 64 && mergeF16Fast(make([]byte, 2*n), j, s1, p1[:f.planes()]) == 0 {
				t.Fatalf("n=%d: mergeF16Fast merged nothing", n)
			}
			for _, fast := range []bool{true, false} { // mergeF16Fast and its twin
				restore := setFeatures(func(f *features) { f.avx512 = f.avx512 && fast })
				out := make([]byte, 2*n)
				merge(out, n, f, s1, p1[:f.planes()])
				restore()
				if !bytes.Equal(out, src) {
					t.Fatalf("n=%d j=%d fast %v: merge does not restore", n, j, fast)
				}
			}
		}
	}
}

// unpack with AVX-512 (unpackFast) and without it gives the packed
// symbols back, for every width, with and without bytes after the packed
// ones, at every length around the 64-symbol blocks.
func TestUnpackTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	fastDone := 0
	for w := uint(1); w < 8; w++ {
		for _, n := range []int{0, 1, 7, 63, 64, 65, 127, 128, 129, 511, 512, 4099, 65536} {
			syms := make([]byte, n)
			for i := range syms {
				syms[i] = byte(r.IntN(1 << w))
			}
			packed := appendPacked(nil, syms, w)
			for _, extra := range []int{0, 3, 64} {
				src := append(bytes.Clone(packed), make([]byte, extra)...)
				for i := len(packed); i < len(src); i++ {
					src[i] = 0xff // what follows must not leak into the symbols
				}
				fastDone += unpackFast(make([]byte, n), src, w)
				for _, fast := range []bool{true, false} {
					restore := setFeatures(func(f *features) { f.avx512 = f.avx512 && fast })
					got := make([]byte, n)
					unpack(got, src, w)
					restore()
					if !bytes.Equal(got, syms) {
						t.Fatalf("w=%d n=%d extra %d fast %v: symbols differ", w, n, extra, fast)
					}
				}
			}
		}
	}
	if use.avx2 && use.avx512 && fastDone == 0 {
		t.Fatal("unpackFast decoded nothing")
	}
}

// expandPairs with the assembly fast path and without it give the same
// symbols, also around escapes and invalid codes.
func TestExpandPairsTwin(t *testing.T) {
	for _, holes := range []bool{true, false} {
		for _, k := range []int{12, 15} {
			expandPairsTwin(t, k, holes)
		}
	}
}

// A code equal to esc whose entry has a pair is that pair, not an escape,
// on every path; and the AVX-512 path, where the CPU has it, does the bulk
// of a long stream of a table with holes.
func TestExpandPairsEscWithPair(t *testing.T) {
	var tab [256]uint32
	for c := range tab {
		tab[c] = 1 << 16
	}
	for c := 0; c < 100; c++ {
		if c%17 != 5 {
			tab[c] = uint32(c*7) | uint32(c*13)<<8
		}
	}
	r := rand.New(rand.NewPCG(12, 13))
	for _, esc := range []byte{40, 100} { // 40 has a pair; 100 does not
		codes := make([]byte, 4096)
		var exc []byte
		for i := range codes {
			c := byte(r.IntN(101))
			for tab[c]>>16 != 0 && c != esc {
				c = byte(r.IntN(101))
			}
			if c == esc && tab[c]>>16 != 0 {
				exc = append(exc, byte(i), byte(i>>8))
			}
			codes[i] = c
		}
		want := make([]byte, 2*len(codes))
		restore := setFeatures(func(f *features) { f.avx2 = false })
		okGo := expandPairs(want, codes, &tab, esc, exc)
		restore()
		got := make([]byte, 2*len(codes))
		if ok := expandPairs(got, codes, &tab, esc, exc); ok != okGo || !okGo || !bytes.Equal(got, want) {
			t.Fatalf("esc %d: ok %v (Go %v), equal %v", esc, ok, okGo, bytes.Equal(got, want))
		}
		if use.avx2 && use.avx512Pairs {
			x := 0
			if n := expandPairsWide(got, codes, &tab, esc, exc, &x); n < len(codes)-63 {
				t.Errorf("esc %d: the AVX-512 path did %d of %d codes", esc, n, len(codes))
			}
		}
	}
}

// expandPairsTwin compares the paths on pair codes of k top symbols;
// holes: some codes below the escape have no pair (as in setup tables),
// which the AVX-512 path leaves to the scalar one.
func expandPairsTwin(t *testing.T, k int, holes bool) {
	r := rand.New(rand.NewPCG(8, uint64(k)))
	var tab [256]uint32
	for c := range tab {
		tab[c] = 1 << 16
	}
	for c := 0; c < k*k; c++ {
		if !holes || c%17 != 5 { // some codes have no pair
			tab[c] = uint32(r.IntN(256)) | uint32(r.IntN(256))<<8
		}
	}
	esc := byte(k * k)
	for _, m := range []int{0, 1, 3, 4, 5, 63, 64, 100, 1001, 20000} {
		for _, escRate := range []int{0, 50, 3} {
			codes := make([]byte, m)
			var exc []byte
			for i := range codes {
				c := byte(r.IntN(k * k))
				if tab[c]>>16 != 0 {
					c = 0
				}
				if escRate > 0 && r.IntN(escRate) == 0 {
					c = esc
					exc = append(exc, byte(r.Uint32()), byte(r.Uint32()))
				}
				codes[i] = c
			}
			for _, odd := range []int{0, 1} {
				if odd == 1 {
					exc = append(exc, 7)
				}
				d1 := make([]byte, 2*m+odd)
				d2 := make([]byte, 2*m+odd)
				pureGo := func(f *features) { f.avx2 = false }
				avx2Alone := func(f *features) { f.avx512Pairs = false } // the AVX2 assembly alone
				ok1 := expandPairs(d1, codes, &tab, esc, exc)
				restore := setFeatures(pureGo)
				ok2 := expandPairs(d2, codes, &tab, esc, exc)
				restore()
				restore = setFeatures(avx2Alone)
				d3 := make([]byte, 2*m+odd)
				ok3 := expandPairs(d3, codes, &tab, esc, exc)
				restore()
				if ok1 != ok2 || ok1 != ok3 || !bytes.Equal(d1, d2) || !bytes.Equal(d1, d3) || !ok1 {
					t.Fatalf("k=%d holes=%v m=%d esc=%d odd=%d: %v/%v/%v, equal %v %v", k, holes, m, escRate, odd, ok1, ok2, ok3, bytes.Equal(d1, d2), bytes.Equal(d1, d3))
				}
				// too few exceptions are refused by every path
				if len(exc) >= 2 {
					short := exc[:len(exc)-2]
					restore := setFeatures(pureGo)
					okS2 := expandPairs(d2, codes, &tab, esc, short)
					restore()
					restore = setFeatures(avx2Alone)
					okS3 := expandPairs(d3, codes, &tab, esc, short)
					restore()
					if expandPairs(d1, codes, &tab, esc, short) || okS2 || okS3 {
						t.Fatal("missing exceptions accepted")
					}
				}
				// an invalid code (above the escape, or a hole below it)
				// is refused by every path, wherever it lies
				if m > 2 {
					invalid := []byte{byte(k*k + 1)}
					if holes {
						invalid = append(invalid, 5, 22)
					}
					for _, c := range invalid {
						for _, at := range []int{0, m / 2, m - 1} {
							bad := append([]byte(nil), codes...)
							bad[at] = c
							restore := setFeatures(pureGo)
							okb2 := expandPairs(d2, bad, &tab, esc, exc)
							restore()
							restore = setFeatures(avx2Alone)
							okb3 := expandPairs(d3, bad, &tab, esc, exc)
							restore()
							if expandPairs(d1, bad, &tab, esc, exc) || okb2 || okb3 {
								t.Fatalf("k=%d m=%d: invalid code %d at %d accepted", k, m, c, at)
							}
						}
					}
				}
				if odd == 1 {
					exc = exc[:len(exc)-1]
				}
			}
		}
	}
}

// The assembly pair coder against its Go twin (the Huffman stream
// encoder's is huff.TestStreamAsmTwin).
func TestPairizeAsmTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	for _, n := range []int{0, 1, 4, 5, 6, 9, 10, 11, 1000, 65537} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.ExpFloat64() * 6)
		}
		// pairs: a table with holes (escapes)
		pc := new([65536]byte)
		for a := 0; a < 6; a++ {
			for b := 0; b < 6; b++ {
				if (a+b)%5 != 3 {
					pc[uint16(a)|uint16(b)<<8] = byte(a*6+b) + 1
				}
			}
		}
		m := n / 2
		c1, c2 := make([]byte, m), make([]byte, m)
		e1 := pairize(c1, src, pc, 36, nil)
		restore := setFeatures(func(f *features) { f.avx2 = false })
		e2 := pairize(c2, src, pc, 36, nil)
		restore()
		if !bytes.Equal(c1, c2) || !bytes.Equal(e1, e2) {
			t.Fatalf("n=%d: assembly pair coding differs from Go", n)
		}
	}
}

// TestAddMag16 checks the branchless magnitude additions of the pure-Go
// pass against add16One, the key arithmetic: every 2-byte reference value
// with differences mod 2^16 that cross zero, wrap past the largest key or
// stay (every one within 300 of the value's magnitude either way, of 0,
// ±2^15 and ±2^16, and every 61st), and addMag16x4 on four random lanes
// at a time, each lane against add16One.
func TestAddMag16(t *testing.T) {
	var dvs []uint32
	for dv := uint32(0); dv < 1<<16; dv += 61 {
		dvs = append(dvs, dv)
	}
	for d := uint32(0); d < 300; d++ {
		dvs = append(dvs, d, -d, 1<<15+d, 1<<15-d, 1<<16-d, 1<<16+d)
	}
	step := 1
	if testing.Short() {
		step = 7
	}
	for r := 0; r < 1<<16; r += step {
		m := uint32(r & 0x7fff)
		for _, dv := range dvs {
			for _, dv := range []uint32{dv, -m + dv - 150, 0x7fff - m + dv - 150} {
				if got, want := addMag16(uint16(r), dv), add16One(uint16(r), dv); got != want {
					t.Fatalf("addMag16(%#04x, %#x) = %#04x, add16One %#04x", r, dv, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1<<20; i++ {
		r, dv := rng.Uint64(), rng.Uint64()
		if i&1 != 0 {
			// differences near each lane's magnitude: through zero or not
			for k := 0; k < 64; k += 16 {
				m := r >> k & 0x7fff
				dv = dv&^(0xffff<<k) | (-m+uint64(rng.IntN(64))-32)&0xffff<<k
			}
		}
		got := addMag16x4(r, dv)
		for k := 0; k < 64; k += 16 {
			if want := add16One(uint16(r>>k), uint32(dv>>k)); uint16(got>>k) != want {
				t.Fatalf("addMag16x4(%#016x, %#016x): lane %d is %#04x, add16One %#04x", r, dv, k/16, uint16(got>>k), want)
			}
		}
	}
}

// The assembly paths of reference-block decoding (extra-bit deltas, the
// 16-bit add and the exponents of 2-byte values) against their Go twins,
// on random tokens and bit patterns, with the extra bits running out at
// several points, and on real trajectory blocks through decodeRefFloat.
func TestRefDecodeTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	type spec struct {
		d dtype.DType
		q int // -1: the default
	}
	// q = 0 of a 2-byte type: the most extra bits a value can have (15;
	// deltasAdd16Block's window is sized for them), which only the scalar
	// passes take
	for _, c := range []spec{{dtype.BF16, -1}, {dtype.F16, -1}, {dtype.BF16, 0}, {dtype.F16, 1}, {dtype.F32, -1}, {dtype.F8E4M3, -1}} {
		d := c.d
		p, _ := refSpecFor(d)
		if c.q >= 0 && !p.setQ(uint(c.q)) {
			t.Fatalf("%v: q=%d rejected", d, c.q)
		}
		var tab [256]refTok
		p.tokTable(&tab)
		for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 65536} {
			ts, x := randTokens(r, &p, &tab, n)
			// limits: enough, and short by various amounts
			for _, short := range []uint{0, 1, 9, x / 2, x} {
				lim := x - min(short, x)
				ap := p.applier(&tab, randBytes(r, int(lim+refPad)))
				d1, d2 := make([]uint32, n), make([]uint32, n)
				k1, b1 := ap.refDeltasFast(d1, ts, 0, 8*lim)
				k2, b2 := ap.deltasChecked(d2, ts, 0, 8*lim)
				if k1 != k2 || b1 != b2 || !slices.Equal(d1[:k1], d2[:k2]) {
					t.Fatalf("%v n=%d short=%d: deltas differ from the Go twin (%d,%d vs %d,%d)", d, n, short, k1, b1, k2, b2)
				}
				if short == 0 && k1 != n {
					t.Fatalf("%v n=%d: deltas stopped at %d with the bits all there", d, n, k1)
				}
				if p.size != 2 {
					continue
				}
				// the fused pure-Go pass of 2-byte values against the two
				// passes: same stop, same position, same values
				ref := randBytes(r, 2*n)
				want := make([]byte, 2*n)
				add16(want[:2*k2], ref[:2*k2], d2[:k2])
				got := make([]byte, 2*n)
				k3, b3 := ap.deltasAdd16Checked(got, ref, ts, 0, 8*lim)
				if k3 != k2 || b3 != b2 || !bytes.Equal(got[:2*k3], want[:2*k2]) {
					t.Fatalf("%v n=%d short=%d: deltasAdd16 differs from deltas and add16 (%d,%d vs %d,%d)", d, n, short, k3, b3, k2, b2)
				}
			}
			if p.size != 2 {
				continue
			}
			ref := make([]byte, 2*n)
			ds := make([]uint32, n)
			for i := range ref {
				ref[i] = byte(r.Uint32())
			}
			for i := range ds {
				ds[i] = r.Uint32()
			}
			o1, o2 := make([]byte, 2*n), make([]byte, 2*n)
			add16Fast(o1, ref, ds)
			add16(o2, ref, ds)
			// the generic add
			rs, o3 := make([]uint32, n), make([]uint32, n)
			loadAll(rs, ref, 2)
			ap := p.applier(nil, nil)
			ap.add(o3, rs, ds)
			o4 := make([]byte, 2*n)
			storeAll(o4, o3, 2)
			if !bytes.Equal(o1, o2) || !bytes.Equal(o1, o4) {
				t.Fatalf("%v n=%d: add16 differs from its twins", d, n)
			}
			e1, e2 := make([]byte, n), make([]byte, n)
			refExps16Fast(e1, ref, p.m, uint16(p.emask))
			refExps16(e2, ref, p.m, uint16(p.emask))
			for i := range e2 {
				if v := uint64(binary.LittleEndian.Uint16(ref[2*i:])); e2[i] != byte(v>>p.m&p.emask) {
					t.Fatalf("%v n=%d: refExps16 is wrong at %d", d, n, i)
				}
			}
			if !bytes.Equal(e1, e2) {
				t.Fatalf("%v n=%d: refExps16 differs from its Go twin", d, n)
			}
		}
	}
}

// randTokens makes n valid tokens of p, a third of them the widest, and
// returns them with the bytes their extra bits take.
func randTokens(r *rand.Rand, p *refSpec, tab *[256]refTok, n int) ([]byte, uint) {
	ts := make([]byte, n)
	var bits uint
	for i := range ts {
		ts[i] = byte(r.IntN(p.maxTok + 1))
		if r.IntN(3) == 0 {
			ts[i] = byte(p.maxTok - r.IntN(4))
		}
		bits += uint(tab[ts[i]].n)
	}
	return ts, (bits + 7) / 8
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// refTokTable is decodeRefFloat's token table for p.
func refTokTable(p *refSpec) *[256]refTok {
	var tab [256]refTok
	p.tokTable(&tab)
	return &tab
}

// The AVX-512 ungrouping against the quarters of refUngroup: random
// contexts mapped to up to 255 groups, many or few groups per 64 values.
func TestRefUngroupTwin(t *testing.T) {
	needFastPath(t, use.avx2 && use.avx512Group, "AVX-512 (BW, VBMI2) ungrouping")
	r := rand.New(rand.NewPCG(16, 17))
	for _, n := range []int{0, 1, 63, 64, 65, 200, 4096, 65536, 65537} {
		for _, G := range []int{1, 2, 7, refFastGroups, 255} {
			var gtab [256]byte
			for c := range gtab {
				gtab[c] = byte(r.IntN(G))
			}
			ex := make([]byte, n)
			spread := 1 + r.IntN(256)
			for i := range ex {
				ex[i] = byte(r.IntN(spread))
			}
			var hc [4][256]uint32
			qn := n / 4
			quarterHist(&hc, ex, qn)
			var count, off [256]int
			for k := range hc {
				for c := range hc[k] {
					count[gtab[c]] += int(hc[k][c])
				}
			}
			grouped := make([]byte, n)
			for i := range grouped {
				grouped[i] = byte(r.Uint32())
			}
			pos := 0
			for g := 0; g < G; g++ {
				off[g] = pos
				pos += count[g]
			}
			var c32 [256]uint32
			if k := refCountGroupsFast(ex, &gtab, G, &c32); k > 0 {
				for _, c := range ex[k:] {
					c32[gtab[c]]++
				}
				for g := range c32 {
					if int(c32[g]) != count[g] {
						t.Fatalf("n=%d G=%d: group %d counted %d times, want %d", n, G, g, c32[g], count[g])
					}
				}
			}
			want := make([]byte, n)
			maxW := refUngroupQuarters(want, ex, grouped, &gtab, &hc, &off, G, 256, qn)
			got := make([]byte, n)
			var o [256]uint32
			for g := 0; g < G; g++ {
				o[g] = uint32(off[g])
			}
			k, maxG := refUngroupFast(got, ex, grouped, &gtab, &o, G)
			if k == 0 {
				continue
			}
			if k != n&^63 {
				t.Fatalf("n=%d G=%d: did %d values", n, G, k)
			}
			var maxK byte
			for _, x := range want[:k] {
				maxK = max(maxK, x)
			}
			if !bytes.Equal(got[:k], want[:k]) || maxG != maxK {
				t.Fatalf("n=%d G=%d: tokens differ from the quarters", n, G)
			}
			if k == n && maxW != maxK {
				t.Fatalf("n=%d G=%d: the quarters' largest token is %d, the tokens' %d", n, G, maxW, maxK)
			}
			// the offsets moved on by each group's values
			var seen [256]uint32
			for _, c := range ex[:k] {
				seen[gtab[c]]++
			}
			for g := 0; g < G; g++ {
				if o[g] != uint32(off[g])+seen[g] {
					t.Fatalf("n=%d G=%d: offset of group %d is %d, want %d", n, G, g, o[g], uint32(off[g])+seen[g])
				}
			}
		}
	}
}

// The AVX-512 token coder against refTokens, on random bit patterns (every
// special value among them) and on pairs of nearby values, for every
// sub-bucket precision.
func TestRefTokensTwin(t *testing.T) {
	needFastPath(t, use.avx2 && use.avx512Tokens, "AVX-512 (F, CD) token coder")
	r := rand.New(rand.NewPCG(18, 19))
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
		for q := uint(0); q <= 6; q++ {
			p, _ := refSpecFor(d)
			if !p.setQ(q) {
				continue
			}
			top := uint32(1) << (8*p.size - 1)
			for _, n := range []int{0, 15, 16, 17, 1000, 65536} {
				src, ref := make([]byte, p.size*n), make([]byte, p.size*n)
				for i := 0; i < n; i++ {
					rv := r.Uint32()
					v := rv
					switch r.IntN(5) {
					case 0:
						v = r.Uint32() // anything
					case 1:
						v = rv + uint32(r.IntN(64)) - 32 // a few ULPs
					case 2:
						v = rv ^ top // the other sign
					case 3:
						v = rv + top // half the range away
					}
					storeValue(src, i, p.size, uint64(v))
					storeValue(ref, i, p.size, uint64(rv))
				}
				t1, c1, x1, n1 := make([]byte, n), make([]byte, n), make([]uint32, n), make([]byte, n)
				t2, c2, x2, n2 := make([]byte, n), make([]byte, n), make([]uint32, n), make([]byte, n)
				k := refTokensFast(t1, c1, x1, n1, src, ref, &p)
				refTokens(t1[k:], c1[k:], x1[k:], n1[k:], src[p.size*k:], ref[p.size*k:], &p)
				refTokens(t2, c2, x2, n2, src, ref, &p)
				if !bytes.Equal(t1, t2) || !bytes.Equal(c1, c2) || !slices.Equal(x1, x2) || !bytes.Equal(n1, n2) {
					t.Fatalf("%v q=%d n=%d: tokens differ from the Go coder", d, q, n)
				}
			}
		}
	}
}

// The AVX-512 passes that read the extra bits and add the differences to
// 2- and 4-byte references in one go, against deltasChecked + add, for
// every sub-bucket precision, with the extra bits running out at several
// points; and the exponents of 4-byte values against the plain shift.
func TestRefDeltasAddTwin(t *testing.T) {
	needFastPath(t, use.avx2, "AVX2 fused passes")
	if !use.avx512 {
		// the AVX2 kernel is still compared below
		needFastPathOr(t, "AVX-512 (F, VBMI) fused passes")
	}
	// the narrower lanes (VBMI2) are compared when the CPU has them, and
	// the AVX2 pass of 2-byte values (16-bit lanes, q ≥ 1) with AVX-512
	// switched off
	w, a512, a512q := use.avx512Lanes, use.avx512, use.avx512Wide
	defer setFeatures(func(*features) {})() // restores the tiers the loop below switches
	r := rand.New(rand.NewPCG(14, 15))
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
		for q := uint(0); q <= 6; q++ {
			p, _ := refSpecFor(d)
			if !p.setQ(q) {
				continue
			}
			tab := refTokTable(&p)
			for _, tier := range []string{"avx512", "narrow", "avx2"} {
				words := tier == "narrow"
				avx2 := tier == "avx2"
				if words && !w || avx2 && (!use.avx2 || p.size != 2 || q == 0) {
					continue
				}
				use.avx512Lanes = words
				use.avx512, use.avx512Wide = a512 && !avx2, a512q && !avx2
				step := 32 / p.size // values per AVX-512 step: 16 or 8, twice that in narrower lanes
				if words {
					step *= 2
				}
				if avx2 {
					step = 16
				}
				for _, n := range []int{0, step - 1, step, step + 1, 64, 65, 96, 1000, 65536} {
					ts, x := randTokens(r, &p, tab, n)
					ref := randBytes(r, p.size*n)
					for _, short := range []uint{0, 1, 13, x / 3, x} {
						lim := x - min(short, x)
						ap := p.applier(tab, randBytes(r, int(lim+refPad)))
						ds := make([]uint32, n)
						k2, b2 := ap.deltasChecked(ds, ts, 0, 8*lim)
						rs := make([]uint32, n)
						loadAll(rs, ref, p.size)
						ap.add(ds[:k2], rs[:k2], ds[:k2])
						want := make([]byte, p.size*n)
						storeAll(want[:p.size*k2], ds[:k2], p.size)
						got := make([]byte, p.size*n)
						tried, k1, b1 := ap.deltasAddFast(got, ref, ts, 0, 8*lim, q, p.size)
						if tried == 0 {
							continue
						}
						if tried != n&^(step-1) {
							t.Fatalf("%v q=%d n=%d %s: took on %d values", d, q, n, tier, tried)
						}
						// both stop at the same check (every 64 values) when
						// the bits run out within what the fast pass took on
						if k2 <= tried && (k1 != k2 || b1 != b2) || k2 > tried && k1 != tried {
							t.Fatalf("%v q=%d n=%d short=%d %s: stopped at %d (bit %d), Go at %d (bit %d)", d, q, n, short, tier, k1, b1, k2, b2)
						}
						m := min(k1, k2)
						if !bytes.Equal(got[:p.size*m], want[:p.size*m]) {
							t.Fatalf("%v q=%d n=%d short=%d %s: values differ from the Go twin", d, q, n, short, tier)
						}
					}
					if p.size != 4 {
						continue
					}
					ex := make([]byte, n)
					k := refExps32Fast(ex, ref, p.m, uint32(p.emask))
					for i := range ex[:k] {
						if ex[i] != byte(binary.LittleEndian.Uint32(ref[4*i:])>>p.m&uint32(p.emask)) {
							t.Fatalf("n=%d: exponent %d wrong", n, i)
						}
					}
				}
			}
		}
	}
}

// needFastPath skips a twin test whose fast path this build (noasm, not
// amd64) or CPU lacks: without it the test would compare the Go code with
// itself. With NZ_REQUIRE_AVX512 set (make test sets it where
// /proc/cpuinfo lists the AVX-512 features these paths use) a missing path
// fails instead: the machine has it, so the build must use it.
func needFastPath(t *testing.T, have bool, what string) {
	t.Helper()
	if have {
		return
	}
	if os.Getenv("NZ_REQUIRE_AVX512") != "" {
		t.Fatalf("%s: not used, though NZ_REQUIRE_AVX512 says this CPU has it", what)
	}
	t.Skipf("no %s here: nothing to compare", what)
}

// needFastPathOr is needFastPath for a part of a test that goes on without
// it: it fails under NZ_REQUIRE_AVX512, else logs what is not compared.
func needFastPathOr(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("NZ_REQUIRE_AVX512") != "" {
		t.Fatalf("%s: not used, though NZ_REQUIRE_AVX512 says this CPU has it", what)
	}
	t.Logf("no %s here: not compared", what)
}

// fieldEdgeValues are bit patterns of float type d that the split must
// carry exactly: ±0, ±Inf, NaNs with payloads, the smallest and largest
// subnormals and normals.
func fieldEdgeValues(f fieldSpec) []uint64 {
	emax := uint64(1)<<f.e - 1
	mmax := uint64(1)<<f.m - 1
	sign := uint64(0)
	if f.s == 1 {
		sign = 1 << (f.m + f.e)
	}
	var out []uint64
	for _, sg := range []uint64{0, sign} {
		for _, e := range []uint64{0, 1, emax / 2, emax - 1, emax} {
			for _, m := range []uint64{0, 1, mmax >> 1, 1 << f.m >> 1, mmax - 1, mmax} {
				out = append(out, sg|e<<f.m|m&mmax)
			}
		}
	}
	return out
}

// TestFieldsFastAllSpecs compares splitFields, mergeFields and statsFields
// with splitGeneric, mergeGeneric and statsGeneric for every float type
// (FP8 included: every spec has a fast loop), join width and
// dropped-bit count the format allows, on random and edge values, lengths
// 0, 1, odd and long, unaligned slices, and (merge) arbitrary symbol and
// plane bytes.
func TestFieldsFastAllSpecs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	fast := 0
	for _, d := range []dtype.DType{dtype.F16, dtype.BF16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2, dtype.F8E8M0} {
		base, _ := specFor(d)
		edges := fieldEdgeValues(base)
		for j := uint(0); j <= base.maxJoin(); j++ {
			for tz := uint(0); tz <= base.w()-j; tz++ {
				f := base
				f.j, f.tz = j, tz
				if fieldsFast(f) {
					fast++
				} else {
					t.Fatalf("%v j=%d tz=%d: no fast loop", d, j, tz)
				}
				np := f.planes()
				for _, n := range []int{0, 1, 2, 3, 7, 31, 33, 64, 255, 1001} {
					for _, off := range []int{0, 1, 3} {
						src := make([]byte, off+n*f.size)[off:]
						for i := 0; i < n; i++ {
							var v uint64
							if i < len(edges) && r.IntN(2) == 0 {
								v = edges[r.IntN(len(edges))]
							} else {
								v = r.Uint64()
							}
							if r.IntN(4) > 0 { // mostly values whose dropped bits are zero
								rr := (v>>(f.m+f.e))<<f.m | v&(1<<f.m-1)
								rr &^= 1<<tz - 1
								v = (rr>>f.m)<<(f.m+f.e) | (v>>f.m&(1<<f.e-1))<<f.m | rr&(1<<f.m-1)
							}
							storeValue(src, i, f.size, v)
						}
						mk := func() ([]byte, [][]byte) {
							s := make([]byte, off+n)[off:]
							p := make([][]byte, np)
							for i := range p {
								p[i] = make([]byte, off+n+i)[off+i:]
							}
							return s, p
						}
						var st1, st2 fieldStats
						st1.top[3] = 9 // both must clear the statistics
						statsFields(src, n, f, &st1)
						statsGeneric(src, n, f, &st2)
						if st1 != st2 {
							t.Fatalf("%v j=%d tz=%d n=%d off=%d: statsFields differs from statsGeneric", d, j, tz, n, off)
						}
						s1, p1 := mk()
						s2, p2 := mk()
						var h1, h2 [256]uint32
						h1[5] = 9 // both must clear the histogram
						splitFields(src, n, f, s1, p1, &h1)
						splitGeneric(src, n, f, s2, p2, &h2)
						if !bytes.Equal(s1, s2) || h1 != h2 {
							t.Fatalf("%v j=%d tz=%d n=%d off=%d: splitFields symbols differ", d, j, tz, n, off)
						}
						for p := range p1 {
							if !bytes.Equal(p1[p], p2[p]) {
								t.Fatalf("%v j=%d tz=%d n=%d off=%d: splitFields plane %d differs", d, j, tz, n, off, p)
							}
						}
						for round := 0; round < 2; round++ {
							if round == 1 { // arbitrary bytes, widths not respected
								for i := range s2 {
									s2[i] = byte(r.Uint32())
								}
								for p := range p2 {
									for i := range p2[p] {
										p2[p][i] = byte(r.Uint32())
									}
								}
							}
							o1 := make([]byte, off+n*f.size+1)[off:]
							o2 := make([]byte, off+n*f.size+1)[off:]
							o1[n*f.size], o2[n*f.size] = 0xa5, 0xa5 // past the end: untouched
							mergeFields(o1, n, f, s2, p2)
							mergeGeneric(o2, n, f, s2, p2)
							if !bytes.Equal(o1, o2) {
								t.Fatalf("%v j=%d tz=%d n=%d off=%d round %d: mergeFields differs from mergeGeneric", d, j, tz, n, off, round)
							}
							if round == 0 && tz == 0 && !bytes.Equal(o1[:n*f.size], src) {
								t.Fatalf("%v j=%d tz=%d n=%d: merge does not invert split", d, j, tz, n)
							}
							o3 := make([]byte, n*f.size)
							merge(o3, n, f, s2, p2)
							if round == 0 && !bytes.Equal(o3, o1[:n*f.size]) {
								t.Fatalf("%v j=%d tz=%d n=%d: merge differs from mergeGeneric", d, j, tz, n)
							}
						}
					}
				}
			}
		}
	}
	if fast != 102 { // F16 42, BF16 9, F32 25, F8E4M3 15, F8E5M2 10, F8E8M0 1
		t.Fatalf("only %d specs take the fast loops", fast)
	}
}
