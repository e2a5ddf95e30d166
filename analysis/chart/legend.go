package chart

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendAbove moves p's legend out of the data area: its entries stand
// right-aligned in a band between the title and the data, which the
// title's padding reserves. Call it after the last Legend.Add.
func legendAbove(p *plot.Plot) {
	h := p.Legend.Rectangle(draw.Canvas{}).Size().Y
	if h == 0 {
		return
	}
	if p.Title.Text == "" {
		p.Title.Text = " " // the band is reserved through the title's padding
	}
	gap := p.Legend.TextStyle.Font.Size / 3
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs = 0
	// Legend.Draw puts the top entry's bottom at the area's top − its
	// height − the descent, + YOffs; the last entry ends gap above it
	p.Legend.YOffs = h + p.Legend.TextStyle.FontExtents().Descent + gap
	p.Title.Padding += h + gap
}

// LegendClear checks f drawn at w×h pixels and dpi: every legend lies
// inside the figure and covers none of the data marks its plots report as
// glyph boxes (points, line vertices, and the bars of GroupedBars,
// BitPlaneBars and Histogram from top to bottom). The error names the plot, the legend's
// rectangle and the first mark it covers.
func LegendClear(f Figure, w, h, dpi int) error {
	if dpi <= 0 {
		dpi = 96
	}
	c := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: vg.Length(w) * vg.Inch / vg.Length(dpi), Y: vg.Length(h) * vg.Inch / vg.Length(dpi)}}}
	var plots []*plot.Plot
	var areas []draw.Canvas
	switch f := f.(type) {
	case *plot.Plot:
		plots, areas = []*plot.Plot{f}, []draw.Canvas{c}
	case *Panels:
		legend, tiles := f.layout(c)
		for i, p := range f.Plots {
			if p == nil {
				continue
			}
			if err := clearOf(legend, "the figure", p, tiles[i], c); err != nil {
				return err
			}
			plots, areas = append(plots, p), append(areas, tiles[i])
		}
	default:
		return fmt.Errorf("chart: LegendClear does not know %T", f)
	}
	for i, p := range plots {
		r, ok := legendRect(p, areas[i])
		if !ok {
			continue
		}
		if err := clearOf(r, fmt.Sprintf("%q", p.Title.Text), p, areas[i], c); err != nil {
			return err
		}
	}
	return nil
}

// clearOf checks that the legend rectangle r (of who) lies inside the
// figure's canvas fig and covers none of p's glyph boxes, p drawn in c.
func clearOf(r vg.Rectangle, who string, p *plot.Plot, c, fig draw.Canvas) error {
	if r.Size().X == 0 {
		return nil
	}
	const eps = 0.5 // points
	if r.Min.X < fig.Min.X-eps || r.Min.Y < fig.Min.Y-eps || r.Max.X > fig.Max.X+eps || r.Max.Y > fig.Max.Y+eps {
		return fmt.Errorf("chart: the legend of %s at %v lies outside the figure %v", who, r, fig.Rectangle)
	}
	dc := p.DataCanvas(c)
	for _, b := range p.GlyphBoxes(p) {
		m := b.Rectangle.Add(vg.Point{X: dc.X(b.X), Y: dc.Y(b.Y)})
		if m.Min.X < r.Max.X && m.Max.X > r.Min.X && m.Min.Y < r.Max.Y && m.Max.Y > r.Min.Y {
			return fmt.Errorf("chart: the legend of %s at %v covers data at %v", who, r, m)
		}
	}
	return nil
}

// legendRect is where p.Legend.Draw puts p's legend when p is drawn in c;
// false when it has no entries. The legend is drawn in the area right of
// the Y axis and above the X axis, below the title: its right and top
// edges are exact, its left and bottom edges those of the data area
// (within the padding gonum keeps for glyphs).
func legendRect(p *plot.Plot, c draw.Canvas) (vg.Rectangle, bool) {
	l := &p.Legend
	sz := l.Rectangle(c).Size()
	if sz.Y == 0 {
		return vg.Rectangle{}, false
	}
	top := c.Max.Y
	if p.Title.Text != "" {
		top -= p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	dc := p.DataCanvas(c)
	var r vg.Rectangle
	if l.Left {
		r.Min.X = dc.Min.X + l.XOffs
		r.Max.X = r.Min.X + sz.X
	} else {
		r.Max.X = c.Max.X + l.XOffs
		r.Min.X = r.Max.X - sz.X
	}
	if l.Top {
		r.Max.Y = top - l.TextStyle.FontExtents().Descent + l.YOffs
		r.Min.Y = r.Max.Y - sz.Y
	} else {
		r.Min.Y = dc.Min.Y + l.YOffs
		r.Max.Y = r.Min.Y + sz.Y
	}
	return r, true
}

// barMarks is how many points down a bar's height its glyph boxes mark
// (bars, barPlot): closer than a legend's line height on any chart size
// the app draws, so that a legend cannot sit between two of them.
const barMarks = 32

// bars is a bar chart whose glyph boxes also mark each bar's top and
// barMarks points down its height. They have no height, so they pad the
// plot no more than gonum's own boxes (which sit at the bars' base), but
// LegendClear sees the bars.
type bars struct{ *plotter.BarChart }

func (b bars) GlyphBoxes(plt *plot.Plot) []plot.GlyphBox {
	boxes := b.BarChart.GlyphBoxes(plt)
	if b.Horizontal {
		return boxes
	}
	for i, v := range b.Values {
		x := plt.X.Norm(b.XMin + float64(i))
		r := vg.Rectangle{Min: vg.Point{X: b.Offset - b.Width/2}, Max: vg.Point{X: b.Offset + b.Width/2}}
		for k := 1; k <= barMarks; k++ {
			boxes = append(boxes, plot.GlyphBox{X: x, Y: plt.Y.Norm(v * float64(k) / barMarks), Rectangle: r})
		}
	}
	return boxes
}
