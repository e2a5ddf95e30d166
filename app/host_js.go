//go:build js

package main

// The browser host (GOOS=js): Fyne's file dialogs do nothing under
// WebAssembly, so files come from the page's <input type=file> (the Open
// button clicks it), from drops anywhere on the page and from ?model=URL
// (same origin; a TF.js model's weight files are fetched next to it);
// ?demo=NAME opens an embedded demo model. Exports become downloads.
//
// Test hook: window.nz.state is an object of strings that the workbench
// fills as things happen (see hostReport: "ready_ms", "opened", "open_ms",
// "stats", "hist", "open_to_hist_ms", "clusters", "tab", "setup", "run_*",
// "bench_*", "download", "error"); the same values are mirrored as data-*
// attributes of the hidden element #nz-state. window.nz.pos(key) returns
// the centre of a widget in page pixels ({x, y, visible}; entries add text
// and focused) for real mouse
// clicks, with key "open", "run", "archive", "setup-build", "setup-save"
// or "demo:NAME"; window.nz.selectTab(name) shows a screen;
// window.nz.hubSelect(row) selects a model of the Hub screen's table
// (keys "hub-loc", "hub-open", "hub-get", "hub-use": its store entry and buttons);
// window.nz.selectBackend(name) chooses the Run screen's backend ("CPU",
// "cpu", "webgpu"; "backends" reports which are available, "run_backend",
// "run_device*" what a run used); window.nz.bench(n) times the codec alone. wasm/test/workbench.test.mjs
// drives the page with them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"syscall/js"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
	"neuralzip/checkpoint"
	"neuralzip/codec"
)

const hostBrowser = true

// hostLazyScreens: the page shows the Open screen first and builds the
// others right after its first frame (building them all up front took
// about 2 s of the first frame's time).
const hostLazyScreens = true

// In the browser nothing opens by itself (?demo= and ?model= do).
const hostDefaultOpen = ""

const hostDropTarget = "files anywhere on the page (several at once: a TF.js model.json with its weight files, a sharded index with its shards)"

// hubStorePlaceholder is what the Hub screen's store entry takes: the
// page cannot read a directory, but can read a server that lets it
// (nzip serve -cors ORIGIN STORE).
const hubStorePlaceholder = "a store served by nzip serve -cors ORIGIN STORE: http://HOST:PORT"

const hostRunNote = "In the browser the codec runs on a single thread (WebAssembly without threads): expect lower speeds than nzip on the desktop."

// jsInitMs is when package main's variables were initialised (every
// imported package's init has run by then), in ms since navigation.
var jsInitMs = js.Global().Get("performance").Call("now").Float()

var (
	jsState   js.Value // window.nz.state
	jsStateEl js.Value // #nz-state
	jsInput   js.Value // the file input
	runCount  int
)

