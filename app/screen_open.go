package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
	"neuralzip/assets"
)

// openScreen opens checkpoints: a file dialog, drag and drop, the recent
// files and the embedded demo models; it lists the open models.
type openScreen struct {
	wb       *workbench
	content  fyne.CanvasObject
	openBtn  *widget.Button
	demoBtns map[string]*widget.Button
	recent   *fyne.Container
	opened   *fyne.Container
	info     *widget.Label
	url      *widget.Entry // a model on a server (core.OpenURL)
	token    *widget.Entry // its bearer token (core.SetToken), hidden
	forget   *widget.Button
	urlBtn   *widget.Button
}

func newOpenScreen(wb *workbench) *openScreen {
	s := &openScreen{wb: wb, demoBtns: map[string]*widget.Button{}}
	s.openBtn = widget.NewButtonWithIcon("Open checkpoint…", theme.FolderOpenIcon(), func() { hostPickFiles(s) })
	s.openBtn.Importance = widget.HighImportance
	hint := widget.NewLabel("…or drop " + hostDropTarget + ". safetensors (also sharded), GGUF, PyTorch, ONNX, TFLite, TF.js, NumPy and rwkv.cpp files are read by their content; anything else opens as opaque bytes.")
	hint.Wrapping = fyne.TextWrapWord

	s.url = widget.NewEntry()
	s.url.SetPlaceHolder("http://127.0.0.1:8080/ORG/NAME")
	s.urlBtn = widget.NewButtonWithIcon("Open URL", theme.DownloadIcon(), s.openURL)
	s.url.OnSubmitted = func(string) { s.openURL() }
	s.token = newTokenEntry(s.openURL)
	s.forget = newForgetButton(s.token, func() string { return s.url.Text }, func(m string) { wb.setStatus("%s", m) })
	urlHint := widget.NewLabel("A model on nzip serve (or another server of the Hugging Face download API): the header is read first, each tensor when a screen needs it.")
	urlHint.Wrapping = fyne.TextWrapWord

	demos := container.NewVBox()
	for _, d := range assets.Models() {
		d := d
		b := widget.NewButtonWithIcon("Open", theme.DocumentIcon(), func() { wb.open(core.AssetPrefix + d.Name) })
		s.demoBtns[d.Name] = b
		title := widget.NewLabelWithStyle(d.Name, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		desc := widget.NewLabel(fmt.Sprintf("%s\n%s · %s", d.Description, d.License, d.Source))
		desc.Wrapping = fyne.TextWrapWord
		demos.Add(container.NewBorder(nil, nil, nil, container.NewCenter(b), container.NewVBox(title, desc)))
	}
	s.recent = container.NewVBox()
	s.opened = container.NewVBox()
	s.info = widget.NewLabel("")
	s.info.Wrapping = fyne.TextWrapWord

	left := container.NewVBox(
		heading("Open a checkpoint"), container.NewHBox(s.openBtn), hint,
		container.NewBorder(nil, nil, nil, s.urlBtn, s.url), tokenRow(s.token, s.forget), urlHint,
		widget.NewSeparator(), heading("Recent files"), s.recent,
		widget.NewSeparator(), heading("Demo models (embedded)"), demos,
	)
	right := container.NewVBox(heading("Open models"), s.opened, widget.NewSeparator(), heading("Current model"), s.info)
	split := container.NewHSplit(container.NewVScroll(container.NewPadded(left)), container.NewVScroll(container.NewPadded(right)))
	split.Offset = 0.5
	s.content = split
	s.refresh()
	wb.modelListeners = append(wb.modelListeners, s.refresh)
	return s
}

// openURL opens the model whose URL the entry holds.
func (s *openScreen) openURL() {
	u := strings.TrimSpace(s.url.Text)
	if !core.IsURL(u) {
		s.wb.showError(fmt.Errorf("%q is not an http:// or https:// URL of a model (http://HOST/ORG/NAME)", u))
		return
	}
	if err := setToken(u, s.token); err != nil {
		s.wb.showError(err)
		return
	}
	s.wb.open(u)
}

// newTokenEntry is an entry for the bearer token of a server (nzip serve
// -token-file), its text hidden; submitting it runs submit.
func newTokenEntry(submit func()) *widget.Entry {
	e := widget.NewPasswordEntry()
	e.SetPlaceHolder("if the server asks for one (nzip serve -token-file)")
	e.OnSubmitted = func(string) { submit() }
	return e
}

// tokenRow lays out a token entry with its label and its Forget button.
func tokenRow(e *widget.Entry, forget *widget.Button) fyne.CanvasObject {
	return container.NewBorder(nil, nil, widget.NewLabel("Bearer token"), forget, e)
}

// newForgetButton is a token entry's Forget button: it clears e and stops
// sending a token to the server of the URL that urlOf gives; say tells the
// user what happened.
func newForgetButton(e *widget.Entry, urlOf func() string, say func(string)) *widget.Button {
	return widget.NewButtonWithIcon("Forget", theme.ContentClearIcon(), func() { say(forgetToken(urlOf(), e)) })
}

// forgetToken clears e and forgets the token given for the server of URL
// u this session (core.SetToken with no token); it returns what to tell
// the user.
func forgetToken(u string, e *widget.Entry) string {
	e.SetText("")
	u = strings.TrimSpace(u)
	if !core.IsURL(u) {
		return "Token field cleared (no server URL given, so no token was forgotten)."
	}
	if err := core.SetToken(u, ""); err != nil {
		return "Token not forgotten: " + err.Error()
	}
	host := u
	if pu, err := url.Parse(u); err == nil {
		host = pu.Host
	}
	return "No bearer token is sent to " + host + " any more (this session)."
}

// setToken gives the token in e to the server of URL u for every request
// of this session (core.SetToken); an empty entry keeps a token given
// before for that server.
func setToken(u string, e *widget.Entry) error {
	if strings.TrimSpace(e.Text) == "" {
		return nil
	}
	return core.SetToken(u, e.Text)
}

func (s *openScreen) openDialog() {
	d := dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
		if err != nil || rc == nil {
			return
		}
		p := rc.URI().Path()
		rc.Close()
		s.wb.open(p)
	}, s.wb.win)
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

