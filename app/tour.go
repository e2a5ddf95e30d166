//go:build !js

package main

import (
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"

	"neuralzip/app/core"
	"neuralzip/store"
)

// The screenshot tour (-screenshots, make screenshots) of the desktop
// workbench; tour_js.go says why the browser has none.

// trajTourSteps: checkpoints of ../shared's training run the tour opens for
// the Trajectory screen (when they are there; NZ_TRAJ_DIR overrides the
// folder).
var trajTourSteps = []string{"step_000000", "step_000250", "step_000500", "step_000750", "step_001000"}

// prepareTour opens the demo models (first the one to show), builds a
// setup, compares it, runs the codecs and generates a story, so that every screen has
// something to show. It runs off Fyne's goroutine.
func prepareTour(wb *workbench, first string) error {
	paths := []string{first}
	for _, d := range []string{"selfie-segmentation", "blazeface-front", "silero-vad"} {
		if p := core.AssetPrefix + d; p != first && len(paths) < 3 {
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		fyne.DoAndWait(func() { wb.open(p) })
		wb.wait()
	}
	var err error
	fyne.DoAndWait(func() {
		var cur *core.Model
		for _, m := range wb.models {
			if m.Path == first {
				cur = m
			}
		}
		if cur == nil {
			err = fmt.Errorf("could not open %s", first)
			return
		}
		wb.setCurrent(cur)
	})
	if err != nil {
		return err
	}
	wb.wait()
	fyne.DoAndWait(func() {
		// the histogram shows the largest float tensor; the first layer is selected
		wb.focus = largestFloat(wb.current)
		wb.selectionChanged()
		wb.setupsScr.build()
	})
	wb.wait()
	fyne.DoAndWait(func() { wb.setupsScr.runCompare() })
	wb.wait()
	for _, c := range []string{"zstd-3", "zipnn", core.CodecNZip} {
		fyne.DoAndWait(func() {
			wb.run.codecSel.SetSelected(c)
			wb.run.start()
		})
		wb.wait()
	}
	// nzip once more on a device: a GPU when there is one, else the
	// kernels' Go twin
	fyne.DoAndWait(func() {
		for _, name := range []string{"cuda", "webgpu", "cpu"} {
			if i := slices.IndexFunc(wb.run.backends, func(b core.BackendInfo) bool { return b.Name == name }); i >= 0 && wb.run.backends[i].Available() {
				wb.run.selectBackend(name)
				break
			}
		}
		wb.run.start()
	})
	wb.wait()
	// a story for the Generate screen
	fyne.DoAndWait(func() { wb.generate.start() })
	wb.wait()
	// the rate-distortion curves of the model shown, e8 at the slider's
	// rate, and a side-by-side generation (stories260K: the demos do not
	// generate text)
	fyne.DoAndWait(func() { wb.rd.start() })
	wb.wait()
	fyne.DoAndWait(func() { wb.rd.measureRate() })
	wb.wait()
	fyne.DoAndWait(func() { wb.rd.generate() })
	wb.wait()
	// a training run for the Trajectory screen, analysed without the demos
	dir := os.Getenv("NZ_TRAJ_DIR")
	if dir == "" {
		dir = "../shared/trajectories/tinygpt-fortunes"
	}
	var run []string
	for _, s := range trajTourSteps {
		if p := filepath.Join(dir, s+".bf16.safetensors"); fileExists(p) {
			run = append(run, p)
		}
	}
	// the Hub screen: a store of ../shared's hub of fine-tunes (NZ_HUB_DIR)
	// when it is there, else the open models in an in-memory store
	buildHub := func() {
		if loc, err := tourStore(); err == nil {
			fyne.DoAndWait(func() {
				wb.hub.loc.SetText(loc)
				wb.hub.openStore()
			})
			wb.wait()
			if wb.hub.hub != nil && wb.hub.hub.Source == loc {
				return
			}
		}
		fyne.DoAndWait(func() { wb.hub.run() })
		wb.wait()
	}
	if len(run) < 2 {
		buildHub()
		return nil
	}
	demos := len(wb.models)
	for _, p := range run {
		fyne.DoAndWait(func() { wb.open(p) })
		wb.wait()
	}
	fyne.DoAndWait(func() {
		for i, m := range wb.models {
			wb.traj.modelSel[m] = i >= demos
		}
		wb.traj.refreshModels()
		wb.traj.run(nil)
	})
	wb.wait()
	buildHub()
	fyne.DoAndWait(func() {
		for _, m := range wb.models {
			if m.Path == first {
				wb.setCurrent(m)
			}
		}
	})
	wb.wait()
	return nil
}

// tourTemp are the temporary directories the tour made (removed when the
// screenshots are taken).
var tourTemp []string

// tourStore makes a store, in a temporary directory, of the shared hub's
// stories260K models (base and fine-tunes, F32 and BF16, F32 first as
// nzip store add would take them) for the Hub screen.
func tourStore() (string, error) {
	dir := os.Getenv("NZ_HUB_DIR")
	if dir == "" {
		dir = "../shared/hub/stories260K"
	}
	vs := []string{"base", "ft-continued", "ft-fortunes-full", "ft-fortunes-lora", "ft-frozen-embed"}
	if !fileExists(filepath.Join(dir, vs[0], "model.f32.safetensors")) {
		return "", fmt.Errorf("%s: no hub", dir)
	}
	tmp, err := os.MkdirTemp("", "nz-tour-store-")
	if err != nil {
		return "", err
	}
	tourTemp = append(tourTemp, tmp)
	loc := filepath.Join(tmp, "hub")
	if err := store.Init(loc); err != nil {
		return "", err
	}
	st, err := store.Open(loc, store.Options{})
	if err != nil {
		return "", err
	}
	defer st.Close()
	for _, v := range vs {
		for _, f := range []string{"model.f32.safetensors", "model.bf16.safetensors"} {
			p := filepath.Join(dir, v, f)
			if !fileExists(p) {
				continue
			}
			m, err := core.OpenPath(p, nil)
			if err != nil {
				return "", err
			}
			var ins []store.Input
			for _, mf := range m.Files {
				ins = append(ins, store.Input{Name: mf.Name, R: mf.R, Size: mf.Size, Format: mf.Format, Segments: mf.Segments})
			}
			_, _, err = st.Add("stories260K/"+v+"/"+f, ins, store.AddOptions{Compare: true})
			m.Close()
			if err != nil {
				return "", err
			}
		}
	}
	return loc, nil
}

// shotName is a screen's name in its screenshot's file name: lower case,
// ASCII.
func shotName(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "–", "-")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// takeScreenshots visits every screen in the light and the dark theme and
// writes dir/THEME-N-SCREEN.png from the window's canvas.
func takeScreenshots(wb *workbench, dir, first string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	time.Sleep(time.Second) // the window is up
	if err := prepareTour(wb, first); err != nil {
		return err
	}
	for _, variant := range []string{"light", "dark"} {
		fyne.DoAndWait(func() { wb.setDark(variant == "dark") })
		for i, name := range screens {
			fyne.DoAndWait(func() { wb.selectTab(name) })
			wb.wait()
			time.Sleep(700 * time.Millisecond) // let the charts render
			path := filepath.Join(dir, fmt.Sprintf("%s-%d-%s.png", variant, i+1, shotName(name)))
			var err error
			fyne.DoAndWait(func() {
				// without ../shared's training run the Trajectory screen
				// shows its hints: its charts are not checked
				err = checkScreen(wb, name, name != "Trajectory" || wb.traj.ratio.plot != nil)
			})
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if err := capture(wb, path); err != nil {
				return err
			}
		}
	}
	return nil
}

// capture writes the window to path: with ImageMagick's import from the X
// server when it is there (what a person sees), else from Fyne's canvas.
func capture(wb *workbench, path string) error {
	if imp, err := exec.LookPath("import"); err == nil && os.Getenv("DISPLAY") != "" {
		out, err := exec.Command(imp, "-window", "root", "-crop", fmt.Sprintf("%dx%d+0+0", defaultWidth, defaultHeight), "+repage", path).CombinedOutput()
		if err != nil {
			return fmt.Errorf("import: %v: %s", err, out)
		}
		return nil
	}
	var err error
	fyne.DoAndWait(func() {
		img := wb.win.Canvas().Capture()
		var f *os.File
		f, err = os.Create(path)
		if err != nil {
			return
		}
		defer f.Close()
		err = png.Encode(f, img)
	})
	return err
}
