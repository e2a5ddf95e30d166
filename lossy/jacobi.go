package lossy

import (
	"math"
	"sort"
)

// jacobiSVD factorises a (rows × cols, row-major; taken over) as U·Σ·Vᵀ by
// one-sided Jacobi rotations (Hestenes): pairs of columns are rotated
// until every pair is orthogonal to working precision; the column norms
// are then the singular values, the normalised columns U and the
// accumulated rotations V. It returns what thinSVD returns — u (rows × r)
// and v (cols × r) row-major, s descending, r = min(rows, cols) — in a few
// hundred bytes of code instead of a LAPACK port: the browser build uses
// it (svd_js.go), and TestJacobiSVD holds it to gonum's SVD elsewhere.
// The sweeps go in a fixed order, so the result is deterministic.
func jacobiSVD(a []float64, rows, cols int) (u, v, s []float64, r int, err error) {
	if rows <= 0 || cols <= 0 || len(a) != rows*cols {
		return nil, nil, nil, 0, errorsSVD
	}
	if rows < cols {
		// Aᵀ = U'·Σ·V'ᵀ, so A = V'·Σ·U'ᵀ
		at := make([]float64, len(a))
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				at[j*rows+i] = a[i*cols+j]
			}
		}
		u, v, s, r, err = jacobiSVD(at, cols, rows)
		return v, u, s, r, err
	}
	m, n := rows, cols        // m ≥ n
	w := make([][]float64, n) // the columns of A, rotated in place
	vc := make([][]float64, n)
	for j := range w {
		w[j] = make([]float64, m)
		for i := 0; i < m; i++ {
			w[j][i] = a[i*n+j]
		}
		vc[j] = make([]float64, n)
		vc[j][j] = 1
	}
	const eps = 1e-15
	nrm := make([]float64, n) // the columns' squared norms, kept up to date
	for sweep := 0; sweep < 60; sweep++ {
		for j := range w {
			nrm[j] = dot(w[j], w[j]) // afresh each sweep: no drift
		}
		rotated := false
		for p := 0; p < n-1; p++ {
			for q := p + 1; q < n; q++ {
				if rotatePair(w[p], w[q], vc[p], vc[q], &nrm[p], &nrm[q], eps) {
					rotated = true
				}
			}
		}
		if !rotated {
			break
		}
	}
	sv := make([]float64, n)
	for j := range w {
		sv[j] = math.Sqrt(dot(w[j], w[j]))
	}
	order := make([]int, n)
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(x, y int) bool { return sv[order[x]] > sv[order[y]] })
	u = make([]float64, m*n)
	v = make([]float64, n*n)
	s = make([]float64, n)
	for k, j := range order {
		s[k] = sv[j]
		if sv[j] > 0 {
			inv := 1 / sv[j]
			for i := 0; i < m; i++ {
				u[i*n+k] = w[j][i] * inv
			}
		}
		for i := 0; i < n; i++ {
			v[i*n+k] = vc[j][i]
		}
	}
	return u, v, s, n, nil
}

// rotatePair makes columns x and y orthogonal by one Jacobi rotation,
// applied to their rotations vx and vy too, and updates their squared
// norms *nx and *ny; false when they already are orthogonal (to within
// eps of their norms) or one of them is zero.
func rotatePair(x, y, vx, vy []float64, nx, ny *float64, eps float64) bool {
	alpha, beta := *nx, *ny
	if alpha == 0 || beta == 0 {
		return false
	}
	gamma := dot(x, y)
	if math.Abs(gamma) <= eps*math.Sqrt(alpha*beta) {
		return false
	}
	zeta := (beta - alpha) / (2 * gamma)
	t := math.Copysign(1, zeta) / (math.Abs(zeta) + math.Sqrt(1+zeta*zeta))
	c := 1 / math.Sqrt(1+t*t)
	sn := c * t
	rot(x, y, c, sn)
	rot(vx, vy, c, sn)
	*nx = alpha - t*gamma
	*ny = beta + t*gamma
	return true
}

// rot replaces x, y by c·x − s·y, s·x + c·y.
func rot(x, y []float64, c, s float64) {
	y = y[:len(x)]
	for i, xi := range x {
		yi := y[i]
		x[i] = c*xi - s*yi
		y[i] = s*xi + c*yi
	}
}

func dot(x, y []float64) float64 {
	y = y[:len(x)]
	var d0, d1, d2, d3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		d0 += x[i] * y[i]
		d1 += x[i+1] * y[i+1]
		d2 += x[i+2] * y[i+2]
		d3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		d0 += x[i] * y[i]
	}
	return (d0 + d1) + (d2 + d3)
}