// refresh rebuilds the recent and open lists and the model summary.
func (s *openScreen) refresh() {
	wb := s.wb
	s.recent.RemoveAll()
	recent := wb.app.Preferences().StringList(prefRecent)
	if len(recent) == 0 {
		s.recent.Add(widget.NewLabel("None yet."))
	}
	for _, p := range recent {
		p := p
		b := widget.NewButtonWithIcon(p, theme.HistoryIcon(), func() { wb.open(p) })
		b.Alignment = widget.ButtonAlignLeading
		b.Importance = widget.LowImportance
		s.recent.Add(b)
	}
	s.opened.RemoveAll()
	if len(wb.models) == 0 {
		s.opened.Add(widget.NewLabel("None: open a file or a demo model."))
	}
	for _, m := range wb.models {
		m := m
		label := fmt.Sprintf("%s  (%s, %d tensors, %s)", m.Name, m.Format, len(m.Tensors), core.HumanBytes(m.Size))
		use := widget.NewButtonWithIcon(label, theme.NavigateNextIcon(), func() { wb.setCurrent(m) })
		use.Alignment = widget.ButtonAlignLeading
		if m == wb.current {
			use.Importance = widget.HighImportance
		} else {
			use.Importance = widget.LowImportance
		}
		closeB := widget.NewButtonWithIcon("", theme.WindowCloseIcon(), func() { wb.closeModel(m) })
		closeB.Importance = widget.LowImportance
		s.opened.Add(container.NewBorder(nil, nil, nil, closeB, use))
	}
	s.info.SetText(wb.modelSummary())
}

// modelSummary describes the current model.
func (wb *workbench) modelSummary() string {
	m := wb.current
	if m == nil {
		return "No model open."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nformat %s, %s in %d file(s)\n%d tensors, %d of them float\nopened in %s (headers only)\n",
		m.Path, m.Format, core.HumanBytes(m.Size), len(m.Files), len(m.Tensors), m.FloatCount(), wb.openTime.Round(time.Microsecond))
	if st := wb.currentStats(); st != nil {
		all := wb.all()
		if ls := wb.lazy[m]; ls != nil {
			all = ls.computed(all)
			fmt.Fprintf(&b, "a model on a server: statistics of the tensors the screens have read (%d of %d float tensors)\n", len(all), m.FloatCount())
		}
		if a, ok := st.Aggregate(all); ok {
			fmt.Fprintf(&b, "exponent entropy %.3f bits (%s, %d tensors)\norder-0 bound ratio %.4f\n", a.Float.ExpEntropy, a.DType, a.Tensors, st.FileBound(m))
		} else {
			b.WriteString("no float tensors to analyse\n")
		}
	} else {
		b.WriteString("statistics: computing…\n")
	}
	for _, f := range m.Files {
		fmt.Fprintf(&b, "  %s  %s  %s\n", f.Name, f.Format, core.HumanBytes(f.Size))
	}
	return b.String()
}

