package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"neuralzip/dtype"
)

// stftBasis is an STFT basis as conv weights hold it (the real part, then
// the imaginary part, of n/2+1 frequencies over n samples), F32: the
// structured float tensor that LZ codes far better than the float coder.
func stftBasis(n int) []byte {
	var out []byte
	for part := 0; part < 2; part++ {
		for k := 0; k <= n/2; k++ {
			for j := 0; j < n; j++ {
				a := 2 * math.Pi * float64(k*j) / float64(n)
				v := math.Cos(a)
				if part == 1 {
					v = math.Sin(a)
				}
				out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(v)))
			}
		}
	}
	return out
}

func TestLZRepeats(t *testing.T) {
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
		p := realisticValues(d, 65536, 3)
		// the float coder codes such weights to about 2/3 (BF16) .. 5/6
		if dup, k := lzRepeats(p); lzWorthTrying(len(p), len(p)*2/3, dup, k) {
			t.Errorf("%v: trained-like weights would try zstd (%d of %d words repeat)", d, dup, k)
		}
	}
	if p := stftBasis(256); true {
		dup, k := lzRepeats(p)
		if !lzWorthTrying(len(p), len(p)*9/10, dup, k) {
			t.Errorf("an STFT basis would not try zstd (%d of %d words repeat)", dup, k)
		}
	}
	if dup, k := lzRepeats(make([]byte, 4096)); dup != k-1 {
		t.Errorf("zeros: %d of %d words repeat", dup, k)
	}
	if _, k := lzRepeats(make([]byte, 4*lzMinWords-4)); k != 0 {
		t.Error("a block below lzMinWords probed")
	}
}

// lzRepeatsRef is lzRepeats written plainly: the words at 0, step,
// 2·step… (at most lzProbeWords), and how many equal an earlier one.
func lzRepeatsRef(p []byte) (dup, k int) {
	n := len(p) / 4
	if n < lzMinWords {
		return 0, 0
	}
	step := max(1, n/lzProbeWords)
	seen := map[uint32]bool{}
	for i := 0; i < n && k < lzProbeWords; i += step {
		w := binary.LittleEndian.Uint32(p[4*i:])
		if seen[w] {
			dup++
		}
		seen[w] = true
		k++
	}
	return dup, k
}

// TestLZRepeatsTwin: the probe's set counts what a map counts, at every
// length around the sampling steps and on words with few and many repeats.
func TestLZRepeatsTwin(t *testing.T) {
	src := append(realisticValues(dtype.BF16, 70000, 5), stftBasis(128)...)
	src = append(src, make([]byte, 3000)...)
	for _, n := range []int{0, 3, 4*lzMinWords - 1, 4 * lzMinWords, 1021, 1024, 1027, 4 * lzProbeWords, 4*lzProbeWords + 4, 4*2*lzProbeWords - 4, 4*2*lzProbeWords + 3, 65536, 100003, len(src)} {
		for _, off := range []int{0, 1, len(src) - n} {
			if off < 0 || off+n > len(src) {
				continue
			}
			p := src[off : off+n]
			d, k := lzRepeats(p)
			rd, rk := lzRepeatsRef(p)
			if d != rd || k != rk {
				t.Errorf("%d bytes at %d: %d of %d repeat, want %d of %d", n, off, d, k, rd, rk)
			}
		}
	}
	// every word one of a few values (colliding hash chains wrap the set)
	w := make([]uint32, lzProbeWords)
	for i := range w {
		w[i] = uint32(i%97) << 23
	}
	if got := repeatCount(w); got != lzProbeWords-97 {
		t.Errorf("repeatCount: %d, want %d", got, lzProbeWords-97)
	}
	// the filter's lookups and the set count alike, whether or not the
	// lookups' budget runs out: words of many repeats spread far apart
	for _, distinct := range []int{1, 2, 40, 120, 200, 256} {
		for i := range w {
			w[i] = uint32((i*7919)%distinct) * 0x01000193
		}
		if a, b := repeatCount(w), repeatCountSet(w); a != b || b != lzProbeWords-distinct {
			t.Errorf("%d distinct words: filter %d, set %d, want %d", distinct, a, b, lzProbeWords-distinct)
		}
	}
}

