package baseline

import (
	"fmt"
	"testing"
)

// benchFiles are the four bench checkpoints; real-bf16 comes first.
var benchFiles = []string{"real-bf16", "real-f16", "real-f16-native", "real-f32"}

// BenchmarkCompress reports MB/s of the original size and the ratio, one
// thread and all threads, for every codec on every bench file:
//
//	go test -run '^$' -bench 'Compress/real-bf16/' ./codec/baseline
func BenchmarkCompress(b *testing.B) {
	for _, file := range benchFiles {
		b.Run(file, func(b *testing.B) {
			in := benchFile(b, file)
			for _, name := range testNames() {
				for _, th := range []int{1, 0} {
					b.Run(fmt.Sprintf("%s/threads=%s", name, threadsLabel(th)), func(b *testing.B) {
						c := mustNew(b, name, th)
						var a []byte
						b.SetBytes(int64(len(in.src)))
						b.ReportAllocs()
						for b.Loop() {
							var err error
							if a, err = c.Compress(in.src, in.segs); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(len(in.src))/float64(len(a)), "ratio")
					})
				}
			}
		})
	}
}

// BenchmarkDecompress reports MB/s of the original size.
func BenchmarkDecompress(b *testing.B) {
	for _, file := range benchFiles {
		b.Run(file, func(b *testing.B) {
			in := benchFile(b, file)
			for _, name := range testNames() {
				for _, th := range []int{1, 0} {
					b.Run(fmt.Sprintf("%s/threads=%s", name, threadsLabel(th)), func(b *testing.B) {
						c := mustNew(b, name, th)
						a, err := c.Compress(in.src, in.segs)
						if err != nil {
							b.Fatal(err)
						}
						b.SetBytes(int64(len(in.src)))
						b.ReportAllocs()
						for b.Loop() {
							if _, err := c.Decompress(a); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		})
	}
}

func threadsLabel(th int) string {
	if th == 0 {
		return "max"
	}
	return fmt.Sprint(th)
}
