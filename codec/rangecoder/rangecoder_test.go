package rangecoder

import (
	"math/rand/v2"
	"testing"
)

// TestRoundTrip codes biased and drifting bits through a few models and
// decodes them back exactly to the stream's end; a stream cut short or
// with a byte too many is not Done, and a bad start is refused.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 2))
	const n = 200000
	bits := make([]uint32, n)
	ctx := make([]int, n)
	for i := range bits {
		ctx[i] = rng.IntN(4)
		p := 0.02 + 0.96*float64(ctx[i])/3 // per-model bias
		if i > n/2 {
			p = 1 - p // drift
		}
		if rng.Float64() < p {
			bits[i] = 1
		}
	}
	var em [4]Model
	var e Encoder
	e.Reset(nil)
	for i, b := range bits {
		e.Encode(&em[ctx[i]], b)
	}
	coded := e.Finish()
	if len(coded) >= n/8 {
		t.Fatalf("%d bits coded in %d bytes: the models do not adapt", n, len(coded))
	}
	decode := func(src []byte) (ok, done bool) {
		var dm [4]Model
		var d Decoder
		if err := d.Reset(src); err != nil {
			t.Fatal(err)
		}
		ok = true
		for i, b := range bits {
			if d.Decode(&dm[ctx[i]]) != b {
				ok = false
			}
		}
		return ok, d.Done()
	}
	if ok, done := decode(coded); !ok || !done {
		t.Fatalf("decoded exactly %v, to the end %v", ok, done)
	}
	if _, done := decode(coded[:len(coded)-1]); done {
		t.Fatal("a stream cut short is Done")
	}
	if _, done := decode(append(coded[:len(coded):len(coded)], 0)); done {
		t.Fatal("a stream with a byte too many is Done")
	}
	var d Decoder
	if d.Reset([]byte{1, 0, 0, 0, 0}) != ErrStart || d.Reset([]byte{0, 0}) != ErrStart {
		t.Fatal("a bad start is accepted")
	}
}

func BenchmarkDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	bits := make([]uint32, 1<<16)
	for i := range bits {
		if rng.IntN(10) == 0 {
			bits[i] = 1
		}
	}
	var m Model
	var e Encoder
	e.Reset(nil)
	for _, x := range bits {
		e.Encode(&m, x)
	}
	coded := e.Finish()
	b.SetBytes(int64(len(bits)) / 8)
	for b.Loop() {
		var m Model
		var d Decoder
		_ = d.Reset(coded)
		for range bits {
			d.Decode(&m)
		}
	}
}
