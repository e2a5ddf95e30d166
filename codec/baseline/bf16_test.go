package baseline

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The word-at-a-time BF16 split and join must match their generic twins.
func TestBF16WordMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 1000, 4099} {
		src := make([]byte, 2*n)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		e1, s1 := make([]byte, n), make([]byte, n)
		e2, s2 := make([]byte, n), make([]byte, n)
		splitBF16(src, e1, s1)
		splitBF16Generic(src, e2, s2)
		if !bytes.Equal(e1, e2) || !bytes.Equal(s1, s2) {
			t.Fatalf("n=%d: splitBF16 differs from splitBF16Generic", n)
		}
		d1, d2 := make([]byte, 2*n), make([]byte, 2*n)
		joinBF16(d1, e1, s1)
		joinBF16Generic(d2, e1, s1)
		if !bytes.Equal(d1, d2) || !bytes.Equal(d1, src) {
			t.Fatalf("n=%d: joinBF16 differs from its twin or the input", n)
		}
	}
}
