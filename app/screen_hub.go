package main

import (
	"fmt"
	"path"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
)

// hubScreen shows a store: one made with `nzip store` (a directory or
// s3://, opened read-only, or the URL of an nzip serve of one, listed page
// by page as the server sends it), or the open models (in the browser: the models
// dropped on the page) added to an in-memory store as `nzip store add`
// would. It lists what each model costs on its own and in the store, its
// bases and chain depth, a models × models matrix of shared and
// near-identical tensor bytes, and the families as trees of bases; a model
// of an opened store can be restored to files or opened in the other
// screens.
type hubScreen struct {
	wb       *workbench
	content  fyne.CanvasObject
	build    *widget.Button
	loc      *widget.Entry
	token    *widget.Entry // the bearer token of a served store (core.SetToken), hidden
	forget   *widget.Button
	openBtn  *widget.Button
	getBtn   *widget.Button
	useBtn   *widget.Button
	jobs     *jobBar
	status   *widget.Label
	models   *widget.Table
	matrix   *widget.Table
	families *fyne.Container
	hub      *core.Hub
	store    *core.HubStore // the opened store (nil: none, or the in-memory hub)
	sel      int            // the selected model row (-1: none)
}

var hubCols = []string{"Model", "Raw", "Own nzip archive", "Adds in the store", "Base(s) (by number)", "Family", "Chain"}

func newHubScreen(wb *workbench) *hubScreen {
	s := &hubScreen{wb: wb, jobs: newJobBar(), sel: -1}
	s.build = widget.NewButtonWithIcon("Build hub", theme.MediaPlayIcon(), s.run)
	s.build.Importance = widget.HighImportance
	s.loc = widget.NewEntry()
	s.loc.SetPlaceHolder(hubStorePlaceholder)
	s.loc.OnSubmitted = func(string) { s.openStore() }
	s.token = newTokenEntry(s.openStore)
	s.forget = newForgetButton(s.token, func() string { return s.loc.Text }, func(m string) { s.status.SetText(m) })
	s.openBtn = widget.NewButtonWithIcon("Open store", theme.FolderOpenIcon(), s.openStore)
	s.getBtn = widget.NewButtonWithIcon("Get…", theme.DownloadIcon(), s.getModel)
	s.useBtn = widget.NewButtonWithIcon("Open", theme.DocumentIcon(), s.useModel)
	s.getBtn.Disable()
	s.useBtn.Disable()
	s.status = widget.NewLabel("Open a store made with nzip store (or served by nzip serve STORE), or open two or more models (fine-tunes, casts, re-exports of one base, and others) and build a hub of them: they are added, in the order opened, to an in-memory store.")
	s.status.Wrapping = fyne.TextWrapWord

	s.models = widget.NewTableWithHeaders(
		func() (int, int) {
			if s.hub == nil {
				return 0, len(hubCols)
			}
			return len(s.hub.Models), len(hubCols)
		},
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		s.modelCell)
	s.models.ShowHeaderColumn = false
	s.models.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Col >= 0 && id.Col < len(hubCols) {
			o.(*widget.Label).SetText(hubCols[id.Col])
		}
	}
	for c, w := range []float32{380, 90, 130, 150, 150, 70, 60} {
		s.models.SetColumnWidth(c, w)
	}
	s.models.OnSelected = func(id widget.TableCellID) {
		s.sel = id.Row
		s.updateButtons()
	}

	s.matrix = widget.NewTableWithHeaders(
		func() (int, int) {
			if s.hub == nil {
				return 0, 0
			}
			return len(s.hub.Models), len(s.hub.Models)
		},
		func() fyne.CanvasObject { return widget.NewLabel("") },
		s.matrixCell)
	s.matrix.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		switch {
		case id.Row < 0 && id.Col >= 0:
			l.SetText(fmt.Sprint(id.Col + 1))
		case id.Col < 0 && id.Row >= 0:
			l.SetText(fmt.Sprint(id.Row + 1))
		default:
			l.SetText("")
		}
	}
	s.matrix.SetColumnWidth(-1, 40)
	s.families = container.NewVBox()

	storeRow := container.NewBorder(nil, nil, nil, s.openBtn, s.loc)
	top := container.NewVBox(heading("Hub: models in one store"), storeRow, tokenRow(s.token, s.forget),
		container.NewHBox(s.build, s.getBtn, s.useBtn, s.jobs.content), s.status)
	matrix := container.NewBorder(widget.NewLabel("Row model's tensor bytes shared with (s, bit-identical) and near (n, cast or coded against) the column model"), nil, nil, nil, s.matrix)
	fams := container.NewBorder(heading("Families: trees of bases (depth: the longest chain a get decodes)"), nil, nil, nil, container.NewVScroll(s.families))
	lower := container.NewHSplit(matrix, fams)
	lower.Offset = 0.65
	split := container.NewVSplit(s.models, lower)
	split.Offset = 0.4
	s.content = container.NewPadded(container.NewBorder(top, nil, nil, nil, split))
	return s
}

