package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
	"neuralzip/codec"
)

// programsPanel is the Tensors screen's program view (issue 48): the
// focused tensor's program as a tree with each node's bytes and bits per
// value, the programs the codec can write for it with their size and
// speed (each coded and decoded back), and actions that choose one for
// the tensor or its cluster and save the choices into a setup.
type programsPanel struct {
	wb      *workbench
	content fyne.CanvasObject
	title   *widget.Label
	setup   *widget.Select
	chunk   *widget.Select
	tree    *widget.Tree
	alts    *widget.Table
	useOne  *widget.Button
	useAll  *widget.Button
	saveB   *widget.Button
	clearB  *widget.Button
	status  *widget.Label
	jobs    *jobBar

	tensor  int // the tensor shown (-1: none)
	model   *core.Model
	list    []core.Alternative
	pick    int // the alternative whose tree is shown and that the actions take
	root    *core.ProgramNode
	chosen  map[string]codec.Program // the user's choices, by tensor name
	setupOf string                   // the setup the alternatives were measured under
}

// noSetup is the setup picker's entry for coding without one;
// defaultChunk the chunk picker's for the setup's chunk size, or the
// codec's default.
const (
	noSetup      = "(none)"
	defaultChunk = "default"
)

// chunkValues is the chunk size picked (0: the setup's, or the codec's
// default).
func (p *programsPanel) chunkValues() int {
	for _, c := range core.ChunkChoices {
		if core.ChunkLabel(c) == p.chunk.Selected {
			return c
		}
	}
	return 0
}

// altCols are the alternatives table's columns.
var altCols = []string{"", "Program", "Bytes", "Bits/value", "Comp. MB/s", "Decomp. MB/s", "Round trip"}
var altWidths = []float32{34, 100, 80, 85, 95, 105, 100}

func newProgramsPanel(wb *workbench) *programsPanel {
	p := &programsPanel{wb: wb, tensor: -1, pick: -1, chosen: map[string]codec.Program{}, jobs: newJobBar()}
	p.title = widget.NewLabel("")
	p.title.Truncation = fyne.TextTruncateEllipsis
	p.title.TextStyle = fyne.TextStyle{Bold: true}
	p.setup = widget.NewSelect([]string{noSetup}, nil)
	p.setup.SetSelected(noSetup)
	chunks := []string{defaultChunk}
	for _, c := range core.ChunkChoices {
		chunks = append(chunks, core.ChunkLabel(c))
	}
	p.chunk = widget.NewSelect(chunks, nil)
	p.chunk.SetSelected(defaultChunk)
	p.tree = widget.NewTree(p.childIDs, p.isBranch,
		func(bool) fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TreeNodeID, _ bool, o fyne.CanvasObject) { o.(*widget.Label).SetText(p.nodeText(id)) })
	p.alts = widget.NewTableWithHeaders(
		func() (int, int) { return len(p.list), len(altCols) },
		func() fyne.CanvasObject { return widget.NewLabel("") },
		func(id widget.TableCellID, o fyne.CanvasObject) {
			l := o.(*widget.Label)
			l.Alignment = fyne.TextAlignLeading
			if id.Col >= 2 {
				l.Alignment = fyne.TextAlignTrailing
			}
			l.TextStyle = fyne.TextStyle{Bold: id.Row == p.pick}
			l.SetText(p.altText(id.Row, id.Col))
		})
	p.alts.ShowHeaderColumn = false
	p.alts.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	p.alts.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Col >= 0 && id.Col < len(altCols) {
			o.(*widget.Label).SetText(altCols[id.Col])
		}
	}
	for c, w := range altWidths {
		p.alts.SetColumnWidth(c, w)
	}
	p.alts.OnSelected = func(id widget.TableCellID) {
		p.alts.UnselectAll()
		if id.Row >= 0 && id.Row < len(p.list) {
			p.show(id.Row)
		}
	}
	p.useOne = widget.NewButtonWithIcon("Use for this tensor", theme.ConfirmIcon(), func() { p.use(false) })
	p.useAll = widget.NewButtonWithIcon("Use for its cluster", theme.ContentCopyIcon(), func() { p.use(true) })
	p.saveB = widget.NewButtonWithIcon("Save setup…", theme.DocumentSaveIcon(), p.save)
	p.clearB = widget.NewButtonWithIcon("Clear choices", theme.ContentClearIcon(), func() {
		p.chosen = map[string]codec.Program{}
		p.compute()
	})
	p.status = widget.NewLabel("")
	p.status.Truncation = fyne.TextTruncateEllipsis
	top := container.NewBorder(nil, nil, nil, container.NewHBox(widget.NewLabel("Setup"), p.setup, widget.NewLabel("Values per block"), p.chunk, p.jobs.content), p.title)
	actions := container.NewHBox(p.useOne, p.useAll, p.saveB, p.clearB)
	right := container.NewBorder(nil, container.NewVBox(actions, p.status), nil, nil, p.alts)
	split := container.NewHSplit(p.tree, right)
	split.Offset = 0.45
	p.content = container.NewBorder(container.NewVBox(widget.NewSeparator(), top), nil, nil, nil, split)
	p.setup.OnChanged = func(string) { p.compute() }
	p.chunk.OnChanged = func(string) { p.compute() }
	wb.selListeners = append(wb.selListeners, p.focusChanged)
	wb.modelListeners = append(wb.modelListeners, p.focusChanged)
	p.refreshButtons()
	return p
}

