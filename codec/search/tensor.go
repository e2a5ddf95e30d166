package search

// One tensor's search: the sample, the costs and the check on the whole
// tensor. The codec supplies what needs its coder (a Source: sampling,
// coding a sample with a candidate, the blocks and the decoding-time
// model of each candidate, the bounds known without coding); this file
// turns them into costs, runs the search and checks a sampled winner.

// Limits are a tensor search's sizes and rates.
type Limits struct {
	// Whole: tensors up to this many bytes are coded whole (the estimate
	// is exact); larger ones by Windows windows totalling 1/Fraction of
	// the tensor, between Whole and Max bytes.
	Whole, Max, Fraction, Windows int64
	// IndexBytes is a block's index entry: a candidate's own bytes per
	// block of the whole tensor.
	IndexBytes int64
	// PsPerByte is the exchange rate of decoding time: a candidate's
	// time term is the tensor's bytes × its picoseconds a byte /
	// PsPerByte.
	PsPerByte int64
	// CheckMax: a sampled winner is checked on the whole tensor up to
	// this many bytes, above on a sample of CheckMax bytes in
	// CheckWindows windows (by 1/64: the sample's error).
	CheckMax, CheckWindows int64
}

// A Source is the tensor searched, as its coder sees it.
type Source interface {
	// Length is the tensor's bytes.
	Length() int64
	// Sample reads a sample of about target bytes in windows windows at
	// fixed, evenly spread positions (Windows), the whole tensor when it
	// is no larger than target.
	Sample(target, windows int64) (Sample, error)
	// Blocks is the number of blocks the whole tensor is coded in with c.
	Blocks(c Choice) int
	// Ps is c's decoding time, picoseconds a byte of the original (the
	// incumbent's comes with its coded sample, Coded.Ps).
	Ps(c Choice) int64
	// Bound is a lower bound of the bytes of sample s coded with c,
	// known without coding it (0: none).
	Bound(c Choice, s Sample) int64
}

// A Sample is a sample of a tensor, ready to be coded.
type Sample interface {
	// Len is the sample's bytes.
	Len() int64
	// Code codes the sample with candidate c.
	Code(c Choice) (Coded, error)
}

// Coded is a sample coded with a candidate.
type Coded struct {
	Bytes  int64 // the blocks' bytes
	Ps     int64 // their decoding time model, picoseconds a byte of the original
	Blocks int   // how many
}

// Report is one tensor's search.
type Report struct {
	Result
	Candidates []Candidate
	Costs      map[Choice]Cost // every candidate expanded
	Verified   bool            // the winner was coded on the whole tensor (a sampled search)
	Rejected   bool            // and was not smaller there: the incumbent is kept
}