func hostStart(wb *workbench) {
	go func() {
		// after the first frame (the event loop runs by then)
		time.Sleep(300 * time.Millisecond)
		fyne.Do(wb.buildScreens)
	}()
	g := js.Global()
	doc := g.Get("document")
	nz := g.Get("nz")
	if nz.IsUndefined() || nz.IsNull() {
		nz = g.Get("Object").New()
		g.Set("nz", nz)
	}
	jsState = g.Get("Object").New()
	nz.Set("state", jsState)
	jsStateEl = doc.Call("getElementById", "nz-state")
	if jsStateEl.IsNull() {
		jsStateEl = doc.Call("createElement", "output")
		jsStateEl.Set("id", "nz-state")
		jsStateEl.Set("hidden", true)
		doc.Get("documentElement").Call("appendChild", jsStateEl)
	}
	hostReport("init_ms", fmt.Sprintf("%.0f", jsInitMs))
	hostReport("start_ms", fmt.Sprintf("%.0f", g.Get("performance").Call("now").Float()))

	jsInput = doc.Call("getElementById", "nz-file")
	if jsInput.IsNull() {
		jsInput = doc.Call("createElement", "input")
		jsInput.Set("type", "file")
		jsInput.Set("id", "nz-file")
		jsInput.Set("multiple", true)
		jsInput.Get("style").Set("display", "none")
		doc.Get("documentElement").Call("appendChild", jsInput)
	}
	jsInput.Call("addEventListener", "change", js.FuncOf(func(this js.Value, _ []js.Value) any {
		files := jsInput.Get("files")
		list := fileList(files)
		jsInput.Set("value", "") // the same file again fires change again
		go readFiles(wb, list)
		return nil
	}))
	doc.Call("addEventListener", "dragover", js.FuncOf(func(_ js.Value, a []js.Value) any {
		a[0].Call("preventDefault")
		if dt := a[0].Get("dataTransfer"); !dt.IsNull() && !dt.IsUndefined() {
			dt.Set("dropEffect", "copy")
		}
		return nil
	}))
	doc.Call("addEventListener", "drop", js.FuncOf(func(_ js.Value, a []js.Value) any {
		a[0].Call("preventDefault")
		dt := a[0].Get("dataTransfer")
		if dt.IsNull() || dt.IsUndefined() {
			return nil
		}
		list := fileList(dt.Get("files"))
		go readFiles(wb, list)
		return nil
	}))

	nz.Set("pos", js.FuncOf(func(_ js.Value, a []js.Value) any {
		if len(a) < 1 {
			return nil
		}
		return widgetPos(wb, a[0].String())
	}))
	nz.Set("bench", js.FuncOf(func(_ js.Value, a []js.Value) any {
		n := 3
		if len(a) > 0 && a[0].Type() == js.TypeNumber {
			n = a[0].Int()
		}
		m := wb.current
		go bench(m, n)
		return nil
	}))
	nz.Set("selectTab", js.FuncOf(func(_ js.Value, a []js.Value) any {
		if len(a) < 1 {
			return nil
		}
		name := a[0].String()
		fyne.Do(func() { wb.selectTab(name) })
		return nil
	}))
	nz.Set("selectBackend", js.FuncOf(func(_ js.Value, a []js.Value) any {
		if len(a) < 1 {
			return nil
		}
		name := a[0].String()
		fyne.Do(func() {
			wb.buildScreens()
			if !wb.run.selectBackend(name) {
				hostReport("error", "no backend "+name)
			}
		})
		return nil
	}))
	nz.Set("hubSelect", js.FuncOf(func(_ js.Value, a []js.Value) any {
		if len(a) < 1 {
			return nil
		}
		row := a[0].Int()
		fyne.Do(func() {
			wb.buildScreens()
			wb.hub.models.Select(widget.TableCellID{Row: row, Col: 0})
		})
		return nil
	}))

	q, _ := url.ParseQuery(strings.TrimPrefix(g.Get("location").Get("search").String(), "?"))
	go func() {
		fyne.Do(func() {
			hostReport("ready_ms", fmt.Sprintf("%.0f", g.Get("performance").Call("now").Float()))
			if f := g.Get("nzLoaded"); f.Type() == js.TypeFunction {
				f.Invoke()
			}
			if d := q.Get("demo"); d != "" {
				wb.open(core.AssetPrefix + d)
			}
		})
		if u := q.Get("model"); u != "" {
			fetchModel(wb, u)
		}
	}()
}

// pickFolder: the browser has no folders to write into (a store's model is
// opened in the workbench instead).
func pickFolder(wb *workbench, _ func(string)) {
	wb.showError(errors.New("restoring a model to files needs the desktop workbench (nzip store get); here, open it in the workbench"))
}

func hostPickFiles(*openScreen) {
	if !jsInput.IsUndefined() {
		jsInput.Call("click")
	}
}

func hostDownload(name string, b []byte) error {
	g := js.Global()
	u8 := g.Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(u8, b)
	opts := g.Get("Object").New()
	opts.Set("type", "application/octet-stream")
	blob := g.Get("Blob").New([]any{u8}, opts)
	href := g.Get("URL").Call("createObjectURL", blob)
	doc := g.Get("document")
	a := doc.Call("createElement", "a")
	a.Set("href", href)
	a.Set("download", name)
	a.Get("style").Set("display", "none")
	doc.Get("body").Call("appendChild", a)
	a.Call("click")
	a.Call("remove")
	var revoke js.Func
	revoke = js.FuncOf(func(js.Value, []js.Value) any {
		g.Get("URL").Call("revokeObjectURL", href)
		revoke.Release()
		return nil
	})
	g.Call("setTimeout", revoke, 60000)
	hostReport("download", fmt.Sprintf("%s %d", name, len(b)))
	return nil
}

