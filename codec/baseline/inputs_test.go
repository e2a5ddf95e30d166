package baseline

import (
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// One table of inputs shared by the tests, fuzz seeds and benchmarks: real
// files from ../shared/models (when present) and generated edge cases.

// sharedDir is the shared corpus, relative to this package's directory.
var sharedDir = filepath.Join("..", "..", "..", "shared")

type input struct {
	name string
	src  []byte
	segs []codec.Segment
}

// realFiles returns every file under models/bench and models/original, with
// a safetensors layout parsed for *.safetensors and nil segments otherwise.
// It skips t when the shared corpus is absent.
func realFiles(tb testing.TB) []input {
	tb.Helper()
	var ins []input
	for _, dir := range []string{"bench", "original"} {
		root := filepath.Join(sharedDir, "models", dir)
		if _, err := os.Stat(root); err != nil {
			tb.Skipf("shared model corpus not found at %s (%v): skipping tests on real files", root, err)
		}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			ins = append(ins, loadFile(tb, path))
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return ins
}

// benchFile loads models/bench/<name>.safetensors or skips.
func benchFile(tb testing.TB, name string) input {
	tb.Helper()
	path := filepath.Join(sharedDir, "models", "bench", name+".safetensors")
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("bench file %s not found (%v): skipping", path, err)
	}
	return loadFile(tb, path)
}

func loadFile(tb testing.TB, path string) input {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	in := input{name: filepath.Base(path), src: b}
	if strings.HasSuffix(path, ".safetensors") {
		segs, err := safetensorsLayout(b)
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		in.segs = segs
	}
	return in
}

// safetensorsLayout is a minimal safetensors reader: an 8-byte little-endian
// header length N, N bytes of JSON, then the data; each JSON entry but
// __metadata__ has dtype, shape and data_offsets relative to the data.
func safetensorsLayout(b []byte) ([]codec.Segment, error) {
	if len(b) < 8 {
		return nil, os.ErrInvalid
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		return nil, os.ErrInvalid
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		return nil, err
	}
	base := int64(8 + n)
	segs := []codec.Segment{{Offset: 0, Length: base}}
	for name, raw := range hdr {
		if name == "__metadata__" {
			continue
		}
		var t struct {
			DType       string   `json:"dtype"`
			Shape       []int64  `json:"shape"`
			DataOffsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		dt, _ := dtype.Parse(t.DType)
		segs = append(segs, codec.Segment{
			Offset: base + t.DataOffsets[0], Length: t.DataOffsets[1] - t.DataOffsets[0],
			Name: name, DType: dt, Type: t.DType, Shape: t.Shape,
		})
	}
	slices.SortStableFunc(segs, func(a, b codec.Segment) int {
		if a.Offset != b.Offset {
			return int(a.Offset - b.Offset)
		}
		return int(a.Length - b.Length)
	})
	return segs, nil
}

// floatDTypes are the dtypes the edge cases are generated for: the three the
// float codecs model, two they do not, and an integer type.
var floatDTypes = []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F64, dtype.I32}

// weights returns n elements of dt whose fields look like trained weights:
// random sign and mantissa, exponents clustered a few steps below the bias.
func weights(rng *rand.Rand, dt dtype.DType, n int) []byte {
	w := dt.Size()
	l, ok := dt.FloatLayout()
	if !ok { // integers: small values
		out := make([]byte, n*w)
		for i := range n {
			v := uint64(int64(rng.NormFloat64() * 100))
			for k := range w {
				out[i*w+k] = byte(v >> (8 * k))
			}
		}
		return out
	}
	bias := 1<<(l.Exp-1) - 1
	out := make([]byte, n*w)
	for i := range n {
		e := bias - 1 - int(math.Abs(rng.NormFloat64())*2.5)
		e = max(e, 0)
		v := rng.Uint64()&(1<<l.Mant-1) | uint64(e)<<l.Mant | uint64(rng.IntN(2))<<(l.Mant+l.Exp)
		for k := range w {
			out[i*w+k] = byte(v >> (8 * k))
		}
	}
	return out
}

// specials returns NaNs with payloads, ±Inf, ±0, subnormals, the largest
// finite values and some normal ones, as elements of dt.
func specials(dt dtype.DType) []byte {
	l, ok := dt.FloatLayout()
	w := dt.Size()
	var vals []uint64
	if ok {
		expAll := uint64(1<<l.Exp-1) << l.Mant
		sign := uint64(1) << (l.Mant + l.Exp)
		mant := uint64(1)<<l.Mant - 1
		for _, s := range []uint64{0, sign} {
			vals = append(vals,
				s,                         // ±0
				s|expAll,                  // ±Inf (NaN for E4M3)
				s|expAll|1,                // NaN, payload 1
				s|expAll|mant,             // NaN, all-ones payload
				s|expAll|mant>>1|1,        // NaN, other payload
				s|1,                       // smallest subnormal
				s|mant,                    // largest subnormal
				s|mant>>1,                 // subnormal
				s|(expAll-1<<l.Mant)|mant, // largest finite
				s|1<<l.Mant,               // smallest normal
			)
		}
	} else {
		vals = []uint64{0, 1, math.MaxUint64, 1 << 63, 0x7fffffff}
	}
	out := make([]byte, 0, len(vals)*w)
	for _, v := range vals {
		for k := range w {
			out = append(out, byte(v>>(8*k)))
		}
	}
	return out
}

// builder assembles a synthetic file from opaque and tensor pieces.
type builder struct {
	src  []byte
	segs []codec.Segment
}

func (b *builder) opaque(p []byte) { b.src = append(b.src, p...) } // a gap the codec fills

func (b *builder) header(p []byte) {
	b.segs = append(b.segs, codec.Segment{Offset: int64(len(b.src)), Length: int64(len(p))})
	b.src = append(b.src, p...)
}

func (b *builder) tensor(name string, dt dtype.DType, p []byte) {
	b.segs = append(b.segs, codec.Segment{Offset: int64(len(b.src)), Length: int64(len(p)), Name: name, DType: dt})
	b.src = append(b.src, p...)
}

// edgeCases returns the generated inputs. Sizes cross the zipnn chunk
// (256 KiB) and the dfloat11 block (128 Ki values) boundaries, by several
// chunks and blocks, or (with -short) just.
func edgeCases() []input {
	rng := rand.New(rand.NewPCG(1, 2))
	large := 300_003
	if testing.Short() {
		large = 131_075
	}
	ins := []input{
		{name: "empty-file"},
		{name: "empty-file-empty-segment", segs: []codec.Segment{{Name: "t", DType: dtype.BF16}}},
		{name: "one-byte", src: []byte{0x42}},
		{name: "one-byte-bf16", src: []byte{0x42}, segs: []codec.Segment{{Length: 1, Name: "t", DType: dtype.BF16}}},
		{name: "not-a-checkpoint-text", src: []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 3000))},
	}
	noise := make([]byte, 300_001)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	ins = append(ins, input{name: "not-a-checkpoint-noise", src: noise})
	ins = append(ins, input{name: "noise-as-bf16", src: noise[:300_000], segs: []codec.Segment{{Length: 300_000, Name: "t", DType: dtype.BF16}}})

	for _, dt := range floatDTypes {
		w := dt.Size()
		d := dt.String()
		large := large
		if testing.Short() && (dt == dtype.F64 || dt == dtype.I32) {
			large = 20_000 // opaque to every codec: no boundaries to cross
		}
		one := func(name string, p []byte) {
			ins = append(ins, input{name: d + "-" + name, src: p, segs: []codec.Segment{{Length: int64(len(p)), Name: "t", DType: dt}}})
		}
		sp := specials(dt)
		one("specials", sp)
		// Special values inside real-looking weights, long enough for Huffman.
		mixed := weights(rng, dt, 5000)
		copy(mixed[1000*w:], sp)
		one("specials-in-weights", mixed)
		one("one-element", weights(rng, dt, 1))
		one("weights", weights(rng, dt, large))
		one("all-zero", make([]byte, large*w))
		eq := make([]byte, 0, large*w)
		for range large {
			eq = append(eq, sp[len(sp)-w:]...)
		}
		one("all-equal", eq)
		// Same exponent everywhere, random mantissas: one-symbol exponents.
		same := weights(rng, dt, 70_000)
		if l, ok := dt.FloatLayout(); ok {
			for i := 0; i < len(same); i += w {
				v := uint64(0)
				for k := range w {
					v |= uint64(same[i+k]) << (8 * k)
				}
				v = v&^(uint64(1<<l.Exp-1)<<l.Mant) | uint64(1<<(l.Exp-1)-3)<<l.Mant
				for k := range w {
					same[i+k] = byte(v >> (8 * k))
				}
			}
		}
		one("one-exponent", same)

		// A file with an odd header (so tensors start unaligned), gaps,
		// an empty tensor, an odd-length tensor and a one-element tensor.
		var b builder
		b.header([]byte("NZ-test-header\x00\x01\x02"))
		b.tensor("a", dt, weights(rng, dt, 1001))
		b.opaque([]byte{1, 2, 3})
		b.tensor("empty", dt, nil)
		b.tensor("odd-length", dt, append(weights(rng, dt, 77), 0xAB))
		b.tensor("one", dt, weights(rng, dt, 1))
		b.tensor("specials", dt, sp)
		b.tensor("big", dt, weights(rng, dt, large))
		b.opaque([]byte("trailing opaque bytes"))
		ins = append(ins, input{name: d + "-unaligned-file", src: b.src, segs: b.segs})
	}

	// Mixed dtypes in one file, including adjacent tensors of different kinds.
	var b builder
	b.header([]byte("{\"mixed\":true}  "))
	for _, dt := range floatDTypes {
		b.tensor(dt.String(), dt, weights(rng, dt, 3333))
	}
	b.tensor("last-odd", dtype.F32, weights(rng, dtype.F32, 5)[:19])
	ins = append(ins, input{name: "mixed-dtypes", src: b.src, segs: b.segs})
	return ins
}

func newRand() *rand.Rand { return rand.New(rand.NewPCG(3, 4)) }
