//go:build js

package lossy

// thinSVD is not in the browser build: gonum's SVD (LAPACK in Go) would
// add about 1 MB to the workbench's compressed download, past its
// budget (docs/browser.md); lowrank and kron report ErrNoSVD there.
func thinSVD([]float64, int, int) (u, v, s []float64, r int, err error) {
	return nil, nil, nil, 0, ErrNoSVD
}