func hostReport(key, value string) {
	if jsState.IsUndefined() {
		return
	}
	jsState.Set(key, value)
	jsStateEl.Call("setAttribute", "data-"+strings.ReplaceAll(key, "_", "-"), value)
}

func hostReportRun(r core.RunResult) {
	verdict := "bit-exact"
	switch {
	case r.Error != "":
		verdict = "error"
	case !r.RoundtripOK:
		verdict = "differs"
	}
	hostReport("run_model", r.Model)
	hostReport("run_codec", r.Codec)
	hostReport("run_backend", r.Backend)
	hostReport("run_device", r.Device)
	hostReport("run_device_gbs", fmt.Sprintf("%.3f", r.DeviceGBs))
	hostReport("run_device_total_gbs", fmt.Sprintf("%.3f", r.DeviceTotalGBs))
	hostReport("run_device_bytes", fmt.Sprint(r.DeviceBytes))
	hostReport("run_resident_bytes", fmt.Sprint(r.ResidentBytes))
	hostReport("run_device_saved", fmt.Sprint(r.DeviceSaved))
	hostReport("run_threads", fmt.Sprint(r.Threads))
	hostReport("run_bytes", fmt.Sprint(r.OriginalBytes))
	hostReport("run_compressed", fmt.Sprint(r.Compressed))
	hostReport("run_ratio", fmt.Sprintf("%.4f", r.Ratio))
	hostReport("run_compress_mbs", fmt.Sprintf("%.1f", r.CompressMBs))
	hostReport("run_decompress_mbs", fmt.Sprintf("%.1f", r.DecompressMBs))
	hostReport("run_sha256", r.SHA256)
	hostReport("run_sha256_decoded", r.SHA256Decoded)
	hostReport("run_error", r.Error)
	hostReport("run_roundtrip", verdict)
	runCount++
	hostReport("run_count", fmt.Sprint(runCount))
}

// widgetPos is the centre of the widget called key in page pixels.
func widgetPos(wb *workbench, key string) any {
	wb.buildScreens()
	var obj fyne.CanvasObject
	switch {
	case key == "open":
		obj = wb.open_.openBtn
	case key == "run":
		obj = wb.run.runBtn
	case key == "generate":
		obj = wb.generate.runBtn
	case key == "rd-generate":
		obj = wb.rd.genBtn
	case key == "url":
		obj = wb.open_.url
	case key == "url-open":
		obj = wb.open_.urlBtn
	case key == "hub-loc":
		obj = wb.hub.loc
	case key == "hub-open":
		obj = wb.hub.openBtn
	case key == "hub-use":
		obj = wb.hub.useBtn
	case key == "hub-get":
		obj = wb.hub.getBtn
	case key == "archive":
		obj = wb.run.archBtn
	case key == "setup-build":
		obj = wb.setupsScr.buildBtn
	case key == "setup-save":
		obj = wb.setupsScr.saveBtn
	case strings.HasPrefix(key, "demo:"):
		if b, ok := wb.open_.demoBtns[strings.TrimPrefix(key, "demo:")]; ok {
			obj = b
		}
	}
	if obj == nil {
		return nil
	}
	// Fyne units to CSS pixels: the canvas scale over the device pixel ratio
	ratio := wb.win.Canvas().Scale() / float32(js.Global().Get("devicePixelRatio").Float())
	p := fyne.CurrentApp().Driver().AbsolutePositionForObject(obj)
	s := obj.Size()
	out := js.Global().Get("Object").New()
	out.Set("x", (p.X+s.Width/2)*ratio)
	out.Set("y", (p.Y+s.Height/2)*ratio)
	out.Set("visible", obj.Visible() && s.Width > 0)
	if e, ok := obj.(*widget.Entry); ok {
		// entries: what they hold and whether keys go to them, so a test
		// types only once focus arrived and sees every key landed
		out.Set("text", e.Text)
		out.Set("focused", wb.win.Canvas().Focused() == e)
	}
	return out
}

