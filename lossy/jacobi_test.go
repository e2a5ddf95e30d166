//go:build !js

package lossy

import (
	"bytes"
	"math"
	"os"
	"testing"

	"neuralzip/checkpoint"
)

// TestJacobiSVD holds the browser's SVD (jacobiSVD) to gonum's (thinSVD):
// the same singular values, a factorisation that rebuilds the matrix,
// orthonormal factors, and the same error at every truncation rank —
// what lowrank and kron keep of it — on real weights (the demo model's
// matrices, always; real-bf16's largest of ../shared when present), their
// transposes, and matrices of rank below their size (zero columns, a
// repeated row, all zeros, one row).
func TestJacobiSVD(t *testing.T) {
	type mat struct {
		name       string
		a          []float64
		rows, cols int
	}
	var ms []mat
	src, err := os.ReadFile("../assets/models/silero_vad_legacy.onnx")
	if err != nil {
		t.Fatal(err)
	}
	l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Segments {
		tn := Tensor{Name: s.Name, DType: s.DType, Shape: s.Shape, Data: src[s.Offset : s.Offset+s.Length]}
		if !s.IsTensor() || !tn.Coded() || tn.rows() < 8 || tn.cols() < 8 || tn.rows()*tn.cols() > 1<<17 {
			continue
		}
		ms = append(ms, mat{s.Name, f64(Values(tn.DType, tn.Data)), int(tn.rows()), int(tn.cols())})
	}
	if len(ms) < 3 {
		t.Fatalf("%d matrices in the demo model", len(ms))
	}
	if testing.Short() {
		ms = ms[:3]
	} else if _, err := os.Stat("../../shared/models/bench/real-bf16.safetensors"); err == nil {
		v, r, c := realMatrix(t)
		ms = append(ms, mat{"real-bf16 largest", f64(v), r, c})
	}
	n := len(ms)
	for _, m := range ms[:n] { // and each transposed
		at := make([]float64, len(m.a))
		for i := 0; i < m.rows; i++ {
			for j := 0; j < m.cols; j++ {
				at[j*m.rows+i] = m.a[i*m.cols+j]
			}
		}
		ms = append(ms, mat{m.name + "ᵀ", at, m.cols, m.rows})
	}
	low := make([]float64, 12*7)
	for i := 0; i < 12; i++ {
		for j := 0; j < 7; j++ {
			if j != 2 && j != 5 {
				low[i*7+j] = math.Sin(float64(i*7+j)) * float64(i%4+1)
			}
		}
	}
	copy(low[9*7:10*7], low[3*7:4*7])
	ms = append(ms, mat{"rank-deficient", low, 12, 7}, mat{"zeros", make([]float64, 30), 5, 6},
		mat{"one row", []float64{3, -4, 0, 1e-300, 12}, 1, 5})
	for _, m := range ms {
		gu, gv, gs, gr, err := thinSVD(append([]float64(nil), m.a...), m.rows, m.cols)
		if err != nil {
			t.Fatal(m.name, err)
		}
		ju, jv, js, jr, err := jacobiSVD(append([]float64(nil), m.a...), m.rows, m.cols)
		if err != nil {
			t.Fatal(m.name, err)
		}
		if gr != jr || len(js) != jr || len(ju) != m.rows*jr || len(jv) != m.cols*jr {
			t.Fatalf("%s: rank %d, gonum %d; %d values, u %d, v %d", m.name, jr, gr, len(js), len(ju), len(jv))
		}
		norm := math.Sqrt(dot(m.a, m.a))
		tol := 1e-10 * math.Max(norm, 1e-300)
		for k := range js {
			if math.Abs(js[k]-gs[k]) > tol {
				t.Fatalf("%s: σ%d = %g, gonum %g", m.name, k, js[k], gs[k])
			}
		}
		for _, k := range []int{1, jr / 4, jr / 2, jr} {
			if k < 1 {
				continue
			}
			je := truncErr(m.a, ju, jv, js, m.rows, m.cols, jr, k)
			ge := truncErr(m.a, gu, gv, gs, m.rows, m.cols, gr, k)
			if math.Abs(je-ge) > tol {
				t.Fatalf("%s: rank %d error %g, gonum %g", m.name, k, je, ge)
			}
		}
		for p := 0; p < jr; p++ {
			if js[p] <= 1e-12*js[0] {
				continue // a null direction: U's column is not defined
			}
			for q := p; q < jr; q++ {
				want := 0.0
				if p == q {
					want = 1
				}
				if d := colDot(ju, m.rows, jr, p, q); math.Abs(d-want) > 1e-9 {
					t.Fatalf("%s: uᵀu[%d,%d] = %g", m.name, p, q, d)
				}
				if d := colDot(jv, m.cols, jr, p, q); math.Abs(d-want) > 1e-9 {
					t.Fatalf("%s: vᵀv[%d,%d] = %g", m.name, p, q, d)
				}
			}
		}
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// truncErr is ‖A − Σ_{j<k} σ_j·u_j·v_jᵀ‖.
func truncErr(a, u, v, s []float64, rows, cols, r, k int) float64 {
	var e float64
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			x := a[i*cols+j]
			for p := 0; p < k; p++ {
				x -= s[p] * u[i*r+p] * v[j*r+p]
			}
			e += x * x
		}
	}
	return math.Sqrt(e)
}

func colDot(m []float64, n, r, p, q int) float64 {
	var d float64
	for i := 0; i < n; i++ {
		d += m[i*r+p] * m[i*r+q]
	}
	return d
}

// BenchmarkSVD: the browser's Jacobi SVD against gonum's on real-bf16's
// largest matrix.
func BenchmarkSVD(b *testing.B) {
	v, rows, cols := realMatrix(b)
	a := f64(v)
	for _, f := range []struct {
		name string
		svd  func([]float64, int, int) ([]float64, []float64, []float64, int, error)
	}{{"gonum", thinSVD}, {"jacobi", jacobiSVD}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(8 * len(a)))
			for i := 0; i < b.N; i++ {
				if _, _, _, _, err := f.svd(append([]float64(nil), a...), rows, cols); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
