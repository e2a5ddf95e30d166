package checkpoint

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// torchRealFiles returns the real PyTorch archives of the shared corpus, or
// none when it is absent.
func torchRealFiles() map[string][]byte {
	out := make(map[string][]byte)
	for _, p := range []string{"models/original/step_001000.pt", "models/original/silero_vad.jit"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "shared", p)); err == nil {
			out[p] = b
		}
	}
	return out
}

// torchRealPickles returns the pickles of the real archives.
func torchRealPickles() [][]byte {
	var out [][]byte
	for _, b := range torchRealFiles() {
		z, err := readZip(bytes.NewReader(b), int64(len(b)), "test")
		if err != nil {
			continue
		}
		for i := range z.Entries {
			if e := &z.Entries[i]; filepath.Ext(e.Name) == ".pkl" && e.Method == zipStored {
				if p, _, err := z.read(e, 1<<20); err == nil {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// FuzzPyTorch opens archives: the fixtures, the real archives' first bytes
// (their data.pkl, cut) and their pickles in archives whose storages are
// empty. Whatever it accepts must agree with archive/zip: each tensor is
// the data of a stored member.
func FuzzPyTorch(f *testing.F) {
	for _, c := range ptFixtures() {
		f.Add(c.B)
	}
	for _, b := range torchRealFiles() {
		f.Add(b[:8<<10])
	}
	for _, p := range torchRealPickles() {
		f.Add(ptEdit(p))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := openPyTorch(bytes.NewReader(b), int64(len(b)))
		checkOpenResult(t, b, l, err)
		if err != nil {
			return
		}
		if l.Format != "pytorch" {
			t.Fatalf("format %q", l.Format)
		}
		// Where archive/zip reads the same directory (it consults zip64
		// records only when the 32-bit fields are saturated, and guesses
		// offsets for archives with a prefix), it must find the tensors at
		// the same places.
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		z, err := readZip(bytes.NewReader(b), int64(len(b)), "pytorch")
		if err != nil || len(z.Entries) != len(zr.File) {
			t.Skip("archive/zip reads another directory")
		}
		for i, f := range zr.File {
			if f.Name != z.Entries[i].Name {
				t.Skip("archive/zip reads another directory")
			}
		}
		// keyed by offset and size: members may overlap, and two local
		// headers may put their data at the same offset
		stored := make(map[[2]int64]bool)
		for _, f := range zr.File {
			if off, err := f.DataOffset(); err == nil && f.Method == zip.Store {
				stored[[2]int64{off, int64(f.CompressedSize64)}] = true
			}
		}
		for _, s := range l.Tensors() {
			if !stored[[2]int64{s.Offset, s.Length}] {
				t.Fatalf("tensor %q [%d,+%d) is not a stored member for archive/zip", s.Name, s.Offset, s.Length)
			}
		}
	})
}

// FuzzPickle runs the unpickler and the tensor walker on pickles: the real
// data.pkl and constants.pkl files and the fixtures' pickles. Every
// persistent id of the right shape is a storage of the size it claims.
func FuzzPickle(f *testing.F) {
	for _, p := range torchRealPickles() {
		f.Add(p)
	}
	for _, c := range ptFixtures() {
		z, err := readZip(bytes.NewReader(c.B), int64(len(c.B)), "test")
		if err != nil {
			f.Fatal(err)
		}
		for i := range z.Entries {
			if filepath.Ext(z.Entries[i].Name) == ".pkl" {
				p, _, _ := z.read(&z.Entries[i], 1<<20)
				f.Add(p)
			}
		}
	}
	f.Add([]byte("(lp0\nI1\naS'x'\np1\na(dp2\ng1\nI2\nsa."))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := &torchReader{storages: make(map[string]*torchStorage), budget: torchNameBudget}
		u := &unpickler{b: b, format: "pytorch", what: "data.pkl", exact: true}
		u.persistentLoad = func(pid any, at int) (any, error) {
			if t, ok := pid.(*pyTuple); ok && len(t.Items) >= 5 {
				if k, ok := t.Items[2].(string); ok {
					n, _ := t.Items[4].(int64)
					st := tr.storages[k]
					if st == nil {
						st = &torchStorage{Key: k, Dir: "data", Type: torchType{Size: 1}, Numel: max(n, 0)}
						tr.storages[k] = st
					}
					return &torchStorageRef{St: st, Type: st.Type, Numel: st.Numel}, nil
				}
			}
			return nil, u.errorf(at, ErrMalformed, "bad pid")
		}
		u.call = func(fn any, args *pyTuple, at int) (any, bool, error) { return tr.rebuild(u, fn, args, at, 0) }
		v, err := u.load()
		if err == nil {
			w := torchWalk{tr: tr, u: u, seen: make(map[any]struct{})}
			err = w.walk(v, nil, 0, false)
		}
		checkOpenResult(t, b, &Layout{Format: "pickle", Size: int64(len(b)), Segments: []Segment{{Length: int64(len(b))}}}, err)
	})
}
