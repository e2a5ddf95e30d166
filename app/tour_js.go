//go:build js

package main

import "errors"

// The page passes the workbench no flags, so -screenshots is never set in
// the browser, and the tour needs what a page lacks (files of ../shared,
// a store in a temporary directory, ImageMagick): the browser build
// leaves it out (tour.go), and with it code of app.wasm that no page runs.

// tourTemp are the temporary directories the tour made: none.
var tourTemp []string

func takeScreenshots(*workbench, string, string) error {
	return errors.New("-screenshots: the screenshot tour runs in the desktop workbench")
}