// TestLZReaches: the early-stopping count answers as lzWorthTrying does on
// the full count, for blocks of few and many repeats and every coded size
// around the thresholds; lzNeed is the threshold lzWorthTrying has.
func TestLZReaches(t *testing.T) {
	for n := 0; n <= 300; n += 7 {
		for coded := 0; coded <= n+5; coded += 3 {
			for k := 1; k <= 256; k += 5 {
				need := lzNeed(n, coded, k)
				for dup := 0; dup <= k; dup++ {
					if (dup >= need) != lzWorthTrying(n, coded, dup, k) {
						t.Fatalf("lzNeed(%d, %d, %d) = %d, but lzWorthTrying says %v for %d repeats", n, coded, k, need, !(dup >= need), dup)
					}
				}
			}
		}
	}
	var blocks [][]byte
	src := append(realisticValues(dtype.BF16, 70000, 5), stftBasis(128)...)
	for _, n := range []int{256, 1024, 4000, 65536, 131072} {
		blocks = append(blocks, src[:n], src[len(src)-n:])
	}
	w := make([]byte, 65536)
	for _, distinct := range []int{1, 3, 40, 120, 200, 700, 5000} {
		for i := 0; i < len(w); i += 4 {
			binary.LittleEndian.PutUint32(w[i:], uint32((i/4*7919)%distinct)*0x01000193)
		}
		blocks = append(blocks, bytes.Clone(w))
	}
	for bi, p := range blocks {
		dup, k := lzRepeats(p)
		for coded := 0; coded <= len(p)+8; coded += max(1, len(p)/97) {
			if got, want := lzReaches(p, coded), lzWorthTrying(len(p), coded, dup, k); got != want {
				t.Errorf("block %d (%d bytes, %d of %d repeat), coded %d: lzReaches %v, want %v", bi, len(p), dup, k, coded, got, want)
			}
		}
	}
}

// TestLZPerTensor: the repeat probe is decided once per tensor of several
// blocks: where the first block finds too few repeats, the blocks after it
// are not probed, even one whose words repeat; where it finds enough, they
// are probed each.
func TestLZPerTensor(t *testing.T) {
	plain := realisticValues(dtype.BF16, 4096, 11)
	rep := make([]byte, len(plain)) // one word over and over
	for i := 0; i < len(rep); i += 4 {
		binary.LittleEndian.PutUint32(rep[i:], 0x3c003c00)
	}
	coded := len(rep) // what the float coder's size would need to be beaten
	if !lzReaches(rep, coded) || lzReaches(plain, coded*2/3) {
		t.Fatal("the blocks do not probe as the test needs")
	}
	var be blockEncoder
	if be.lzWorth(plain, coded*2/3, false, true) || !be.lzFew {
		t.Fatal("a first block without repeats")
	}
	if be.lzWorth(rep, coded, true, true) {
		t.Error("a later block of a tensor whose first block has no repeats was probed")
	}
	if !be.lzWorth(rep, coded, false, true) || be.lzFew {
		t.Fatal("a first block of repeats")
	}
	if !be.lzWorth(rep, coded, true, false) || be.lzWorth(plain, coded*2/3, true, false) {
		t.Error("later blocks of a tensor whose first block repeats are probed each")
	}
	// a single-block tensor is probed on its own, whatever came before
	be.lzFew = true
	if !be.lzWorth(rep, coded, false, false) {
		t.Error("a one-block tensor was not probed")
	}
}

