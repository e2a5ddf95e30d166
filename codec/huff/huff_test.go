package huff

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/klauspost/compress/huff0"
)

// huffInputs are symbol streams with different shapes.
func huffInputs() map[string][]byte {
	r := rand.New(rand.NewPCG(7, 7))
	in := map[string][]byte{}
	geo := func(n int, p float64, base byte) []byte {
		b := make([]byte, n)
		for i := range b {
			k := 0
			for r.Float64() > p && k < 200 {
				k++
			}
			b[i] = base + byte(k)
		}
		return b
	}
	in["two-symbols"] = []byte{1, 2, 1, 1, 2, 1, 2, 2, 1, 1, 1, 1, 1, 2}
	in["geometric-small"] = geo(100, 0.5, 100)
	in["geometric-4x"] = geo(70000, 0.4, 90)
	in["skewed-long-codes"] = geo(5000, 0.9, 0) // forces length limiting
	u := make([]byte, 4096)
	for i := range u {
		u[i] = byte(r.IntN(256))
	}
	in["uniform-256"] = u
	sk := make([]byte, 20000)
	for i := range sk {
		if r.IntN(1000) == 0 {
			sk[i] = byte(r.IntN(256))
		} else {
			sk[i] = 7
		}
	}
	in["one-dominant-many-rare"] = sk
	return in
}

func TestHuffRoundTripThroughHuff0(t *testing.T) {
	for name, src := range huffInputs() {
		t.Run(name, func(t *testing.T) {
			var hist [256]uint32
			countHist(&hist, src)
			var ht Table
			if err := ht.Build(&hist); err != nil {
				t.Fatal(err)
			}
			if ht.TL > MaxBits {
				t.Fatalf("table log %d", ht.TL)
			}
			// Kraft sum must be exactly 1 (huff0 requires complete codes).
			var kraft uint64
			for s := range 256 {
				if l := ht.Enc[s] >> 16; l != 0 {
					kraft += 1 << (MaxBits - l)
				}
			}
			if kraft != 1<<MaxBits {
				t.Fatalf("Kraft sum %d/%d", kraft, 1<<MaxBits)
			}
			for _, x4 := range []bool{false, true} {
				if x4 && len(src) < 16 {
					continue
				}
				var out []byte
				var err error
				if x4 {
					out, err = ht.Append4X(nil, src)
				} else {
					out, err = ht.Append1X(nil, src)
				}
				if err != nil {
					t.Fatal(err)
				}
				var s huff0.Scratch
				s2, rest, err := huff0.ReadTable(out, &s)
				if err != nil {
					t.Fatalf("x4=%v: huff0 rejects our table: %v", x4, err)
				}
				dst := make([]byte, 0, len(src))
				var got []byte
				if x4 {
					got, err = s2.Decoder().Decompress4X(dst, rest)
				} else {
					got, err = s2.Decoder().Decompress1X(dst, rest)
				}
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("x4=%v: huff0 decode: %v (equal=%v)", x4, err, bytes.Equal(got, src))
				}
				// Twin: huff0's own encoder with our table gives the same bits.
				s2.Reuse = huff0.ReusePolicyMust
				var ref []byte
				if x4 {
					ref, _, err = huff0.Compress4X(src, s2)
				} else {
					ref, _, err = huff0.Compress1X(src, s2)
				}
				hdr, _ := ht.AppendHeader(nil)
				if err != nil {
					// huff0 refuses to reuse a table when the output would
					// not shrink (uniform input); nothing to compare then.
					if name != "uniform-256" && name != "two-symbols" {
						t.Fatalf("x4=%v: huff0 would not encode with our table: %v", x4, err)
					}
				} else if !bytes.Equal(ref, out[len(hdr):]) {
					t.Fatalf("x4=%v: stream differs from huff0's encoder with the same table", x4)
				}
			}
		})
	}
}

