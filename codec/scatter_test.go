package codec

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"neuralzip/dtype"
)

// TestScatterTwin: scatterNonzero (its AVX-512 expansion where the CPU has
// it, then the Go loop) writes what a plain value-by-value scatter writes,
// for 1-, 2- and 4-byte values, lengths around the 64-byte groups, masks
// from empty to full (whole words of ones and of zeros included), vals
// exactly as long as the mask needs (the expansion reads no further), and
// reports a zero among the placed values wherever it is; a vals shorter
// than the mask needs is refused.
func TestScatterTwin(t *testing.T) {
	if !use.avx512Gather {
		needFastPathOr(t, "AVX-512 VBMI2 sparse expansion")
	}
	rng := rand.New(rand.NewPCG(5, 7))
	for _, size := range []int{1, 2, 4} {
		for _, n := range []int{0, 1, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000, 4096 + 13} {
			for _, density := range []int{0, 3, 50, 97, 100} {
				nb := (n + 7) / 8
				mask := make([]byte, nb)
				m := 0
				for i := 0; i < n; i++ {
					if rng.IntN(100) < density {
						mask[i>>3] |= 1 << (i & 7)
						m++
					}
				}
				vals := make([]byte, m*size)
				for i := range vals {
					vals[i] = byte(rng.IntN(255) + 1)
				}
				want := plainScatter(n, vals, mask, size)
				for _, zeroAt := range []int{-1, 0, m / 2, m - 1} {
					if zeroAt >= m || (zeroAt < 0 && zeroAt != -1) {
						continue
					}
					v := bytes.Clone(vals)
					if zeroAt >= 0 {
						clear(v[zeroAt*size : (zeroAt+1)*size])
					}
					w := want
					if zeroAt >= 0 {
						w = plainScatter(n, v, mask, size)
					}
					for _, fast := range []bool{true, false} {
						restore := setFeatures(func(f *features) { f.avx512Gather = f.avx512Gather && fast })
						dst := bytes.Repeat([]byte{0xEE}, n*size)
						ok := scatterNonzero(dst, v, mask, size)
						restore()
						if ok != (zeroAt < 0) || !bytes.Equal(dst, w) {
							t.Fatalf("fast=%v size=%d n=%d density=%d zero at %d: ok=%v, bytes equal %v", fast, size, n, density, zeroAt, ok, bytes.Equal(dst, w))
						}
					}
				}
				if m > 0 && scatterNonzero(make([]byte, n*size), vals[:len(vals)-size], mask, size) {
					t.Fatalf("size=%d n=%d: a vals one value short passes", size, n)
				}
			}
		}
	}
}

// plainScatter is the scatter value by value: vals in order at the mask's
// set bits, zeros elsewhere.
func plainScatter(n int, vals, mask []byte, size int) []byte {
	out := make([]byte, n*size)
	k := 0
	for i := 0; i < n; i++ {
		if mask[i>>3]>>(i&7)&1 != 0 {
			copy(out[i*size:(i+1)*size], vals[k*size:(k+1)*size])
			k++
		}
	}
	return out
}

