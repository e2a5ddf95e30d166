package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// activationFiles are the files of ../shared/activations the sparse tests
// use (README.md there: ReLU² activations, BF16, FP8 E4M3 and F32).
var activationFiles = []string{
	"relu2-step000.bf16.safetensors", "relu2-step000.f8e4m3.safetensors",
	"relu2-step200.bf16.safetensors", "relu2-step200.f8e4m3.safetensors",
	"relu2-step800.bf16.safetensors", "relu2-step800.f8e4m3.safetensors",
	"relu2-step800.f32.safetensors",
}

// sparseBlocks counts the float blocks of an archive in the sparse form.
func sparseBlocks(t *testing.T, arc []byte) (sparse, float int) {
	t.Helper()
	rd, err := NewMemReader(arc)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range rd.Files()[0].Blocks() {
		if b.Kind != KindFloat {
			continue
		}
		float++
		if b.Compressed > 0 && FloatForm(arc[b.Payload]) == FormSparse {
			sparse++
		}
	}
	return sparse, float
}

// TestSparseRoundTripReal codes every activation file: bit-exact, version
// 8, sparse blocks chosen where the file is sparse, and never larger than
// with sparse blocks off.
func TestSparseRoundTripReal(t *testing.T) {
	for _, name := range activationFiles {
		src := realFile(t, "activations/"+name)
		segs := safetensorsSegments(src)
		arc := roundTrip(t, src, segs, EncodeOptions{Threads: 2})
		if v := binary.LittleEndian.Uint16(arc[8:]); v != sparseVersion {
			t.Errorf("%s: version %d, want %d", name, v, sparseVersion)
		}
		sp, fl := sparseBlocks(t, arc)
		if sp == 0 {
			t.Errorf("%s: no sparse block among %d float blocks", name, fl)
		}
		t.Logf("%s: %d -> %d bytes (%.3f×), %d of %d float blocks sparse", name, len(src), len(arc), float64(len(src))/float64(len(arc)), sp, fl)
	}
}

// sparseValues makes n values of d, each zero with probability zeroPct %,
// the others random nonzero bit patterns (NaN and Inf included), all with
// sign bit 0 when positive.
func sparseValues(d dtype.DType, n, zeroPct int, positive bool, seed uint64) []byte {
	size := d.Size()
	l, _ := d.FloatLayout()
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]byte, n*size)
	for i := 0; i < n; i++ {
		if r.IntN(100) < zeroPct {
			continue
		}
		var v uint64
		for v == 0 {
			v = r.Uint64() & (1<<(8*size) - 1)
			if positive && l.Sign == 1 {
				v &^= 1 << (8*size - 1)
			}
		}
		storeValue(out, i, size, v)
	}
	return out
}

func sparseDecoder() *blockDecoder {
	bd := &blockDecoder{}
	bd.sp.on = true
	return bd
}

// TestSparseBlockRoundTrip codes blocks of every sparse type, density,
// sign pattern, row length and mask method and decodes them.
func TestSparseBlockRoundTrip(t *testing.T) {
	defer func(f int) { sparseForce = f }(sparseForce)
	be := &blockEncoder{}
	bd := sparseDecoder()
	types := []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2, dtype.F8E8M0}
	for _, d := range types {
		for _, n := range []int{1, 7, 1003, 4096} {
			for _, zp := range []int{0, 50, 90, 99, 100} {
				for _, pos := range []bool{false, true} {
					src := sparseValues(d, n, zp, pos, uint64(n*1000+zp))
					for _, row := range []int{0, 1, 7, 512} {
						for _, force := range []int{-1, maskBitmap, maskGaps, maskColumns} {
							sparseForce = force
							col := n % max(row, 1)
							p := be.encodeSparse(nil, src, d, row, col)
							h, err := ReadSparseHeader(p, n, d)
							if err != nil {
								t.Fatalf("%v n=%d zeros=%d%% row=%d: header: %v", d, n, zp, row, err)
							}
							if force >= 0 && int(h.Mask) != force {
								t.Fatalf("mask %v, forced %d", h.Mask, force)
							}
							if want := signDroppable(src, d); h.SignDropped != want {
								t.Fatalf("%v positive=%v zeros=%d%%: sign dropped %v", d, pos, zp, h.SignDropped)
							}
							dst := bytes.Repeat([]byte{0xAA}, len(src)) // every byte must be written
							if err := bd.decode(dst, p, kindFloat, d); err != nil {
								t.Fatalf("%v n=%d zeros=%d%% row=%d mask %v: %v", d, n, zp, row, h.Mask, err)
							}
							if !bytes.Equal(dst, src) {
								t.Fatalf("%v n=%d zeros=%d%% row=%d mask %v: roundtrip mismatch", d, n, zp, row, h.Mask)
							}
						}
					}
				}
			}
		}
	}
}

