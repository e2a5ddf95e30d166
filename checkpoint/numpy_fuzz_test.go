package checkpoint

import (
	"bytes"
	"testing"
)

// FuzzNumPy opens .npy and .npz files, seeded with the fixtures.
func FuzzNumPy(f *testing.F) {
	for _, c := range npFixtures() {
		f.Add(c.B)
	}
	f.Add(npyRaw(1, "{'descr': [('a', '<f4', (2, 3)), ('b', [('c', '|u1')])], 'fortran_order': True, 'shape': (2L, 1), }", make([]byte, 50)))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := openNPY(bytes.NewReader(b), int64(len(b)))
		checkOpenResult(t, b, l, err)
		if err == nil && (l.Format != "npy" || len(l.Tensors()) > 1) {
			t.Fatalf("npy layout %+v", l)
		}
		l, err = openNPZ(bytes.NewReader(b), int64(len(b)))
		checkOpenResult(t, b, l, err)
		if err == nil && l.Format != "npz" {
			t.Fatalf("format %q", l.Format)
		}
	})
}
