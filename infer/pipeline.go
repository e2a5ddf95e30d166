package infer

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pipeStore is the archive store with prefetching (Options.Prefetch, two
// or more processors): a worker goroutine decodes the schedule's units in
// order, as far ahead as a ring arena allows, while the forward pass
// computes with the unit before. The forward pass takes each unit in turn
// and releases the one before it; a unit the worker has not started when
// it is needed is decoded by the forward pass itself (so a worker that gets
// no core, on a busy machine, costs nothing but a lock per unit), and
// while it waits for a unit the worker is decoding it decodes the ones
// after it where the ring has room.
//
// The schedule is cut into runs: consecutive steps that use the same unit.
// Run after run is decoded once per pass, so a unit that several runs use
// (stories260K's keys and values of all layers share a block) is decoded
// once per run, by the worker; without prefetching the arena keeps such a
// unit instead (archiveStore). The ring is as large as the largest two
// consecutive runs: the unit in use and the next one fit together.
//
// A matmul need not wait for its whole unit (stream, ready): the worker
// publishes each block as it is decoded, and the forward pass computes
// the rows that have arrived. So when a unit cannot be placed until the
// one before it is released (the ring holds the two, not three), only its
// first block's decode is not hidden.
//
// Sequence numbers count the runs handed out since the last restart; run
// seq is runs[(start+seq) % len(runs)]. Sequences [consumed, next) are
// live: placed in the ring in order, decoded or being decoded. A forward
// pass that asks for a step out of order (a pass cut short by an error)
// restarts the pipeline at that step's run.
type pipeStore struct {
	rd    *archiveStore // units, decode, memory counts
	runs  []*unit       // the schedule's runs
	runOf []int         // per step: its run
	arena []byte

	mu       sync.Mutex
	start    int // the run of sequence 0
	next     int // the next sequence to claim
	consumed int // sequences released
	quit     bool
	busy     bool       // the worker is decoding (outside mu)
	idle     *sync.Cond // on mu: the worker is not decoding
	slot     [pipeSlots]pipeSlot

	cur      int   // the sequence the forward pass holds; -1 none
	curOff   int64 // the offset in its unit of the tensor stream returned last
	decoded  atomic.Int64
	byWorker atomic.Int64

	// waking: each side spins a while, then sleeps on its channel; the
	// other side signals when the sleeping flag is set (set before the
	// last look, so no signal is missed).
	workerSleeps atomic.Bool
	workerWake   chan struct{}
	mainSleeps   atomic.Bool
	mainWake     chan struct{}
	released     atomic.Int64 // bumped on every release and restart: the worker's spin watches it
	exited       chan struct{}
}

// errRing cannot happen: an empty ring holds the largest unit.
var errRing = errors.New("infer: no room in the prefetch ring")

// pipeSlots bounds how many runs the worker decodes ahead (minus one).
const pipeSlots = 16

type pipeSlot struct {
	p    *pipeStore
	lo   int64
	u    *unit
	upto atomic.Int64 // bytes of the unit decoded so far (block by block)
	done atomic.Int64 // seq+1 once decoded
	err  error        // written before done
}

// progress publishes the bytes decoded so far (decodeInto calls it after
// each block) and wakes a forward pass that sleeps waiting for them.
func (s *pipeSlot) progress(n int64) {
	s.upto.Store(n)
	if s.p.mainSleeps.Load() {
		signal(s.p.mainWake)
	}
}

// pipeSpin is how long either side spins before it sleeps: longer than a
// tensor's decode or matmul in a small model, so that in a run neither
// sleeps.
var pipeSpin = 200 * time.Microsecond

// newPipeStore plans the runs of as's schedule and starts the worker
// (unless worker is false: tests of a worker that never runs).
func newPipeStore(as *archiveStore, worker bool) *pipeStore {
	p := &pipeStore{rd: as, cur: -1, workerWake: make(chan struct{}, 1), mainWake: make(chan struct{}, 1), exited: make(chan struct{})}
	p.idle = sync.NewCond(&p.mu)
	for i := range p.slot {
		p.slot[i].p = p
	}
	for i, u := range as.units {
		if i == 0 || as.units[i-1] != u {
			p.runs = append(p.runs, u)
		}
		p.runOf = append(p.runOf, len(p.runs)-1)
	}
	if n := len(p.runs); n > 1 && p.runs[n-1] == p.runs[0] { // the pass wraps: one run
		p.runs = p.runs[:n-1]
		for i := range p.runOf {
			if p.runOf[i] == n-1 {
				p.runOf[i] = 0
			}
		}
	}
	var size int64
	for i, u := range p.runs {
		v := p.runs[(i+1)%len(p.runs)]
		size = max(size, u.length)
		if len(p.runs) > 1 {
			size = max(size, u.length+v.length)
		}
	}
	p.arena = make([]byte, size)
	as.mem.Buffers = size
	as.mem.Peak = as.mem.Compressed + size
	as.arena = nil // the ring replaces it
	if worker {
		go p.work()
	} else {
		close(p.exited)
	}
	return p
}

// placeLocked finds room for u after the live units, or reports false.
// Live units lie in the ring in order: from the oldest's start (head) to
// the end of the newest (tail), wrapping once at the end of the ring.
func (p *pipeStore) placeLocked(u *unit) (int64, bool) {
	l, n := u.length, int64(len(p.arena))
	if p.next == p.consumed { // empty ring
		return 0, l <= n
	}
	head := p.slot[p.consumed%pipeSlots].lo
	last := &p.slot[(p.next-1)%pipeSlots]
	tail := last.lo + last.u.length
	if last.lo >= head { // not wrapped: free [tail, n) and [0, head)
		if tail+l <= n {
			return tail, true
		}
		return 0, l <= head
	}
	return tail, tail+l <= head // wrapped: free [tail, head)
}

// claimLocked claims the next sequence if it has room.
func (p *pipeStore) claimLocked() (int, bool) {
	if p.next-p.consumed >= pipeSlots-1 {
		return 0, false
	}
	u := p.runs[(p.start+p.next)%len(p.runs)]
	lo, ok := p.placeLocked(u)
	if !ok {
		return 0, false
	}
	k := p.next
	p.next++
	s := &p.slot[k%pipeSlots]
	s.lo, s.u, s.err = lo, u, nil
	s.upto.Store(0)
	s.done.Store(0)
	return k, true
}

// decodeSeq decodes sequence k into its place; once it stores done, the
// slot belongs to the forward pass (it may reuse it): nothing here reads
// it after that.
func (p *pipeStore) decodeSeq(k int) {
	s := &p.slot[k%pipeSlots]
	err := p.rd.decodeInto(p.arena, resident{s.u, s.lo}, s)
	p.decoded.Add(s.u.length)
	s.err = err
	s.done.Store(int64(k) + 1)
}

func (p *pipeStore) work() {
	defer close(p.exited)
	for {
		p.mu.Lock()
		if p.quit {
			p.mu.Unlock()
			return
		}
		k, ok := p.claimLocked()
		if ok {
			p.busy = true
		}
		seen := p.released.Load()
		p.mu.Unlock()
		if !ok {
			p.waitRelease(seen)
			continue
		}
		n := p.slot[k%pipeSlots].u.length // the slot is the forward pass's once decoded
		p.decodeSeq(k)
		p.byWorker.Add(n)
		p.mu.Lock()
		p.busy = false
		p.idle.Broadcast()
		p.mu.Unlock()
		if p.mainSleeps.Load() {
			signal(p.mainWake)
		}
	}
}

// waitRelease waits until the forward pass releases a unit (or restarts,
// or closes): released moves from seen.
func (p *pipeStore) waitRelease(seen int64) {
	deadline := time.Now().Add(pipeSpin)
	for i := 1; p.released.Load() == seen; i++ {
		if i%64 == 0 {
			if time.Now().After(deadline) {
				p.workerSleeps.Store(true)
				for p.released.Load() == seen {
					<-p.workerWake
				}
				p.workerSleeps.Store(false)
				return
			}
			runtime.Gosched()
		}
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (p *pipeStore) bump() {
	p.released.Add(1)
	if p.workerSleeps.Load() {
		signal(p.workerWake)
	}
}

// restartLocked empties the pipeline and starts it at run r; it waits for
// a decode in flight (it writes the ring).
func (p *pipeStore) restartLocked(r int) {
	for p.busy {
		p.idle.Wait()
	}
	p.start, p.next, p.consumed, p.cur = r, 0, 0, -1
}

func (p *pipeStore) get(step int) ([]byte, error) {
	b, err := p.take(step, true)
	if err != nil {
		return nil, err
	}
	if err := p.ready(int64(len(b))); err != nil {
		return nil, err
	}
	return b, nil
}

// stream is get without waiting for the worker to finish the unit:
// ready tells how far it is.
func (p *pipeStore) stream(step int) ([]byte, error) { return p.take(step, false) }

func (p *pipeStore) take(step int, wait bool) ([]byte, error) {
	r := p.runOf[step]
	if p.cur < 0 || (p.start+p.cur)%len(p.runs) != r {
		if err := p.advance(r, wait); err != nil {
			return nil, err
		}
	}
	s := &p.slot[p.cur%pipeSlots]
	t := p.rd.sched[step]
	p.curOff = t.offset - s.u.off
	lo := s.lo + p.curOff
	return p.arena[lo : lo+t.length : lo+t.length], nil
}

// ready waits until the first n bytes of the tensor stream (or get)
// returned last are decoded. A decode error empties the pipeline (the
// next get restarts it) and is returned.
func (p *pipeStore) ready(n int64) error {
	s := &p.slot[p.cur%pipeSlots]
	need := p.curOff + n
	if s.upto.Load() >= need {
		return nil
	}
	want := int64(p.cur) + 1
	deadline := time.Now().Add(pipeSpin)
	for i := 1; s.upto.Load() < need && s.done.Load() != want; i++ {
		if i%64 == 0 && time.Now().After(deadline) {
			p.mainSleeps.Store(true)
			for s.upto.Load() < need && s.done.Load() != want {
				<-p.mainWake
			}
			p.mainSleeps.Store(false)
			break
		}
	}
	if s.upto.Load() >= need {
		return nil
	}
	return p.failed(s, (p.start+p.cur)%len(p.runs))
}

// failed handles the slot s of run r, whose decode ended in an error: it
// leaves nothing live (the next get restarts and decodes again) and
// returns the error.
func (p *pipeStore) failed(s *pipeSlot, r int) error {
	err := s.err
	if err == nil { // cannot happen: a unit decoded whole covers its tensors
		err = errRing
	}
	p.mu.Lock()
	p.restartLocked(r)
	p.mu.Unlock()
	p.bump()
	return err
}

// advance releases the unit in use and takes run r's: decoded by the
// worker, or by the forward pass when the worker has not claimed it.
// Unless wait, a unit the worker is decoding is taken as it is: ready
// waits for its bytes.
func (p *pipeStore) advance(r int, wait bool) error {
	if p.cur >= 0 {
		// a unit handed out by stream may still be finishing (its last
		// bytes published, its end not yet): the worker writes its slot
		// until done, so it is released only then
		p.waitDone(p.cur)
	}
	p.mu.Lock()
	k := p.cur + 1
	if p.cur < 0 || (p.start+k)%len(p.runs) != r {
		p.restartLocked(r)
		k = 0
	} else {
		p.consumed = k
	}
	p.cur = -1
	inline := false
	if p.next == k {
		var ok bool
		if k, ok = p.claimLocked(); !ok { // cannot happen: the ring is empty and holds the largest unit
			p.mu.Unlock()
			return errRing
		}
		inline = true
	}
	p.mu.Unlock()
	p.bump()
	if inline {
		p.decodeSeq(k)
	} else if !wait {
		p.cur = k
		return nil
	} else {
		// while the worker decodes k, decode what follows it if there is room
		for p.slot[k%pipeSlots].done.Load() != int64(k)+1 {
			p.mu.Lock()
			j, ok := p.claimLocked()
			p.mu.Unlock()
			if !ok {
				break
			}
			p.decodeSeq(j)
		}
		p.waitDone(k)
	}
	s := &p.slot[k%pipeSlots]
	if s.err != nil {
		return p.failed(s, r)
	}
	p.cur = k
	return nil
}

func (p *pipeStore) waitDone(k int) {
	s := &p.slot[k%pipeSlots]
	want := int64(k) + 1
	deadline := time.Now().Add(pipeSpin)
	for i := 1; s.done.Load() != want; i++ {
		if i%64 == 0 && time.Now().After(deadline) {
			p.mainSleeps.Store(true)
			for s.done.Load() != want {
				<-p.mainWake
			}
			p.mainSleeps.Store(false)
			return
		}
	}
}

func (p *pipeStore) memory() Memory {
	m := p.rd.mem
	m.Decoded = p.decoded.Load()
	return m
}

func (p *pipeStore) close() {
	p.mu.Lock()
	p.quit = true
	p.mu.Unlock()
	p.bump()
	<-p.exited
	p.rd.src.close()
}