// Tensor searches src's program among the candidates (the incumbent, the
// encoder's own choice, first; each with its parent, Candidate.Bound
// ignored: it is computed here) with at most budget candidates coded on a
// sample. A candidate's cost is its sample's bytes scaled to the tensor,
// plus an index entry for each block the whole tensor would have, plus
// its decoding time (Limits.PsPerByte); it may win only where its bytes
// are below the incumbent's (by 1/64 when sampled). A winner found on a
// sample is coded on the whole tensor (or on a sample of Limits.CheckMax
// bytes) beside the incumbent and kept only where it is smaller there:
// a sample misses what spans the tensor (an STFT basis repeats values
// across all its rows: zstd of the whole finds them, zstd of four
// windows does not).
func Tensor(src Source, cands []Candidate, key Key, prior *Prior, budget int, lim Limits) (Report, error) {
	var rep Report
	length := src.Length()
	s, err := src.Sample(min(max(length/lim.Fraction, lim.Whole), lim.Max), lim.Windows)
	if err != nil {
		return rep, err
	}
	n := s.Len()
	whole := n == length
	timeBytes := func(ps int64) int64 { return length * ps / lim.PsPerByte }
	scale := func(b int64) int64 { return (b*length + n - 1) / n }
	inc := Choice(0)
	if len(cands) > 0 {
		inc = cands[0].Choice
	}
	for i, c := range cands {
		c.Bound = 0
		if i > 0 {
			c.Bound = lim.IndexBytes*int64(src.Blocks(c.Choice)) + timeBytes(src.Ps(c.Choice))
			if b := src.Bound(c.Choice, s); b > 0 {
				c.Bound += scale(b)
			}
		}
		rep.Candidates = append(rep.Candidates, c)
	}
	rep.Costs = map[Choice]Cost{}
	var incBytes int64
	var evalErr error
	eval := func(c Choice) Cost {
		cd, err := s.Code(c)
		if err != nil {
			if evalErr == nil {
				evalErr = err
			}
			return Cost{}
		}
		var cost Cost
		if whole {
			cost.Bytes = cd.Bytes + lim.IndexBytes*int64(cd.Blocks)
		} else {
			cost.Bytes = scale(cd.Bytes) + lim.IndexBytes*int64(src.Blocks(c))
		}
		ps := src.Ps(c)
		if c == inc {
			ps = cd.Ps
			incBytes = cost.Bytes
		}
		cost.Cost = cost.Bytes + timeBytes(ps)
		// never estimated larger than the incumbent; a sampled estimate
		// must win by 1/64 (the sample's error)
		margin := int64(0)
		if !whole {
			margin = incBytes / 64
		}
		cost.OK = c == inc || cost.Bytes < incBytes-margin
		rep.Costs[c] = cost
		return cost
	}
	rep.Result = Run(Problem{Key: key, Candidates: rep.Candidates, Eval: eval}, prior, budget)
	if evalErr != nil {
		return rep, evalErr
	}
	if rep.Expanded == 0 || rep.Best == inc || whole {
		return rep, nil // no candidates or no budget; the incumbent; exact
	}
	rep.Verified = true
	full, err := src.Sample(lim.CheckMax, lim.CheckWindows)
	if err != nil {
		return rep, err
	}
	var sizes [2]int64
	for i, c := range []Choice{inc, rep.Best} {
		cd, err := full.Code(c)
		if err != nil {
			return rep, err
		}
		sizes[i] = cd.Bytes + lim.IndexBytes*int64(cd.Blocks)
	}
	margin := int64(0)
	if full.Len() < length {
		margin = sizes[0] / 64
	}
	if sizes[1] >= sizes[0]-margin {
		rep.Best, rep.Rejected = inc, true
	}
	return rep, nil
}

// Weight is what r's winner counts in a prior (Prior.AddPathN): 1 plus
// the per mille of the incumbent's bytes it saved, so the order favours
// the candidates that save most, not those that win by a few bytes most
// often.
func (r Report) Weight() uint32 {
	w := uint32(1)
	if len(r.Candidates) == 0 || r.Best == r.Candidates[0].Choice {
		return w
	}
	if a, b := r.Costs[r.Candidates[0].Choice], r.Result.Cost; a.Bytes > 0 && b.Bytes < a.Bytes {
		w += uint32((a.Bytes - b.Bytes) * 1000 / a.Bytes)
	}
	return w
}

// Windows places a sample of about target bytes of a tensor of length
// bytes, cut into units of unit bytes (rows, values or records), in
// windows windows at fixed, evenly spread positions: each window's bytes
// (a whole number of units, at least one) and the windows' offsets. The
// whole tensor (one window at 0) when it is no larger than target.
func Windows(length, unit, target, windows int64) (win int64, offs []int64) {
	if length <= target {
		return length, []int64{0}
	}
	unit = max(unit, 1)
	win = max(target/windows/unit, 1) * unit
	span := length - win
	if windows < 2 {
		return win, []int64{0}
	}
	for j := int64(0); j < windows; j++ {
		offs = append(offs, span*j/(windows-1)/unit*unit)
	}
	return win, offs
}
