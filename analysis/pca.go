package analysis

import "math"

// PCA2 projects rows (points of equal dimension) onto their first two
// principal components: the directions of largest variance of the centred
// points. It returns the projected points and the fraction of the total
// variance each component explains. The components come from power
// iteration on the covariance matrix with a fixed start and deflation, so
// the result depends only on rows; each component's sign is chosen so
// that its largest coordinate is positive. With fewer than two points, or
// no variance, the projections are zero.
func PCA2(rows [][]float64) (proj [][2]float64, explained [2]float64) {
	return PCA2Weighted(rows, nil)
}

// PCA2Weighted is PCA2 with a weight per point (nil: all 1): the mean and
// the covariance are weighted, so that heavy points (large chunks) orient
// the axes and a few light outliers do not.
func PCA2Weighted(rows [][]float64, weights []float64) (proj [][2]float64, explained [2]float64) {
	n := len(rows)
	proj = make([][2]float64, n)
	if n < 2 {
		return proj, explained
	}
	d := len(rows[0])
	w := func(i int) float64 {
		if weights == nil {
			return 1
		}
		return weights[i]
	}
	var wsum float64
	mean := make([]float64, d)
	for i, r := range rows {
		wsum += w(i)
		for j, v := range r {
			mean[j] += w(i) * v
		}
	}
	if wsum <= 0 {
		return proj, explained
	}
	for j := range mean {
		mean[j] /= wsum
	}
	var comps [2][]float64
	if n < d {
		comps, explained = pcaGram(rows, w, wsum, mean)
	} else {
		comps, explained = pcaCov(rows, w, wsum, mean)
	}
	for i, r := range rows {
		for k := 0; k < 2; k++ {
			if comps[k] == nil {
				continue
			}
			var s float64
			for j, v := range r {
				s += (v - mean[j]) * comps[k][j]
			}
			proj[i][k] = s
		}
	}
	return proj, explained
}

// pcaGram finds the components from the n×n Gram matrix of the centred,
// weighted points when there are fewer points than dimensions: the same
// eigenvalues as the d×d covariance, at n² instead of d² per iteration (an
// F64 exponent histogram has 2048 bins; a handful of chunks took seconds).
func pcaGram(rows [][]float64, w func(int) float64, wsum float64, mean []float64) (comps [2][]float64, explained [2]float64) {
	n, d := len(rows), len(mean)
	c := make([][]float64, n)
	for k, r := range rows {
		s := math.Sqrt(w(k) / wsum)
		c[k] = make([]float64, d)
		for j, v := range r {
			c[k][j] = s * (v - mean[j])
		}
	}
	g := make([]float64, n*n)
	var total float64
	for a := 0; a < n; a++ {
		for b := a; b < n; b++ {
			var s float64
			for j, x := range c[a] {
				s += x * c[b][j]
			}
			g[a*n+b], g[b*n+a] = s, s
		}
		total += g[a*n+a]
	}
	us, lambdas := topEigen(g, n, total)
	for k, u := range us {
		if u == nil {
			break
		}
		v := make([]float64, d)
		for a, ua := range u {
			for j, x := range c[a] {
				v[j] += ua * x
			}
		}
		normalize(v)
		positiveLargest(v)
		comps[k] = v
		explained[k] = lambdas[k] / total
	}
	return comps, explained
}

// pcaCov finds the components from the d×d covariance matrix.
func pcaCov(rows [][]float64, w func(int) float64, wsum float64, mean []float64) (comps [2][]float64, explained [2]float64) {
	d := len(mean)
	// covariance (d×d, symmetric)
	cov := make([]float64, d*d)
	c := make([]float64, d)
	for k, r := range rows {
		wk := w(k)
		if wk == 0 {
			continue
		}
		for j := range c {
			c[j] = r[j] - mean[j]
		}
		for i := 0; i < d; i++ {
			if c[i] == 0 {
				continue
			}
			ci := wk * c[i]
			row := cov[i*d : i*d+d]
			for j := i; j < d; j++ {
				row[j] += ci * c[j]
			}
		}
	}
	var total float64
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			cov[i*d+j] /= wsum
			cov[j*d+i] = cov[i*d+j]
		}
		total += cov[i*d+i]
	}
	comps, lambdas := topEigen(cov, d, total)
	for k, v := range comps {
		if v != nil {
			explained[k] = lambdas[k] / total
		}
	}
	return comps, explained
}

// topEigen returns the two dominant eigenvectors of the symmetric positive
// semi-definite n×n matrix m (deflated in place) and their eigenvalues;
// none when the trace total is not positive, and only the first when the
// second's eigenvalue is below total·1e-12.
func topEigen(m []float64, n int, total float64) (vecs [2][]float64, vals [2]float64) {
	if total <= 0 {
		return vecs, vals
	}
	for k := range vecs {
		v, lambda := powerIteration(m, n)
		if lambda <= total*1e-12 {
			break
		}
		vecs[k], vals[k] = v, lambda
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				m[i*n+j] -= lambda * v[i] * v[j]
			}
		}
	}
	return vecs, vals
}

// powerIteration returns the dominant unit eigenvector of the symmetric
// positive semi-definite d×d matrix m and its eigenvalue.
func powerIteration(m []float64, d int) ([]float64, float64) {
	v := make([]float64, d)
	// a fixed start that is not orthogonal to typical eigenvectors
	for i := range v {
		v[i] = 1 + float64(i%7)/7
	}
	normalize(v)
	w := make([]float64, d)
	var lambda float64
	for it := 0; it < 500; it++ {
		for i := 0; i < d; i++ {
			var s float64
			row := m[i*d : i*d+d]
			for j, x := range v {
				s += row[j] * x
			}
			w[i] = s
		}
		l := normalize(w)
		if l == 0 {
			return v, 0
		}
		var diff float64
		for i := range v {
			diff += math.Abs(w[i] - v[i])
		}
		v, w = w, v
		lambda = l
		if diff < 1e-12 {
			break
		}
	}
	positiveLargest(v)
	return v, lambda
}

// positiveLargest flips v's sign so that its largest coordinate is
// positive (the components' sign convention).
func positiveLargest(v []float64) {
	big := 0
	for i := range v {
		if math.Abs(v[i]) > math.Abs(v[big]) {
			big = i
		}
	}
	if v[big] < 0 {
		for i := range v {
			v[i] = -v[i]
		}
	}
}

// normalize scales v to unit length and returns its former length.
func normalize(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	s = math.Sqrt(s)
	if s == 0 {
		return 0
	}
	for i := range v {
		v[i] /= s
	}
	return s
}
