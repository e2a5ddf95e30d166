package codec

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func benchFile(b *testing.B, name string) ([]byte, []Segment) {
	d := needShared(b)
	src, err := os.ReadFile(filepath.Join(d, "models/bench", name))
	if err != nil {
		b.Skip(err)
	}
	return src, safetensorsSegments(src)
}

func benchCompress(b *testing.B, name string, threads int) {
	src, segs := benchFile(b, name)
	opt := EncodeOptions{Threads: threads}
	var buf bytes.Buffer
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if _, err := Encode(context.Background(), &buf, []Input{{Name: "x", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, opt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(src))/float64(buf.Len()), "ratio")
}

func benchDecompress(b *testing.B, name string, threads int, skipHash bool) {
	src, segs := benchFile(b, name)
	arc, err := CompressBytes(context.Background(), src, segs, EncodeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rd, err := NewReader(Bytes(arc), int64(len(arc))) // in place, as DecompressBytes and nzip bench
	if err != nil {
		b.Fatal(err)
	}
	opt := DecodeOptions{Threads: threads, SkipHash: skipHash}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := rd.WriteFile(context.Background(), io.Discard, 0, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompressBF16T1(b *testing.B)   { benchCompress(b, "real-bf16.safetensors", 1) }
func BenchmarkCompressBF16T2(b *testing.B)   { benchCompress(b, "real-bf16.safetensors", 2) }
func BenchmarkDecompressBF16T1(b *testing.B) { benchDecompress(b, "real-bf16.safetensors", 1, false) }
func BenchmarkDecompressBF16T1NoHash(b *testing.B) {
	benchDecompress(b, "real-bf16.safetensors", 1, true)
}
func BenchmarkDecompressBF16T2(b *testing.B) { benchDecompress(b, "real-bf16.safetensors", 2, false) }

// BenchmarkSetup: one thread, a trajectory checkpoint coded with per-block
// tables ("none") and with a setup built from it, forced on every block
// ("setup"). The ratio is reported as a metric.
func BenchmarkSetup(b *testing.B) {
	d := needShared(b)
	in, data := fileInput(b, filepath.Join(d, "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"))
	s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{})
	if err != nil {
		b.Fatal(err)
	}
	benchCodings(b, data, []benchCoding{{"none", EncodeOptions{Threads: 1}}, {"setup", EncodeOptions{Threads: 1, Setup: s, SetupThreshold: 1e9}}})
}

// BenchmarkSetupChunks: real-bf16 on one thread at 64 Ki and 4 Ki values
// per block, coded with per-block tables ("own") and with a setup built
// from the file (defaults, external: the setup's bytes do not count).
func BenchmarkSetupChunks(b *testing.B) {
	d := needShared(b)
	in, data := fileInput(b, filepath.Join(d, "models/bench/real-bf16.safetensors"))
	for _, chunk := range []int{65536, 4096} {
		s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{ChunkValues: chunk})
		if err != nil {
			b.Fatal(err)
		}
		k := fmt.Sprintf("%dKi/", chunk/1024)
		benchCodings(b, data, []benchCoding{
			{k + "own", EncodeOptions{Threads: 1, ChunkValues: chunk}},
			{k + "setup", EncodeOptions{Threads: 1, ChunkValues: chunk, Setup: s, SetupExternal: true}},
		})
	}
}

type benchCoding struct {
	name string
	opt  EncodeOptions
}

// benchCodings runs compress and decompress sub-benchmarks of a
// safetensors file for each coding, with the ratio as a metric.
func benchCodings(b *testing.B, data []byte, codings []benchCoding) {
	segs := safetensorsSegments(data)
	for _, c := range codings {
		arc, err := CompressBytes(context.Background(), data, segs, c.opt)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/compress", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := CompressBytes(context.Background(), data, segs, c.opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data))/float64(len(arc)), "ratio")
		})
		b.Run(c.name+"/decompress", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			o := c.opt.Decoding()
			o.SkipHash = true
			for i := 0; i < b.N; i++ {
				if _, err := DecompressBytes(context.Background(), arc, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