// TestZstdFallback: a float tensor that zstd codes smaller than the float
// coder is stored as zstd, bit-exactly, the census names it, and the
// archive is no larger than zstd's of the whole file; ordinary weights in
// the same file keep the float coder.
func TestZstdFallback(t *testing.T) {
	repeatOff = true // the basis is a repeat block otherwise (repeat_test.go)
	defer func() { repeatOff = false }()
	basis := stftBasis(128) // one block (a tensor of several loses the matches between them)
	w := realisticValues(dtype.F32, 30000, 9)
	src, segs := safetensorsFile(`{"source":"codec/lz_test.go"}`, []refT{
		{"stft.weight", dtype.F32, []int64{int64(len(basis) / 512), 1, 128}, basis},
		{"conv.weight", dtype.F32, []int64{30000}, w},
	})
	for _, threads := range []int{1, 3} {
		arc := roundTrip(t, src, segs, EncodeOptions{Threads: threads})
		c := censusOf(t, arc)
		if c.ZstdFloat == 0 || c.ZstdTensors["stft.weight"] != c.ZstdFloat || c.ZstdTensors["conv.weight"] != 0 || c.FloatBlocks == 0 {
			t.Fatalf("census %+v", c)
		}
		if zs := zstd3(t, src); len(arc) > len(zs) {
			t.Errorf("%d threads: archive %d bytes, zstd-3 %d", threads, len(arc), len(zs))
		}
	}
}

// TestZstdFallbackReal: Silero VAD's STFT basis (real) made nzip lose to
// C zstd -3 (1,037,637 bytes against 1,026,369) without the fallback; with
// it the basis was coded as byte planes through zstd (945,654 bytes), then
// as one zstd block of the whole tensor (mergeLZTensors: 916,988), and now
// as one repeat block of the whole tensor (repeat.go: 839,913).
func TestZstdFallbackReal(t *testing.T) {
	src := realFile(t, "models/original/silero_vad_16k.safetensors")
	segs := safetensorsSegments(src)
	arc := roundTrip(t, src, segs, EncodeOptions{})
	if c := censusOf(t, arc); c.RepeatTensors["stft_conv.weight"] != 1 || c.RepeatBytes != 264192 {
		t.Errorf("the STFT basis is not one repeat block: %+v", c)
	}
	zs := zstd3(t, src)
	t.Logf("nzip %d bytes, zstd-3 %d", len(arc), len(zs))
	if len(arc) > len(zs) {
		t.Errorf("nzip %d bytes > zstd-3 %d", len(arc), len(zs))
	}
	// the basis spans two blocks: zstd at a fast level per block lost the
	// matches that xz finds in the whole file; as byte planes it wins
	if len(arc) >= sileroXZ6 {
		t.Errorf("nzip %d bytes >= xz -6's %d", len(arc), sileroXZ6)
	}
}

// hannBasis is an STFT basis with a Hann window, as speech models hold it
// (Silero VAD's stft_conv.weight): the real part, then the imaginary
// part, of n/2+1 frequencies over n samples, F32.
func hannBasis(n int) []byte {
	var out []byte
	for part := 0; part < 2; part++ {
		for k := 0; k <= n/2; k++ {
			for j := 0; j < n; j++ {
				w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(j)/float64(n))
				a := 2 * math.Pi * float64(k*j%n) / float64(n) // exact repeats: kj mod n
				v := math.Cos(a)
				if part == 1 {
					v = -math.Sin(a)
				}
				out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(w*v)))
			}
		}
	}
	return out
}

