package codec

import (
	"sync"

	"neuralzip/dtype"
)

// The Gaussian setup ships inside nzip: it needs no sample models and no
// file. For a tensor of near-Gaussian weights of standard deviation σ, the
// distribution of the exponent floor(log2|x|) is fixed by σ alone; moving σ
// by a factor of two moves every exponent by one, which a setup's alignment
// shift does. So one table per fraction of an octave (σ = 2^(i/8) · 2^k,
// i = 0..7) covers every scale. Weights are not all Gaussian: the setup
// holds such tables for four shapes of generalized Gaussians (gaussShapes),
// 32 in all. A block picks the table and the shift that code it in the
// fewest bits, as with any setup (from a sample of its exponents), and a
// block that none fits (zeros, quantised or clipped weights) builds its own
// table as usual (EncodeOptions.SetupThreshold).
//
// The tables are made from integer counts committed in gaussian_counts.go
// (made once from the model by TestGaussianCounts) with the integer-only
// table builder, so they, the setup's bytes and its ID are the same on every
// platform. Archives reference the Gaussian setup by its ID (external);
// every Reader knows it and needs no -setup for it.

// GaussianSetupName is what the CLI and the workbench call the built-in
// Gaussian setup (`-setup gaussian`).
const GaussianSetupName = "gaussian"

// The range of exponents (relative to floor(log2 σ)) and the unit of the
// committed counts.
const (
	gaussMinM  = -30
	gaussMaxM  = 14
	gaussScale = 24
)

// gaussShapes are the shapes β of the generalized Gaussians (density ∝
// exp(-|x/α|^β)) whose tables the setup holds (see gaussianCountsFor in
// gaussian_gen_test.go): the Gaussian (2), heavier tails (the Laplace, 1,
// and 1/2) and the uniform (written 0; weights at initialisation).
var gaussShapes = [...]float64{2, 1, 0.5, 0}

var (
	gaussOnce  sync.Once
	gaussSetup *Setup
	gaussErr   error
)

// GaussianSetup returns the built-in Gaussian setup (see above). It is made
// once and shared; like every Setup it is immutable.
func GaussianSetup() *Setup {
	gaussOnce.Do(func() { gaussSetup, gaussErr = buildGaussianSetup() })
	if gaussErr != nil {
		panic("codec: the built-in Gaussian setup does not build: " + gaussErr.Error())
	}
	return gaussSetup
}

// IsGaussian reports whether s is the built-in Gaussian setup (without
// building it: that takes about 20 ms, which every Encode with a setup
// paid).
func (s *Setup) IsGaussian() bool { return s != nil && s.id == gaussianID }

// gaussianID is the built-in Gaussian setup's ID, as its bytes give it
// (TestGaussianSetupID checks it): a change of its tables changes the ID,
// and archives that reference it by ID would no longer decode.
var gaussianID = [16]byte{0x49, 0xac, 0x27, 0xa8, 0xf3, 0xff, 0xcd, 0xeb, 0x4d, 0x9c, 0xf6, 0xe1, 0xcd, 0xd3, 0x07, 0xe8}

// gaussZeroShift: symbol 0 (zeros and subnormals, which a Gaussian model
// all but excludes) gets a count of total >> gaussZeroShift, a code of
// about that many bits, instead of an escape.
const gaussZeroShift = 12

// gaussPlaneCut is the setup's plane cut (SetupSection.PlaneCuts) for
// every residual plane: a plane whose entropy, estimated from a sample of
// 512 values (biased low: a uniform byte plane reads about 0.955 of its
// width), is at least 236/256 = 0.922 of its width is stored packed
// without trying a code. Sign and mantissa bits of weights are close to
// uniform; trained setups learn cuts of 0.88–0.94 on the bench files.
// Planes that compress well are still coded.
const gaussPlaneCut = 236

func buildGaussianSetup() (*Setup, error) {
	s := &Setup{ChunkValues: DefaultChunkValues, Builder: "nzip (built-in Gaussian setup)"}
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
		f, _ := specFor(d)
		f.j = 0
		w := f.symW()
		mid := 1<<(w-1) - 1
		rot := 1<<w - 2 // symbols 1..rot rotate under a shift
		sec := &SetupSection{DType: d, PlaneCuts: make([]uint8, f.planes())}
		for p := range sec.PlaneCuts {
			sec.PlaneCuts[p] = gaussPlaneCut
		}
		for k := range gaussCounts {
			for i := range gaussCounts[k] {
				row := &gaussCounts[k][i]
				top := 0
				for j, c := range row {
					if c > row[top] {
						top = j
					}
				}
				// the most frequent exponent goes to mid; the others keep
				// their distance while it stays within 1..rot
				var h [256]uint64
				var total uint64
				for j, c := range row {
					a := mid + j - top
					if c == 0 || a < 1 || a > rot {
						continue
					}
					h[a] = uint64(c)
					total += uint64(c)
				}
				h[0] = max(total>>gaussZeroShift, 1)
				t := singlesTable(&h)
				gaussPairs(t, &h)
				sec.Tables = append(sec.Tables, t)
			}
		}
		s.Sections = append(s.Sections, sec)
	}
	if err := s.finish(); err != nil {
		return nil, err
	}
	return s, nil
}

// gaussPairs gives t a pairs code over its most frequent symbols, with the
// pair counts of independent neighbours (the product of their counts); the
// pairs outside the top symbols escape. Pairs halve the Huffman symbols a
// block decodes.
func gaussPairs(t *SetupTable, h *[256]uint64) {
	var h32 [256]uint32
	var total uint64
	for s, c := range h {
		h32[s] = uint32(min(c, 1<<31))
		total += c
	}
	top := topSymbols(&h32, nil)
	k := len(top)
	if k < 2 {
		return
	}
	// pair counts in units of total²/2^32, at least 1 for every pair
	var counts [256]uint32
	var covered uint64
	for a, x := range top {
		for b, y := range top {
			p := h[x] * h[y] / (total * total >> 32)
			counts[a*k+b] = uint32(max(min(p, 1<<31), 1))
			covered += h[x] * h[y]
		}
	}
	rest := (total*total - covered) / (total * total >> 32)
	counts[k*k] = uint32(max(min(rest, 1<<31), 1))
	lens := codeLengths(&counts, k*k+1)
	if lens == nil {
		return
	}
	t.PairTop, t.PairLengths = top, lens
}
