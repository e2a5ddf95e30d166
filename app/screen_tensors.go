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

// Columns of the tensor table.
const (
	colSel = iota
	colName
	colDType
	colShape
	colBytes
	colEntropy
	colBound
	colZeros
	colOptimum
	colAchieved
	numCols
)

var colTitles = [numCols]string{"", "Name", "DType", "Shape", "Bytes", "Exp. entropy", "Bound", "Zeros", "Optimum", "Achieved"}
var colWidths = [numCols]float32{34, 330, 80, 140, 100, 110, 100, 70, 100, 100}

// sortable columns, as offered by the sort picker
var sortNames = []string{"File order", "Name", "DType", "Bytes", "Exp. entropy", "Bound", "Zeros", "Optimum", "Achieved"}
var sortCols = []int{-1, colName, colDType, colBytes, colEntropy, colBound, colZeros, colOptimum, colAchieved}

// tensorRow is a row of the table: a layer heading (tensor -1) or a tensor.
type tensorRow struct {
	layer  string
	tensor int
	count  int // tensors of the layer (headings)
}

// tensorsScreen is the sortable, filterable table of the current model's
// tensors, optionally grouped by layer. Tapping a tensor toggles it in the
// selection (and makes it the histogram's tensor); tapping a layer heading
// selects or clears all its shown tensors.
type tensorsScreen struct {
	wb      *workbench
	content fyne.CanvasObject
	filter  *widget.Entry
	sortSel *widget.Select
	desc    *widget.Check
	group   *widget.Check
	table   *widget.Table
	summary *widget.Label
	clearB  *widget.Button
	rows    []tensorRow
	sortCol int
	prog    *programsPanel // the focused tensor's program (screen_programs.go)
}

func newTensorsScreen(wb *workbench) *tensorsScreen {
	s := &tensorsScreen{wb: wb, sortCol: -1}
	s.filter = widget.NewEntry()
	s.filter.SetPlaceHolder("Filter by name, layer or dtype")
	s.filter.OnChanged = func(string) { s.rebuild() }
	s.sortSel = widget.NewSelect(sortNames, func(v string) {
		for i, n := range sortNames {
			if n == v {
				s.sortCol = sortCols[i]
			}
		}
		s.rebuild()
	})
	s.sortSel.SetSelected("File order")
	s.desc = widget.NewCheck("Descending", func(bool) { s.rebuild() })
	s.group = widget.NewCheck("Group by layer", func(bool) { s.rebuild() })
	s.group.SetChecked(true)
	selShown := widget.NewButtonWithIcon("Select shown", theme.CheckButtonCheckedIcon(), func() { s.selectShown(true) })
	s.clearB = widget.NewButtonWithIcon("Clear selection", theme.CheckButtonIcon(), func() { s.selectShown(false) })
	s.summary = widget.NewLabel("")

	s.table = widget.NewTableWithHeaders(
		func() (int, int) { return len(s.rows), numCols },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		s.updateCell)
	s.table.ShowHeaderColumn = false
	s.table.CreateHeader = func() fyne.CanvasObject {
		b := widget.NewButton("", nil)
		b.Importance = widget.LowImportance
		b.Alignment = widget.ButtonAlignLeading
		return b
	}
	s.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		b := o.(*widget.Button)
		t := colTitles[id.Col]
		if id.Col == s.sortCol {
			if s.desc.Checked {
				t += glyphs(" ▼")
			} else {
				t += glyphs(" ▲")
			}
		}
		b.SetText(t)
		col := id.Col
		b.OnTapped = func() { s.sortBy(col) }
	}
	for c, w := range colWidths {
		s.table.SetColumnWidth(c, w)
	}
	s.table.OnSelected = func(id widget.TableCellID) {
		s.table.UnselectAll()
		if id.Row >= 0 && id.Row < len(s.rows) {
			s.tap(id.Row)
		}
	}
	controls := container.NewBorder(nil, nil, nil,
		container.NewHBox(widget.NewLabel("Sort"), s.sortSel, s.desc, s.group, selShown, s.clearB), s.filter)
	s.prog = newProgramsPanel(wb)
	split := container.NewVSplit(container.NewBorder(container.NewPadded(controls), container.NewPadded(s.summary), nil, nil, s.table), s.prog.content)
	split.Offset = 0.55
	s.content = split
	wb.modelListeners = append(wb.modelListeners, s.rebuild)
	wb.selListeners = append(wb.selListeners, s.refreshSelection)
	s.rebuild()
	return s
}

// sortBy sorts by column col; the same column again flips the direction.
func (s *tensorsScreen) sortBy(col int) {
	for i, c := range sortCols {
		if c == col {
			if s.sortCol == col {
				s.desc.SetChecked(!s.desc.Checked)
				return
			}
			s.sortSel.SetSelected(sortNames[i])
			return
		}
	}
}

