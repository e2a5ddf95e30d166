package main

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
	"gonum.org/v1/plot"

	"neuralzip/analysis/chart"
	"neuralzip/app/core"
)

// Scopes of the histogram screen.
const (
	scopeTensor    = "Tensor"
	scopeSelection = "Selection"
	scopeModel     = "Model"
)

// histScreen shows the exponent histogram of the focused tensor, the
// selection or the whole model, with the Gaussian model's prediction, and
// the sign and mantissa bit-plane statistics beside it.
type histScreen struct {
	wb      *workbench
	content fyne.CanvasObject
	scope   *widget.RadioGroup
	log     *widget.Check
	title   *widget.Label
	info    *widget.Label // entropy, Huffman cost, model cost
	planes  *widget.Label
	hist    *chartView
	bits    *chartView
	agg     core.Aggregate
	ok      bool
}

func newHistScreen(wb *workbench) *histScreen {
	s := &histScreen{wb: wb}
	s.scope = widget.NewRadioGroup([]string{scopeTensor, scopeSelection, scopeModel}, func(string) { s.refresh() })
	s.scope.Horizontal = true
	s.scope.Required = true
	s.scope.SetSelected(scopeTensor)
	s.log = widget.NewCheck("Log scale", func(bool) { s.refresh() })
	s.log.SetChecked(true)
	s.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.title.Truncation = fyne.TextTruncateEllipsis
	s.info = widget.NewLabel("")
	s.info.Wrapping = fyne.TextWrapWord
	s.planes = widget.NewLabel("")
	s.planes.Wrapping = fyne.TextWrapWord
	s.hist = newChartView(wb, "exponent-histogram", "")
	s.bits = newChartView(wb, "bit-planes", "")
	controls := container.NewHBox(widget.NewLabel("Show"), s.scope, widget.NewSeparator(), s.log)
	right := container.NewBorder(nil, container.NewVBox(heading("Sign and mantissa bits"), s.planes), nil, nil, s.bits.content)
	split := container.NewHSplit(container.NewBorder(nil, s.info, nil, nil, s.hist.content), right)
	split.Offset = 0.62
	s.content = container.NewBorder(container.NewPadded(container.NewVBox(controls, s.title)), nil, nil, nil, split)
	wb.modelListeners = append(wb.modelListeners, s.refresh)
	wb.selListeners = append(wb.selListeners, s.refresh)
	s.refresh()
	return s
}

// indices returns the tensors of the chosen scope and a title.
func (s *histScreen) indices() ([]int, string) {
	wb := s.wb
	m := wb.current
	switch s.scope.Selected {
	case scopeSelection:
		sel := wb.selection()
		return sel, fmt.Sprintf("%s — selection of %d tensors", m.Name, len(sel))
	case scopeModel:
		return wb.all(), m.Name + " — whole model"
	}
	if wb.focus < 0 {
		return nil, m.Name + " — no tensor chosen"
	}
	t := &m.Tensors[wb.focus]
	return []int{wb.focus}, fmt.Sprintf("%s  %s %s", t.Name, t.DTypeName(), t.ShapeString())
}