// signDroppable: d has a sign bit, and no value of src has it set.
func signDroppable(src []byte, d dtype.DType) bool {
	l, _ := d.FloatLayout()
	if l.Sign == 0 {
		return false
	}
	size := d.Size()
	for i := 0; i < len(src)/size; i++ {
		if loadValue(src, i, size)>>(8*size-1) != 0 {
			return false
		}
	}
	return true
}

// TestSparseMethodsMatchDensity: each mask method wins where it should —
// gaps for very sparse blocks, the column context where columns differ.
func TestSparseMethodsMatchDensity(t *testing.T) {
	be := &blockEncoder{}
	mask := func(src []byte, d dtype.DType, row int) MaskMethod {
		h, err := ReadSparseHeader(be.encodeSparse(nil, src, d, row, 0), len(src)/d.Size(), d)
		if err != nil {
			t.Fatal(err)
		}
		return h.Mask
	}
	// 0.1 % nonzero values: runs beat one bit per value by far
	src := make([]byte, 2*65536)
	for i := 0; i < 65536; i += 997 {
		binary.LittleEndian.PutUint16(src[2*i:], 0x3f80)
	}
	if m := mask(src, dtype.BF16, 0); m == MaskBitmap {
		t.Errorf("a block with 0.1 %% nonzero values codes its mask as a bitmap")
	}
	// columns 0..63 always nonzero, the others always zero, rows of 128:
	// only the column context sees it
	clear(src)
	r := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 65536; i++ {
		if i%128 < 64 && r.IntN(8) != 0 {
			binary.LittleEndian.PutUint16(src[2*i:], 0x3f80|uint16(r.IntN(128)))
		}
	}
	// by bytes alone (Best) the column mask wins; on the default path it
	// is taken only where its saving pays for its decoding time
	be.best = true
	if m := mask(src, dtype.BF16, 128); m != MaskColumns {
		t.Errorf("column-structured mask coded as %v by bytes alone, want columns", m)
	}
	be.best = false
	cols := len(be.encodeSparse(nil, src, dtype.BF16, 128, 0))
	be.best = true
	fast := len((&blockEncoder{sp: sparseEnc{fast: true}}).encodeSparse(nil, src, dtype.BF16, 128, 0))
	if m, pays := mask(src, dtype.BF16, 128), slowerPays(fast-cols, 65536, costColumnsPs); (m == MaskColumns) != pays {
		t.Errorf("default path: %v, but the column mask saves %d bytes (pays: %v)", m, fast-cols, pays)
	}
}

// TestColumnsRule: on the default path a block takes the column mask only
// where its saving over the fast masks pays for its decoding time
// (slowerPays at costColumnsPs), and by bytes alone (Best) wherever it is
// smaller. The blocks: columns of different zero rates, from barely
// structured (weights) to strongly (activations).
func TestColumnsRule(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	took, left := 0, 0
	for _, spread := range []int{0, 2, 8, 32, 100} {
		const n, row = 65536, 256
		rate := make([]int, row)
		for c := range rate {
			rate[c] = max(0, min(100, 55+r.IntN(2*spread+1)-spread))
		}
		src := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			if r.IntN(100) >= rate[i%row] {
				binary.LittleEndian.PutUint16(src[2*i:], 0x3f80|uint16(r.IntN(128)))
			}
		}
		size := func(be *blockEncoder) (int, MaskMethod) {
			out := be.encodeSparse(nil, src, dtype.BF16, row, 0)
			h, err := ReadSparseHeader(out, n, dtype.BF16)
			if err != nil {
				t.Fatal(err)
			}
			return len(out), h.Mask
		}
		fast, fm := size(&blockEncoder{sp: sparseEnc{fast: true}})
		best, bm := size(&blockEncoder{best: true})
		def, dm := size(&blockEncoder{})
		if fm == MaskColumns || (bm == MaskColumns) != (best < fast) {
			t.Fatalf("spread %d: fast %v, best %v (%d vs %d bytes)", spread, fm, bm, best, fast)
		}
		pays := bm == MaskColumns && slowerPays(fast-best, n, costColumnsPs)
		switch {
		case pays && (dm != MaskColumns || def != best):
			t.Errorf("spread %d: the column mask saves %d bytes, which pays, but the default path wrote %v (%d bytes)", spread, fast-best, dm, def)
		case !pays && (dm == MaskColumns || def != fast):
			t.Errorf("spread %d: the column mask saves %d bytes, which does not pay, but the default path wrote %v (%d bytes)", spread, fast-best, dm, def)
		}
		if pays {
			took++
		} else {
			left++
		}
	}
	if took == 0 || left == 0 {
		t.Errorf("the blocks should include both sides of the rule: %d took the column mask, %d did not", took, left)
	}
}

