package codec

import (
	"path/filepath"
	"testing"
)

func BenchmarkSetupCompress(b *testing.B) {
	d := needShared(b)
	in, data := fileInput(b, filepath.Join(d, "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"))
	s, _ := BuildSetup([]Input{in}, SetupOptions{})
	segs := safetensorsSegments(data)
	for _, c := range []struct {
		name string
		opt  Options
	}{{"none", Options{Threads: 1}}, {"setup", Options{Threads: 1, Setup: s, SetupThreshold: 1e9}}} {
		arc, _ := CompressBytes(data, segs, c.opt)
		b.Run(c.name+"/enc", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				arc, _ = CompressBytes(data, segs, c.opt)
			}
			b.ReportMetric(float64(len(data))/float64(len(arc)), "ratio")
		})
		b.Run(c.name+"/dec", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			o := c.opt
			o.SkipHash = true
			for i := 0; i < b.N; i++ {
				DecompressBytes(arc, o)
			}
		})
	}
}
