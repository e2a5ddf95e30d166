package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
)

// fakeSource is a tensor of length bytes whose candidates code to a fixed
// fraction of any sample (per mille), except on the whole tensor, where
// whole gives their bytes: what a sample misses.
type fakeSource struct {
	length  int64
	perMil  map[Choice]int64
	whole   map[Choice]int64
	samples []int64 // the targets asked for
	coded   []Choice
}

func (f *fakeSource) Length() int64 { return f.length }
func (f *fakeSource) Sample(target, windows int64) (Sample, error) {
	f.samples = append(f.samples, target)
	win, offs := Windows(f.length, 4, target, windows)
	return &fakeSample{f: f, n: win * int64(len(offs))}, nil
}
func (f *fakeSource) Blocks(c Choice) int            { return 2 }
func (f *fakeSource) Ps(c Choice) int64              { return 1_000_000 } // half a byte a byte at 2 µs
func (f *fakeSource) Bound(c Choice, s Sample) int64 { return 0 }

type fakeSample struct {
	f *fakeSource
	n int64
}

func (s *fakeSample) Len() int64 { return s.n }
func (s *fakeSample) Code(c Choice) (Coded, error) {
	s.f.coded = append(s.f.coded, c)
	if s.n == s.f.length {
		if b, ok := s.f.whole[c]; ok {
			return Coded{Bytes: b, Ps: 1_000_000, Blocks: 2}, nil
		}
	}
	if s.f.perMil[c] == 0 {
		return Coded{}, fmt.Errorf("candidate %d fails", c)
	}
	return Coded{Bytes: s.n * s.f.perMil[c] / 1000, Ps: 1_000_000, Blocks: 2}, nil
}

var testLimits = Limits{Whole: 1 << 10, Max: 4 << 10, Fraction: 128, Windows: 4, IndexBytes: 12, PsPerByte: 2_000_000, CheckMax: 1 << 30, CheckWindows: 16}

func cands(cs ...Choice) []Candidate {
	var out []Candidate
	for _, c := range cs {
		out = append(out, Candidate{Choice: c, Bound: 1 << 40}) // ignored: Tensor sets the bounds
	}
	return out
}

