package baseline

import (
	"sync"
	"sync/atomic"
)

// forEach calls fn(worker, i) for i in [0, n) on at most threads goroutines.
// worker is in [0, min(threads, n)) and identifies per-goroutine scratch
// space. Jobs must be independent; they write to disjoint places, so the
// result never depends on threads. After a failure no new jobs start; the
// error of the lowest failing index is returned, so errors are deterministic
// too (every job below it ran).
func forEach(threads, n int, fn func(worker, i int) error) error {
	threads = min(threads, n)
	if threads <= 1 {
		for i := range n {
			if err := fn(0, i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next   atomic.Int64
		failed atomic.Int64 // lowest failing index + 1, or 0
		mu     sync.Mutex
		first  error
		wg     sync.WaitGroup
	)
	for w := range threads {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if f := failed.Load(); f != 0 && int64(i) >= f-1 {
					return
				}
				if err := fn(w, i); err != nil {
					mu.Lock()
					if f := failed.Load(); f == 0 || int64(i) < f-1 {
						failed.Store(int64(i) + 1)
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
