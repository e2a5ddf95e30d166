package baseline

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"runtime"
	"time"

	"neuralzip/codec"
)

// Measurement is one codec on one file, as `nzip bench -json` prints it.
type Measurement struct {
	File          string  `json:"file"`
	Codec         string  `json:"codec"`
	OriginalBytes int64   `json:"original_bytes"`
	Compressed    int64   `json:"compressed_bytes"`
	Ratio         float64 `json:"ratio"` // original / compressed
	CompressMBs   float64 `json:"compress_mb_s"`
	DecompressMBs float64 `json:"decompress_mb_s"`
	RoundtripOK   bool    `json:"roundtrip_ok"`
	Threads       int     `json:"threads"` // threads the codec actually used
	Runs          int     `json:"runs"`
	Error         string  `json:"error,omitempty"`
}

// MeasureOptions bounds a measurement.
type MeasureOptions struct {
	Threads int           // passed to the codec (0 = GOMAXPROCS)
	Runs    int           // compress and decompress up to this many times (0 = 3) ...
	MaxTime time.Duration // ... but stop repeating once this much time went by (0 = 10s)
}

// Measure compresses and decompresses src with the codec called name,
// keeping the best time of the runs (MB/s of original bytes, 1 MB = 10^6
// bytes), and checks that the roundtrip is bit-exact (bytes and SHA-256).
func Measure(name, file string, src []byte, segs []codec.Segment, opt MeasureOptions) Measurement {
	c, err := New(name, Options{Threads: opt.Threads})
	if err != nil {
		return Measurement{File: file, Codec: name, OriginalBytes: int64(len(src)), Threads: opt.Threads, Error: err.Error()}
	}
	return MeasureCodec(c, name, file, src, segs, opt)
}

// MeasureCodec is Measure for a codec value (for codecs that need more
// than Options, such as nzip with a setup; see NewNZip).
func MeasureCodec(c Codec, name, file string, src []byte, segs []codec.Segment, opt MeasureOptions) Measurement {
	m := Measurement{File: file, Codec: name, OriginalBytes: int64(len(src)), Threads: opt.Threads}
	if m.Threads == 0 {
		m.Threads = runtime.GOMAXPROCS(0)
	}
	runs := opt.Runs
	if runs <= 0 {
		runs = 3
	}
	maxTime := opt.MaxTime
	if maxTime <= 0 {
		maxTime = 10 * time.Second
	}
	if st, ok := c.(interface{ Threads() int }); ok {
		m.Threads = st.Threads() // a codec that does not parallelise says so
	}
	var comp []byte
	best, runsDone, err := bestOf(runs, maxTime, func() (err error) {
		comp, err = c.Compress(src, segs)
		return err
	})
	m.Runs = runsDone
	if err != nil {
		m.Error = fmt.Sprintf("compress: %v", err)
		return m
	}
	m.Compressed = int64(len(comp))
	if m.Compressed > 0 {
		m.Ratio = float64(len(src)) / float64(m.Compressed)
	}
	m.CompressMBs = MBPerS(len(src), best)
	var dec []byte
	best, _, err = bestOf(runs, maxTime, func() (err error) {
		dec, err = c.Decompress(comp)
		return err
	})
	if err != nil {
		m.Error = fmt.Sprintf("decompress: %v", err)
		return m
	}
	m.DecompressMBs = MBPerS(len(src), best)
	m.RoundtripOK = bytes.Equal(dec, src) && sha256.Sum256(dec) == sha256.Sum256(src)
	return m
}

// MBPerS is n bytes in d as MB/s (10^6 B/s), or 0 when d is not positive
// (a clock too coarse to have moved): never +Inf, which JSON cannot hold.
func MBPerS(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e6
}

// minSample is the least time one sample of bestOf is taken over: a call
// that takes less is repeated (and the time divided by the calls), so that
// a clock that ticks coarsely (Wine's, where a small file's decompression
// read 0; a browser's) still times a small file, instead of reporting no
// speed.
const minSample = 2 * time.Millisecond

// now is time.Now; tests give bestOf a coarse clock.
var now = time.Now

// bestOf runs fn up to runs times (at least once, fewer once maxTime has
// passed; a run of calls shorter than minSample is repeated, see
// minSample) and returns the shortest time of one call and how many runs
// were taken.
func bestOf(runs int, maxTime time.Duration, fn func() error) (time.Duration, int, error) {
	best := time.Duration(1<<63 - 1)
	start := now()
	n := 0
	for n < runs {
		runtime.GC()
		calls := 1
		var el time.Duration
		for {
			t0 := now()
			for range calls {
				if err := fn(); err != nil {
					return 0, n + 1, err
				}
			}
			el = now().Sub(t0)
			if el >= minSample || calls >= 1<<20 {
				break
			}
			calls *= 2
		}
		n++
		best = min(best, el/time.Duration(calls))
		if now().Sub(start) > maxTime {
			break
		}
	}
	return best, n, nil
}
