//go:build !js

package main

import (
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/dialog"

	"neuralzip/app/core"
)

// The desktop host: files come from the file dialog and drops on the
// window, exports go through save dialogs. host_js.go is the browser's.

// hostBrowser is true in the browser build (downloads instead of save
// dialogs, the page's file input instead of the open dialog).
const hostBrowser = false

// hostLazyScreens: the desktop builds every screen before the window shows.
const hostLazyScreens = false

// hostDefaultOpen is the model opened at start unless -open says otherwise.
const hostDefaultOpen = core.AssetPrefix + "silero-vad"

// hostDropTarget completes the Open screen's hint "…or drop ___".
const hostDropTarget = "a file onto this window"

// hubStorePlaceholder is what the Hub screen's store entry takes.
const hubStorePlaceholder = "a store: /path/to/store, s3://bucket/prefix, or http://HOST:PORT of nzip serve STORE"

// hostRunNote is shown under the run screen's controls (none here).
const hostRunNote = ""

// hostStart wires the host to the workbench before the window shows.
func hostStart(*workbench) {}

// hostPickFiles lets the user choose a checkpoint to open.
func hostPickFiles(s *openScreen) { s.openDialog() }

// pickFolder asks for a folder (the folder dialog) and calls fn with its
// path.
func pickFolder(wb *workbench, fn func(dir string)) {
	d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil || u == nil {
			return
		}
		fn(u.Path())
	}, wb.win)
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

// hostDownload saves b as name; only the browser build calls it.
func hostDownload(name string, b []byte) error { return nil }

// hostReport records a result for the browser's test hook (nothing here).
func hostReport(key, value string) {}

// hostReportRun records a run's result for the browser's test hook.
func hostReportRun(core.RunResult) {}

// glyphs returns s: desktop fonts have every symbol the workbench uses.
func glyphs(s string) string { return s }

// hostRasterScale is the charts' raster scaling.
const hostRasterScale = canvas.ImageScaleFastest

// hostProgressEvery is the shortest time between two progress bar updates.
const hostProgressEvery = 50 * time.Millisecond
