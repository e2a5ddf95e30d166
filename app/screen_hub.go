package main

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
)

// hubScreen adds the open models (in the browser: the models dropped on
// the page) to an in-memory store, as `nzip store add` would, and shows
// what each costs on its own and in the store, a models × models matrix of
// shared and near-identical tensor bytes, and the families the store found.
type hubScreen struct {
	wb       *workbench
	content  fyne.CanvasObject
	build    *widget.Button
	jobs     *jobBar
	status   *widget.Label
	models   *widget.Table
	matrix   *widget.Table
	families *fyne.Container
	hub      *core.Hub
}

var hubCols = []string{"Model", "Raw", "Own nzip archive", "Adds in the store", "Base(s) (by number)", "Family"}

func newHubScreen(wb *workbench) *hubScreen {
	s := &hubScreen{wb: wb, jobs: newJobBar()}
	s.build = widget.NewButtonWithIcon("Build hub", theme.MediaPlayIcon(), s.run)
	s.build.Importance = widget.HighImportance
	s.status = widget.NewLabel("Open two or more models (fine-tunes, casts, re-exports of one base, and others), then Build hub: they are added, in the order opened, to an in-memory store.")
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
	for c, w := range []float32{420, 90, 130, 150, 150, 70} {
		s.models.SetColumnWidth(c, w)
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

	top := container.NewVBox(heading("Hub: the open models in one store"), container.NewHBox(s.build, s.jobs.content), s.status)
	matrix := container.NewBorder(widget.NewLabel("Row model's tensor bytes shared with (s, bit-identical) and near (n, cast or coded against) the column model"), nil, nil, nil, s.matrix)
	fams := container.NewBorder(heading("Families (from the store's bases)"), nil, nil, nil, container.NewVScroll(s.families))
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
		t = core.HumanBytes(m.Alone)
	case 3:
		t = core.HumanBytes(m.Added)
		if m.Alone > 0 {
			t += fmt.Sprintf(" (%.0f %%)", 100*float64(m.Added)/float64(m.Alone))
		}
	case 4:
		t = s.baseNumbers(m)
	case 5:
		t = fmt.Sprint(m.Family + 1)
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
	if id.Row == id.Col {
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
			s.show(h)
		}
	})
}

// show fills the tables and the families of a built hub.
func (s *hubScreen) show(h *core.Hub) {
	s.hub = h
	msg := fmt.Sprintf("%d models, %s: their own nzip archives take %s, the store %s", len(h.Models), core.HumanBytes(h.Raw), core.HumanBytes(h.Alone), core.HumanBytes(h.Stored))
	if h.Alone > 0 {
		msg += fmt.Sprintf(" (%.3f× of the archives)", float64(h.Stored)/float64(h.Alone))
	}
	s.status.SetText(msg + ".")
	s.families.RemoveAll()
	for f, members := range h.Families {
		what := "1 model"
		if len(members) > 1 {
			what = fmt.Sprintf("%d models", len(members))
		}
		s.families.Add(widget.NewLabelWithStyle(fmt.Sprintf("Family %d (%s)", f+1, what), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		for _, i := range members {
			m := h.Models[i]
			t := fmt.Sprintf("   %d. %s", i+1, m.Name)
			if len(m.Bases) > 0 {
				t += " <- " + s.baseNumbers(m)
			}
			l := widget.NewLabel(t)
			l.Truncation = fyne.TextTruncateEllipsis // long paths must not widen the window
			s.families.Add(l)
		}
	}
	for c := range h.Models {
		s.matrix.SetColumnWidth(c, 120)
	}
	s.models.Refresh()
	s.matrix.Refresh()
}
