//go:build !js

package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
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
	// releaseTry is one try at the lock of an opening: between tries it
	// looks whether the store was closed meanwhile (Close never waits for
	// a writer).
	releaseTry = 250 * time.Millisecond
)

var errReleasedClosed = errors.New("store: closed")

// releasedKV is the index of a directory store opened with Options.Release:
// bbolt is opened (read-only, its lock shared) by the first read and
// closed after the last one in progress (releaseLinger later), so that a
// writer in another process takes its turn between reads instead of
// waiting until Close. No writer commits while it is open: each opening
// reads what the last writer committed. Each opening checks that the
// index is still of the format the store was opened with (nzip store
// migrate renames a new index over it: ErrMigrated).
//
// r.mu is never held while an opening waits for the lock or for its turn
// (rest): one reader opens (opening), the others wait for it, and close
// returns at once.
type releasedKV struct {
	path   string
	wait   time.Duration // Options.LockWait, for each opening
	format int           // the format version of the first opening
	done   chan struct{} // closed by close

	mu        sync.Mutex
	k         *boltKV       // open while refs > 0
	id        string        // the file k opened (fileID)
	refs      int           // reads in progress
	shut      chan struct{} // closed when k is
	opening   chan struct{} // while a reader opens the index; closed when it is done
	busySince time.Time     // start of the holds without a pause of releaseGap
	lastClose time.Time
	rest      time.Time   // no opening before this (after a long hold)
	idle      *time.Timer // closes the index releaseLinger after the last read
	closed    bool
}

func openReleased(path string, wait time.Duration) (*releasedKV, error) {
	r := &releasedKV{path: path, wait: wait, done: make(chan struct{})}
	// open once now, so that a missing or damaged index fails Open
	if err := r.view(func(tx) error { return nil }); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *releasedKV) acquire() (*boltKV, error) {
	r.mu.Lock()
	waited := false
	for {
		if r.closed {
			r.mu.Unlock()
			return nil, errReleasedClosed
		}
		if r.k != nil && !waited && time.Since(r.busySince) > releaseHold {
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
				case <-r.done:
				}
				t.Stop()
				r.mu.Lock()
				waited = true
				continue
			}
		}
		if r.k != nil {
			r.refs++
			k := r.k
			r.mu.Unlock()
			return k, nil
		}
		if r.opening != nil { // another reader opens it: wait for it
			opening := r.opening
			r.mu.Unlock()
			select {
			case <-opening:
			case <-r.done:
			}
			r.mu.Lock()
			continue
		}
		opening, rest := make(chan struct{}), r.rest
		r.opening = opening
		r.mu.Unlock()
		k, id, err := r.open(rest)
		r.mu.Lock()
		r.opening = nil
		close(opening)
		if err == nil && r.closed { // closed meanwhile: nobody else closes k
			k.close()
			err = errReleasedClosed
		}
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		now := time.Now()
		if now.Sub(r.lastClose) >= releaseGap {
			r.busySince = now // a writer had its chance
		}
		r.k, r.id, r.shut = k, id, make(chan struct{})
		r.refs++
		r.mu.Unlock()
		return k, nil
	}
}

// open opens the index (r.mu not held), not before rest, waiting for a
// writer's lock at most r.wait (0: without limit) in tries of releaseTry,
// until the store is closed. It returns the index and the file's fileID;
// ErrMigrated if it is not of the format of the first opening.
func (r *releasedKV) open(rest time.Time) (*boltKV, string, error) {
	if d := time.Until(rest); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.done:
			t.Stop()
			return nil, "", errReleasedClosed
		}
	}
	start := time.Now()
	for {
		select {
		case <-r.done:
			return nil, "", errReleasedClosed
		default:
		}
		try := releaseTry
		if r.wait > 0 {
			left := r.wait - time.Since(start)
			if left <= 0 {
				return nil, "", lockedError(r.path, r.wait)
			}
			try = min(try, left)
		}
		before, err := os.Stat(r.path)
		if err != nil {
			return nil, "", err
		}
		k, err := tryBoltRO(r.path, try)
		if errors.Is(err, bolt.ErrTimeout) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		after, err := os.Stat(r.path)
		if err != nil || !os.SameFile(before, after) {
			k.close() // renamed over while it opened: open the new one
			if err != nil {
				return nil, "", err
			}
			continue
		}
		if err := r.checkFormat(k); err != nil {
			k.close()
			return nil, "", err
		}
		return k, fileID(after), nil
	}
}

// checkFormat pins the format version of the first opening and is
// ErrMigrated when k's is another.
func (r *releasedKV) checkFormat(k *boltKV) error {
	var v int
	err := k.view(func(t tx) (err error) {
		v, err = formatOf(t)
		return err
	})
	switch {
	case err != nil:
		return err
	case r.format == 0: // the first opening (openReleased), before any other
		r.format = v
	case v != r.format:
		return fmt.Errorf("%w: %s is of format version %d, opened as %d", ErrMigrated, r.path, v, r.format)
	}
	return nil
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
// ends (its release closes it); an opening in progress sees the close
// between tries and gives up, and the readers waiting for it return
// errReleasedClosed at once.
func (r *releasedKV) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.done)
	}
	if r.refs == 0 {
		r.shutLocked()
	}
	return nil
}

// version is bbolt's transaction id, one more per commit, and the index
// file's identity (fileID): a new file (nzip store migrate) starts its
// transaction ids again.
func (r *releasedKV) version() (string, error) {
	k, err := r.acquire()
	if err != nil {
		return "", err
	}
	defer r.release()
	r.mu.Lock()
	id := r.id
	r.mu.Unlock()
	v, err := k.version()
	if err != nil {
		return "", err
	}
	return v + "@" + id, nil
}
