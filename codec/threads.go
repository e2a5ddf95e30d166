package codec

import "runtime"

// maxThreadsCap bounds MaxThreads whatever the number of CPUs.
const maxThreadsCap = 256

// MaxThreads is the most goroutines one call codes or decodes blocks on:
// 4 × GOMAXPROCS, at most 256. EncodeOptions.Threads above it is clamped to it
// (and every call clamps further to its number of blocks): more cannot run
// at once, and each costs memory (a block coder, buffers in flight), so a
// million of them cost gigabytes and half a minute.
func MaxThreads() int { return max(1, min(maxThreadsCap, 4*runtime.GOMAXPROCS(0))) }

// ClampThreads returns n clamped to MaxThreads, and whether it was; 0 (the
// default, GOMAXPROCS) and negative values (errors) are returned as they
// are.
func ClampThreads(n int) (int, bool) {
	if m := MaxThreads(); n > m {
		return m, true
	}
	return n, false
}
