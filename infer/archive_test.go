package infer

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec"
)

// compress codes an original file into an archive in memory.
func compress(t testing.TB, b []byte, opt codec.EncodeOptions) []byte {
	t.Helper()
	l, err := checkpoint.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	a, err := codec.CompressBytes(context.Background(), b, l.Segments, opt)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// exactCase is a model file with its tokenizer and config.
type exactCase struct {
	file   string
	config []byte
	tok    Tokenizer
	prompt string
}

func exactCases(t *testing.T) []exactCase {
	var cs []exactCase
	tk := loadTok512(t)
	for _, dt := range []string{"f32", "bf16", "f16"} {
		for _, ext := range []string{"safetensors", "gguf"} {
			cs = append(cs, exactCase{file: "models/original/stories260K." + dt + "." + ext, tok: tk, prompt: "Once upon a time"})
		}
	}
	conf := gptConfig(t)
	for _, f := range []string{"step_000000.f32", "step_001000.f32", "step_000500.bf16", "step_001000.bf16"} {
		cs = append(cs, exactCase{file: gptDir + f + ".safetensors", config: conf, tok: ByteTokenizer{}, prompt: "A fool and his money"})
	}
	if testing.Short() { // one Llama and one GPT file
		return []exactCase{cs[2], cs[len(cs)-1]}
	}
	return cs
}

// run generates 40 tokens (12 with -short), sampled so that every logit
// matters through the probabilities, and returns the result.
func run(t testing.TB, m *Model, c exactCase) *Result {
	t.Helper()
	n := 40
	if testing.Short() {
		n = 12
	}
	return runN(t, m, c, n)
}

func runN(t testing.TB, m *Model, c exactCase, n int) *Result {
	t.Helper()
	s, err := NewSampler(0.9, 0.9, 42)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Generate(m, c.tok, c.prompt, GenerateOptions{N: n, Sampler: s})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestArchiveExact is the lossless claim: the logits from an archive are
// those from the original file, bit for bit (logits_sha256 and tokens),
// for every dtype, with and without a setup, at several chunk sizes, with
// and without prefetching (the worker and the forward pass share the
// decoding as it comes).
func TestArchiveExact(t *testing.T) {
	atLeastTwoProcs(t) // prefetching on
	for _, c := range exactCases(t) {
		t.Run(c.file, func(t *testing.T) {
			orig := readFile(t, needFile(t, c.file))
			want := run(t, openBytes(t, orig, Options{Config: c.config}), c)
			for _, v := range []struct {
				name string
				opt  codec.EncodeOptions
			}{
				{"default", codec.EncodeOptions{}},
				{"chunk256", codec.EncodeOptions{ChunkValues: 256}},
				{"chunk4096", codec.EncodeOptions{ChunkValues: 4096}},
				{"gaussian", codec.EncodeOptions{Setup: codec.GaussianSetup()}},
				{"gaussian-chunk1024", codec.EncodeOptions{Setup: codec.GaussianSetup(), ChunkValues: 1024}},
			} {
				if testing.Short() && v.name != "default" && v.name != "gaussian-chunk1024" {
					continue
				}
				a := compress(t, orig, v.opt)
				for _, prefetch := range []bool{false, true} {
					name := fmt.Sprintf("%s prefetch=%v", v.name, prefetch)
					m := openBytes(t, a, Options{Config: c.config, Prefetch: prefetch})
					if !m.FromArchive() {
						t.Fatalf("%s: not opened as an archive", name)
					}
					got := run(t, m, c)
					if got.LogitsSHA256 != want.LogitsSHA256 || fmt.Sprint(got.Tokens) != fmt.Sprint(want.Tokens) {
						t.Errorf("%s: logits %s tokens %v; from the original file %s %v", name, got.LogitsSHA256, got.Tokens, want.LogitsSHA256, want.Tokens)
					}
					mem := m.Memory()
					if mem.Weights != want.WeightsBytes || mem.Compressed != int64(len(a)) || mem.Peak != mem.Compressed+mem.Buffers {
						t.Errorf("%s: memory %+v (weights from the original %d, archive %d bytes)", name, mem, want.WeightsBytes, len(a))
					}
				}
			}
		})
	}
}

// TestArchiveDecodesOnce: from an archive in the default layout, a token
// decodes about its weights once. The units that hold small tensors of
// every layer (stories260K's keys and values share one block) stay in the
// arena between layers instead of being decoded per layer.
func TestArchiveDecodesOnce(t *testing.T) {
	orig := readFile(t, needFile(t, "models/original/stories260K.bf16.safetensors"))
	m := openBytes(t, compress(t, orig, codec.EncodeOptions{}), Options{})
	if _, err := m.Forward(1, 0); err != nil {
		t.Fatal(err)
	}
	first := m.Memory().Decoded
	const tokens = 8
	for pos := 1; pos <= tokens; pos++ {
		if _, err := m.Forward(300, pos); err != nil {
			t.Fatal(err)
		}
	}
	mem := m.Memory()
	per := float64(mem.Decoded-first) / tokens
	t.Logf("first token decoded %d bytes, then %.0f per token; weights %d", first, per, mem.Weights)
	if per > 1.05*float64(mem.Weights) {
		t.Errorf("%.0f bytes decoded per token for %d bytes of weights", per, mem.Weights)
	}
}
