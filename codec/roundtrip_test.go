package codec

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func realFiles(t testing.TB) []string {
	d := needShared(t)
	var out []string
	for _, pat := range []string{"models/bench/*", "models/original/*", "models/original/*/*", "trajectories/*/*.safetensors"} {
		m, _ := filepath.Glob(filepath.Join(d, pat))
		for _, f := range m {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
				out = append(out, f)
			}
		}
	}
	return out
}

func TestRoundTripRealFiles(t *testing.T) {
	files := realFiles(t)
	if testing.Short() && len(files) > 6 {
		files = files[:6]
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			segs := safetensorsSegments(src)
			a1 := roundTrip(t, src, segs, Options{Threads: 1})
			a2 := roundTrip(t, src, segs, Options{Threads: 2})
			if !bytes.Equal(a1, a2) {
				t.Fatalf("archive differs between 1 and 2 threads")
			}
			t.Logf("%d -> %d bytes, ratio %.4f", len(src), len(a1), float64(len(src))/float64(len(a1)))
		})
	}
}
