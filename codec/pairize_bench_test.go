package codec

import (
	"testing"
)

func BenchmarkPreparePairs(b *testing.B) {
	src := realChunk(b, "real-bf16.safetensors", 1<<16)
	n := len(src) / 2
	e, r := make([]byte, n), make([]byte, n)
	splitBF16(src, e, r)
	var h [256]uint32
	countHist(&h, e)
	var st streamEncoder
	b.SetBytes(int64(n))
	for i := 0; i < b.N; i++ {
		st.preparePairs(e, 8, &h)
	}
	b.ReportMetric(float64(len(st.exc))/float64(n), "exc/sym")
}

func BenchmarkExpandPairs(b *testing.B) {
	src := realChunk(b, "real-bf16.safetensors", 1<<16)
	n := len(src) / 2
	e, r := make([]byte, n), make([]byte, n)
	splitBF16(src, e, r)
	var h [256]uint32
	countHist(&h, e)
	var st streamEncoder
	st.preparePairs(e, 8, &h)
	k := len(st.top)
	var tab [256]uint32
	for c := range tab {
		tab[c] = 1 << 16
	}
	for a := 0; a < k; a++ {
		for c := 0; c < k; c++ {
			tab[a*k+c] = uint32(st.top[a]) | uint32(st.top[c])<<8
		}
	}
	dst := make([]byte, n)
	b.SetBytes(int64(n))
	for i := 0; i < b.N; i++ {
		if !expandPairs(dst, st.codes, &tab, byte(k*k), st.exc) {
			b.Fatal("expand failed")
		}
	}
}
