package infer

import (
	"testing"

	"neuralzip/codec"
)

// benchModels are the models of the memory and speed table
// (docs/inference.md).
func benchModels(b testing.TB) []exactCase {
	return []exactCase{
		{file: "models/original/stories260K.bf16.safetensors", tok: loadTok512(b), prompt: "Once upon a time"},
		{file: "models/original/stories260K.f32.safetensors", tok: loadTok512(b), prompt: "Once upon a time"},
		{file: gptDir + "step_001000.bf16.safetensors", config: gptConfig(b), tok: ByteTokenizer{}, prompt: "A fool and his money"},
		{file: gptDir + "step_001000.f32.safetensors", config: gptConfig(b), tok: ByteTokenizer{}, prompt: "A fool and his money"},
	}
}

// BenchmarkGenerate generates 100 tokens greedily from the original file
// and from its archive (default options), with and without prefetching,
// and reports tokens/s (every position run counts) and the resident
// weight bytes: peak_bytes (archive held + decoded buffers, or the
// tensors as stored) and peak/weights, the fraction of the uncompressed
// weights.
func BenchmarkGenerate(b *testing.B) {
	for _, c := range benchModels(b) {
		orig := readFile(b, needFile(b, c.file))
		a := compress(b, orig, codec.EncodeOptions{})
		for _, v := range []struct {
			name string
			data []byte
			opt  Options
		}{
			{"original", orig, Options{Config: c.config}},
			{"archive", a, Options{Config: c.config}},
			{"archive-prefetch", a, Options{Config: c.config, Prefetch: true}},
		} {
			b.Run(c.file[max(0, len(c.file)-40):]+"/"+v.name, func(b *testing.B) {
				m := openBytes(b, v.data, v.opt)
				positions := 0
				b.ResetTimer()
				for b.Loop() {
					res, err := Generate(m, c.tok, c.prompt, GenerateOptions{N: 100})
					if err != nil {
						b.Fatal(err)
					}
					positions += res.Positions
				}
				mem := m.Memory()
				b.ReportMetric(float64(positions)/b.Elapsed().Seconds(), "tokens/s")
				b.ReportMetric(float64(mem.Peak), "peak_bytes")
				b.ReportMetric(float64(mem.Peak)/float64(mem.Weights), "peak/weights")
			})
		}
	}
}