// jsFile is a File of the page, not yet read.
type jsFile struct {
	name string
	v    js.Value
}

func fileList(files js.Value) []jsFile {
	if files.IsNull() || files.IsUndefined() {
		return nil
	}
	var out []jsFile
	for i := 0; i < files.Get("length").Int(); i++ {
		f := files.Index(i)
		name := f.Get("webkitRelativePath").String()
		if f.Get("webkitRelativePath").IsUndefined() || name == "" {
			name = f.Get("name").String()
		}
		out = append(out, jsFile{name: name, v: f})
	}
	return out
}

// await waits for a promise (off the JS event loop: call it from a
// goroutine).
func await(p js.Value) (js.Value, error) {
	ok := make(chan js.Value, 1)
	bad := make(chan js.Value, 1)
	then := js.FuncOf(func(_ js.Value, a []js.Value) any { ok <- arg0(a); return nil })
	catch := js.FuncOf(func(_ js.Value, a []js.Value) any { bad <- arg0(a); return nil })
	defer then.Release()
	defer catch.Release()
	p.Call("then", then, catch)
	select {
	case v := <-ok:
		return v, nil
	case e := <-bad:
		return js.Undefined(), errors.New(e.Call("toString").String())
	}
}

func arg0(a []js.Value) js.Value {
	if len(a) == 0 {
		return js.Undefined()
	}
	return a[0]
}

// bytesOf copies an ArrayBuffer into Go memory.
func bytesOf(buf js.Value) []byte {
	u8 := js.Global().Get("Uint8Array").New(buf)
	b := make([]byte, u8.Get("length").Int())
	js.CopyBytesToGo(b, u8)
	return b
}

// readFiles reads the page's files into memory and opens them: .nzsetup
// files as setups, the rest as models (files that others name as their
// companions open with them).
func readFiles(wb *workbench, files []jsFile) {
	if len(files) == 0 {
		return
	}
	fyne.Do(func() { wb.setStatus("Reading %d file(s)…", len(files)) })
	mem := core.MemFS{}
	var setups []core.NamedSetup
	for _, f := range files {
		buf, err := await(f.v.Call("arrayBuffer"))
		if err != nil {
			fyne.Do(func() { wb.showError(fmt.Errorf("%s: %v", f.name, err)) })
			return
		}
		b := bytesOf(buf)
		if strings.HasSuffix(f.name, ".nzsetup") {
			s, err := codec.ParseSetup(b)
			if err != nil {
				fyne.Do(func() { wb.showError(fmt.Errorf("%s: %w", f.name, err)) })
				continue
			}
			setups = append(setups, core.NamedSetup{Name: strings.TrimSuffix(path.Base(f.name), ".nzsetup"), Setup: s})
			continue
		}
		mem[strings.TrimPrefix(path.Clean("/"+f.name), "/")] = b
	}
	hostReport("uploaded", fmt.Sprint(len(files)))
	openMem(wb, "local:", mem, setups)
}

// openMem opens the models among mem's files (their paths: prefix+name)
// and adds the setups.
func openMem(wb *workbench, prefix string, mem core.MemFS, setups []core.NamedSetup) {
	mains := mem.MainFiles()
	fyne.Do(func() {
		if len(setups) > 0 {
			wb.buildScreens()
		}
		for _, ns := range setups {
			wb.setupsScr.addSetup(ns)
			wb.setStatus("Loaded setup %s", ns.Name)
		}
		for _, name := range mains {
			// a file of the same name that is already open is shown again
			// (close it first to open a changed one)
			p := prefix + name
			wb.openWith(p, false, func(warn func(string)) (*core.Model, error) {
				m, err := core.OpenFS(mem, name, warn)
				if err == nil {
					m.Path = p
				}
				return m, err
			})
		}
	})
}

