//go:build !js

package lossy

import "gonum.org/v1/gonum/mat"

// thinSVD factorises a (rows × cols, row-major; taken over) as U·Σ·Vᵀ with
// gonum's thin SVD: u (rows × r) and v (cols × r) row-major, the singular
// values s (descending), r = min(rows, cols).
func thinSVD(a []float64, rows, cols int) (u, v, s []float64, r int, err error) {
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(rows, cols, a), mat.SVDThin) {
		return nil, nil, nil, 0, errorsSVD
	}
	var ud, vd mat.Dense
	svd.UTo(&ud)
	svd.VTo(&vd)
	r = min(rows, cols)
	return rawRows(&ud, rows, r), rawRows(&vd, cols, r), svd.Values(nil), r, nil
}

// rawRows copies m's first n rows of r values, row-major.
func rawRows(m *mat.Dense, n, r int) []float64 {
	out := make([]float64, 0, n*r)
	for i := 0; i < n; i++ {
		out = append(out, m.RawRowView(i)[:r]...)
	}
	return out
}