func (s *hubScreen) modelCell(id widget.TableCellID, o fyne.CanvasObject) {
	l := o.(*widget.Label)
	if s.hub == nil || id.Row >= len(s.hub.Models) {
		l.SetText("")
		return
	}
	m := s.hub.Models[id.Row]
	var t string
	switch id.Col {
	case 0:
		t = fmt.Sprintf("%d. %s", id.Row+1, m.Name)
	case 1:
		t = core.HumanBytes(m.Raw)
	case 2:
		t = "-" // not measured (nzip store add without -compare)
		if m.Alone > 0 {
			t = core.HumanBytes(m.Alone)
		}
	case 3:
		t = core.HumanBytes(m.Added)
		if m.Alone > 0 {
			t += fmt.Sprintf(" (%.0f %%)", 100*float64(m.Added)/float64(m.Alone))
		}
	case 4:
		t = s.baseNumbers(m)
	case 5:
		t = fmt.Sprint(m.Family + 1)
	case 6:
		t = fmt.Sprint(m.Depth)
	}
	l.SetText(t)
}

func (s *hubScreen) matrixCell(id widget.TableCellID, o fyne.CanvasObject) {
	l := o.(*widget.Label)
	h := s.hub
	if h == nil || id.Row >= len(h.Models) || id.Col >= len(h.Models) {
		l.SetText("")
		return
	}
	if id.Row == id.Col || h.Shared == nil {
		l.SetText("-")
		return
	}
	l.SetText(fmt.Sprintf("s %.2f n %.2f", h.SharedFrac(id.Row, id.Col), h.NearFrac(id.Row, id.Col)))
}

// baseNumbers lists m's bases by their numbers in the table ("-": none).
func (s *hubScreen) baseNumbers(m core.HubModel) string {
	var n []string
	for _, b := range m.Bases {
		for j, o := range s.hub.Models {
			if o.Name == b {
				n = append(n, fmt.Sprint(j+1))
			}
		}
	}
	if len(n) == 0 {
		return "-"
	}
	return strings.Join(n, ", ")
}

// run builds the hub of the open models in the background.
func (s *hubScreen) run() {
	wb := s.wb
	models := append([]*core.Model(nil), wb.models...)
	if len(models) < 2 {
		s.status.SetText("Open at least two models.")
		return
	}
	ctx, gen := s.jobs.start()
	s.jobs.progress(gen)(-1)
	s.status.SetText(fmt.Sprintf("Adding %d models to an in-memory store…", len(models)))
	wb.go_(func() func() {
		h, err := core.BuildHub(ctx, models)
		return func() {
			if !s.jobs.done(gen) {
				return
			}
			if err != nil {
				s.status.SetText("Hub stopped: " + err.Error())
				return
			}
			s.setStore(nil)
			s.show(h)
		}
	})
}