// matches reports whether tensor i passes the filter.
func (s *tensorsScreen) matches(i int) bool {
	f := strings.ToLower(strings.TrimSpace(s.filter.Text))
	if f == "" {
		return true
	}
	t := &s.wb.current.Tensors[i]
	return strings.Contains(strings.ToLower(t.Name), f) || strings.Contains(strings.ToLower(t.Layer), f) || strings.EqualFold(t.DTypeName(), f)
}

// sortKey is the value tensor i sorts by in column col.
func (s *tensorsScreen) sortKey(i, col int) float64 {
	wb := s.wb
	t := &wb.current.Tensors[i]
	st := wb.currentStats()
	switch col {
	case colBytes:
		return float64(t.Bytes)
	case colEntropy:
		if st != nil && st[i].OK {
			return st[i].Float.ExpEntropy
		}
		return -1
	case colBound:
		if st != nil && st[i].OK {
			return st[i].Float.Bound()
		}
		return -1
	case colZeros:
		if st != nil && st[i].SparseOK {
			return st[i].Sparse.Sparsity()
		}
		return -1
	case colOptimum:
		if st != nil && st[i].SparseOK {
			return st[i].Sparse.OptimumColumns()
		}
		return -1
	case colAchieved:
		if a := wb.achieved[wb.current]; a != nil {
			return a[i]
		}
		return -1
	}
	return 0
}

// rebuild recomputes the rows: filter, sort, group.
func (s *tensorsScreen) rebuild() {
	wb := s.wb
	if s.table == nil || s.desc == nil || s.group == nil {
		return // still being built
	}
	s.rows = nil
	if wb.current != nil {
		m := wb.current
		col, desc := s.sortCol, s.desc.Checked
		less := func(a, b int) bool {
			switch col {
			case -1:
				return false
			case colName:
				if desc {
					return m.Tensors[a].Name > m.Tensors[b].Name
				}
				return m.Tensors[a].Name < m.Tensors[b].Name
			case colDType:
				if desc {
					return m.Tensors[a].DTypeName() > m.Tensors[b].DTypeName()
				}
				return m.Tensors[a].DTypeName() < m.Tensors[b].DTypeName()
			}
			ka, kb := s.sortKey(a, col), s.sortKey(b, col)
			if desc {
				return ka > kb
			}
			return ka < kb
		}
		idx := core.SortedIndex(m.Tensors, s.matches, less)
		if s.group.Checked {
			byLayer := map[string][]int{}
			for _, i := range idx {
				byLayer[m.Tensors[i].Layer] = append(byLayer[m.Tensors[i].Layer], i)
			}
			// layers in the order of their first tensor in the sorted list
			seen := map[string]bool{}
			for _, i := range idx {
				l := m.Tensors[i].Layer
				if seen[l] {
					continue
				}
				seen[l] = true
				s.rows = append(s.rows, tensorRow{layer: l, tensor: -1, count: len(byLayer[l])})
				for _, j := range byLayer[l] {
					s.rows = append(s.rows, tensorRow{layer: l, tensor: j})
				}
			}
		} else {
			for _, i := range idx {
				s.rows = append(s.rows, tensorRow{layer: m.Tensors[i].Layer, tensor: i})
			}
		}
	}
	s.table.Refresh()
	s.refreshSelection()
}

func (s *tensorsScreen) refreshSelection() {
	wb := s.wb
	if wb.current == nil {
		s.summary.SetText("No model open.")
		s.table.Refresh()
		return
	}
	shown := 0
	for _, r := range s.rows {
		if r.tensor >= 0 {
			shown++
		}
	}
	sel := wb.selection()
	var selBytes int64
	for _, i := range sel {
		selBytes += wb.current.Tensors[i].Bytes
	}
	stats := "statistics: computing…"
	if ls := wb.lazy[wb.current]; ls != nil {
		stats = fmt.Sprintf("statistics of %d of %d float tensors (a model on a server: each is read when a screen needs it)", len(ls.have), wb.current.FloatCount())
	} else if wb.currentStats() != nil {
		stats = "statistics ready"
	}
	s.summary.SetText(fmt.Sprintf("%s — %d of %d tensors shown, %d selected (%s); %s. Tap a tensor to (un)select it, a layer to select its tensors.",
		wb.current.Name, shown, len(wb.current.Tensors), len(sel), core.HumanBytes(selBytes), stats))
	s.table.Refresh()
}

// tap handles a tap on row r.
func (s *tensorsScreen) tap(r int) {
	wb := s.wb
	row := s.rows[r]
	if row.tensor >= 0 {
		if wb.selected[row.tensor] {
			delete(wb.selected, row.tensor)
		} else {
			wb.selected[row.tensor] = true
		}
		wb.focus = row.tensor
	} else {
		// a layer: select its shown tensors, or clear them when all are selected
		var members []int
		all := true
		for _, x := range s.rows {
			if x.tensor >= 0 && x.layer == row.layer {
				members = append(members, x.tensor)
				all = all && wb.selected[x.tensor]
			}
		}
		for _, i := range members {
			if all {
				delete(wb.selected, i)
			} else {
				wb.selected[i] = true
			}
		}
		if len(members) > 0 {
			wb.focus = members[0]
		}
	}
	wb.selectionChanged()
}

