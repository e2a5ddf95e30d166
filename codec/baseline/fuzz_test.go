package baseline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// Fuzz targets, one per codec family, seeded with real archives. Each
// decodes arbitrary bytes: no panic, errors are ErrFormat or ErrCorrupt, and
// whatever decodes re-encodes and decodes back to itself.
//
//	go test -run '^$' -fuzz FuzzDecompressZipNN -fuzztime 20s -fuzzminimizetime 5s ./codec/baseline
//
// Go minimizes every input that finds new coverage, for up to
// -fuzzminimizetime (60s by default) and in time quadratic in its length, so
// the seeds are kept to a few hundred bytes and a short minimize time keeps a
// bounded run fuzzing rather than minimizing.

func FuzzDecompressZstd(f *testing.F)     { fuzzDecompress(f, "zstd-3") }
func FuzzDecompressGzip(f *testing.F)     { fuzzDecompress(f, "gzip") }
func FuzzDecompressZipNN(f *testing.F)    { fuzzDecompress(f, "zipnn") }
func FuzzDecompressDFloat11(f *testing.F) { fuzzDecompress(f, "dfloat11") }

// fuzzSeeds are small inputs: slices of the real bench files as tensors of
// their dtype (when the corpus is present) and a few generated ones.
func fuzzSeeds() []input {
	var ins []input
	for _, file := range benchFiles {
		b, err := os.ReadFile(filepath.Join(sharedDir, "models", "bench", file+".safetensors"))
		if err != nil {
			continue
		}
		segs, err := safetensorsLayout(b)
		if err != nil {
			continue
		}
		// The largest tensor, cut to 256 bytes, after 16 header bytes.
		// Seeds stay small: Go minimizes every input that finds new
		// coverage in time quadratic in its length (minutes for 1 KiB).
		var big codec.Segment
		for _, s := range segs {
			if s.IsTensor() && s.Length > big.Length {
				big = s
			}
		}
		data := b[big.Offset : big.Offset+min(big.Length, 256)]
		var bl builder
		bl.header(b[8:24])
		bl.tensor(big.Name, big.DType, data)
		ins = append(ins, input{name: file, src: bl.src, segs: bl.segs})
	}
	rng := newRand()
	var bl builder
	bl.header([]byte("hdr"))
	bl.tensor("bf16", dtype.BF16, weights(rng, dtype.BF16, 64))
	bl.tensor("f16", dtype.F16, append(weights(rng, dtype.F16, 40), 1))
	bl.tensor("f32", dtype.F32, weights(rng, dtype.F32, 24))
	bl.tensor("rle", dtype.BF16, make([]byte, 64))
	bl.tensor("i32", dtype.I32, weights(rng, dtype.I32, 4))
	ins = append(ins,
		input{name: "generated", src: bl.src, segs: bl.segs},
		input{name: "specials", src: specials(dtype.BF16), segs: []codec.Segment{{Length: int64(len(specials(dtype.BF16))), Name: "s", DType: dtype.BF16}}},
		input{name: "empty"},
		input{name: "text", src: []byte("not a checkpoint, just text text text text")},
	)
	return ins
}

func fuzzDecompress(f *testing.F, name string) {
	c := mustNew(f, name, 2)
	for _, in := range fuzzSeeds() {
		a, err := c.Compress(in.src, in.segs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := c.Decompress(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrFormat) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrFormat: %v", err)
			}
			return
		}
		a, err := c.Compress(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.Decompress(a)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("decoded %d bytes do not roundtrip: %v", len(out), err)
		}
	})
}
