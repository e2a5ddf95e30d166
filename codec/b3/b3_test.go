package b3

import (
	"math/rand/v2"
	"os"
	"testing"

	"lukechampine.com/blake3/guts"
)

// refChunkCVs is the chaining value of each chunk, one at a time.
func refChunkCVs(b []byte, chunk uint64) (cvs [16]CV) {
	for i := range cvs {
		cvs[i] = guts.ChainingValue(guts.CompressChunk(b[i*guts.ChunkSize:(i+1)*guts.ChunkSize], &guts.IV, chunk+uint64(i), 0))
	}
	return cvs
}

// refSubtree merges chunk chaining values pairwise, one parent at a time.
func refSubtree(b []byte, chunk uint64) CV {
	var s []CV
	for i := 0; i < len(b)/GroupSize; i++ {
		c := refChunkCVs(b[i*GroupSize:], chunk+uint64(16*i))
		s = append(s, c[:]...)
	}
	for len(s) > 1 {
		for i := 0; i < len(s)/2; i++ {
			s[i] = guts.ChainingValue(guts.ParentNode(s[2*i], s[2*i+1], &guts.IV, 0))
		}
		s = s[:len(s)/2]
	}
	return s[0]
}

// The kernels (where the CPU has AVX-512) and the library's path give
// the chaining values of one chunk, one parent at a time.
func TestTwin(t *testing.T) {
	modes := []bool{false}
	if useAVX512 {
		modes = append(modes, true)
	} else if os.Getenv("NZ_REQUIRE_AVX512") != "" {
		t.Fatal("the AVX-512 kernels are not used, though NZ_REQUIRE_AVX512 says this CPU has them")
	} else {
		t.Log("no AVX-512 here: only the library's path is compared")
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	for _, m := range modes {
		useAVX512 = m
		twin(t)
	}
}

func twin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 64*GroupSize)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	// counters that carry into the high word
	for _, chunk := range []uint64{0, 16, 1 << 20, 1<<32 - 8, 1<<32 - 16, 1<<40 + 3} {
		want := refChunkCVs(b, chunk)
		var got [16]CV
		ChunkCVs(&got, b, chunk)
		if got != want {
			t.Fatalf("AVX-512 %v, chunk %d: chaining values differ:\n got %x\nwant %x", useAVX512, chunk, got, want)
		}
		for _, n := range []int{1, 2, 4, 8, 16, 32, 64} {
			if g, w := SubtreeCV(b[:n*GroupSize], chunk), refSubtree(b[:n*GroupSize], chunk); g != w {
				t.Fatalf("AVX-512 %v, chunk %d, %d groups: %x, want %x", useAVX512, chunk, n, g, w)
			}
		}
	}
	// parents at every count up to 40 pairs
	cvs := make([]CV, 80)
	for i := range cvs {
		for w := range cvs[i] {
			cvs[i][w] = r.Uint32()
		}
	}
	for n := 1; n <= 40; n++ {
		out := make([]CV, n)
		Parents(out, cvs[:2*n])
		for i := range out {
			if want := guts.ChainingValue(guts.ParentNode(cvs[2*i], cvs[2*i+1], &guts.IV, 0)); out[i] != want {
				t.Fatalf("%d pairs: parent %d differs", n, i)
			}
		}
	}
}

func BenchmarkSubtree(b *testing.B) {
	buf := make([]byte, 16*GroupSize)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for _, asm := range []bool{true, false} {
		name := "kernel"
		if !asm {
			name = "guts"
		}
		b.Run(name, func(b *testing.B) {
			if asm && !useAVX512 {
				b.Skip("no AVX-512")
			}
			defer func(v bool) { useAVX512 = v }(useAVX512)
			useAVX512 = asm
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				SubtreeCV(buf, 0)
			}
		})
	}
}
