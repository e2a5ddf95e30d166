package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a bar on stderr when it is a terminal and does nothing
// otherwise (scripts and pipes see no control characters).
type progress struct {
	bar *progressbar.ProgressBar
}

func newProgress(stderr io.Writer, total int64, desc string, quiet bool) *progress {
	f, ok := stderr.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) || total <= 0 {
		return &progress{}
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetPredictTime(true),
	)
	return &progress{bar: bar}
}

// update is a codec.EncodeOptions/DecodeOptions Progress callback.
func (p *progress) update(done, total int64) {
	if p.bar != nil {
		p.bar.Set64(done)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