// refreshSetups updates the setup picker after setups change.
func (p *programsPanel) refreshSetups() {
	names := []string{noSetup}
	for _, ns := range p.wb.setups {
		names = append(names, ns.Name)
	}
	p.setup.Options = names
	p.setup.Refresh()
}

// base is the setup picked (nil: none).
func (p *programsPanel) base() *codec.Setup {
	for _, ns := range p.wb.setups {
		if ns.Name == p.setup.Selected {
			return ns.Setup
		}
	}
	return nil
}

// focusChanged recomputes when the focused tensor or the model changed.
func (p *programsPanel) focusChanged() {
	wb := p.wb
	if wb.current == p.model && wb.focus == p.tensor {
		return
	}
	p.compute()
}

// compute codes the focused tensor with each program (in the
// background) and shows the results.
func (p *programsPanel) compute() {
	wb := p.wb
	p.refreshSetups()
	p.model, p.tensor = wb.current, wb.focus
	p.list, p.root, p.pick = nil, nil, -1
	m, i := p.model, p.tensor
	if m == nil || i < 0 || i >= len(m.Tensors) {
		p.jobs.stop()
		p.title.SetText("Program: tap a tensor to see how it is coded and what other programs would cost.")
		p.refresh()
		return
	}
	t := &m.Tensors[i]
	p.title.SetText(fmt.Sprintf("Program of %s (%s %s, %s)", t.Name, t.DTypeName(), t.ShapeString(), core.HumanBytes(t.Bytes)))
	settings := core.ProgramSettings{Setup: p.base(), Chunk: p.chunkValues(), Programs: p.chosenCopy()}
	p.setupOf = p.setup.Selected
	p.status.SetText("Coding the tensor with each program…")
	p.refresh()
	ctx, gen := p.jobs.start()
	prog := p.jobs.progress(gen)
	wb.go_(func() func() {
		list, err := m.Alternatives(ctx, i, settings, func(done, total int) { prog(float64(done) / float64(total)) })
		return func() {
			if !p.jobs.done(gen) {
				return
			}
			if err != nil {
				if err != core.ErrCancelled {
					p.status.SetText("Error: " + err.Error())
				}
				return
			}
			p.list = list
			for k := range list {
				if list[k].Chosen {
					p.pick = k
				}
			}
			p.show(p.pick)
		}
	})
}

func (p *programsPanel) chosenCopy() map[string]codec.Program {
	c := make(map[string]codec.Program, len(p.chosen))
	for k, v := range p.chosen {
		c[k] = v
	}
	return c
}

// show shows alternative k's tree and says what it costs.
func (p *programsPanel) show(k int) {
	p.pick, p.root = k, nil
	if k >= 0 && k < len(p.list) {
		a := &p.list[k]
		p.root = a.Tree
		p.status.SetText(p.summary(a))
	}
	p.refresh()
	if p.root != nil {
		p.tree.OpenAllBranches()
	}
}

// summary is the status line of alternative a.
func (p *programsPanel) summary(a *core.Alternative) string {
	if a.Err != nil {
		return fmt.Sprintf("%v: %v", a.Program, a.Err)
	}
	var best *core.Alternative
	for k := range p.list {
		if b := &p.list[k]; b.Err == nil && (best == nil || b.Bytes < best.Bytes) {
			best = b
		}
	}
	s := fmt.Sprintf("%v (%s): %s", a.Program, a.Program.Describe(), core.HumanBytes(a.Bytes))
	if a.Chosen {
		s += ", the current program"
	}
	if best != nil && best != a {
		s += fmt.Sprintf("; smallest: %v, %s", best.Program, core.HumanBytes(best.Bytes))
	}
	if n := len(p.chosen); n > 0 {
		s += fmt.Sprintf(". %d tensor(s) with a chosen program", n)
	}
	return s
}

func (p *programsPanel) refresh() {
	p.tree.Refresh()
	p.alts.Refresh()
	p.refreshButtons()
}

func (p *programsPanel) refreshButtons() {
	ok := p.pick >= 0 && p.pick < len(p.list) && p.list[p.pick].Err == nil
	for _, b := range []*widget.Button{p.useOne, p.useAll} {
		if ok {
			b.Enable()
		} else {
			b.Disable()
		}
	}
	p.useAll.SetText("Use for its cluster")
	if ok && p.model != nil {
		p.useAll.SetText(fmt.Sprintf("Use for its cluster (%d)", len(p.model.ProgramCluster(p.tensor))))
	}
	if len(p.chosen) > 0 {
		p.saveB.Enable()
		p.clearB.Enable()
	} else {
		p.saveB.Disable()
		p.clearB.Disable()
	}
}

