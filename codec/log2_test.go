package codec

import (
	"math"
	"testing"
)

func TestLog2Fixed(t *testing.T) {
	for _, x := range []uint64{1, 2, 3, 5, 7, 10, 100, 1000, 1023, 1024, 1025, 65535, 65536, 1e6, 1 << 40, 123456789} {
		got := float64(log2Fixed(x)) / (1 << log2Frac)
		if want := math.Log2(float64(x)); math.Abs(got-want) > 2e-3 {
			t.Errorf("log2(%d) = %v, want %v", x, got, want)
		}
	}
	var h [256]uint32
	h[1], h[2] = 500, 500
	if b, d := entropyBits(&h, 1000); math.Abs(b-1000) > 1 || d != 2 {
		t.Fatalf("entropyBits = %v, %d", b, d)
	}
}

func TestEntropyBitsOf(t *testing.T) {
	var h [256]uint32
	var nz []byte
	for s := 0; s < 256; s += 7 {
		h[s] = uint32(s*s%97 + 1)
		nz = append(nz, byte(s))
	}
	var n int
	for _, c := range h {
		n += int(c)
	}
	want, _ := entropyBits(&h, n)
	if got := entropyBitsOf(&h, nz, n); got != want {
		t.Fatalf("entropyBitsOf %v, entropyBits %v", got, want)
	}
}
