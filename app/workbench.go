package main

import (
	"context"
	"fmt"
	"image/color"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
)

const (
	defaultWidth  = 1320
	defaultHeight = 860
	prefRecent    = "recent"
)

// workbench is the application: its state (opened models, statistics,
// selection, setups, runs) and its screens. Its fields are touched only on
// Fyne's goroutine; background work reports back through fyne.Do.
type workbench struct {
	app fyne.App
	win fyne.Window

	models []*core.Model
	stats  map[*core.Model]core.Stats
	// lazy statistics of models read from a server (core.IsURL): the
	// tensors computed so far, and those the running job computes
	lazy    map[*core.Model]*lazyStats
	current *core.Model
	// selection of the current model's tensors, and the tensor last
	// tapped (the histogram's "tensor" scope); -1: none
	selected map[int]bool
	focus    int
	achieved map[*core.Model][]float64 // per-tensor archive bytes of the last nzip run
	openTime time.Duration             // time to open the current model (headers only)
	// when the latest open began (the browser's test hook reports the time
	// from there to the histogram)
	openStarted time.Time

	setups []core.NamedSetup
	runs   []core.RunResult

	dark bool
	wg   sync.WaitGroup // background work, for tests
	// inline runs background work on the calling goroutine (tests: fyne's
	// test driver runs fyne.Do callbacks on the calling goroutine, so
	// goroutines would touch widgets concurrently there)
	inline bool

	tabs    *container.AppTabs
	built   bool // the screens after Open (buildScreens)
	started bool // start has run
	status  *widget.Label
	global  *jobBar // statistics of the current model

	open_     *openScreen
	tensors   *tensorsScreen
	hist      *histScreen
	clusters  *clustersScreen
	setupsScr *setupsScreen
	run       *runScreen
	traj      *trajScreen
	generate  *generateScreen
	hub       *hubScreen
	rd        *rdScreen

	charts         []*chartView
	modelListeners []func() // called when the current model or its stats change
	selListeners   []func() // called when the selection or focus change
}

func newWorkbench(a fyne.App, w fyne.Window) *workbench {
	wb := &workbench{app: a, win: w, stats: map[*core.Model]core.Stats{}, lazy: map[*core.Model]*lazyStats{}, selected: map[int]bool{}, focus: -1,
		achieved: map[*core.Model][]float64{}}
	wb.dark = a.Settings().ThemeVariant() == theme.VariantDark
	wb.status = widget.NewLabel("No model open: pick a demo model or open a checkpoint.")
	wb.status.Truncation = fyne.TextTruncateEllipsis
	wb.global = newJobBar()
	wb.setups = []core.NamedSetup{core.Gaussian()} // built in: always offered

	wb.open_ = newOpenScreen(wb)
	items := []*container.TabItem{container.NewTabItemWithIcon("Open", theme.FolderOpenIcon(), wb.open_.content)}
	for _, t := range laterTabs {
		var icon fyne.Resource
		if t.icon != nil {
			icon = t.icon()
		}
		items = append(items, container.NewTabItemWithIcon(t.name, icon, container.NewStack()))
	}
	wb.tabs = container.NewAppTabs(items...)
	if !hostLazyScreens {
		wb.buildScreens()
	}
	wb.tabs.SetTabLocation(container.TabLocationLeading)
	wb.tabs.OnSelected = func(t *container.TabItem) {
		wb.buildScreens()
		hostReport("tab", t.Text)
		switch t.Text {
		case "Clusters":
			wb.clusters.refreshIfStale()
		case rdTab:
			wb.rd.refreshIfStale()
		}
	}
	themeBtn := widget.NewButtonWithIcon("", theme.ColorPaletteIcon(), func() { wb.setDark(!wb.dark) })
	statusBar := container.NewBorder(nil, nil, nil, container.NewHBox(wb.global.content, themeBtn), wb.status)
	w.SetContent(container.NewBorder(nil, container.NewVBox(widget.NewSeparator(), statusBar), nil, nil, wb.tabs))
	w.SetOnDropped(func(_ fyne.Position, uris []fyne.URI) {
		for _, u := range uris {
			if u.Scheme() == "file" {
				wb.open(u.Path())
			}
		}
	})
	return wb
}

