package codec

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

var updateSparseCorpus = flag.Bool("update-sparse-corpus", false, "rewrite testdata/fuzz/FuzzSparse from ../shared/activations")

// sparseSeeds are sparse blocks cut from the real activations: 2048
// values at the start of a tensor's second block, each mask method, BF16,
// FP8 E4M3 and F32 (with its row length 512).
func sparseSeeds(t testing.TB) (seeds [][]byte, types []dtype.DType) {
	defer func(f int) { sparseForce = f }(sparseForce)
	be := &blockEncoder{}
	for _, c := range []struct {
		file string
		d    dtype.DType
	}{{"relu2-step800.bf16.safetensors", dtype.BF16}, {"relu2-step200.f8e4m3.safetensors", dtype.F8E4M3}, {"relu2-step000.bf16.safetensors", dtype.BF16}, {"relu2-step800.f32.safetensors", dtype.F32}} {
		src, err := os.ReadFile(filepath.Join(needShared(t), "activations", c.file))
		if err != nil {
			t.Skipf("%s: %v", c.file, err)
		}
		segs := safetensorsSegments(src)
		g := segs[2] // layer1.mlp.act
		size := c.d.Size()
		vals := src[g.Offset+int64(65536*size) : g.Offset+int64(65536*size)+int64(2048*size)]
		for _, force := range []int{maskBitmap, maskGaps, maskColumns} {
			sparseForce = force
			seeds = append(seeds, be.encodeSparse(nil, vals, c.d, 512, 0))
			types = append(types, c.d)
		}
	}
	return seeds, types
}

// TestSparseCorpus writes the seed corpus of FuzzSparse with
// -update-sparse-corpus (it needs ../shared/activations).
func TestSparseCorpus(t *testing.T) {
	if !*updateSparseCorpus {
		t.Skip("writes testdata/fuzz/FuzzSparse with -update-sparse-corpus")
	}
	seeds, types := sparseSeeds(t)
	dir := filepath.Join("testdata", "fuzz", "FuzzSparse")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range seeds {
		n := 2048
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbyte(%d)\nuint16(%d)\n", s, byte(types[i]), n)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%v-%d", types[i], i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzSparse decodes arbitrary sparse block payloads and reads their
// programs (fuzzProgram): no panic, and what decodes codes again (encodeSparse, each mask method) to a block that
// decodes to the same values.
func FuzzSparse(f *testing.F) {
	f.Fuzz(func(t *testing.T, payload []byte, d byte, n uint16) {
		dt := dtype.DType(d)
		if !sparseType(dt) {
			return
		}
		bd := sparseDecoder()
		dst := make([]byte, int(n)*dt.Size())
		err := bd.decode(dst, payload, kindFloat, dt)
		fuzzProgram(t, payload, KindFloat, dt, len(dst), err == nil)
		if err != nil {
			return
		}
		defer func(f int) { sparseForce = f }(sparseForce)
		be := &blockEncoder{}
		for _, force := range []int{maskBitmap, maskGaps, maskColumns} {
			sparseForce = force
			p := be.encodeSparse(nil, dst, dt, 64, 3)
			out := make([]byte, len(dst))
			if err := bd.decode(out, p, kindFloat, dt); err != nil {
				t.Fatalf("re-coded block (mask %d) does not decode: %v", force, err)
			}
			if !bytes.Equal(out, dst) {
				t.Fatalf("re-coded block (mask %d) decodes to other values", force)
			}
		}
	})
}

// TestTensorFrameCorpus writes the seed corpus of FuzzTensorFrame with
// -update-sparse-corpus: frames of 2048 real activation values in blocks
// of 1024 (best and fast), and a dense one.
func TestTensorFrameCorpus(t *testing.T) {
	if !*updateSparseCorpus {
		t.Skip("writes testdata/fuzz/FuzzTensorFrame with -update-sparse-corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzTensorFrame")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, frame []byte, d dtype.DType, n int) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbyte(%d)\nuint32(%d)\n", frame, byte(d), n)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct {
		file string
		d    dtype.DType
	}{{"relu2-step800.bf16.safetensors", dtype.BF16}, {"relu2-step200.f8e4m3.safetensors", dtype.F8E4M3}} {
		src, err := os.ReadFile(filepath.Join(needShared(t), "activations", c.file))
		if err != nil {
			t.Skip(err)
		}
		g := safetensorsSegments(src)[1]
		vals := src[g.Offset : g.Offset+int64(2048*c.d.Size())]
		for _, fast := range []bool{false, true} {
			tc := &TensorCoder{Best: !fast, ChunkValues: 1024}
			frame, err := tc.Encode(nil, vals, c.d, 512)
			if err != nil {
				t.Fatal(err)
			}
			write(fmt.Sprintf("seed-%v-%d-fast-%v", c.d, i, fast), frame, c.d, 2048)
		}
	}
	dense := sparseValues(dtype.F16, 700, 0, false, 9)
	frame, _ := (&TensorCoder{ChunkValues: 256}).Encode(nil, dense, dtype.F16, 0)
	write("seed-F16-dense", frame, dtype.F16, 700)
}

// FuzzTensorFrame decodes arbitrary frames: no panic, and what decodes
// codes again to a frame that decodes to the same values.
func FuzzTensorFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, frame []byte, d byte, n uint32) {
		dt := dtype.DType(d)
		if !sparseType(dt) || n > 1<<16 {
			return
		}
		c := &TensorCoder{}
		dst := make([]byte, int(n)*dt.Size())
		if c.Decode(dst, frame, dt) != nil {
			return
		}
		again, err := c.Encode(nil, dst, dt, 16)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, len(dst))
		if err := c.Decode(out, again, dt); err != nil || !bytes.Equal(out, dst) {
			t.Fatalf("re-coded frame: %v", err)
		}
	})
}