// The code lengths must be optimal: compare with an unrestricted Huffman
// code where the limit does not bind.
func TestHuffOptimal(t *testing.T) {
	hist := [256]uint32{10: 45, 11: 13, 12: 12, 13: 16, 14: 9, 15: 5}
	var ht Table
	if err := ht.Build(&hist); err != nil {
		t.Fatal(err)
	}
	// classic example: optimal cost is 224 bits
	if c := ht.Cost(&hist); c != 224 {
		t.Fatalf("cost %d, want 224", c)
	}
}

func BenchmarkHuffEncode4X(b *testing.B) {
	src := huffInputs()["geometric-4x"][:1<<15]
	var hist [256]uint32
	countHist(&hist, src)
	var ht Table
	var out []byte
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		ht.Build(&hist)
		out, _ = ht.Append4X(out[:0], src)
	}
}

func BenchmarkHuff0Encode4X(b *testing.B) {
	src := huffInputs()["geometric-4x"][:1<<15]
	var s huff0.Scratch
	s.Reuse = huff0.ReusePolicyNone
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		huff0.Compress4X(src, &s)
	}
}

// The two-stream encoder, in assembly and in Go, must equal two
// single-stream encodes for any pair of lengths and any code lengths (up
// to 11 bits, where four codes fill the container to its limit).
func TestHuffEnc2Twin(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	inputs := huffInputs()
	long := make([]byte, 5000)
	for i := range long {
		// rare symbols get 11-bit codes
		long[i] = byte(r.ExpFloat64() * 3)
		if r.IntN(40) == 0 {
			long[i] = byte(100 + r.IntN(150))
		}
	}
	inputs["long-codes"] = long
	maxTL := uint8(0)
	for name, src := range inputs {
		var hist [256]uint32
		countHist(&hist, src)
		var ht Table
		if err := ht.Build(&hist); err != nil {
			continue
		}
		for _, l := range [][2]int{{0, 0}, {1, 0}, {0, 7}, {1, 1}, {3, 3}, {4, 4}, {5, 5}, {8, 7}, {13, 9}, {100, 101}, {4096, 4093}, {333, 1000}} {
			if l[0]+l[1] > len(src) {
				continue
			}
			a, b := src[:l[0]], src[l[0]:l[0]+l[1]]
			r0, r1 := make([]byte, StreamMax(len(a))), make([]byte, StreamMax(len(b)))
			m0 := encodeHuffStream(r0, a, &ht.Enc)
			m1 := encodeHuffStream(r1, b, &ht.Enc)
			for _, asm := range []bool{false, true} {
				if asm && !use.Enc2 {
					continue
				}
				restore := setFeatures(func(f *Features) { f.Enc2 = asm })
				o0, o1 := make([]byte, StreamMax(len(a))), make([]byte, StreamMax(len(b)))
				n0, n1 := encodeHuff2(o0, o1, a, b, &ht.EncL)
				restore()
				if !bytes.Equal(o0[:n0], r0[:m0]) || !bytes.Equal(o1[:n1], r1[:m1]) {
					t.Fatalf("%s, lengths %v, assembly %v: two-stream encoder differs", name, l, asm)
				}
			}
		}
		maxTL = max(maxTL, ht.TL)
	}
	if maxTL != MaxBits {
		t.Fatalf("longest code %d bits, want inputs with %d", maxTL, MaxBits)
	}
}