// laterTabs are the screens after Open, built by buildScreens. Their
// icons are looked up when the tabs are made: a theme function called
// while package variables are initialised runs before any app is started,
// and Fyne logs an error for each ("Attempt to access current Fyne app
// when none is started").
var laterTabs = []struct {
	name string
	icon func() fyne.Resource
}{
	{"Tensors", theme.ListIcon}, {"Histograms", theme.InfoIcon}, {"Clusters", theme.GridIcon},
	{"Setups", theme.SettingsIcon}, {"Run", theme.MediaPlayIcon}, {"Trajectory", theme.HistoryIcon},
	{"Generate", theme.DocumentCreateIcon}, {"Hub", theme.StorageIcon},
	// the tenth tab has no icon: nine with icons fill the window's height
	// (a tenth with one went into the tab bar's overflow menu)
	{rdTab, nil},
}

// buildScreens builds the screens after Open, once. The desktop builds
// them at once; the browser (hostLazyScreens) after its first frame, or
// when one is needed first, so that the page shows the workbench sooner.
// Screens built late catch up with the current model and selection.
func (wb *workbench) buildScreens() {
	if wb.built {
		return
	}
	wb.built = true
	wb.tensors = newTensorsScreen(wb)
	wb.hist = newHistScreen(wb)
	wb.clusters = newClustersScreen(wb)
	wb.setupsScr = newSetupsScreen(wb)
	wb.run = newRunScreen(wb)
	wb.traj = newTrajScreen(wb)
	wb.generate = newGenerateScreen(wb)
	wb.hub = newHubScreen(wb)
	wb.rd = newRDScreen(wb)
	for i, c := range []fyne.CanvasObject{wb.tensors.content, wb.hist.content, wb.clusters.content, wb.setupsScr.content, wb.run.content, wb.traj.content, wb.generate.content, wb.hub.content, wb.rd.content} {
		wb.tabs.Items[i+1].Content = c
	}
	if hostLazyScreens {
		wb.tabs.Refresh()
		wb.modelChanged()
		wb.selectionChanged()
	}
	if wb.started {
		wb.run.probeBackends()
	}
}

// start begins the background work that updates screens of its own
// accord (the Run screen's backend probe), on screens built already or
// as they are built. main calls it as the window shows; tests once they
// have set inline, so that the work runs on their goroutine.
func (wb *workbench) start() {
	wb.started = true
	if wb.built {
		wb.run.probeBackends()
	}
}

// selectTab shows the screen called name.
func (wb *workbench) selectTab(name string) {
	for i, t := range wb.tabs.Items {
		if t.Text == name {
			wb.tabs.SelectIndex(i)
			return
		}
	}
}

// setDark switches between the light and the dark theme.
func (wb *workbench) setDark(dark bool) {
	wb.dark = dark
	v := theme.VariantLight
	if dark {
		v = theme.VariantDark
	}
	wb.app.Settings().SetTheme(variantTheme{theme.DefaultTheme(), v})
	for _, cv := range wb.charts {
		cv.Restyle()
	}
	for _, f := range wb.modelListeners {
		f()
	}
}

// variantTheme is the default theme fixed to one variant.
type variantTheme struct {
	fyne.Theme
	v fyne.ThemeVariant
}

func (t variantTheme) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return t.Theme.Color(n, t.v)
}

// wait blocks until all background work has finished (tests).
func (wb *workbench) wait() { wb.wg.Wait() }

// go_ runs work in the background; apply, if it returns one, runs on Fyne's
// goroutine afterwards.
func (wb *workbench) go_(work func() func()) {
	if wb.inline {
		if apply := work(); apply != nil {
			apply()
		}
		return
	}
	wb.wg.Add(1)
	go func() {
		defer wb.wg.Done()
		apply := work()
		if apply != nil {
			fyne.DoAndWait(apply)
		}
	}()
}

