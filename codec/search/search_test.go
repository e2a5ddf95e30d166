package search

import (
	"bytes"
	"testing"
)

// tree is a problem of 6 candidates: 1 the incumbent, 2..5 under the
// root, 6 under 3; costs[c] is what Eval returns, bounds[c] the bound.
func tree(costs, bounds map[Choice]int64, evals *[]Choice) Problem {
	var cands []Candidate
	for c := Choice(1); c <= 6; c++ {
		par := Choice(0)
		if c == 6 {
			par = 3
		}
		cands = append(cands, Candidate{Choice: c, Parent: par, Bound: bounds[c]})
	}
	return Problem{Key: Key{DType: 1, Class: 2}, Candidates: cands, Eval: func(c Choice) Cost {
		*evals = append(*evals, c)
		return Cost{Bytes: costs[c], Cost: costs[c], OK: true}
	}}
}

func TestRunBudgetAndOrder(t *testing.T) {
	costs := map[Choice]int64{1: 100, 2: 90, 3: 95, 4: 80, 5: 120, 6: 70}
	for budget := 1; budget <= 8; budget++ {
		var evals []Choice
		r := Run(tree(costs, nil, &evals), nil, budget)
		if r.Expanded > budget || len(evals) != r.Expanded {
			t.Fatalf("budget %d: %d expanded, %d evaluations", budget, r.Expanded, len(evals))
		}
		if evals[0] != 1 {
			t.Fatalf("budget %d: the incumbent was not first: %v", budget, evals)
		}
		// without a prior, list order; 6 only after its parent 3
		want := []Choice{1, 2, 3, 4, 5, 6}[:min(budget, 6)]
		if !equal(evals, want) {
			t.Fatalf("budget %d: order %v, want %v", budget, evals, want)
		}
		best := Choice(1)
		for _, c := range want {
			if costs[c] < costs[best] {
				best = c
			}
		}
		if r.Best != best {
			t.Fatalf("budget %d: best %d, want %d", budget, r.Best, best)
		}
	}
}

func TestRunPriorOrder(t *testing.T) {
	costs := map[Choice]int64{1: 100, 2: 90, 3: 95, 4: 80, 5: 120, 6: 70}
	p := &Prior{}
	k := Key{DType: 1, Class: 2}
	for range 3 {
		p.AddPath(k, tree(costs, nil, new([]Choice)).Candidates, 6) // 6 under 3, 3 under the root
	}
	p.Add(k, 5)
	var evals []Choice
	r := Run(tree(costs, nil, &evals), p, 3)
	// 3 first (3 wins under the root), then its child 6 (3 wins under 3)
	if !equal(evals, []Choice{1, 3, 6}) || r.Best != 6 {
		t.Fatalf("order %v best %d", evals, r.Best)
	}
	// another key: no counts, list order
	evals = nil
	pr := tree(costs, nil, &evals)
	pr.Key.Class = 3
	Run(pr, p, 3)
	if !equal(evals, []Choice{1, 2, 3}) {
		t.Fatalf("other class: order %v", evals)
	}
}

func TestRunPrunes(t *testing.T) {
	costs := map[Choice]int64{1: 100, 2: 90, 3: 95, 4: 80, 5: 120, 6: 70}
	// 2's and 4's bounds are not below the incumbent's cost: never
	// coded; 5's is, until 3 costs 95
	bounds := map[Choice]int64{2: 100, 4: 150, 5: 96}
	var evals []Choice
	r := Run(tree(costs, bounds, &evals), nil, 10)
	if !equal(evals, []Choice{1, 3, 6}) || r.Pruned != 3 || r.Best != 6 || r.Expanded != 3 {
		t.Fatalf("order %v pruned %d best %d expanded %d", evals, r.Pruned, r.Best, r.Expanded)
	}
	// 3 at 97 leaves 5 open: coded before 6 (list order)
	costs[3] = 97
	evals = nil
	r = Run(tree(costs, bounds, &evals), nil, 10)
	if !equal(evals, []Choice{1, 3, 5, 6}) || r.Pruned != 2 || r.Best != 6 {
		t.Fatalf("order %v pruned %d best %d", evals, r.Pruned, r.Best)
	}
}

// A candidate that may not win (OK false) is expanded but never chosen.
func TestRunNotOK(t *testing.T) {
	var evals []Choice
	p := Problem{Candidates: []Candidate{{Choice: 1}, {Choice: 2}}, Eval: func(c Choice) Cost {
		evals = append(evals, c)
		if c == 2 {
			return Cost{Bytes: 1, Cost: 1}
		}
		return Cost{Bytes: 10, Cost: 10}
	}}
	if r := Run(p, nil, 5); r.Best != 1 || r.Expanded != 2 {
		t.Fatalf("best %d expanded %d", r.Best, r.Expanded)
	}
}

func TestShapeClass(t *testing.T) {
	for _, c := range []struct {
		shape []int64
		want  uint8
	}{{nil, 0}, {[]int64{100}, 0}, {[]int64{5000}, 1}, {[]int64{64, 1024}, 4 + 2}, {[]int64{1024, 1024}, 4 + 3}, {[]int64{3, 3, 64, 64}, 12 + 1}, {[]int64{1 << 30, 1 << 30}, 7}} {
		if got := ShapeClass(c.shape); got != c.want {
			t.Errorf("%v: class %d, want %d", c.shape, got, c.want)
		}
	}
}

func TestPriorEncoding(t *testing.T) {
	p := &Prior{}
	for i := range 50 {
		p.Add(Key{DType: uint8(i % 3), Class: uint8(i % 5), Parent: Choice(i % 2)}, Choice(1+i%7))
	}
	b, _ := p.AppendBinary(nil)
	q, n, err := Parse(append(b, 9, 9))
	if err != nil || n != len(b) {
		t.Fatalf("parse: %v, %d of %d bytes", err, n, len(b))
	}
	c, _ := q.AppendBinary(nil)
	if !bytes.Equal(b, c) || q.Total() != p.Total() || q.Len() != p.Len() {
		t.Fatal("prior changed through its encoding")
	}
	// out of order, repeated, zero
	bad := [][]byte{
		{2, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1}, // same key and choice twice
		{1, 1, 1, 0, 0, 1},                // choice 0
		{1, 1, 1, 0, 1, 0},                // count 0
		{2, 1, 1, 0, 2, 1, 1, 1, 0, 1, 1}, // choice 1 after 2
		{1, 1},                            // truncated
		{0xff, 0xff, 0xff, 0xff, 0x0f},    // too many entries
	}
	for i, b := range bad {
		if _, _, err := Parse(b); err == nil {
			t.Errorf("bad prior %d parsed", i)
		}
	}
}

func FuzzPrior(f *testing.F) {
	p := &Prior{}
	for i := range 20 {
		p.Add(Key{DType: uint8(i % 4), Class: uint8(i % 16), Parent: Choice(i % 3 * 7)}, Choice(1+i%9))
	}
	b, _ := p.AppendBinary(nil)
	f.Add(b)
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, n, err := Parse(b)
		if err != nil {
			return
		}
		c, _ := p.AppendBinary(nil)
		if !bytes.Equal(c, b[:n]) {
			t.Fatal("parsed prior changed its bytes")
		}
	})
}

func equal(a, b []Choice) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
