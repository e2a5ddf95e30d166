package search

import (
	"context"
	"sync"
)

// Stats sums a search over an archive's tensors.
type Stats struct {
	Tensors  int // tensors searched
	Expanded int // candidates coded on a sample (the own choice included)
	Pruned   int // candidates skipped by their bound
	Changed  int // tensors given another program than the encoder's own
	Verified int // sampled winners coded on their whole tensor
	Rejected int // of those, the ones not smaller there (the own choice kept)
}

// Add counts report r of one tensor's search; changed says the tensor was
// given another program than the incumbent.
func (s *Stats) Add(r Report, changed bool) {
	s.Tensors++
	s.Expanded += r.Expanded
	s.Pruned += r.Pruned
	if r.Verified {
		s.Verified++
	}
	if r.Rejected {
		s.Rejected++
	}
	if changed {
		s.Changed++
	}
}

// Each calls search(j) for every j below n on up to threads goroutines,
// each taking the next j, and returns ctx's error when it was cancelled,
// else the error of the lowest j that failed: what each call finds
// depends on j alone, so the outcome is the same at every thread count.
func Each(ctx context.Context, threads, n int, search func(j int) error) error {
	errs := make([]error, n)
	var next sync.Mutex
	k := 0
	var wg sync.WaitGroup
	for range min(max(threads, 1), max(1, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				j := k
				k++
				next.Unlock()
				if j >= n || ctx.Err() != nil {
					return
				}
				errs[j] = search(j)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
