package codec

import (
	"math/rand/v2"
	"testing"
)

// planePays: near-uniform planes (sampled or short, where the sample's
// entropy is biased low) stay packed; planes with structure are coded.
func TestPlanePays(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	plane := func(n int, draw func() byte) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = draw()
		}
		return p
	}
	uniform := func() byte { return byte(r.IntN(256)) }
	// entropy ~7.4 bits: half the values from 64 symbols
	lumpy := func() byte {
		if r.IntN(2) == 0 {
			return byte(r.IntN(64))
		}
		return byte(r.IntN(256))
	}
	// 16 symbols: 4 bits
	narrow := func() byte { return byte(r.IntN(16)) }
	for _, c := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"uniform 64Ki (sampled)", plane(1<<16, uniform), false},
		{"uniform 960 (counted, biased low)", plane(960, uniform), false},
		{"uniform 5000", plane(5000, uniform), false},
		{"lumpy 64Ki", plane(1<<16, lumpy), true},
		{"lumpy 5000", plane(5000, lumpy), true},
		{"narrow 300", plane(300, narrow), true},
		{"narrow 64Ki", plane(1<<16, narrow), true},
		{"constant 100", make([]byte, 100), true},
	} {
		var b blockEncoder
		bits, n, k, _ := b.planeEntropy(c.p, false)
		if got := planePays(bits, n, k, len(c.p), 8); got != c.want {
			t.Errorf("%s: planePays = %v (entropy %.3f bits/value over %d, %d distinct), want %v", c.name, got, bits/float64(n), n, k, c.want)
		}
		// and the block coder follows it
		out := b.appendPlane(nil, c.p, 8)
		if packed := out[0] == smPacked; packed == c.want {
			t.Errorf("%s: plane coded with mode %d", c.name, out[0])
		}
	}
}
