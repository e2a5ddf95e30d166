package infer

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
)

// fakeTiled is a file in memory read in tiles of a fixed size (which cut
// tensors anywhere); tile bad fails.
type fakeTiled struct {
	b       []byte
	ends    []int64
	bad     int
	decodes atomic.Int64
}

var errFakeTile = errors.New("fake tile: damaged")

func newFakeTiled(b []byte, tile int64) *fakeTiled {
	f := &fakeTiled{b: b, bad: -1}
	for e := tile; ; e += tile {
		f.ends = append(f.ends, min(e, int64(len(b))))
		if e >= int64(len(b)) {
			return f
		}
	}
}

func (f *fakeTiled) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(f.b).ReadAt(p, off)
}
func (f *fakeTiled) TileEnds() []int64 { return f.ends }
func (f *fakeTiled) HeldBytes() int64  { return int64(len(f.b)) / 4 }

func (f *fakeTiled) DecodeTile(i int, dst []byte) error {
	f.decodes.Add(1)
	if i == f.bad {
		return errFakeTile
	}
	lo := int64(0)
	if i > 0 {
		lo = f.ends[i-1]
	}
	if int64(len(dst)) != f.ends[i]-lo {
		return errors.New("fake tile: wrong length")
	}
	copy(dst, f.b[lo:f.ends[i]])
	return nil
}

// TestTiled: a Tiled reader with ReadEach runs as an archive does, tile
// by tile (with and without Prefetch, at one and two processors): the
// file's logits bit for bit, Compressed its HeldBytes, buffers of a tensor
// or two; a tile that fails is the forward pass's error; tiles that do not
// cover the file are refused.
func TestTiled(t *testing.T) {
	conf := []byte(`{"heads": 2}`)
	for _, b := range [][]byte{tinyLlama(), tinyGPT()} {
		want := openBytes(t, b, Options{Config: conf})
		for _, procs := range []int{1, 2} {
			for _, pf := range []bool{false, true} {
				prev := runtime.GOMAXPROCS(procs)
				f := newFakeTiled(b, 100)
				m, err := Open(f, int64(len(b)), Options{Config: conf, ReadEach: true, Prefetch: pf})
				if err != nil {
					t.Fatal(err)
				}
				for pos := range 4 {
					l1, err := want.Forward(pos, pos)
					if err != nil {
						t.Fatal(err)
					}
					w := append([]float32(nil), l1...)
					l2, err := m.Forward(pos, pos)
					if err != nil {
						t.Fatal(err)
					}
					for i := range w {
						if math.Float32bits(w[i]) != math.Float32bits(l2[i]) {
							t.Fatalf("%s, %d procs, prefetch %v: position %d logit %d: %v from the file, %v tile by tile", m.Config().Arch, procs, pf, pos, i, w[i], l2[i])
						}
					}
				}
				mem := m.Memory()
				if mem.Compressed != f.HeldBytes() || mem.Weights != want.Memory().Weights || mem.Buffers >= want.Memory().Buffers || mem.Decoded == 0 || f.decodes.Load() == 0 {
					t.Errorf("%s, prefetch %v: memory %+v (%d tiles decoded); from the file %+v", m.Config().Arch, pf, mem, f.decodes.Load(), want.Memory())
				}
				m.Close()
				runtime.GOMAXPROCS(prev)
			}
		}
		// a damaged tile in the middle of the weights
		f := newFakeTiled(b, 100)
		f.bad = len(f.ends) / 2
		m, err := Open(f, int64(len(b)), Options{Config: conf, ReadEach: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Forward(1, 0); !errors.Is(err, errFakeTile) {
			t.Errorf("%s: a damaged tile: %v", m.Config().Arch, err)
		}
		m.Close()
		for _, ends := range [][]int64{{}, {int64(len(b)) - 1}, {50, 40, int64(len(b))}, {0, int64(len(b))}} {
			f := newFakeTiled(b, 100)
			f.ends = ends
			if _, err := Open(f, int64(len(b)), Options{Config: conf, ReadEach: true}); !errors.Is(err, ErrInput) {
				t.Errorf("tiles ending at %v: %v", ends, err)
			}
		}
	}
}