// use chooses the picked alternative's program for the tensor, or for
// every tensor of its cluster (core.ProgramCluster), then measures again.
func (p *programsPanel) use(cluster bool) {
	if p.pick < 0 || p.pick >= len(p.list) || p.model == nil {
		return
	}
	prog := p.list[p.pick].Program
	idx := []int{p.tensor}
	if cluster {
		idx = p.model.ProgramCluster(p.tensor)
	}
	for _, i := range idx {
		name := p.model.Tensors[i].Name
		if prog == codec.ProgramAuto {
			delete(p.chosen, name)
		} else {
			p.chosen[name] = prog
		}
	}
	p.compute()
}

// programSetup is the setup the choices make: the picked setup's tables
// (none: a setup of programs only) with the chosen programs. It is added
// to the workbench's setups (for the Run screen) as "programs".
func (p *programsPanel) programSetup() (core.NamedSetup, error) {
	s, err := core.ProgramSetup(p.base(), p.chunkValues(), p.chosen)
	if err != nil {
		return core.NamedSetup{}, err
	}
	name := "programs"
	if p.setup.Selected != noSetup && !strings.HasPrefix(p.setup.Selected, "programs") {
		name = p.setup.Selected + "+programs"
	}
	ns := core.NamedSetup{Name: name, Setup: s}
	if p.wb.setupsScr != nil {
		p.wb.setupsScr.addSetup(ns)
	}
	p.refreshSetups()
	return ns, nil
}

// save saves the choices as a setup file (nzip compress -setup FILE).
func (p *programsPanel) save() {
	ns, err := p.programSetup()
	if err != nil {
		p.wb.showError(err)
		return
	}
	p.status.SetText(fmt.Sprintf("Setup %q: %d chosen program(s), id %s…; nzip compress -setup %s.nzsetup codes them so", ns.Name, len(ns.Setup.Programs), ns.Setup.IDString()[:12], ns.Name))
	b := ns.Setup.Bytes()
	p.wb.saveFile(ns.Name+".nzsetup", func(w io.Writer) error { _, err := w.Write(b); return err })
}

// Tree: node IDs are paths of child indices below the tensor's root,
// "r", "r/0", "r/0/2".

func (p *programsPanel) node(id widget.TreeNodeID) *core.ProgramNode {
	if p.root == nil || !strings.HasPrefix(id, "r") {
		return nil
	}
	var path []int
	for _, s := range strings.Split(id, "/")[1:] {
		k, err := strconv.Atoi(s)
		if err != nil {
			return nil
		}
		path = append(path, k)
	}
	return p.root.Find(path)
}

func (p *programsPanel) childIDs(id widget.TreeNodeID) []widget.TreeNodeID {
	if id == "" {
		if p.root == nil {
			return nil
		}
		return []widget.TreeNodeID{"r"}
	}
	n := p.node(id)
	if n == nil {
		return nil
	}
	out := make([]widget.TreeNodeID, len(n.Nodes))
	for k := range n.Nodes {
		out[k] = id + "/" + strconv.Itoa(k)
	}
	return out
}

func (p *programsPanel) isBranch(id widget.TreeNodeID) bool {
	if id == "" {
		return true
	}
	n := p.node(id)
	return n != nil && len(n.Nodes) > 0
}

// nodeText is a tree node's line: operator, coder, bytes, bits per value.
func (p *programsPanel) nodeText(id widget.TreeNodeID) string {
	n := p.node(id)
	if n == nil {
		return ""
	}
	label := n.Label()
	if id == "r" && p.pick >= 0 && p.pick < len(p.list) {
		label = "tensor, " + p.list[p.pick].Program.String()
	}
	parts := []string{label}
	if n.Coder != "" {
		parts = append(parts, n.Coder)
	}
	parts = append(parts, fmt.Sprintf("%d B", n.Bytes))
	if n.Values > 0 {
		parts = append(parts, fmt.Sprintf("%.3f bits/value", n.BitsPerValue()))
	}
	return strings.Join(parts, " — ")
}

// altText is the text of a cell of the alternatives table.
func (p *programsPanel) altText(r, c int) string {
	if r < 0 || r >= len(p.list) {
		return ""
	}
	a := &p.list[r]
	switch c {
	case 0:
		if a.Chosen {
			return glyphs("●")
		}
		return ""
	case 1:
		return a.Program.String()
	}
	if a.Err != nil {
		if c == 2 {
			return "failed"
		}
		return ""
	}
	switch c {
	case 2:
		return strconv.FormatInt(a.Bytes, 10)
	case 3:
		return fmt.Sprintf("%.3f", a.BitsPerValue)
	case 4:
		return fmt.Sprintf("%.0f", a.CompressMBs)
	case 5:
		return fmt.Sprintf("%.0f", a.DecompressMBs)
	case 6:
		if a.RoundTrip {
			return glyphs("✓ bit-exact")
		}
		return glyphs("✗")
	}
	return ""
}

// chosenNames lists the tensors with a chosen program, sorted (tests).
func (p *programsPanel) chosenNames() []string {
	var out []string
	for n := range p.chosen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