// openStore opens the store the entry names, in the background.
func (s *hubScreen) openStore() {
	loc := strings.TrimSpace(s.loc.Text)
	if loc == "" {
		s.status.SetText("Type a store's location: " + hubStorePlaceholder + ".")
		return
	}
	if core.IsURL(loc) {
		if err := setToken(loc, s.token); err != nil {
			s.status.SetText("Store not opened: " + err.Error())
			return
		}
	}
	ctx, gen := s.jobs.start()
	progress := s.jobs.progress(gen)
	progress(-1)
	s.status.SetText("Reading the store " + loc + "…")
	// a served store arrives page by page: each is listed as it comes
	t0 := time.Now()
	first := true
	page := func(h *core.Hub, total int) {
		progress(float64(len(h.Models)) / float64(total))
		fyne.Do(func() {
			if s.jobs.gen != gen {
				return
			}
			if first {
				s.setStore(nil)
				first = false
				hostReport("hub_first_ms", ms(time.Since(t0)))
				hostReport("hub_first_models", fmt.Sprint(len(h.Models)))
			}
			s.show(h)
			s.status.SetText(fmt.Sprintf("Reading the store %s: %d of %d models listed…", loc, len(h.Models), total))
		})
	}
	s.wb.go_(func() func() {
		h, hs, err := core.OpenHubStorePages(ctx, loc, page)
		return func() {
			if !s.jobs.done(gen) {
				if hs != nil {
					hs.Close()
				}
				return
			}
			if err != nil {
				s.status.SetText("Store not opened: " + err.Error())
				hostReport("hub_error", err.Error())
				return
			}
			s.setStore(hs)
			s.show(h)
			hostReport("hub_ms", ms(time.Since(t0)))
			hostReport("hub_families", fmt.Sprint(len(h.Families)))
			hostReport("hub_matrix", fmt.Sprint(h.Shared != nil))
			hostReport("hub_models", fmt.Sprint(len(h.Models)))
		}
	})
}

// setStore replaces the opened store (closing the previous one).
func (s *hubScreen) setStore(hs *core.HubStore) {
	if s.store != nil {
		s.store.Close()
	}
	s.store = hs
	s.sel = -1
	s.models.UnselectAll()
	s.updateButtons()
}

func (s *hubScreen) updateButtons() {
	if s.store != nil && s.hub != nil && s.sel >= 0 && s.sel < len(s.hub.Models) {
		s.getBtn.Enable()
		s.useBtn.Enable()
	} else {
		s.getBtn.Disable()
		s.useBtn.Disable()
	}
}

// selectedModel is the name of the selected model of the opened store.
func (s *hubScreen) selectedModel() (string, bool) {
	if s.store == nil || s.hub == nil || s.sel < 0 || s.sel >= len(s.hub.Models) {
		return "", false
	}
	return s.hub.Models[s.sel].Name, true
}

// useModel opens the selected stored model in the other screens: its
// files are read by ranges from the store, as the screens need them.
func (s *hubScreen) useModel() {
	name, ok := s.selectedModel()
	if !ok {
		return
	}
	hs := s.store
	s.wb.openWith("store:"+hs.Loc+"#"+name, false, func(warn func(string)) (*core.Model, error) { return hs.Open(name, warn) })
}

// getModel restores the selected stored model's files into a folder the
// user picks (desktop) .
func (s *hubScreen) getModel() {
	name, ok := s.selectedModel()
	if !ok {
		return
	}
	hs := s.store
	if hostBrowser && hs.Served() {
		s.downloadModel(hs, name)
		return
	}
	pickFolder(s.wb, func(dir string) {
		s.status.SetText(fmt.Sprintf("Restoring %s into %s…", name, dir))
		s.wb.go_(func() func() {
			err := hs.Get(name, dir, false)
			return func() {
				if err != nil {
					s.status.SetText("Get failed: " + err.Error())
					return
				}
				s.status.SetText(fmt.Sprintf("%s restored into %s (every unit checked against its SHA-256).", name, dir))
			}
		})
	})
}

// downloadModel saves a served model's files as the browser's downloads:
// each read from the server and checked against its SHA-256 first.
func (s *hubScreen) downloadModel(hs *core.HubStore, name string) {
	s.status.SetText(fmt.Sprintf("Downloading %s…", name))
	s.wb.go_(func() func() {
		type file struct {
			name string
			data []byte
		}
		var files []file
		err := hs.ReadFiles(name, func(f string, data []byte) error {
			files = append(files, file{path.Base(f), data})
			return nil
		})
		return func() {
			for _, f := range files {
				if err == nil {
					err = hostDownload(f.name, f.data)
				}
			}
			if err != nil {
				s.status.SetText("Get failed: " + err.Error())
				return
			}
			s.status.SetText(fmt.Sprintf("%s: %d file(s) downloaded (each checked against its SHA-256).", name, len(files)))
		}
	})
}

