//go:build js

package lossy

// thinSVD is jacobiSVD in the browser build: gonum's SVD (LAPACK in Go)
// would add about 0.7 MB to the workbench's compressed download, past its
// budget (docs/browser.md); the Jacobi SVD is a few kilobytes, gives the
// same factors to 1e-10 (TestJacobiSVD) and takes about twice as long.
func thinSVD(a []float64, rows, cols int) (u, v, s []float64, r int, err error) {
	return jacobiSVD(a, rows, cols)
}