// TestColumnOnes: the column counts of the column-mask estimate, bit by
// bit, eight bits at a time (rows and first columns multiples of 8,
// more than 255 rows so that the byte sums flush) and a word at a time
// (rows under 64 values, with set bits past the mask's end), equal a plain count,
// and colCount says how many values each column has.
func TestColumnOnes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, row, col int }{
		{1, 8, 0}, {100, 8, 0}, {65536, 8, 0}, {65536, 64, 8}, {4097, 512, 504}, {30000, 24, 16},
		{100, 7, 3}, {65536, 100, 99}, {5, 1, 0}, {3, 16, 0},
		{100000, 2, 1}, {70001, 3, 2}, {129, 63, 62}, {64, 5, 4}, {1, 1, 0}, {65, 33, 0}, {1000, 1, 0},
	} {
		mask := make([]byte, (c.n+7)/8)
		for i := 0; i < c.n; i++ {
			if rng.IntN(3) == 0 {
				mask[i>>3] |= 1 << (i & 7)
			}
		}
		want, cnt := make([]uint32, c.row), make([]int, c.row)
		for i := 0; i < c.n; i++ {
			col := (c.col + i) % c.row
			want[col] += uint32(mask[i>>3] >> (i & 7) & 1)
			cnt[col]++
		}
		sp := &sparseEnc{mask: mask}
		sp.ones = make([]uint32, c.row)
		if c.row%8 == 0 && c.col%8 == 0 {
			sp.columnOnes8(c.n, c.row, c.col)
			if !slices.Equal(sp.ones, want) {
				t.Fatalf("%+v: columnOnes8 differs from the plain count", c)
			}
		}
		ones := make([]uint32, c.row)
		columnOnes(ones, mask, c.n, c.row, c.col)
		if !slices.Equal(ones, want) {
			t.Fatalf("%+v: columnOnes differs from the plain count", c)
		}
		if c.row < 64 {
			// the mask's bytes past n set: not counted
			mask := append(slices.Clone(mask), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
			if c.n%8 != 0 {
				mask[c.n>>3] |= 0xff << (c.n & 7)
			}
			ones := make([]uint32, c.row)
			columnOnesShort(ones, mask, c.n, c.row, c.col)
			if !slices.Equal(ones, want) {
				t.Fatalf("%+v: columnOnesShort differs from the plain count", c)
			}
		}
		for col := range cnt {
			if got := colCount(c.n, c.row, c.col, col); got != cnt[col] {
				t.Fatalf("%+v: colCount(%d) = %d, want %d", c, col, got, cnt[col])
			}
		}
	}
}

// TestSparseFirst: encodeFloatBlock codes a block with zeros sparse first
// and the dense form only where its estimate (denseMayWin) says it may be
// smaller; on blocks from barely to wholly zero, with trained-like values
// and with values whose residuals repeat (planes that entropy-code), it
// writes the smaller of the two forms or, where it skipped the dense one,
// a block at most 1/32 larger than that.
func TestSparseFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	skipped := 0
	for _, d := range []dtype.DType{dtype.BF16, dtype.F32, dtype.F16, dtype.F8E4M3} {
		for _, zp := range []int{13, 30, 50, 80, 97, 100} {
			for _, quantised := range []bool{false, true} {
				const n = 16384
				src := realisticValues(d, n, uint64(zp))
				size := d.Size()
				for i := 0; i < n; i++ {
					v := src[i*size : (i+1)*size]
					if quantised {
						// few distinct residuals: the planes entropy-code
						v[0] &= 0xe0
					}
					if rng.IntN(100) < zp {
						clear(v)
					}
				}
				p := blockPlan{dtype: d, float: true, sparseTry: true}
				be := &blockEncoder{sp: sparseEnc{on: true}}
				got := be.encodeFloatBlock(nil, src, p)
				dense := (&blockEncoder{}).encodeFloat(nil, src, d)
				sparse := (&blockEncoder{}).encodeSparse(nil, src, d, 0, 0)
				if countZeros(src, size)*sparseMinZeros < n {
					if !bytes.Equal(got, dense) {
						t.Errorf("%v %d%% zeros: too few zeros to try sparse, but not the dense form", d, zp)
					}
					continue
				}
				best := min(len(dense), len(sparse))
				tried := be.sp.denseMayWin()
				if tried && len(got) != best || !tried && 32*len(got) > 33*best {
					t.Errorf("%v %d%% zeros quantised=%v: %d bytes (dense tried: %v), dense %d, sparse %d", d, zp, quantised, len(got), tried, len(dense), len(sparse))
				}
				if !tried {
					skipped++
				}
			}
		}
	}
	if skipped == 0 {
		t.Error("no block skipped its dense form: the estimate saves nothing")
	}
}