// ms formats a duration in milliseconds for hostReport.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func (wb *workbench) setStatus(format string, args ...any) {
	wb.status.SetText(fmt.Sprintf(format, args...))
}

func (wb *workbench) showError(err error) {
	wb.setStatus("Error: %v", err)
	hostReport("error", err.Error())
	if wb.win != nil {
		showErr(err, wb.win)
	}
}

// currentStats returns the statistics of the current model, nil while
// they are being computed.
func (wb *workbench) currentStats() core.Stats {
	if wb.current == nil {
		return nil
	}
	return wb.stats[wb.current]
}

// selection returns the selected tensor indices in order.
func (wb *workbench) selection() []int {
	if wb.current == nil {
		return nil
	}
	var out []int
	for i := range wb.current.Tensors {
		if wb.selected[i] {
			out = append(out, i)
		}
	}
	return out
}

// all returns every tensor index of the current model.
func (wb *workbench) all() []int {
	if wb.current == nil {
		return nil
	}
	out := make([]int, len(wb.current.Tensors))
	for i := range out {
		out[i] = i
	}
	return out
}

func (wb *workbench) modelChanged() {
	for _, f := range wb.modelListeners {
		f()
	}
}

func (wb *workbench) selectionChanged() {
	for _, f := range wb.selListeners {
		f()
	}
}

// jobBar is a progress bar with a cancel button for one kind of
// background work; starting new work cancels the previous one.
type jobBar struct {
	bar     *widget.ProgressBar
	inf     *widget.ProgressBarInfinite
	cancelB *widget.Button
	content *fyne.Container
	cancel  context.CancelFunc
	gen     int
	last    time.Time
}

func newJobBar() *jobBar {
	j := &jobBar{bar: widget.NewProgressBar(), inf: widget.NewProgressBarInfinite()}
	j.cancelB = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { j.stop() })
	j.inf.Stop()
	j.content = container.NewHBox(container.NewGridWrap(fyne.NewSize(220, j.bar.MinSize().Height), container.NewStack(j.bar, j.inf)), j.cancelB)
	j.content.Hide()
	return j
}

// start cancels the previous job and returns a context for the new one and
// its generation number.
func (j *jobBar) start() (context.Context, int) {
	j.stop()
	ctx, cancel := context.WithCancel(context.Background())
	j.cancel = cancel
	j.gen++
	j.bar.SetValue(0)
	j.bar.Show()
	j.inf.Hide()
	j.content.Show()
	return ctx, j.gen
}

// progress returns a callback for background goroutines that moves the bar
// (f < 0: indeterminate), at most every hostProgressEvery.
func (j *jobBar) progress(gen int) func(f float64) {
	var mu sync.Mutex
	var last time.Time
	var lastF float64 = -2
	return func(f float64) {
		mu.Lock()
		now := time.Now()
		if now.Sub(last) < hostProgressEvery && f >= 0 && f < 1 && lastF >= 0 {
			mu.Unlock()
			return
		}
		last, lastF = now, f
		defer mu.Unlock() // one update at a time, in order
		fyne.Do(func() {
			if j.gen != gen {
				return
			}
			if f < 0 {
				j.bar.Hide()
				j.inf.Show()
				j.inf.Start()
			} else {
				j.inf.Stop()
				j.inf.Hide()
				j.bar.Show()
				j.bar.SetValue(f)
			}
		})
	}
}

// done hides the bar if gen is still the current job.
func (j *jobBar) done(gen int) bool {
	if j.gen != gen {
		return false
	}
	j.inf.Stop()
	j.content.Hide()
	if j.cancel != nil {
		j.cancel()
		j.cancel = nil
	}
	return true
}

func (j *jobBar) stop() {
	if j.cancel != nil {
		j.cancel()
		j.cancel = nil
	}
	j.gen++
	j.inf.Stop()
	j.content.Hide()
}