// TestZstdPlanes: a windowed STFT basis, whose words repeat within a block
// but whose matches zstd misses in the interleaved bytes, is coded as byte
// planes through zstd (format version 9): bit-exact, the same archive at
// any thread count, the census names it, and smaller than without planes
// (-no-sparse: version 7). Trained-like weights beside it keep the float
// coder, and an archive of such weights alone stays version 7.
func TestZstdPlanes(t *testing.T) {
	// the whole tensor through zstd (mergeLZTensors) beats its planes:
	// this tests the planes
	lzWholeOff = true
	defer func() { lzWholeOff = false }()
	basis := hannBasis(256)
	w := realisticValues(dtype.F32, 30000, 9)
	src, segs := safetensorsFile(`{"source":"codec/lz_test.go"}`, []refT{
		{"stft.weight", dtype.F32, []int64{int64(len(basis) / 1024), 1, 256}, basis},
		{"conv.weight", dtype.F32, []int64{30000}, w},
	})
	var first []byte
	for _, threads := range []int{1, 3} {
		arc := roundTrip(t, src, segs, EncodeOptions{Threads: threads})
		if v := binary.LittleEndian.Uint16(arc[8:]); v != lzPlanesVersion {
			t.Fatalf("archive of version %d, want %d", v, lzPlanesVersion)
		}
		c := censusOf(t, arc)
		if c.ZstdPlanes == 0 || c.ZstdTensors["stft.weight"] != c.ZstdFloat || c.ZstdTensors["conv.weight"] != 0 {
			t.Fatalf("census %+v", c)
		}
		if first == nil {
			first = arc
		} else if !bytes.Equal(arc, first) {
			t.Fatalf("%d threads: another archive than one thread's", threads)
		}
	}
	old := roundTrip(t, src, segs, EncodeOptions{NoSparse: true})
	if v := binary.LittleEndian.Uint16(old[8:]); v != denseVersion {
		t.Fatalf("-no-sparse: version %d, want %d", v, denseVersion)
	}
	if c := censusOf(t, old); c.ZstdPlanes != 0 {
		t.Fatalf("-no-sparse: census %+v", c)
	}
	t.Logf("planes %d bytes, without %d, zstd-3 %d", len(first), len(old), len(zstd3(t, src)))
	if 10*len(first) > 9*len(old) {
		t.Errorf("planes %d bytes, without %d: less than 10 %% smaller", len(first), len(old))
	}
	ws, wsegs := safetensorsFile(`{}`, []refT{{"w", dtype.BF16, []int64{40000}, realisticValues(dtype.BF16, 40000, 4)}, {"conv.weight", dtype.F32, []int64{30000}, w}})
	if arc := roundTrip(t, ws, wsegs, EncodeOptions{}); binary.LittleEndian.Uint16(arc[8:]) != denseVersion {
		t.Errorf("weights alone: version %d, want %d", binary.LittleEndian.Uint16(arc[8:]), denseVersion)
	}
}

// TestZstdStreamVersion: a zstd stream in an archive whose header says
// version 8 (before such streams) is refused with a clear error, and a
// frame of another length than the stream's is refused.
func TestZstdStreamVersion(t *testing.T) {
	lzWholeOff = true
	defer func() { lzWholeOff = false }()
	basis := hannBasis(256)
	src, segs := safetensorsFile(`{}`, []refT{{"stft.weight", dtype.F32, []int64{int64(len(basis) / 1024), 1, 256}, basis}})
	arc := roundTrip(t, src, segs, EncodeOptions{})
	old := bytes.Clone(arc)
	binary.LittleEndian.PutUint16(old[8:], sparseVersion)
	_, err := DecompressBytes(context.Background(), old, DecodeOptions{})
	if err == nil || !strings.Contains(err.Error(), "zstd stream in an archive of version < 9") {
		t.Fatalf("version 8 header: %v", err)
	}
	var d streamDecoder
	d.lz = true
	e, err := zstdEncoder(zstdPlanesLevel)
	if err != nil {
		t.Fatal(err)
	}
	frame := e.EncodeAll(basis[:1000], nil)
	stream := binary.AppendUvarint([]byte{smZstd}, uint64(len(frame)))
	stream = append(stream, frame...)
	got := make([]byte, 1000)
	if _, err := d.decodeStream(got, stream, 8); err != nil || !bytes.Equal(got, basis[:1000]) {
		t.Fatalf("zstd stream: %v", err)
	}
	if _, err := d.decodeStream(make([]byte, 999), stream, 8); err == nil {
		t.Error("a frame of 1000 bytes decoded as 999 symbols")
	}
	if _, err := d.decodeStream(got, stream, 7); err == nil || !strings.Contains(err.Error(), "symbol out of range") {
		t.Errorf("8-bit symbols in a 7-bit stream: %v", err)
	}
}

// sileroXZ6 is the size of `xz -6` of silero_vad_16k.safetensors (xz
// 5.4.1; scripts/bench-general.sh measures it with the xz command).
const sileroXZ6 = 950864

// zstd3 is src through zstd level 3 with entropy-coded literals, as the
// bench's zstd-3 (codec/baseline) and C zstd -3 code it.
func zstd3(t *testing.T, src []byte) []byte {
	t.Helper()
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(3)), zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return e.EncodeAll(src, nil)
}