// fetchModel loads ?model=URL (same origin only) with the files it names
// (TF.js weight shards, the shards of an index, ONNX external data).
func fetchModel(wb *workbench, raw string) {
	fail := func(err error) { fyne.Do(func() { wb.showError(fmt.Errorf("?model=%s: %w", raw, err)) }) }
	loc := js.Global().Get("location")
	base, err := url.Parse(loc.Get("href").String())
	if err != nil {
		fail(err)
		return
	}
	u, err := base.Parse(raw)
	if err != nil {
		fail(err)
		return
	}
	if u.Scheme != base.Scheme || u.Host != base.Host {
		fail(errors.New("only models from this page's own origin can be loaded"))
		return
	}
	fyne.Do(func() { wb.setStatus("Downloading %s…", u.Path) })
	get := func(u *url.URL) ([]byte, error) {
		resp, err := await(js.Global().Call("fetch", u.String()))
		if err != nil {
			return nil, err
		}
		if !resp.Get("ok").Bool() {
			return nil, fmt.Errorf("%s: HTTP %d", u.Path, resp.Get("status").Int())
		}
		buf, err := await(resp.Call("arrayBuffer"))
		if err != nil {
			return nil, err
		}
		return bytesOf(buf), nil
	}
	main, err := get(u)
	if err != nil {
		fail(err)
		return
	}
	name := path.Base(u.Path)
	mem := core.MemFS{name: main}
	if l, err := checkpoint.Open(bytesReader(main), int64(len(main))); err == nil {
		for _, c := range l.Companions {
			if !checkpoint.ValidCompanionName(c.Name) {
				continue
			}
			cu, err := u.Parse(c.Name)
			if err != nil {
				fail(err)
				return
			}
			b, err := get(cu)
			if err != nil {
				fail(err)
				return
			}
			mem[c.Name] = b
		}
	}
	where := *u
	where.RawQuery, where.Fragment = "", ""
	openMem(wb, strings.TrimSuffix(where.String(), name), mem, nil)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// glyphSubst replaces the symbols that Fyne's bundled font lacks (a
// browser offers Fyne no system fonts to fall back on).
var glyphSubst = strings.NewReplacer("✓", "OK:", "✗", "FAILED:", "→", "->", "▲", "^", "▼", "v", "▾", "v", "●", "[x]", "○", "[ ]",
	"├─", "+-", "└─", "`-", "│", "|", "←", "<-")

func glyphs(s string) string { return glyphSubst.Replace(s) }

// bench runs nzip n times on m as the Run screen does but without progress
// reports (window.nz.bench(n); results in the bench_* state, best of n):
// the codec's speed in this browser without the UI's share of the time.
func bench(m *core.Model, n int) {
	if m == nil {
		hostReport("bench_error", "no model open")
		return
	}
	src, segs, starts, err := m.ReadAll()
	if err != nil {
		hostReport("bench_error", err.Error())
		return
	}
	var c, d float64
	for i := 0; i < n; i++ {
		r := core.Run(context.Background(), m, src, segs, starts, core.RunSpec{Codec: core.CodecNZip, Threads: 1}, nil)
		if r.Error != "" || !r.RoundtripOK {
			hostReport("bench_error", "roundtrip failed: "+r.Error)
			return
		}
		c, d = max(c, r.CompressMBs), max(d, r.DecompressMBs)
	}
	hostReport("bench_model", m.Name)
	hostReport("bench_compress_mbs", fmt.Sprintf("%.1f", c))
	hostReport("bench_decompress_mbs", fmt.Sprintf("%.1f", d))
	hostReport("bench_runs", fmt.Sprint(n))
}

// hostRasterScale is the charts' raster scaling: the web driver has no "fastest" (it logs an error and uses smooth).
const hostRasterScale = canvas.ImageScaleSmooth

// hostProgressEvery is the shortest time between two progress bar updates:
// in the browser every redraw takes CPU time from the codec (one thread,
// and without a GPU WebGL renders on the CPU too).
const hostProgressEvery = 250 * time.Millisecond