// TestSparseVersionGate: a sparse block in an archive of version 7 is
// refused; inputs without zeros stay version 7.
func TestSparseVersionGate(t *testing.T) {
	d := dtype.BF16
	vals := sparseValues(d, 70000, 90, true, 5)
	src, segs := safetensorsFile(`{"format":"pt"}`, []refT{{"act", d, []int64{70000 / 500, 500}, vals}})
	arc := roundTrip(t, src, segs, EncodeOptions{})
	if v := binary.LittleEndian.Uint16(arc[8:]); v != sparseVersion {
		t.Fatalf("version %d, want %d", v, sparseVersion)
	}
	if sp, _ := sparseBlocks(t, arc); sp == 0 {
		t.Fatal("no sparse block")
	}
	old := withVersion(t, arc, denseVersion)
	if _, err := DecompressBytes(context.Background(), old, DecodeOptions{}); err == nil || !strings.Contains(err.Error(), "sparse block in an archive of version") {
		t.Fatalf("version-7 archive with a sparse block: err = %v", err)
	}
	dense, dsegs := safetensorsFile(`{"format":"pt"}`, []refT{{"w", d, []int64{100, 700}, sparseValues(d, 70000, 0, false, 6)}})
	arc = roundTrip(t, dense, dsegs, EncodeOptions{})
	if v := binary.LittleEndian.Uint16(arc[8:]); v != denseVersion {
		t.Fatalf("dense input: version %d, want %d", v, denseVersion)
	}
}

