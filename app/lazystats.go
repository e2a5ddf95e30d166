package main

import (
	"slices"
	"time"

	"neuralzip/app/core"
)

// lazyStats are the statistics of a model read from a server, computed for
// the tensors the screens show as they show them, so that opening a large
// model downloads its header and the tensors looked at, not all of it.
type lazyStats struct {
	have    map[int]bool // tensors whose statistics are in wb.stats
	pending []int        // the running job's tensors (sorted)
}

// computed returns the tensors of idx whose statistics are known.
func (l *lazyStats) computed(idx []int) []int {
	var out []int
	for _, i := range idx {
		if l.have[i] {
			out = append(out, i)
		}
	}
	return out
}

// missingStats returns the float tensors of idx whose statistics a lazy
// model has not computed yet (none for other models).
func (wb *workbench) missingStats(m *core.Model, idx []int) []int {
	l := wb.lazy[m]
	if l == nil {
		return nil
	}
	var out []int
	for _, i := range idx {
		if i >= 0 && i < len(m.Tensors) && m.Tensors[i].IsFloat() && !l.have[i] {
			out = append(out, i)
		}
	}
	return out
}

// needStats computes, in the background, the statistics of the tensors of
// idx that a lazy model lacks, unless the running job already does; a new
// job replaces the running one (it includes that one's tensors still
// needed).
func (wb *workbench) needStats(m *core.Model, idx []int) {
	l := wb.lazy[m]
	miss := wb.missingStats(m, idx)
	if l == nil || len(miss) == 0 {
		return
	}
	covered := true
	for _, i := range miss {
		if _, ok := slices.BinarySearch(l.pending, i); !ok {
			covered = false
			break
		}
	}
	if covered {
		return
	}
	for _, i := range l.pending {
		if !slices.Contains(miss, i) {
			miss = append(miss, i)
		}
	}
	slices.Sort(miss)
	l.pending = miss
	ctx, gen := wb.global.start()
	prog := wb.global.progress(gen)
	wb.go_(func() func() {
		t0 := time.Now()
		st, err := core.ComputeStatsOf(ctx, m, miss, 0, func(done, total int64) {
			if total > 0 {
				prog(float64(done) / float64(total))
			}
		})
		el := time.Since(t0)
		return func() {
			cur := wb.global.done(gen)
			if slices.Equal(l.pending, miss) {
				l.pending = nil
			}
			if err != nil {
				if cur {
					wb.setStatus("%s: statistics stopped: %v", m.Name, err)
				}
				return
			}
			all := wb.stats[m]
			if all == nil {
				return // closed meanwhile
			}
			for _, i := range miss {
				all[i] = st[i]
				l.have[i] = true
			}
			hostReport("stats", m.Name)
			hostReport("stats_ms", ms(el))
			if wb.current == m {
				wb.setStatus("%s: statistics of %d tensor(s) read from the server in %s", m.Name, len(miss), el.Round(time.Millisecond))
				wb.modelChanged()
				wb.selectionChanged()
			}
		}
	})
}
