package codec

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/dtype"
	"neuralzip/internal/formula"
)

// Structured float tables, made from their formulas: the tensors of audio
// front ends and positional encodings that ONNX and safetensors files
// carry beside their weights. They are mostly zeros (filterbanks, a DFT
// basis whose window is shorter than the transform) or repeat shifted
// patterns, which LZ finds and the float coder and the zero mask do not.

// melFilterbank is an nMels × (nFFT/2+1) bank of triangular filters on
// the HTK mel scale from 0 to rate/2, each normalised to unit area
// (Slaney's "norm"), as Whisper's and torchaudio's front ends hold it:
// over 90 % zeros, and rows that repeat shifted where the filters are
// evenly spaced in frequency bins.
func melFilterbank(nMels, nFFT int, rate float64) []byte {
	mel := func(f float64) float64 { return 2595 * math.Log10(1+f/700) }
	hz := func(m float64) float64 { return 700 * (math.Pow(10, m/2595) - 1) }
	pts := make([]float64, nMels+2)
	top := mel(rate / 2)
	for i := range pts {
		pts[i] = hz(top * float64(i) / float64(nMels+1))
	}
	return f32Table(nMels, nFFT/2+1, func(m, k int) float64 {
		f := float64(k) * rate / float64(nFFT)
		lo, mid, hi := pts[m], pts[m+1], pts[m+2]
		w := max(0, min((f-lo)/(mid-lo), (hi-f)/(hi-mid)))
		return w * 2 / (hi - lo)
	})
}

// positionalTable is the sinusoidal positional encoding of "Attention is
// all you need": pos × d values, sin in even columns and cos in odd ones.
func positionalTable(pos, d int) []byte {
	return f32Table(pos, d, func(p, c int) float64 {
		a := float64(p) / math.Pow(10000, float64(c&^1)/float64(d))
		if c&1 == 0 {
			return math.Sin(a)
		}
		return math.Cos(a)
	})
}

// structuredTables are the tables of the never-worse tests, one file each
// and one file of them all.
func structuredTables() []refT {
	return []refT{
		{"mel_80x201", dtype.F32, []int64{80, 201}, melFilterbank(80, 400, 16000)},
		{"mel_128x257", dtype.F32, []int64{128, 257}, melFilterbank(128, 512, 16000)},
		{"stft_512_win400", dtype.F32, []int64{514, 1, 512}, windowedDFT(512, 400)},
		{"stft_256", dtype.F32, []int64{258, 1, 256}, windowedDFT(256, 256)},
		{"dct_40x80", dtype.F32, []int64{40, 80}, dctBasis(40, 80)},
		{"posenc_512x256", dtype.F32, []int64{512, 256}, positionalTable(512, 256)},
		// the bases as a model published in 16 bits holds them
		{"stft_512_win400_bf16", dtype.BF16, []int64{514, 1, 512}, formula.BF16(windowedDFT(512, 400))},
		{"stft_512_win400_f16", dtype.F16, []int64{514, 1, 512}, formula.F16(windowedDFT(512, 400))},
		{"stft_256_bf16", dtype.BF16, []int64{258, 1, 256}, formula.BF16(windowedDFT(256, 256))},
		{"stft_256_f16", dtype.F16, []int64{258, 1, 256}, formula.F16(windowedDFT(256, 256))},
		{"dct_40x80_bf16", dtype.BF16, []int64{40, 80}, formula.BF16(dctBasis(40, 80))},
		{"dct_40x80_f16", dtype.F16, []int64{40, 80}, formula.F16(dctBasis(40, 80))},
	}
}

var writeStructured = flag.String("write-structured", "", "write the structured tables as safetensors files into this directory (TestWriteStructured)")

