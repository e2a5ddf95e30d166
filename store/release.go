//go:build !js

package store

import (
	"errors"
	"sync"
	"time"
)

// How a released index (Options.Release) makes room for writers. bbolt's
// writer tries the file lock every 50 ms; reads that overlap without a
// pause would keep it out for ever. So once the index has been held with
// no pause of releaseGap for releaseHold, new reads wait (at most
// releaseWait) for those in progress to end, and the next opening waits
// until the index has been closed for releaseGap, longer than the
// writer's retry: a waiting writer then gets the lock. The index stays
// open releaseLinger after the last read, for the next one (an opening
// costs ~40 µs: a range's units are a read or more each).
const (
	releaseHold   = 200 * time.Millisecond
	releaseGap    = 75 * time.Millisecond
	releaseWait   = time.Second
	releaseLinger = 5 * time.Millisecond
)

var errReleasedClosed = errors.New("store: closed")

// releasedKV is the index of a directory store opened with Options.Release:
// bbolt is opened (read-only, its lock shared) by the first read and
// closed after the last one in progress (releaseLinger later), so that a
// writer in another process takes its turn between reads instead of
// waiting until Close. No writer commits while it is open: each opening
// reads what the last writer committed.
type releasedKV struct {
	path string
	wait time.Duration // Options.LockWait, for each opening

	mu        sync.Mutex
	k         *boltKV       // open while refs > 0
	refs      int           // reads in progress
	shut      chan struct{} // closed when k is
	busySince time.Time     // start of the holds without a pause of releaseGap
	lastClose time.Time
	rest      time.Time   // no opening before this (after a long hold)
	idle      *time.Timer // closes the index releaseLinger after the last read
	closed    bool
}

func openReleased(path string, wait time.Duration) (*releasedKV, error) {
	r := &releasedKV{path: path, wait: wait}
	// open once now, so that a missing or damaged index fails Open
	if err := r.view(func(tx) error { return nil }); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *releasedKV) acquire() (*boltKV, error) {
	r.mu.Lock()
	if r.k != nil && time.Since(r.busySince) > releaseHold {
		// held long enough: let the reads in progress end first
		if r.refs == 0 {
			r.shutLocked()
		} else {
			shut := r.shut
			r.mu.Unlock()
			t := time.NewTimer(releaseWait)
			select {
			case <-shut:
			case <-t.C:
			}
			t.Stop()
			r.mu.Lock()
		}
	}
	defer r.mu.Unlock()
	if r.closed {
		return nil, errReleasedClosed
	}
	if r.k == nil {
		if d := time.Until(r.rest); d > 0 {
			time.Sleep(d) // mu held: every opener waits alike
		}
		k, err := openBoltRO(r.path, r.wait)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		if now.Sub(r.lastClose) >= releaseGap {
			r.busySince = now // a writer had its chance
		}
		r.k, r.shut = k, make(chan struct{})
	}
	r.refs++
	return r.k, nil
}

func (r *releasedKV) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs--; r.refs > 0 {
		return
	}
	if r.closed || time.Since(r.busySince) > releaseHold {
		r.shutLocked()
		return
	}
	if r.idle == nil {
		r.idle = time.AfterFunc(releaseLinger, r.closeIdle)
	} else {
		r.idle.Reset(releaseLinger)
	}
}

// closeIdle closes the index if no read holds it.
func (r *releasedKV) closeIdle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.k != nil && r.refs == 0 {
		r.shutLocked()
	}
}

// shutLocked closes the index (r.mu held, no read in progress).
func (r *releasedKV) shutLocked() {
	if r.k == nil {
		return
	}
	r.k.close()
	r.k = nil
	close(r.shut)
	r.lastClose = time.Now()
	if r.lastClose.Sub(r.busySince) > releaseHold {
		r.rest = r.lastClose.Add(releaseGap)
	}
}

func (r *releasedKV) view(fn func(tx) error) error {
	k, err := r.acquire()
	if err != nil {
		return err
	}
	defer r.release()
	return k.view(fn)
}

func (r *releasedKV) update(func(tx) error) error {
	return errors.New("store: write to a store opened read-only")
}

// close waits for no read: one in progress keeps the index open until it
// ends (its release closes it).
func (r *releasedKV) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.refs == 0 {
		r.shutLocked()
	}
	return nil
}

// version is bbolt's transaction id, one more per commit.
func (r *releasedKV) version() (string, error) {
	k, err := r.acquire()
	if err != nil {
		return "", err
	}
	defer r.release()
	return k.version()
}
