package main

import (
	"flag"
	"fmt"
	"strconv"

	"neuralzip/codec"
)

// clampThreads clamps a command's -threads flag, if it has one, to
// codec.MaxThreads and says so on the flag set's output (stderr): more
// threads cannot run at once and each costs memory (-threads 1000000 took
// half a minute and gigabytes). The codec clamps too; this is where the
// user hears of it, and what bench reports.
func clampThreads(fs *flag.FlagSet) {
	f := fs.Lookup("threads")
	if f == nil {
		return
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return
	}
	n, ok := g.Get().(int)
	if !ok {
		return
	}
	if t, clamped := codec.ClampThreads(n); clamped {
		f.Value.Set(strconv.Itoa(t))
		fmt.Fprintf(fs.Output(), "nzip: warning: -threads %d is more than can be used; using %d (4 × GOMAXPROCS, at most 256)\n", n, t)
	}
}