// selectShown selects (or clears) every shown tensor.
func (s *tensorsScreen) selectShown(on bool) {
	wb := s.wb
	if wb.current == nil {
		return
	}
	if !on {
		wb.selected = map[int]bool{}
	} else {
		for _, r := range s.rows {
			if r.tensor >= 0 {
				wb.selected[r.tensor] = true
			}
		}
	}
	wb.selectionChanged()
}

// cellText is the text of a cell (tests read it too).
func (s *tensorsScreen) cellText(r, c int) string {
	wb := s.wb
	row := s.rows[r]
	m := wb.current
	st := wb.currentStats()
	ach := wb.achieved[m]
	if row.tensor < 0 {
		// a layer heading: totals
		var bytes int64
		var bound, got, opt float64
		var n, zeros, vals int64
		haveOpt := true
		var hx float64
		haveAll := true
		for _, x := range s.rows {
			if x.tensor < 0 || x.layer != row.layer {
				continue
			}
			t := &m.Tensors[x.tensor]
			bytes += t.Bytes
			if st != nil && st[x.tensor].OK {
				bound += st[x.tensor].Float.Bound()
				hx += st[x.tensor].Float.ExpEntropy * float64(st[x.tensor].Float.Values)
				n += st[x.tensor].Float.Values
			}
			if st != nil && st[x.tensor].SparseOK {
				sp := st[x.tensor].Sparse
				opt += sp.OptimumColumns()
				zeros += sp.Zeros
				vals += sp.Values
			} else {
				haveOpt = false
			}
			if ach != nil {
				got += ach[x.tensor]
			} else {
				haveAll = false
			}
		}
		switch c {
		case colSel:
			return glyphs("▾")
		case colName:
			return fmt.Sprintf("%s  (%d)", row.layer, row.count)
		case colBytes:
			return core.HumanBytes(bytes)
		case colEntropy:
			if n > 0 {
				return fmt.Sprintf("%.3f", hx/float64(n))
			}
		case colBound:
			if n > 0 {
				return core.HumanBytes(int64(bound + 0.5))
			}
		case colZeros:
			if vals > 0 {
				return fmt.Sprintf("%.1f%%", 100*float64(zeros)/float64(vals))
			}
		case colOptimum:
			if haveOpt && vals > 0 {
				return core.HumanBytes(int64(opt + 0.5))
			}
		case colAchieved:
			if haveAll && ach != nil {
				return core.HumanBytes(int64(got + 0.5))
			}
		}
		return ""
	}
	i := row.tensor
	t := &m.Tensors[i]
	switch c {
	case colSel:
		if wb.selected[i] {
			return glyphs("●")
		}
		return glyphs("○")
	case colName:
		if s.group.Checked {
			return "    " + t.Name
		}
		return t.Name
	case colDType:
		return t.DTypeName()
	case colShape:
		return t.ShapeString()
	case colBytes:
		return core.HumanBytes(t.Bytes)
	case colEntropy:
		if st == nil {
			if t.IsFloat() {
				return "…"
			}
			return "–"
		}
		if st[i].OK {
			return fmt.Sprintf("%.3f", st[i].Float.ExpEntropy)
		}
		return "–"
	case colBound:
		if st != nil && st[i].OK {
			return core.HumanBytes(int64(st[i].Float.Bound() + 0.5))
		}
		return ""
	case colZeros:
		if st != nil && st[i].SparseOK {
			return fmt.Sprintf("%.1f%%", 100*st[i].Sparse.Sparsity())
		}
		return ""
	case colOptimum:
		if st != nil && st[i].SparseOK {
			return core.HumanBytes(int64(st[i].Sparse.OptimumColumns() + 0.5))
		}
		return ""
	case colAchieved:
		if ach != nil {
			return core.HumanBytes(int64(ach[i] + 0.5))
		}
		return ""
	}
	return ""
}

func (s *tensorsScreen) updateCell(id widget.TableCellID, o fyne.CanvasObject) {
	l := o.(*widget.Label)
	if id.Row >= len(s.rows) {
		l.SetText("")
		return
	}
	heading := s.rows[id.Row].tensor < 0
	l.TextStyle = fyne.TextStyle{Bold: heading}
	l.Alignment = fyne.TextAlignLeading
	if id.Col >= colBytes {
		l.Alignment = fyne.TextAlignTrailing
	}
	l.Importance = widget.MediumImportance
	if id.Col == colSel && !heading && s.wb.selected[s.rows[id.Row].tensor] {
		l.Importance = widget.HighImportance
	}
	l.SetText(s.cellText(id.Row, id.Col))
}
