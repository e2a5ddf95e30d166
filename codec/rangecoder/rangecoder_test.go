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

// TestByteTwin: EncodeByte codes as Encode does bit by bit with the
// models its prediction selects, and DecodeByte (the coder's state in
// registers) decodes what Decode decodes: the byte coders are the bit
// coders' twins, with and without a prediction, where it holds and where
// a byte leaves it at any bit.
func TestByteTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 20000
	src := make([]byte, n)
	expect := make([]int, n)
	for i := range src {
		src[i] = byte(rng.NormFloat64()*20 + 128)
		switch rng.IntN(3) {
		case 0:
			expect[i] = -1
		case 1:
			expect[i] = int(src[i]) // holds
		default:
			expect[i] = int(src[i] ^ byte(1)<<rng.IntN(8)) // leaves it at one bit
		}
	}
	// the bit-by-bit reference: Encode with the model EncodeByte selects
	pick := func(plain *[256]Model, matched *[512]Model, expect, c0, b int) *Model {
		if expect >= 0 && (expect|256)>>(b+1) == c0 {
			return &matched[(expect>>b)&1<<8|c0]
		}
		return &plain[c0]
	}
	var p1, p2 [256]Model
	var m1, m2 [512]Model
	var e1, e2 Encoder
	e1.Reset(nil)
	e2.Reset(nil)
	for i, c := range src {
		e1.EncodeByte(c, &p1, &m1, expect[i])
		c0 := 1
		for b := 7; b >= 0; b-- {
			bit := uint32(c>>b) & 1
			e2.Encode(pick(&p2, &m2, expect[i], c0, b), bit)
			c0 = c0<<1 | int(bit)
		}
	}
	a, b := e1.Finish(), e2.Finish()
	if string(a) != string(b) {
		t.Fatalf("EncodeByte: %d bytes, bit by bit %d, different", len(a), len(b))
	}
	var d1, d2 Decoder
	if d1.Reset(a) != nil || d2.Reset(a) != nil {
		t.Fatal("bad start")
	}
	p1, p2, m1, m2 = [256]Model{}, [256]Model{}, [512]Model{}, [512]Model{}
	for i, c := range src {
		got := d1.DecodeByte(&p1, &m1, expect[i])
		c0 := 1
		for b := 7; b >= 0; b-- {
			c0 = c0<<1 | int(d2.Decode(pick(&p2, &m2, expect[i], c0, b)))
		}
		if got != c || byte(c0) != c {
			t.Fatalf("byte %d: DecodeByte %d, Decode %d, want %d", i, got, byte(c0), c)
		}
	}
	if !d1.Done() || !d2.Done() {
		t.Fatal("streams not read to their end")
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

// TestShort: FinishShort's streams decode through ResetShort to the same
// bits, without overrun, at any length (from a few bits, where the whole
// stream may be dropped, up); they are shorter than Finish's by its start
// byte and more; and Cost counts within a few bits of what the coder
// writes.
func TestShort(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 4))
	for _, n := range []int{0, 1, 3, 10, 100, 1000, 30000} {
		for trial := range 20 {
			bits := make([]uint32, n)
			for i := range bits {
				if rng.Float64() < 0.1+0.8*float64(trial%3)/2 {
					bits[i] = 1
				}
			}
			var em, cm [2]Model
			var e, f Encoder
			var c Cost
			e.Reset(nil)
			f.Reset([]byte{7}) // a prefix: FinishShort returns only the stream
			for i, b := range bits {
				e.Encode(&em[i&1], b)
				f.Encode(&cm[i&1], b)
			}
			var km [2]Model
			for i, b := range bits {
				c.Encode(&km[i&1], b)
			}
			long := e.Finish()
			short := f.FinishShort()
			if len(short) >= len(long) {
				t.Fatalf("%d bits: FinishShort wrote %d bytes, Finish %d", n, len(short), len(long))
			}
			if got := float64(len(short)) * 8; got > c.Bits+16 || got < c.Bits-8 {
				t.Errorf("%d bits: %d bytes coded, Cost counts %.1f bits", n, len(short), c.Bits)
			}
			var dm [2]Model
			var d Decoder
			d.ResetShort(short)
			for i, b := range bits {
				if d.Decode(&dm[i&1]) != b {
					t.Fatalf("%d bits, trial %d: bit %d decodes wrong", n, trial, i)
				}
			}
			if d.Overrun() {
				t.Fatalf("%d bits: overrun", n)
			}
		}
	}
}