// TestOpaqueFewMatches: handtrack's weights file alone (uint8-quantised
// TF.js weights, no model.json, so opaque bytes) was 263 bytes larger as
// an archive than C zstd -3 makes it (2,305,507 against 2,305,244): zstd
// at level 3 finds short matches that cost more than the literals they
// replace. Opaque blocks that level 3 shrinks by less than a quarter are
// also coded at level 1 and the smaller kept.
func TestOpaqueFewMatches(t *testing.T) {
	src := realFile(t, "models/original/handtrack/handtrack.bin")
	segs := []Segment{{Offset: 0, Length: int64(len(src))}}
	arc := roundTrip(t, src, segs, EncodeOptions{})
	zs := zstd3(t, src)
	t.Logf("nzip %d bytes, zstd-3 %d", len(arc), len(zs))
	if len(arc) >= len(zs) {
		t.Errorf("nzip %d bytes >= zstd-3's %d", len(arc), len(zs))
	}
}

// lzPlanesInput is a file whose float block is coded as byte planes
// through zstd: the imaginary half of a windowed STFT basis (one block of
// 129 × 256 values) and a small weight matrix.
func lzPlanesInput() ([]byte, []Segment) {
	basis := hannBasis(256)
	return safetensorsFile(`{"source":"neuralzip codec/lz_test.go"}`, []refT{
		{"stft.imag", dtype.F32, []int64{129, 1, 256}, basis[len(basis)/2:]},
		{"proj.weight", dtype.F32, []int64{16, 128}, goldenValues(dtype.F32, 16*128, 7)},
	})
}

// TestGoldenLZ pins format version 9's zstd streams as TestGolden pins the
// rest: the golden archive decodes to the input, holds blocks of byte
// planes through zstd, and the encoder writes it byte for byte (regenerate
// with -update after a deliberate change).
func TestGoldenLZ(t *testing.T) {
	repeatOff = true // the basis is a repeat block otherwise: TestGoldenRepeat
	defer func() { repeatOff = false }()
	path := filepath.Join("testdata", "golden-lz-v9.nzip")
	src, segs := lzPlanesInput()
	arc := roundTrip(t, src, segs, EncodeOptions{Threads: 2})
	golden := checkGolden(t, path, arc, src, lzPlanesVersion)
	if c := censusOf(t, golden); c.ZstdPlanes == 0 {
		t.Fatalf("golden archive holds no zstd planes: %+v", c)
	}
}

// TestProbeRepeats: the plan-time probe (probeBlocks) that decides format
// version 9 finds the repeats of a windowed STFT basis, and none in
// trained-like weights, a constant tensor (zstd's block wins there), a
// small tensor (the probe's reads overlap) or one with many zeros.
func TestProbeRepeats(t *testing.T) {
	small := realisticValues(dtype.BF16, 300, 5) // the probe's four reads overlap
	ones := make([]byte, 4*20000)
	for i := 0; i < len(ones); i += 4 {
		binary.LittleEndian.PutUint32(ones[i:], math.Float32bits(1))
	}
	sparse := realisticValues(dtype.F32, 20000, 6)
	for i := 0; i < len(sparse); i += 8 {
		copy(sparse[i:i+4], []byte{0, 0, 0, 0})
	}
	basis := hannBasis(256)
	for _, c := range []struct {
		name string
		d    dtype.DType
		b    []byte
		want bool
	}{
		{"stft", dtype.F32, basis[len(basis)/2:], true},
		{"weights.f32", dtype.F32, realisticValues(dtype.F32, 30000, 1), false},
		{"weights.bf16", dtype.BF16, realisticValues(dtype.BF16, 60000, 2), false},
		{"weights.f16", dtype.F16, realisticValues(dtype.F16, 60000, 3), false},
		{"small", dtype.BF16, small, false},
		{"ones", dtype.F32, ones, false},
		{"an eighth zeros", dtype.F32, sparse, false},
	} {
		plans := []blockPlan{{length: int64(len(c.b)), float: true, dtype: c.d}}
		if _, got := probeBlocks(bytes.NewReader(c.b), plans, false); got != c.want {
			t.Errorf("%s: repeats %v, want %v", c.name, got, c.want)
		}
	}
}
