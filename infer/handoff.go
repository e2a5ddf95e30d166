package infer

import (
	"sync/atomic"
	"time"
)

// worker decodes units ahead of the forward pass on another goroutine,
// one job at a time. A decode or a matmul of these models takes a few
// microseconds, so the two sides must not sleep and wake for every
// tensor: a goroutine woken through a channel is queued on the waker's
// own processor and mostly runs only when the waker blocks, one after the
// other on one core. The worker spins for a while after each job, waiting
// for the next one, and the forward pass takes back a job the worker has
// not started (it decodes it itself): when the worker gets no core of its
// own (GOMAXPROCS=1 is not used at all; a machine busy with other
// processes), the forward pass never waits on it.
type worker struct {
	state    atomic.Int32 // jobIdle, ...
	sleeping atomic.Bool
	wake     chan struct{} // capacity 1; a stale token only causes a recheck
	doneC    chan struct{} // capacity 1: the job is done (for a sleeping taker)
	waiting  atomic.Bool   // the forward pass sleeps on doneC
	job      resident
	err      error
	decode   func(resident) error
	spin     time.Duration
}

// Job states.
const (
	jobIdle   = iota // no job
	jobQueued        // posted, not started
	jobBusy          // the worker decodes it
	jobDone          // decoded (err says how)
	jobTaken         // taken back by the forward pass before it started
	jobQuit          // the worker stops
)

func newWorker(decode func(resident) error, spin time.Duration) *worker {
	w := &worker{wake: make(chan struct{}, 1), doneC: make(chan struct{}, 1), decode: decode, spin: spin}
	go w.run()
	return w
}

func (w *worker) run() {
	for {
		st := w.next()
		if st == jobQuit {
			return
		}
		if !w.state.CompareAndSwap(jobQueued, jobBusy) {
			continue // taken back
		}
		w.err = w.decode(w.job)
		w.state.Store(jobDone)
		if w.waiting.Load() {
			select {
			case w.doneC <- struct{}{}:
			default:
			}
		}
	}
}

// next waits, spinning and then sleeping, until a job is queued or the
// worker is told to quit. The sleeping flag is set before the last look
// at the state, and post looks at the flag after setting the state (both
// sequentially consistent), so a post is never missed.
func (w *worker) next() int32 {
	ready := func() (int32, bool) {
		st := w.state.Load()
		return st, st == jobQueued || st == jobQuit
	}
	deadline := time.Now().Add(w.spin)
	for i := 1; ; i++ {
		if st, ok := ready(); ok {
			return st
		}
		if i%64 == 0 && time.Now().After(deadline) {
			break
		}
	}
	w.sleeping.Store(true)
	defer w.sleeping.Store(false)
	for {
		if st, ok := ready(); ok {
			return st
		}
		<-w.wake
	}
}

func (w *worker) signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// post hands the worker a job; the previous one must have been collected.
func (w *worker) post(r resident) {
	w.job = r // published by the atomic store below
	w.state.Store(jobQueued)
	if w.sleeping.Load() {
		w.signal(w.wake)
	}
}

// collect waits for the job posted and returns its outcome: taken is true
// when the worker had not started it, which is then withdrawn and left to
// the caller.
func (w *worker) collect() (taken bool, err error) {
	if w.state.CompareAndSwap(jobQueued, jobTaken) {
		w.state.Store(jobIdle)
		return true, nil
	}
	if w.state.Load() != jobDone {
		deadline := time.Now().Add(w.spin)
		for i := 1; w.state.Load() != jobDone; i++ {
			if i%64 == 0 && time.Now().After(deadline) {
				w.waiting.Store(true)
				for w.state.Load() != jobDone {
					<-w.doneC
				}
				w.waiting.Store(false)
				break
			}
		}
	}
	err = w.err
	w.err = nil
	w.state.Store(jobIdle)
	return false, err
}

// quit stops the worker; no job may be outstanding.
func (w *worker) quit() {
	w.state.Store(jobQuit)
	w.signal(w.wake)
}
