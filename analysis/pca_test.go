package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestPCA2Line(t *testing.T) {
	// points on the line y = 2x (plus a constant third coordinate): all the
	// variance lies along one direction, and the projection keeps the
	// distances along it
	var rows [][]float64
	for i := 0; i < 10; i++ {
		x := float64(i) - 4.5
		rows = append(rows, []float64{x, 2 * x, 7})
	}
	proj, ex := PCA2(rows)
	if math.Abs(ex[0]-1) > 1e-9 || ex[1] > 1e-9 {
		t.Fatalf("explained = %v, want [1 0]", ex)
	}
	for i := range rows {
		want := rows[i][0] * math.Sqrt(5) // |(x, 2x)| with the sign convention (+)
		if math.Abs(proj[i][0]-want) > 1e-9 || math.Abs(proj[i][1]) > 1e-9 {
			t.Fatalf("point %d: %v, want [%g 0]", i, proj[i], want)
		}
	}
}

func TestPCA2Plane(t *testing.T) {
	// variance 9 along e0, 1 along e1, none along e2
	rows := [][]float64{{3, 0, 1}, {-3, 0, 1}, {0, 1, 1}, {0, -1, 1}}
	proj, ex := PCA2(rows)
	// total variance: (9+9)/4 + (1+1)/4 = 5; e0 has 4.5, e1 0.5
	if math.Abs(ex[0]-0.9) > 1e-9 || math.Abs(ex[1]-0.1) > 1e-9 {
		t.Fatalf("explained = %v, want [0.9 0.1]", ex)
	}
	want := [][2]float64{{3, 0}, {-3, 0}, {0, 1}, {0, -1}}
	for i := range want {
		if math.Abs(proj[i][0]-want[i][0]) > 1e-9 || math.Abs(proj[i][1]-want[i][1]) > 1e-9 {
			t.Fatalf("point %d: %v, want %v", i, proj[i], want[i])
		}
	}
}

func TestPCA2Degenerate(t *testing.T) {
	proj, ex := PCA2([][]float64{{1, 2}})
	if len(proj) != 1 || proj[0] != [2]float64{} || ex != [2]float64{} {
		t.Fatalf("one point: %v %v", proj, ex)
	}
	proj, ex = PCA2([][]float64{{1, 2}, {1, 2}, {1, 2}})
	if proj[2] != [2]float64{} || ex != [2]float64{} {
		t.Fatalf("identical points: %v %v", proj, ex)
	}
}

func TestPCA2WeightedIgnoresLightOutlier(t *testing.T) {
	// heavy points spread along e0, one light outlier far along e1
	rows := [][]float64{{-2, 0}, {-1, 0}, {1, 0}, {2, 0}, {0, 50}}
	_, ex := PCA2(rows)
	if ex[0] < 0.9 {
		t.Fatalf("unweighted: the outlier should dominate, explained %v", ex)
	}
	proj, ex := PCA2Weighted(rows, []float64{1000, 1000, 1000, 1000, 1})
	// the first axis is e0 now: the heavy points project to ±1, ±2 (the
	// mean moves a little towards the outlier along e1 only)
	for i, want := range []float64{-2, -1, 1, 2} {
		if math.Abs(proj[i][0]-want) > 1e-6 {
			t.Fatalf("point %d on PC1: %g, want %g (explained %v)", i, proj[i][0], want, ex)
		}
	}
}

// With fewer points than dimensions PCA2 works on the Gram matrix; it
// finds the same components and variances as the covariance matrix.
func TestPCAGramMatchesCov(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, d int }{{3, 50}, {20, 300}, {7, 8}} {
		rows := make([][]float64, c.n)
		weights := make([]float64, c.n)
		for i := range rows {
			rows[i] = make([]float64, c.d)
			for j := range rows[i] {
				rows[i][j] = rng.NormFloat64() * float64(1+j%5)
			}
			weights[i] = 1 + rng.Float64()
		}
		w := func(i int) float64 { return weights[i] }
		var wsum float64
		mean := make([]float64, c.d)
		for i, r := range rows {
			wsum += w(i)
			for j, v := range r {
				mean[j] += w(i) * v
			}
		}
		for j := range mean {
			mean[j] /= wsum
		}
		gc, ge := pcaGram(rows, w, wsum, mean)
		cc, ce := pcaCov(rows, w, wsum, mean)
		for k := range 2 {
			if math.Abs(ge[k]-ce[k]) > 1e-9 {
				t.Fatalf("n %d d %d: explained %v (Gram) vs %v (covariance)", c.n, c.d, ge, ce)
			}
			for j := range gc[k] {
				if math.Abs(gc[k][j]-cc[k][j]) > 1e-6 {
					t.Fatalf("n %d d %d: component %d differs at %d: %g vs %g", c.n, c.d, k, j, gc[k][j], cc[k][j])
				}
			}
		}
	}
}