// TestWriteStructured writes the structured tables as safetensors files
// for measurements with the CLI (docs/programs.md): one file per table
// and all.safetensors.
func TestWriteStructured(t *testing.T) {
	dir := *writeStructured
	if dir == "" {
		t.Skip("-write-structured DIR not given")
	}
	ts := structuredTables()
	for _, x := range ts {
		b, _ := refSafetensors([]refT{x})
		if err := os.WriteFile(filepath.Join(dir, x.name+".safetensors"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := refSafetensors(ts)
	if err := os.WriteFile(filepath.Join(dir, "all.safetensors"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// neverWorseSlack is what a block may exceed zstd of its bytes at level 3
// by (TestNeverWorseThanZstd): none. Every block's coding is chosen
// against zstd on equal terms where a probe says LZ may win, and opaque
// blocks are zstd (or stored, at most their bytes, where zstd grows them:
// blocks this small are not in these files).
const neverWorseSlack = 0

// TestNeverWorseThanZstd: no block of the archive of the structured tables
// (each alone and all in one file) and of the real small models in assets/
// and ../shared/models/original and quantized/ (records blocks; skipped
// when absent, and in -short) codes
// larger than zstd at level 3 (the codec's, klauspost's) codes its bytes,
// plus neverWorseSlack; every archive round-trips bit-exact, and the
// tables' archive is the same at 1 and 3 threads. A block the encoder
// merged (a whole tensor) is compared with zstd of the whole.
func TestNeverWorseThanZstd(t *testing.T) {
	type input struct {
		name string
		src  []byte
		segs []Segment
	}
	var ins []input
	ts := structuredTables()
	for _, x := range ts {
		b, segs := refSafetensors([]refT{x})
		ins = append(ins, input{x.name, b, segs})
	}
	b, segs := refSafetensors(ts)
	ins = append(ins, input{"all", b, segs})
	// real models through their loaders (TF.js: the model.json and its
	// weights file, whose uint8 and float tensors the layout names), and
	// a TF.js weights file alone (no layout: opaque bytes)
	real := []string{"../assets/models/silero_vad_legacy.onnx", "../assets/models/selfie_segmentation.tflite", "../assets/models/blazeface-front/blazeface-front.json"}
	if !testing.Short() {
		if d := sharedDir(); d != "" {
			for _, f := range []string{"silero_vad.onnx", "silero_vad_16k.safetensors", "handtrack/handtrack.json", "model_1.onnx", "pose_landmark_lite.tflite"} {
				real = append(real, filepath.Join(d, "models", "original", f))
			}
			// records blocks (quantised GGUF)
			for _, f := range []string{"stories260K-base.mixed.gguf", "stories260K-base.Q4_K.gguf", "stories260K-base.Q8_0.gguf"} {
				real = append(real, filepath.Join(d, "models", "quantized", f))
			}
		}
	}
	for _, f := range real {
		m, err := checkpoint.OpenPath(f)
		if err != nil {
			t.Logf("%s: %v (skipped)", f, err)
			continue
		}
		for _, mf := range m.Files {
			src, err := os.ReadFile(mf.Path)
			if err != nil {
				t.Fatal(err)
			}
			ins = append(ins, input{mf.Name, src, mf.Layout.Segments})
		}
	}
	if src, err := os.ReadFile("../assets/models/blazeface-front/blazeface-front.bin"); err == nil {
		ins = append(ins, input{"blazeface-front.bin alone", src, nil})
	}
	z, err := zstdEncoder(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		arc := roundTrip(t, in.src, in.segs, EncodeOptions{Threads: 1})
		if in.name == "all" {
			if a3 := roundTrip(t, in.src, in.segs, EncodeOptions{Threads: 3}); !bytes.Equal(a3, arc) {
				t.Errorf("%s: another archive at 3 threads than at 1", in.name)
			}
		}
		rd, err := NewMemReader(arc)
		if err != nil {
			t.Fatal(err)
		}
		var coded, zs int64
		for _, bl := range rd.Files()[0].Blocks() {
			if bl.Kind == BlockKind(kindDup) {
				continue
			}
			zb := int64(len(z.EncodeAll(in.src[bl.Offset:bl.Offset+bl.Length], nil)))
			coded += bl.Compressed
			zs += zb
			if bl.Compressed > zb+neverWorseSlack {
				t.Errorf("%s: block at %d (%d bytes, kind %d): %d bytes, zstd -3 %d", in.name, bl.Offset, bl.Length, bl.Kind, bl.Compressed, zb)
			}
		}
		t.Logf("%-28s %9d bytes: blocks %9d, zstd -3 of each %9d (archive %d)", in.name, len(in.src), coded, zs, len(arc))
	}
}

// TestLZWholeLimit: a tensor of exactly lzWholeMax bytes (the longest
// block readers accept) whose words repeat is one block (a repeat block;
// zstd's where repeat blocks are off) and decodes; one past the limit
// stays in float-sized blocks.
func TestLZWholeLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("4 MiB tensors: not in -short")
	}
	full := windowedDFT(1024, 800) // 1026 rows of 1024 values
	defer func() { repeatOff = false }()
	for _, off := range []bool{false, true} {
		repeatOff = off
		kind := BlockKind(kindRepeat)
		if off {
			kind = KindZstd
		}
		for _, rows := range []int{1024, 1026} {
			data := full[:rows*1024*4]
			src, segs := refSafetensors([]refT{{"stft", dtype.F32, []int64{int64(rows), 1024}, data}})
			arc := roundTrip(t, src, segs, EncodeOptions{})
			rd, err := NewMemReader(arc)
			if err != nil {
				t.Fatal(err)
			}
			bl := rd.Files()[0].Blocks()
			whole := len(bl) == 2 && bl[1].Kind == kind && bl[1].Length == int64(len(data))
			if want := len(data) <= lzWholeMax; whole != want {
				t.Errorf("%d bytes: one %v block of the tensor %v, want %v (%d blocks)", len(data), kind, whole, want, len(bl))
			}
		}
	}
}

// The tables made from their formulas (internal/formula), shared with
// codec/prog's tests.
var (
	f32Table    = formula.F32Table
	windowedDFT = formula.WindowedDFT
	dctBasis    = formula.DCTBasis
)