// TestSparseThreadsDeterministic: the same archive at any thread count.
func TestSparseThreadsDeterministic(t *testing.T) {
	src := realFile(t, "activations/relu2-step200.bf16.safetensors")
	segs := safetensorsSegments(src)
	a1, err := CompressBytes(context.Background(), src, segs, EncodeOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	a4, err := CompressBytes(context.Background(), src, segs, EncodeOptions{Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a1, a4) {
		t.Fatal("archives differ between 1 and 4 threads")
	}
}

// TestFP8Specials: every code of F8_E4M3 (NaN S.1111.111) and F8_E5M2
// (Inf, NaNs) roundtrips, dense and among zeros (sparse blocks).
func TestFP8Specials(t *testing.T) {
	for _, d := range []dtype.DType{dtype.F8E4M3, dtype.F8E5M2} {
		all := make([]byte, 256*16)
		for i := range all {
			all[i] = byte(i)
		}
		sparse := make([]byte, 256*64)
		for i := 0; i < 256; i++ {
			sparse[64*i+i%64] = byte(i) // code 0 stays a zero
		}
		for _, vals := range [][]byte{all, sparse} {
			src, segs := safetensorsFile(`{"format":"pt"}`, []refT{{"x", d, []int64{int64(len(vals) / 64), 64}, vals}})
			roundTrip(t, src, segs, EncodeOptions{})
		}
		// the sparse block itself, every mask method
		bd := sparseDecoder()
		be := &blockEncoder{}
		for _, force := range []int{maskBitmap, maskGaps, maskColumns} {
			func() {
				defer func(f int) { sparseForce = f }(sparseForce)
				sparseForce = force
				p := be.encodeSparse(nil, sparse, d, 64, 0)
				dst := make([]byte, len(sparse))
				if err := bd.decode(dst, p, kindFloat, d); err != nil || !bytes.Equal(dst, sparse) {
					t.Fatalf("%v mask %d: %v", d, force, err)
				}
			}()
		}
	}
}

// gatherSimple is the plain twin of gatherNonzero: value by value.
func gatherSimple(src []byte, size int, vals, mask []byte, sbit uint) (m int, signs bool) {
	clear(mask)
	for i := 0; i < len(src)/size; i++ {
		v := loadValue(src, i, size)
		if v != 0 {
			mask[i>>3] |= 1 << (i & 7)
			storeValue(vals, m, size, v)
			m++
			signs = signs || v>>sbit&1 != 0
		}
	}
	return m, signs
}

// TestSparseTwins compares the word-at-a-time gather and the specialised
// scatters with their plain twins (gatherSimple; mergeGeneric +
// scatterNonzero) on every type, lengths around the 8-value words, and
// every density.
func TestSparseTwins(t *testing.T) {
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2} {
		l, _ := d.FloatLayout()
		size := d.Size()
		for _, n := range []int{1, 7, 8, 9, 63, 64, 65, 1000} {
			for _, zp := range []int{0, 30, 85, 99, 100} {
				for _, pos := range []bool{false, true} {
					src := sparseValues(d, n, zp, pos, uint64(n+zp))
					nb := (n + 7) / 8
					m1, v1, k1 := make([]byte, nb), make([]byte, len(src)), 0
					m2, v2 := make([]byte, nb), make([]byte, len(src))
					// the fast splits write the generic split's bytes
					for _, row := range []int{0, 64} {
						sparseGenericSplit = true
						slow := (&blockEncoder{}).encodeSparse(nil, src, d, row, 0)
						sparseGenericSplit = false
						if fast := (&blockEncoder{}).encodeSparse(nil, src, d, row, 0); !bytes.Equal(fast, slow) {
							t.Fatalf("%v n=%d zeros=%d%%: the fast split codes %d bytes, the generic %d", d, n, zp, len(fast), len(slow))
						}
					}
					k1, s1 := gatherNonzero(src, size, v1, m1, uint(l.Exp+l.Mant))
					k2, s2 := gatherSimple(src, size, v2, m2, uint(l.Exp+l.Mant))
					if k1 != k2 || s1 != s2 || !bytes.Equal(m1, m2) || !bytes.Equal(v1[:k1*size], v2[:k2*size]) {
						t.Fatalf("%v n=%d zeros=%d%%: gather (%d, %v) vs simple (%d, %v)", d, n, zp, k1, s1, k2, s2)
					}
					// scatter: split the nonzero values as the encoder does, merge back both ways
					f, _ := specFor(d)
					if !s1 {
						f.s = 0
					}
					if k1 == 0 {
						continue
					}
					var st fieldStats
					statsGeneric(v1, k1, f, &st)
					f.j, f.tz = chooseJoin(&st, f, k1)
					syms := make([]byte, k1)
					planes := make([][]byte, f.planes())
					for p := range planes {
						planes[p] = make([]byte, k1)
					}
					var hist [256]uint32
					splitGeneric(v1, k1, f, syms, planes, &hist)
					fast := bytes.Repeat([]byte{0xEE}, len(src))
					var scratch []byte
					ok1 := scatterMerge(fast, m1, f, syms, planes, &scratch)
					slow := bytes.Repeat([]byte{0xEE}, len(src))
					vals := make([]byte, k1*size)
					mergeGeneric(vals, k1, f, syms, planes)
					ok2 := scatterNonzero(slow, vals, m1, size)
					if ok1 != ok2 || !bytes.Equal(fast, slow) || !bytes.Equal(fast, src) {
						t.Fatalf("%v n=%d zeros=%d%% (j %d, tz %d, planes %d): scatterMerge differs from its twin", d, n, zp, f.j, f.tz, f.planes())
					}
				}
			}
		}
	}
	// a zero among the nonzero values is reported by every path
	mask := []byte{0xff}
	for _, c := range []struct {
		f      fieldSpec
		planes [][]byte
	}{
		{fieldSpec{size: 1, e: 4, m: 3, j: 3}, nil},                                                          // FP8 symbols as values
		{fieldSpec{size: 2, e: 8, m: 7}, [][]byte{make([]byte, 8)}},                                          // BF16 without a sign (mergeSym16)
		{fieldSpec{size: 2, e: 5, m: 10, s: 1, j: 3}, [][]byte{make([]byte, 8)}},                             // generic 2-byte
		{fieldSpec{size: 4, e: 8, m: 23, s: 1}, [][]byte{make([]byte, 8), make([]byte, 8), make([]byte, 8)}}, // via mergeGeneric
	} {
		syms := []byte{1, 2, 3, 0, 5, 6, 7, 8}
		var scratch []byte
		if scatterMerge(make([]byte, 8*c.f.size), mask, c.f, syms, c.planes, &scratch) {
			t.Errorf("%+v: a zero value passes", c.f)
		}
	}
}

// TestColDivide: the reciprocal division of the column model is floor
// division for every divisor it takes and the dividends it can see
// (below 2^31), including the extremes and a sweep.
func TestColDivide(t *testing.T) {
	r := colRecips()
	for d := uint32(2); d < uint32(len(r)); d++ {
		for _, a := range []uint32{0, 1, d - 1, d, d + 1, 2*d - 1, 1<<16 - 1, 1 << 16, 1<<31 - 1, ^uint32(0), ^uint32(0) - d + 1, 0x9e3779b9} {
			if got := divR(r, a, d); got != a/d {
				t.Fatalf("%d/%d = %d, want %d", a, d, got, a/d)
			}
		}
		for a := uint32(d * 7919); a < 1<<31-1<<20; a += 1<<20 + d {
			if got := divR(r, a, d); got != a/d {
				t.Fatalf("%d/%d = %d, want %d", a, d, got, a/d)
			}
		}
	}
}

// TestSparseHostileRow: a column mask may not name a row longer than its
// block, whose model a tiny block would otherwise make every decoder
// clear (768 KiB for a row of 65,536: an archive of such blocks
// amplifies its size by 10^5 in work).
func TestSparseHostileRow(t *testing.T) {
	bd := sparseDecoder()
	for _, row := range []uint64{11, 65536, 1 << 20} {
		p := []byte{formSparse, 0, maskColumns}
		p = binary.AppendUvarint(p, row)
		p = append(p, 0, 5, 0, 0, 0, 0, 0)
		err := bd.decode(make([]byte, 20), p, kindFloat, dtype.BF16)
		if err == nil || !strings.Contains(err.Error(), "bad row length") {
			t.Fatalf("row %d in a block of 10 values: %v", row, err)
		}
	}
	// the encoder shortens a tensor's row to the block
	be := &blockEncoder{}
	defer func(f int) { sparseForce = f }(sparseForce)
	sparseForce = maskColumns
	src := sparseValues(dtype.BF16, 10, 50, true, 1)
	p := be.encodeSparse(nil, src, dtype.BF16, 512, 7)
	if h, err := ReadSparseHeader(p, 10, dtype.BF16); err != nil || h.Row != 10 || h.Col != 7 {
		t.Fatalf("header %+v, %v", h, err)
	}
}

// countZeros (eight bytes at a time) against the plain count, for every
// size, length and alignment, on values with zero and near-zero lanes.
func TestCountZerosTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, size := range []int{1, 2, 4} {
		for n := 0; n < 70; n++ {
			for _, off := range []int{0, 1, 3} {
				buf := make([]byte, off+n)
				p := buf[off:]
				for i := range p {
					switch r.IntN(4) {
					case 0, 1:
						p[i] = 0
					case 2:
						p[i] = byte(1 << r.IntN(8)) // one bit: 0x80 and 0x01 lanes
					default:
						p[i] = byte(r.Uint32())
					}
				}
				if got, want := countZeros(p, size), countZerosGo(p, size); got != want {
					t.Fatalf("size %d n %d off %d: %d zeros, want %d", size, n, off, got, want)
				}
			}
		}
	}
}

