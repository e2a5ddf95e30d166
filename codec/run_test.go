package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"neuralzip/dtype"
)

// Under a setup, blocks after the first of a tensor run reuse its plane
// and repeat-probe decisions (runMemo): the archive is the same at every
// thread count, decodes bit-exact, and a run never crosses into the next
// tensor (a tensor whose mantissas compress is not stored packed because
// the tensor before it was).
func TestSetupRuns(t *testing.T) {
	// a: near-uniform sign and mantissa bits (stored packed)
	a := realisticValues(dtype.BF16, 200000, 1)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < len(a); i += 2 {
		v := binary.LittleEndian.Uint16(a[i:])&^0x807f | uint16(r.Uint32())&0x807f
		binary.LittleEndian.PutUint16(a[i:], v)
	}
	// b: exponents only, but for a few mantissa bits (its sign and
	// mantissa plane codes to almost nothing unless a decision carried
	// over from a says "packed")
	b := make([]byte, 2*200000)
	for i := 0; i < len(b); i += 2 {
		v := binary.LittleEndian.Uint16(a[i:]) &^ 0x807f
		if i%128 == 0 {
			v |= 1 // no trailing zero bits to drop: the plane keeps its width
		}
		binary.LittleEndian.PutUint16(b[i:], v)
	}
	src := append(append([]byte{}, a...), b...)
	segs := []Segment{
		{Name: "a", DType: dtype.BF16, Offset: 0, Length: int64(len(a))},
		{Name: "b", DType: dtype.BF16, Offset: int64(len(a)), Length: int64(len(b))},
	}
	s, err := BuildSetup(context.Background(), []Input{{Name: "m", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, SetupOptions{ChunkValues: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{1024, 4096} {
		var first []byte
		for _, th := range []int{1, 2, 3, 5} {
			arc, err := CompressBytes(context.Background(), src, segs, EncodeOptions{ChunkValues: chunk, Threads: th, Setup: s})
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = arc
				got, err := DecompressBytes(context.Background(), arc, DecodeOptions{})
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("chunk %d: roundtrip failed (%v)", chunk, err)
				}
				// a alone (its planes near uniform) and b alone
				ra, _ := CompressBytes(context.Background(), a, segs[:1], EncodeOptions{ChunkValues: chunk, Threads: 1, Setup: s})
				rb, _ := CompressBytes(context.Background(), b, []Segment{{Name: "b", DType: dtype.BF16, Length: int64(len(b))}}, EncodeOptions{ChunkValues: chunk, Threads: 1, Setup: s})
				if len(arc) > len(ra)+len(rb)+len(b)/16 {
					t.Errorf("chunk %d: archive of a then b is %d bytes, of each alone %d + %d: b's planes were coded as a's", chunk, len(arc), len(ra), len(rb))
				}
				continue
			}
			if !bytes.Equal(arc, first) {
				t.Fatalf("chunk %d: archive with %d threads differs from one thread's", chunk, th)
			}
		}
	}
}

// A run's first block records the cheapest tables it found (pickMemo);
// costed again among those only, the same histogram picks the same table,
// shift and cost, and a histogram of another scale picks among the
// recorded tables only.
func TestPickMemo(t *testing.T) {
	src := realisticValues(dtype.BF16, 1<<16, 5)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(src))}}
	s, err := BuildSetup(context.Background(), []Input{{Name: "m", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, SetupOptions{ChunkValues: 1024})
	if err != nil {
		t.Fatal(err)
	}
	sec := s.Section(dtype.BF16)
	if sec == nil {
		t.Fatal("no BF16 section")
	}
	if len(sec.Tables) <= selNeighbours {
		t.Fatalf("setup has %d tables; the test needs more than %d", len(sec.Tables), selNeighbours)
	}
	w := sec.spec.symW()
	hist := func(shift int) *[256]uint32 {
		var h [256]uint32
		for i := 0; i+1 < 2*4096; i += 2 {
			e := int(src[i+1]&0x7f)<<1 | int(src[i]>>7)
			h[max(0, min(e+shift, 1<<w-2))]++
		}
		return &h
	}
	costs := func(h *[256]uint32, memo *pickMemo) (int, int, uint64) {
		var nzb [256]byte
		k, mode := nonzeroSymbols(h, &nzb, 1<<w-2, 1<<(w-1)-1)
		return sec.pick(h, nzb[:k], mode, w, memo)
	}
	var memo pickMemo
	h := hist(0)
	b0, d0, c0 := costs(h, nil)
	b1, d1, c1 := costs(h, &memo)
	if b1 != b0 || d1 != d0 || c1 != c0 {
		t.Fatalf("recording pick: table %d shift %d cost %d, plain pick %d %d %d", b1, d1, c1, b0, d0, c0)
	}
	if memo.n == 0 || int(memo.n) > selNeighbours || int(memo.tables[0]) != b0 {
		t.Fatalf("memo %+v after a pick of table %d", memo, b0)
	}
	b2, d2, c2 := costs(h, &memo)
	if b2 != b0 || d2 != d0 || c2 != c0 {
		t.Fatalf("pick among the memo: table %d shift %d cost %d, plain pick %d %d %d", b2, d2, c2, b0, d0, c0)
	}
	in := func(b int) bool {
		for _, x := range memo.tables[:memo.n] {
			if int(x) == b {
				return true
			}
		}
		return false
	}
	// histograms of other shapes: counts raised to a power (sharper or
	// flatter than the run's first block)
	other := 0
	for _, shift := range []int{-9, -3, 4, 11} {
		h := hist(shift)
		if shift%2 != 0 {
			for i, c := range h {
				h[i] = uint32(math.Pow(float64(c), 1+float64(shift)/12))
			}
		}
		b, _, c := costs(h, &memo)
		if b != int(memo.tables[0]) {
			other++
		}
		if !in(b) {
			t.Errorf("shift %d: picked table %d, not among the run's %v", shift, b, memo.tables[:memo.n])
		}
		// the cheapest of the run's tables, each costed alone
		least := ^uint64(0)
		for _, x := range memo.tables[:memo.n] {
			one := pickMemo{n: 1}
			one.tables[0] = x
			if _, _, cx := costs(h, &one); cx < least {
				least = cx
			}
		}
		if c != least {
			t.Errorf("shift %d: pick among the run's tables costs %d, the cheapest of them %d", shift, c, least)
		}
	}
	if other == 0 {
		t.Error("every histogram picked the run's first table: the test does not exercise the choice among the run's tables")
	}
}