// show fills the tables and the families of a built hub.
func (s *hubScreen) show(h *core.Hub) {
	s.hub = h
	msg := fmt.Sprintf("%d models, %s: their own nzip archives take %s, the store %s", len(h.Models), core.HumanBytes(h.Raw), core.HumanBytes(h.Alone), core.HumanBytes(h.Stored))
	if h.Alone > 0 {
		msg += fmt.Sprintf(" (%.3f× of the archives)", float64(h.Stored)/float64(h.Alone))
	} else { // a store whose models were not all added with -compare
		msg = fmt.Sprintf("%d models, %s: the store %s (own archives not measured: nzip store add -compare)", len(h.Models), core.HumanBytes(h.Raw), core.HumanBytes(h.Stored))
	}
	if h.Source != "" {
		msg = "Store " + h.Source + ": " + msg
	}
	if h.Shared == nil {
		msg += fmt.Sprintf(". The shared-bytes matrix is shown for stores of up to %d models", core.HubMatrixMax)
	}
	s.status.SetText(msg + ".")
	s.families.RemoveAll()
	for f, members := range h.Families {
		what := "1 model"
		if len(members) > 1 {
			what = fmt.Sprintf("%d models", len(members))
		}
		s.families.Add(widget.NewLabelWithStyle(fmt.Sprintf("Family %d (%s)", f+1, what), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		for _, line := range familyTree(h, members) {
			l := widget.NewLabel(glyphs(line))
			l.Truncation = fyne.TextTruncateEllipsis // long paths must not widen the window
			s.families.Add(l)
		}
	}
	if h.Shared != nil {
		for c := range h.Models {
			s.matrix.SetColumnWidth(c, 120)
		}
	}
	s.updateButtons()
	s.models.Refresh()
	s.matrix.Refresh()
}

// familyTree draws a family as a tree of bases: each model under its first
// base in the family (the one its deltas and casts were coded against), in
// add order, with its chain depth; other bases are named after an arrow.
func familyTree(h *core.Hub, members []int) []string {
	in := map[int]bool{}
	byName := map[string]int{}
	for _, i := range members {
		in[i] = true
		byName[h.Models[i].Name] = i
	}
	parent := map[int]int{}
	kids := map[int][]int{}
	var roots []int
	for _, i := range members {
		p := -1
		for _, b := range h.Models[i].Bases {
			if j, ok := byName[b]; ok && in[j] && j != i {
				p = j
				break
			}
		}
		parent[i] = p
		if p < 0 {
			roots = append(roots, i)
		} else {
			kids[p] = append(kids[p], i)
		}
	}
	var lines []string
	seen := map[int]bool{}
	var walk func(i int, prefix string, last, top bool)
	walk = func(i int, prefix string, last, top bool) {
		if seen[i] {
			return
		}
		seen[i] = true
		m := h.Models[i]
		branch, next := "", prefix
		if !top {
			if last {
				branch, next = prefix+"└─ ", prefix+"    "
			} else {
				branch, next = prefix+"├─ ", prefix+"│   "
			}
		}
		line := fmt.Sprintf("%s%d. %s  (depth %d)", branch, i+1, m.Name, m.Depth)
		if len(m.Bases) > 1 {
			var more []string
			for _, b := range m.Bases {
				if j, ok := byName[b]; ok && j != parent[i] {
					more = append(more, fmt.Sprint(j+1))
				}
			}
			if len(more) > 0 {
				line += "  also ← " + strings.Join(more, ", ")
			}
		}
		lines = append(lines, line)
		for k, c := range kids[i] {
			walk(c, next, k == len(kids[i])-1, false)
		}
	}
	for _, r := range roots {
		walk(r, "", true, true)
	}
	for _, i := range members { // a cycle of bases (never made by a store): listed flat
		if !seen[i] {
			walk(i, "", true, true)
		}
	}
	return lines
}
