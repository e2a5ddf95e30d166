// Command workbench is NeuralZip's desktop workbench: open checkpoints,
// look at their exponent statistics, cluster chunks, build and compare
// setups and run the codec. The UI is built by newWorkbench from a
// fyne.App and a fyne.Window (tests pass fyne's test app); all computation
// lives in app/core, package analysis and the codec.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"neuralzip/app/core"
)

func main() {
	open := flag.String("open", hostDefaultOpen, "checkpoint to open at start: a path or demo:NAME (empty: none)")
	dark := flag.Bool("dark", false, "start in the dark theme")
	shots := flag.String("screenshots", "", "write a PNG of every screen in the light and dark theme to this directory, then quit")
	flag.Parse()

	if msg := missingDisplay(runtime.GOOS, os.Getenv); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
	// the token of HF_ENDPOINT, as Hugging Face clients send it
	if err := core.TokenFromEnv(os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "workbench: not used:", err)
	}
	a := app.NewWithID("io.neuralzip.workbench")
	w := a.NewWindow("NeuralZip workbench")
	wb := newWorkbench(a, w)
	if *dark {
		wb.setDark(true)
	}
	w.Resize(fyne.NewSize(defaultWidth, defaultHeight))
	if p := flag.Arg(0); p != "" {
		*open = p
	}
	if *shots != "" {
		go func() {
			err := takeScreenshots(wb, *shots, *open)
			for _, d := range tourTemp {
				os.RemoveAll(d)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "workbench:", err)
				os.Exit(1)
			}
			fyne.Do(a.Quit)
		}()
	} else if *open != "" {
		wb.open(*open)
	}
	wb.start()
	hostStart(wb)
	w.ShowAndRun()
}
