package main

import (
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
)

// TestScreenGoldens renders key screens with the silero-vad demo open and
// compares them with testdata/*.xml (markup: every widget, its text and
// geometry) and testdata/histograms.png (pixels, charts included). The
// open time and the program panel's speeds, the only values that depend
// on the machine, are fixed first.
// Failed renderings go to testdata/failed/; copy them over the masters
// after checking them to accept a change.
func TestScreenGoldens(t *testing.T) {
	wb := newTestBench(t)
	m := openDemo(t, wb, "silero-vad")
	wb.focus = largestFloat(m)
	wb.openTime = 1500 * time.Microsecond
	wb.modelChanged()
	wb.selectionChanged()
	fixProgramTimes(wb)
	wb.setStatus("status")
	c := wb.win.Canvas()
	for _, name := range []string{"Open", "Tensors", "Histograms"} {
		wb.selectTab(name)
		test.AssertRendersToMarkup(t, "screen-"+name+".xml", c)
	}
	test.AssertRendersToImage(t, "screen-Histograms.png", c)
}