// build must match the optimal (package-merge) code where the length limit
// does not bind, and stay close to it where it does.
func TestHuffBuildNearOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	inputs := huffInputs()
	// plus random histograms of many shapes
	for i := 0; i < 300; i++ {
		var h [256]uint32
		k := 2 + r.IntN(255)
		for j := 0; j < k; j++ {
			h[r.IntN(256)] = uint32(1 + r.ExpFloat64()*float64(1+r.IntN(100000)))
		}
		var b []byte
		for s, c := range h {
			for range min(c, 3) {
				b = append(b, byte(s))
			}
		}
		_ = b
		var fast, opt Table
		e1, e2 := fast.Build(&h), opt.BuildOptimal(&h)
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("build errors differ: %v / %v", e1, e2)
		}
		if e1 != nil {
			continue
		}
		cf, co := fast.Cost(&h), opt.Cost(&h)
		if cf < co {
			t.Fatalf("fast code beats the optimum: %d < %d", cf, co)
		}
		if float64(cf) > float64(co)*1.01 {
			t.Fatalf("fast code %.3f%% above optimum", 100*(float64(cf)/float64(co)-1))
		}
		var kraft uint64
		for s := range 256 {
			if l := fast.Enc[s] >> 16; l != 0 {
				if l > MaxBits {
					t.Fatalf("length %d", l)
				}
				kraft += 1 << (MaxBits - l)
			}
		}
		if kraft != 1<<MaxBits {
			t.Fatalf("Kraft sum %d", kraft)
		}
	}
	for name, src := range inputs {
		var h [256]uint32
		countHist(&h, src)
		var fast, opt Table
		if fast.Build(&h) != nil || opt.BuildOptimal(&h) != nil {
			continue
		}
		if opt.TL < MaxBits && fast.Cost(&h) != opt.Cost(&h) {
			t.Fatalf("%s: unlimited Huffman cost %d != optimal %d", name, fast.Cost(&h), opt.Cost(&h))
		}
	}
}

// TestRadixSort: radixSort orders keys as slices.Sort does, for the key
// range sortKeys produces (counts up to 2^18, a symbol byte).
func TestRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	var tmp []uint64
	for it := 0; it < 2000; it++ {
		// as sortKeys makes them: one key per symbol, in symbol order
		n := radixSortMin + rng.IntN(256-radixSortMin+1)
		var keys []uint64
		maxCount := []uint64{1 << 4, 1 << 9, 1 << 18, 1 << 32}[it%4]
		for s := 0; len(keys) < n; s++ {
			if rng.IntN(256-s) < n-len(keys) {
				keys = append(keys, (1+rng.Uint64N(maxCount))<<8|uint64(s))
			}
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		tmp = radixSort(keys, tmp)
		if !slices.Equal(keys, want) {
			t.Fatalf("n=%d: radixSort differs from slices.Sort", n)
		}
	}
}

// countHist sets hist to the histogram of p.
func countHist(hist *[256]uint32, p []byte) {
	*hist = [256]uint32{}
	for _, b := range p {
		hist[b]++
	}
}

// setFeatures switches fast paths as set says, for a test to compare tiers:
//
//	defer setFeatures(func(f *Features) { f.DecAsm = false })()
func setFeatures(set func(f *Features)) (restore func()) {
	f := use
	set(&f)
	return SetFeatures(f)
}

// TestStreamAsmTwin: the assembly stream encoder writes what its Go twin
// does, at every length around its 4-symbol rounds.
func TestStreamAsmTwin(t *testing.T) {
	if !use.StreamAsm {
		t.Skip("no assembly stream encoder on this CPU or build")
	}
	r := rand.New(rand.NewPCG(10, 11))
	for _, n := range []int{0, 1, 4, 5, 6, 9, 10, 11, 1000, 65537} {
		src := make([]byte, n)
		var h [256]uint32
		for i := range src {
			src[i] = byte(r.ExpFloat64() * 6)
			h[src[i]]++
		}
		h[200]++
		h[201]++
		var ht Table
		if err := ht.Build(&h); err != nil {
			t.Fatal(err)
		}
		o1, o2 := make([]byte, StreamMax(n)), make([]byte, StreamMax(n))
		l1 := encodeHuffStreamFast(o1, src, &ht.Enc)
		l2 := encodeHuffStream(o2, src, &ht.Enc)
		if l1 != l2 || !bytes.Equal(o1[:l1], o2[:l2]) {
			t.Fatalf("n=%d: assembly Huffman stream differs from Go", n)
		}
	}
}
