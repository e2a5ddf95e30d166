package codec

import (
	"encoding/binary"
	"math"
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

// TestZstdFallback: a float tensor that zstd codes smaller than the float
// coder is stored as zstd, bit-exactly, the census names it, and the
// archive is no larger than zstd's of the whole file; ordinary weights in
// the same file keep the float coder.
func TestZstdFallback(t *testing.T) {
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
// it the basis is coded by zstd at its strongest level (929,133 bytes).
func TestZstdFallbackReal(t *testing.T) {
	src := realFile(t, "models/original/silero_vad_16k.safetensors")
	segs := safetensorsSegments(src)
	arc := roundTrip(t, src, segs, EncodeOptions{})
	if c := censusOf(t, arc); c.ZstdTensors["stft_conv.weight"] == 0 {
		t.Errorf("the STFT basis is not coded by zstd: %+v", c)
	}
	zs := zstd3(t, src)
	t.Logf("nzip %d bytes, zstd-3 %d", len(arc), len(zs))
	if len(arc) > len(zs) {
		t.Errorf("nzip %d bytes > zstd-3 %d", len(arc), len(zs))
	}
	// the basis spans two blocks: zstd at a fast level per block lost the
	// matches that xz finds in the whole file; at its strongest level per
	// block it wins
	if len(arc) >= sileroXZ6 {
		t.Errorf("nzip %d bytes >= xz -6's %d", len(arc), sileroXZ6)
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