func (s *histScreen) refresh() {
	wb := s.wb
	if s.bits == nil || s.log == nil {
		return // still being built
	}
	s.ok = false
	if wb.current == nil {
		s.title.SetText("No model open.")
		s.info.SetText("")
		s.planes.SetText("")
		s.hist.SetBuilder(nil, "Open a model first.")
		s.bits.SetBuilder(nil, "")
		return
	}
	idx, title := s.indices()
	s.title.SetText(title)
	st := wb.currentStats()
	if st == nil {
		s.info.SetText("")
		s.planes.SetText("")
		s.hist.SetBuilder(nil, "Statistics are being computed…")
		s.bits.SetBuilder(nil, "")
		return
	}
	if len(idx) == 0 {
		msg := "Nothing selected: tap tensors on the Tensors screen."
		s.info.SetText("")
		s.planes.SetText("")
		s.hist.SetBuilder(nil, msg)
		s.bits.SetBuilder(nil, "")
		return
	}
	if miss := wb.missingStats(wb.current, idx); len(miss) > 0 {
		var n int64
		for _, i := range miss {
			n += wb.current.Tensors[i].Bytes
		}
		s.info.SetText("")
		s.planes.SetText("")
		s.hist.SetBuilder(nil, fmt.Sprintf("Reading %d tensor(s), %s, from the server…", len(miss), core.HumanBytes(n)))
		s.bits.SetBuilder(nil, "")
		wb.needStats(wb.current, idx)
		return
	}
	a, ok := st.Aggregate(idx)
	if !ok {
		s.info.SetText("")
		s.planes.SetText("")
		s.hist.SetBuilder(nil, "No float tensors here: nothing to analyse.")
		s.bits.SetBuilder(nil, "")
		return
	}
	s.agg, s.ok = a, true
	notes := []string{
		fmt.Sprintf("entropy %.3f bits/exponent", a.Float.ExpEntropy),
		fmt.Sprintf("Huffman %.3f bits/exponent", a.HuffBits),
	}
	if a.Model != nil {
		notes = append(notes, fmt.Sprintf("Gaussian table %.3f bits/exponent", a.ModelBits))
	}
	modelLabel := "Gaussian model"
	if a.Sigma > 0 {
		modelLabel = fmt.Sprintf("Gaussian σ = %.3g", a.Sigma)
	} else if a.Tensors > 1 {
		modelLabel = "Gaussian, each tensor's σ"
	}
	h := chart.Histogram{Title: fmt.Sprintf("Exponents of %d %s tensor(s), %d values", a.Tensors, a.DType, a.Float.Values),
		Hist: a.Float.Hist, Bias: a.Bias, Model: a.Model, ModelLabel: modelLabel, Log: s.log.Checked, Notes: notes}
	s.hist.SetBuilder(func(cs chart.Style) (*plot.Plot, error) { return chart.ExpHistogram(h, cs) }, "")
	if s.hist.plot != nil {
		hostReport("hist", wb.current.Name)
		if !wb.openStarted.IsZero() {
			hostReport("open_to_hist_ms", ms(time.Since(wb.openStarted)))
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Exponent entropy %.3f bits, Huffman code %.3f bits (+%.1f%%)", a.Float.ExpEntropy, a.HuffBits, 100*(a.HuffBits/a.Float.ExpEntropy-1))
	if a.Model != nil {
		fmt.Fprintf(&b, ", Gaussian-model table %.3f bits", a.ModelBits)
	}
	fmt.Fprintf(&b, ". Order-0 bound %s of %s raw (%.4f×).", core.HumanBytes(int64(a.BoundBytes)), core.HumanBytes(a.Float.Bytes()), float64(a.Float.Bytes())/a.BoundBytes)
	if a.Zeros > 0 && a.SparseValues == a.Float.Values {
		fmt.Fprintf(&b, " Zeros %.1f%%: sparse optimum %s (%.4f×).", 100*float64(a.Zeros)/float64(a.SparseValues), core.HumanBytes(int64(a.OptimumBytes)), float64(a.Float.Bytes())/a.OptimumBytes)
	}
	if a.Skipped > 0 {
		fmt.Fprintf(&b, " %d float tensor(s) of other dtypes are not included.", a.Skipped)
	}
	s.info.SetText(b.String())

	// bit planes: sign, then mantissa bits from the top
	p := a.Planes
	var labels []string
	var ones, ent []float64
	if sb := p.SignBit(); sb >= 0 {
		labels = append(labels, "sign")
		ones = append(ones, p.Fraction(sb))
		ent = append(ent, p.BitEntropy(sb))
	}
	for bit := p.Mant - 1; bit >= 0; bit-- {
		labels = append(labels, fmt.Sprintf("m%d", bit))
		ones = append(ones, p.Fraction(bit))
		ent = append(ent, p.BitEntropy(bit))
	}
	if len(labels) > 12 {
		// F32: keep the top 11 mantissa bits readable; the rest are summarised
		labels, ones, ent = labels[:12], ones[:12], ent[:12]
	}
	bp := chart.BitPlanes{Title: "P(bit = 1) and entropy per bit", Labels: labels, Ones: ones, Entropy: ent}
	s.bits.SetBuilder(func(cs chart.Style) (*plot.Plot, error) { return chart.BitPlaneBars(bp, cs) }, "")
	var pb strings.Builder
	if sb := p.SignBit(); sb >= 0 {
		fmt.Fprintf(&pb, "Negative values: %.2f%%. ", 100*p.Fraction(sb))
	}
	fmt.Fprintf(&pb, "Mantissa: %d bits, %.3f bits of entropy (sum over bits); %d bit(s) constant in every value.",
		p.Mant, p.MantissaEntropy(), p.ConstantMantissaBits())
	if p.Mant > 11 {
		fmt.Fprintf(&pb, " The chart shows the top 11 mantissa bits.")
	}
	s.planes.SetText(pb.String())
}