// A sampled search scales the sample's bytes to the tensor, adds the
// index entries and the time term, needs a 1/64 margin over the
// incumbent, and checks its winner on the whole tensor.
func TestTensorSampledAndChecked(t *testing.T) {
	f := &fakeSource{length: 1 << 20, perMil: map[Choice]int64{1: 500, 2: 400, 3: 495}}
	r, err := Tensor(f, cands(1, 2, 3), Key{}, nil, 3, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	// the sample: 1/128 of the tensor, within 1-4 KiB
	if f.samples[0] != 4<<10 {
		t.Fatalf("sample target %d", f.samples[0])
	}
	want := Cost{Bytes: 1<<20*500/1000 + 24, OK: true}
	want.Cost = want.Bytes + (1<<20)/2
	if r.Costs[1] != want {
		t.Fatalf("incumbent cost %+v, want %+v", r.Costs[1], want)
	}
	// 3 saves 1 %: under the sample's margin, may not win
	if r.Costs[3].OK || !r.Costs[2].OK || r.Best != 2 || !r.Verified || r.Rejected {
		t.Fatalf("%+v", r)
	}
	// the check coded the incumbent and the winner on the whole tensor
	if f.samples[1] != testLimits.CheckMax || !slices.Equal(f.coded[3:], []Choice{1, 2}) {
		t.Fatalf("check: samples %v, coded %v", f.samples, f.coded)
	}
	// where the whole tensor says otherwise, the incumbent stays
	f = &fakeSource{length: 1 << 20, perMil: map[Choice]int64{1: 500, 2: 400}, whole: map[Choice]int64{1: 1000, 2: 1000}}
	r, err = Tensor(f, cands(1, 2), Key{}, nil, 2, testLimits)
	if err != nil || r.Best != 1 || !r.Verified || !r.Rejected {
		t.Fatalf("%+v %v", r, err)
	}
	// above CheckMax the check codes a sample of CheckMax bytes in
	// CheckWindows windows
	lim := testLimits
	lim.CheckMax = 64 << 10
	f = &fakeSource{length: 1 << 20, perMil: map[Choice]int64{1: 500, 2: 490}}
	r, err = Tensor(f, cands(1, 2), Key{}, nil, 2, lim)
	if err != nil || r.Best != 2 || !r.Verified || !slices.Equal(f.samples, []int64{4 << 10, 64 << 10}) {
		t.Fatalf("%+v %v samples %v", r, err, f.samples)
	}
}

// A tensor no larger than Whole is coded whole: exact, no margin, no
// check; an error of a candidate's coding is the search's.
func TestTensorWhole(t *testing.T) {
	f := &fakeSource{length: 1000, perMil: map[Choice]int64{1: 500, 2: 499}}
	r, err := Tensor(f, cands(1, 2), Key{}, nil, 2, testLimits)
	if err != nil || r.Best != 2 || r.Verified || len(f.samples) != 1 {
		t.Fatalf("%+v %v samples %v", r, err, f.samples)
	}
	f = &fakeSource{length: 1000, perMil: map[Choice]int64{1: 500}}
	if _, err := Tensor(f, cands(1, 2), Key{}, nil, 2, testLimits); err == nil {
		t.Fatal("a failing candidate gave no error")
	}
}

func TestWindows(t *testing.T) {
	for _, tc := range []struct {
		length, unit, target, windows, win int64
		offs                               []int64
	}{
		{100, 4, 100, 4, 100, []int64{0}},
		{1000, 4, 100, 4, 24, []int64{0, 324, 648, 976}},
		{1000, 64, 100, 4, 64, []int64{0, 256, 576, 896}}, // a window of one unit at least
		{1000, 4, 100, 1, 100, []int64{0}},
	} {
		win, offs := Windows(tc.length, tc.unit, tc.target, tc.windows)
		if win != tc.win || !slices.Equal(offs, tc.offs) {
			t.Errorf("Windows(%d, %d, %d, %d) = %d %v, want %d %v", tc.length, tc.unit, tc.target, tc.windows, win, offs, tc.win, tc.offs)
		}
		for _, o := range offs {
			if o%tc.unit != 0 && len(offs) > 1 || o+win > tc.length {
				t.Errorf("Windows(%d, %d, ...): window at %d", tc.length, tc.unit, o)
			}
		}
	}
}

// Each calls every index once, at any thread count, and returns the
// lowest index's error; a cancelled context is its error.
func TestEach(t *testing.T) {
	for _, threads := range []int{0, 1, 3, 64} {
		var calls [50]atomic.Int32
		err := Each(context.Background(), threads, 50, func(j int) error {
			calls[j].Add(1)
			if j == 17 || j == 40 {
				return fmt.Errorf("job %d", j)
			}
			return nil
		})
		if err == nil || err.Error() != "job 17" {
			t.Fatalf("threads %d: %v", threads, err)
		}
		for j := range calls {
			if calls[j].Load() != 1 {
				t.Fatalf("threads %d: job %d called %d times", threads, j, calls[j].Load())
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Each(ctx, 2, 10, func(int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// A win weighs 1 plus the per mille saved; the incumbent's, 1.
func TestReportWeight(t *testing.T) {
	f := &fakeSource{length: 1000, perMil: map[Choice]int64{1: 500, 2: 400}}
	r, err := Tensor(f, cands(1, 2), Key{}, nil, 2, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	// 500+24 → 400+24 bytes: 190 per mille
	if w := r.Weight(); w != 1+100*1000/524 {
		t.Fatalf("weight %d", w)
	}
	r, _ = Tensor(f, cands(1, 2), Key{}, nil, 1, testLimits)
	if w := r.Weight(); w != 1 {
		t.Fatalf("incumbent's weight %d", w)
	}
}

// Without a budget or candidates nothing is coded.
func TestTensorNothing(t *testing.T) {
	f := &fakeSource{length: 1 << 20, perMil: map[Choice]int64{1: 500, 2: 400}}
	for _, c := range [][]Candidate{nil, cands(1, 2)} {
		r, err := Tensor(f, c, Key{}, nil, 0, testLimits)
		if err != nil || r.Expanded != 0 || r.Verified || len(f.coded) != 0 {
			t.Fatalf("%+v %v coded %v", r, err, f.coded)
		}
	}
}
