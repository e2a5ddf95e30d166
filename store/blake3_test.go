package store

import (
	"math/rand/v2"
	"testing"

	"lukechampine.com/blake3"

	"neuralzip/codec"
)

// TestBlake3Sum: the small-input path of blake3Sum gives codec.SumBLAKE3's
// digest (the version 2 address) and the reference BLAKE3, at every size
// around the chunk and group edges.
func TestBlake3Sum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 3*smallGroup)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	var sizes []int
	for _, edge := range []int{0, 64, 1024, 2048, 8192, smallGroup - 1024, smallGroup, 2 * smallGroup} {
		for d := -65; d <= 65; d++ {
			if n := edge + d; n >= 0 {
				sizes = append(sizes, n)
			}
		}
	}
	for range 200 {
		sizes = append(sizes, r.IntN(len(b)))
	}
	for _, n := range sizes {
		got := blake3Sum(b[:n])
		if want := Hash(codec.SumBLAKE3(b[:n])); got != want {
			t.Fatalf("%d bytes: blake3Sum %x, codec.SumBLAKE3 %x", n, got, want)
		}
		if want := Hash(blake3.Sum256(b[:n])); got != want {
			t.Fatalf("%d bytes: blake3Sum %x, blake3.Sum256 %x", n, got, want)
		}
	}
}