// open opens p (a path or demo:NAME) in the background: the tensor list
// appears as soon as the headers are read, the statistics follow.
func (wb *workbench) open(p string) {
	wb.openWith(p, true, func(warn func(string)) (*core.Model, error) { return core.Open(p, warn) })
}

// openWith opens the model called p with opener (files from memory in the
// browser); remember puts p on the recent list.
func (wb *workbench) openWith(p string, remember bool, opener func(warn func(string)) (*core.Model, error)) {
	for _, m := range wb.models {
		if m.Path == p {
			wb.setCurrent(m)
			return
		}
	}
	wb.setStatus("Opening %s…", p)
	wb.openStarted = time.Now()
	wb.go_(func() func() {
		t0 := time.Now()
		var warning string
		m, err := opener(func(s string) { warning = s })
		el := time.Since(t0)
		return func() {
			if err != nil {
				wb.showError(err)
				return
			}
			if remember {
				wb.app.Preferences().SetStringList(prefRecent, core.PushRecent(wb.app.Preferences().StringList(prefRecent), p))
			}
			wb.models = append(wb.models, m)
			wb.openTime = el
			hostReport("opened", m.Name)
			hostReport("open_ms", ms(el))
			hostReport("models", fmt.Sprint(len(wb.models)))
			wb.setCurrent(m)
			if warning != "" {
				wb.setStatus("Warning: %s", warning)
			}
		}
	})
}

// setCurrent makes m the current model and starts its statistics if they
// are missing.
func (wb *workbench) setCurrent(m *core.Model) {
	if wb.current != m {
		wb.selected = map[int]bool{}
		// the histogram's default: the largest float tensor (never a
		// one-value constant where the model has more)
		wb.focus = largestFloat(m)
	}
	wb.current = m
	wb.setStatus("%s: %d tensors, %s", m.Name, len(m.Tensors), core.HumanBytes(m.Size))
	if _, ok := wb.stats[m]; !ok {
		if core.IsURL(m.Path) {
			// a model on a server: statistics of the tensors the screens
			// show, read when they need them (the histogram's default
			// first), not the whole model
			wb.stats[m] = make(core.Stats, len(m.Tensors))
			wb.lazy[m] = &lazyStats{have: map[int]bool{}}
			if wb.focus >= 0 {
				wb.needStats(m, []int{wb.focus})
			}
		} else {
			wb.computeStats(m)
		}
	}
	wb.modelChanged()
	wb.selectionChanged()
}

// computeStats reads the model's tensors in the background, with the
// global progress bar and its cancel button.
func (wb *workbench) computeStats(m *core.Model) {
	ctx, gen := wb.global.start()
	prog := wb.global.progress(gen)
	wb.go_(func() func() {
		t0 := time.Now()
		st, err := core.ComputeStats(ctx, m, 0, func(done, total int64) {
			if total > 0 {
				prog(float64(done) / float64(total))
			}
		})
		el := time.Since(t0)
		return func() {
			cur := wb.global.done(gen)
			if err != nil {
				if cur {
					wb.setStatus("%s: statistics stopped: %v", m.Name, err)
				}
				return
			}
			wb.stats[m] = st
			hostReport("stats", m.Name)
			hostReport("stats_ms", ms(el))
			if wb.current == m {
				wb.setStatus("%s: statistics of %d tensors in %s", m.Name, len(m.Tensors), el.Round(time.Millisecond))
				wb.modelChanged()
				wb.selectionChanged()
			}
		}
	})
}

// closeModel forgets m.
func (wb *workbench) closeModel(m *core.Model) {
	for i, x := range wb.models {
		if x == m {
			wb.models = append(wb.models[:i], wb.models[i+1:]...)
			break
		}
	}
	delete(wb.stats, m)
	delete(wb.lazy, m)
	delete(wb.achieved, m)
	m.Close()
	if wb.current == m {
		wb.current = nil
		wb.global.stop()
		if len(wb.models) > 0 {
			wb.setCurrent(wb.models[len(wb.models)-1])
			return
		}
		wb.selected = map[int]bool{}
		wb.focus = -1
	}
	wb.modelChanged()
	wb.selectionChanged()
}

// largestFloat is the index of the largest float tensor of m (the first
// of equal ones), or -1.
func largestFloat(m *core.Model) int {
	big := -1
	for i := range m.Tensors {
		if m.Tensors[i].IsFloat() && (big < 0 || m.Tensors[i].Bytes > m.Tensors[big].Bytes) {
			big = i
		}
	}
	return big
}
