package baseline

import (
	"testing"
	"time"
)

// bestOf times a call that is shorter than the clock's tick by repeating
// it: with a clock that moves in whole milliseconds and a call that takes
// 1 µs of it, the time per call comes out near 1 µs, not 0. A call longer
// than minSample runs once per run.
func TestBestOfCoarseClock(t *testing.T) {
	calls := 0
	base := time.Unix(0, 0)
	now = func() time.Time {
		// 1 ms every 1000 calls, read at millisecond ticks
		return base.Add(time.Duration(calls/1000) * time.Millisecond)
	}
	defer func() { now = time.Now }()
	best, runs, err := bestOf(3, time.Hour, func() error { calls++; return nil })
	if err != nil || runs != 3 {
		t.Fatalf("runs %d, err %v", runs, err)
	}
	if best < 500*time.Nanosecond || best > 2*time.Microsecond {
		t.Fatalf("a 1 µs call timed at %v", best)
	}
	calls = 0
	now = func() time.Time { return base.Add(time.Duration(calls) * 5 * time.Millisecond) }
	best, runs, err = bestOf(4, time.Hour, func() error { calls++; return nil })
	if err != nil || runs != 4 || calls != 4 || best != 5*time.Millisecond {
		t.Fatalf("a 5 ms call: best %v, runs %d, calls %d, err %v", best, runs, calls, err)
	}
}
