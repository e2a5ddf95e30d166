package lossy

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestKronShape(t *testing.T) {
	for _, c := range []struct {
		m, n int
		want kronShape
	}{
		{64, 64, kronShape{8, 8, 8, 8}},
		{512, 64, kronShape{16, 8, 32, 8}},
		{3, 256, kronShape{1, 32, 3, 8}},
		{7, 11, kronShape{1, 11, 7, 1}}, // primes: rank 7, a term costs 18 of 77
	} {
		got := kronShapeFor(c.m, c.n)
		if got.m1*got.m2 != c.m || got.n1*got.n2 != c.n {
			t.Fatalf("%d×%d: shape %+v does not factor it", c.m, c.n, got)
		}
		if got != c.want {
			t.Errorf("%d×%d: shape %+v (cost %d, rank %d), want cost %d as %+v", c.m, c.n, got, got.cost(), got.rank(), c.want.cost(), c.want)
		}
	}
}

// TestKronExact: a sum of two Kronecker products of the chosen shape comes
// back to BF16 precision once the budget buys two terms, and the measured
// rate is that of the stored factors.
func TestKronExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const m, n = 64, 64
	s := kronShapeFor(m, n)
	w := make([]float32, m*n)
	for range 2 {
		a := make([]float32, s.m1*s.n1)
		b := make([]float32, s.m2*s.n2)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				w[i*n+j] += a[(i/s.m2)*s.n1+j/s.n2] * b[(i%s.m2)*s.n2+j%s.n2]
			}
		}
	}
	for _, bits := range []float64{0.5, 1, 4} {
		coded, recon, err := kron{}.Code(w, m, n, bits)
		if err != nil {
			t.Fatal(err)
		}
		k := kronTerms(s, bits)
		if want := len(kronHeader(nil, s, k)) + 2*k*s.cost(); len(coded) != want {
			t.Errorf("%g bits: %d bytes, want %d", bits, len(coded), want)
		}
		if got := float64(len(coded)) * 8 / (m * n); got > bits*1.01 && k > 1 {
			t.Errorf("%g bits: %.3f bits per parameter", bits, got)
		}
		e, nn := sqErrors(w, recon)
		rel := math.Sqrt(e / nn)
		switch {
		case k >= 2 && rel > 0.01:
			t.Errorf("%g bits (%d terms): rel L2 %g of a sum of two products", bits, k, rel)
		case k == 1 && (rel < 0.05 || rel > 1):
			t.Errorf("%g bits (1 term): rel L2 %g", bits, rel)
		}
		dec, err := kronDecode(coded, m, n)
		if err != nil || len(dec) != len(recon) {
			t.Fatalf("decode: %v", err)
		}
		for i := range dec {
			if dec[i] != recon[i] {
				t.Fatalf("decode differs at %d", i)
			}
		}
	}
}

// TestKronDamaged: a stream that does not match its shape is an error.
func TestKronDamaged(t *testing.T) {
	v := make([]float32, 16*32)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	coded, _, err := kron{}.Code(v, 16, 32, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		b          []byte
		rows, cols int
	}{
		{"truncated", coded[:len(coded)-1], 16, 32},
		{"longer", append(append([]byte(nil), coded...), 0), 16, 32},
		{"other shape", coded, 32, 16},
		{"header only", coded[:3], 16, 32},
		{"empty", nil, 16, 32},
	} {
		if _, err := kronDecode(c.b, c.rows, c.cols); err != errKron {
			t.Errorf("%s: %v, want errKron", c.name, err)
		}
	}
}