// TestGatherTiers: gatherNonzero with and without its AVX-512 part (where
// the CPU has it) equals the plain twin on every type, on lengths around
// the 64-byte groups, at an odd offset into the buffer, and with vals
// exactly as long as src (the assembly stores whole groups).
func TestGatherTiers(t *testing.T) {
	for _, fast := range []bool{true, false} {
		restore := setFeatures(func(f *features) { f.avx512Gather = f.avx512Gather && fast })
		for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2} {
			l, _ := d.FloatLayout()
			size := d.Size()
			for _, n := range []int{0, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129, 4096 + 13} {
				for _, zp := range []int{0, 50, 90, 100} {
					for _, pos := range []bool{false, true} {
						buf := append([]byte{0xAA}, sparseValues(d, n, zp, pos, uint64(7*n+zp))...)
						src := buf[1:]
						nb := (n + 7) / 8
						m1, v1 := make([]byte, nb), make([]byte, len(src))
						m2, v2 := make([]byte, nb), make([]byte, len(src))
						k1, s1 := gatherNonzero(src, size, v1, m1, uint(l.Exp+l.Mant))
						k2, s2 := gatherSimple(src, size, v2, m2, uint(l.Exp+l.Mant))
						if k1 != k2 || s1 != s2 || !bytes.Equal(m1, m2) || !bytes.Equal(v1[:k1*size], v2[:k2*size]) {
							t.Fatalf("fast=%v %v n=%d zeros=%d%% positive=%v: gather (%d, %v) vs simple (%d, %v)", fast, d, n, zp, pos, k1, s1, k2, s2)
						}
					}
				}
			}
		}
		restore()
	}
	if !use.avx512Gather {
		t.Log("no AVX-512 VBMI2 here: only the Go gather was compared")
	}
}
