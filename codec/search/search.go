// Package search chooses a tensor's program (issue 48, "Search"): a
// bounded best-first search over a small tree of candidate codings, each
// costed by the caller (the codec codes a sample of the tensor with it),
// expanded in the order a learned Prior ranks them and pruned by lower
// bounds the caller computes without coding.
//
// The package knows nothing of the codec: a candidate is a number the
// caller defines (Choice), a tree of them is given by each candidate's
// parent, and the caller's Eval codes a sample and returns its cost. The
// search is deterministic: no maps are ranged over, no clock is read;
// ties go to the candidate listed first.
package search

// A Choice names one candidate coding; its meaning is the caller's. The
// zero Choice is the tree's root (no candidate).
type Choice uint16

// A Candidate is one node of the tree of codings.
type Candidate struct {
	Choice Choice
	// Parent is the candidate this one refines (a parameter of it): it is
	// only expanded after its parent was; 0 for a child of the root.
	Parent Choice
	// Bound is a lower bound of the cost Eval would return, known without
	// coding (a fixed time term, an order-0 entropy bound); 0 when none.
	// A candidate whose bound is not below the best cost found is pruned.
	Bound int64
}

// Cost is what Eval returns for a candidate: its estimated bytes and its
// cost (bytes plus the program's own bytes plus a time term, in bytes).
// OK false marks a candidate that may not win (the caller's rule, e.g.
// not smaller than the incumbent by its margin); it still counts as
// expanded.
type Cost struct {
	Bytes int64
	Cost  int64
	OK    bool
}

// A Problem is one search: the candidates, the first of which (the
// incumbent, the encoder's own choice) is always expanded first, and the
// caller's evaluation.
type Problem struct {
	Key        Key // where the prior's counts are looked up (Key.Parent is set per level)
	Candidates []Candidate
	Eval       func(Choice) Cost
}

// Result is a search's outcome.
type Result struct {
	Best     Choice // the winner (the incumbent when nothing beat it)
	Cost     Cost   // its cost
	Expanded int    // nodes evaluated (≤ the budget)
	Pruned   int    // nodes skipped because their bound could not win
	Order    []Choice
}

// Run searches p with at most budget node expansions (budget ≥ 1; the
// incumbent is the first). Frontier nodes are taken best-first by the
// prior's count for (p.Key with the node's parent) — the candidate that
// won most often on tensors like this one first, ties in list order — and
// a node is pruned when its bound is not below the best cost so far. A
// node's children join the frontier once it was expanded.
func Run(p Problem, prior *Prior, budget int) Result {
	var r Result
	if len(p.Candidates) == 0 || budget < 1 {
		return r
	}
	inc := p.Candidates[0]
	r.Best, r.Cost = inc.Choice, p.Eval(inc.Choice)
	r.Cost.OK = true
	r.Expanded = 1
	r.Order = append(r.Order, inc.Choice)
	expanded := []Choice{0, inc.Choice}
	done := make([]bool, len(p.Candidates))
	done[0] = true
	open := func(c Candidate) bool {
		for _, e := range expanded {
			if e == c.Parent {
				return true
			}
		}
		return false
	}
	for r.Expanded < budget {
		pick := -1
		var pickScore uint32
		for i, c := range p.Candidates {
			if done[i] || !open(c) {
				continue
			}
			if c.Bound >= r.Cost.Cost {
				done[i] = true
				r.Pruned++
				continue
			}
			k := p.Key
			k.Parent = c.Parent
			s := prior.Count(k, c.Choice)
			if pick < 0 || s > pickScore {
				pick, pickScore = i, s
			}
		}
		if pick < 0 {
			break
		}
		done[pick] = true
		c := p.Candidates[pick]
		cost := p.Eval(c.Choice)
		r.Expanded++
		r.Order = append(r.Order, c.Choice)
		expanded = append(expanded, c.Choice)
		if cost.OK && cost.Cost < r.Cost.Cost {
			r.Best, r.Cost = c.Choice, cost
		}
	}
	return r
}
