package chart

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// RDSeries is one lossy method's measurements: bits per parameter (X)
// and relative error (Y), joined by a line when Line (a method measured
// at several target rates).
type RDSeries struct {
	Name string
	X, Y []float64
	Line bool
}

// RateDistortion is error against rate: a colour and marker per method
// on a logarithmic error axis, the lossless coder's rate as a mark on the
// X axis (error 0 has no place on a log axis), and one point to ring
// (the slider's).
type RateDistortion struct {
	Title, XLabel, YLabel string
	Series                []RDSeries
	Lossless              float64 // bits per parameter of the lossless coder; 0: none
	LosslessLabel         string  // written above its mark
	Mark                  *Point  // ringed, with Label in the legend
}

// RDPlot plots r in a figure whose legend stands right of the data area
// (a line per method: above it, it would take as much height as the data).
// Points with a non-positive or infinite error are left out.
func RDPlot(r RateDistortion, st Style) (*Panels, error) {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	ok := func(x, y float64) bool { return x > 0 && y > 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) }
	for _, s := range r.Series {
		for i := range s.X {
			if ok(s.X[i], s.Y[i]) {
				xlo, xhi, ylo, yhi = min(xlo, s.X[i]), max(xhi, s.X[i]), min(ylo, s.Y[i]), max(yhi, s.Y[i])
			}
		}
	}
	if math.IsInf(xlo, 0) {
		return nil, ErrEmpty
	}
	if r.Lossless > 0 {
		xlo, xhi = min(xlo, r.Lossless), max(xhi, r.Lossless)
	}
	f := newPanels(st, r.Title)
	f.LegendRight = true
	p := newPlot(st, "", r.XLabel, r.YLabel)
	p.Legend = plot.NewLegend() // the figure's says it
	p.X.Min, p.X.Max = 0, xhi+max(0.06*(xhi-xlo), 0.5)
	p.X.Tick.Marker = niceTicks{n: 8}
	// the error axis: whole decades around the points, and room below
	// the lowest for the lossless mark's label
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(ylo))-0.6)
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(yhi)+0.05))
	for k, s := range r.Series {
		var xy plotter.XYs
		for i := range s.X {
			if ok(s.X[i], s.Y[i]) {
				xy = append(xy, plotter.XY{X: s.X[i], Y: s.Y[i]})
			}
		}
		if len(xy) == 0 {
			continue
		}
		c := st.Color(k)
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		sc.Color = c
		sc.Shape = glyphs[k%len(glyphs)]
		sc.Radius = vg.Points(3)
		if s.Line && len(xy) > 1 {
			ln, err := plotter.NewLine(xy)
			if err != nil {
				return nil, err
			}
			ln.Color, ln.Width = c, vg.Points(1.5)
			p.Add(ln, sc)
			f.Legend.Add(s.Name, ln, sc)
		} else {
			p.Add(sc)
			f.Legend.Add(s.Name, sc)
		}
	}
	if r.Lossless > 0 {
		ts := f.Legend.TextStyle
		ts.Font.Size = st.FontSize * 0.9
		lm := &axisMark{x: r.Lossless, label: r.LosslessLabel, color: st.Foreground, text: ts}
		p.Add(lm)
		f.Legend.Add("lossless (error 0)", lm)
	}
	if m := r.Mark; m != nil && ok(m.X, m.Y) {
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.X, Y: m.Y}})
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = st.Foreground, ring{}, vg.Points(7)
		p.Add(sc)
		thumb := *sc
		thumb.Radius = vg.Points(4.5)
		f.Legend.Add(m.Label, &thumb)
	}
	f.Plots = []*plot.Plot{p}
	return f, nil
}

// axisMark is a diamond on the X axis at x (the bottom of the data area,
// whatever its scale), with a label above it.
type axisMark struct {
	x     float64
	label string
	color color.Color
	text  text.Style
}

const axisMarkRadius = 5 // points

func (a *axisMark) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	pt := vg.Point{X: trX(a.x), Y: c.Min.Y}
	c.DrawGlyph(draw.GlyphStyle{Color: a.color, Radius: vg.Points(axisMarkRadius), Shape: diamond{}}, pt)
	if a.label == "" {
		return
	}
	ts := a.text
	ts.Color = a.color
	ts.YAlign = draw.YBottom
	// centred over the mark, kept inside the data area
	w := ts.Width(a.label)
	x := min(max(pt.X-w/2, c.Min.X), c.Max.X-w)
	ts.XAlign = draw.XLeft
	c.FillText(ts, vg.Point{X: x, Y: pt.Y + vg.Points(axisMarkRadius+2)}, a.label)
}

// GlyphBoxes marks the diamond and the label (LegendClear sees both).
func (a *axisMark) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	r := vg.Points(axisMarkRadius)
	boxes := []plot.GlyphBox{{X: p.X.Norm(a.x), Y: 0, Rectangle: vg.Rectangle{Min: vg.Point{X: -r, Y: -r}, Max: vg.Point{X: r, Y: r}}}}
	if a.label != "" {
		w, h := a.text.Width(a.label), a.text.FontExtents().Height
		boxes = append(boxes, plot.GlyphBox{X: p.X.Norm(a.x), Y: 0,
			Rectangle: vg.Rectangle{Min: vg.Point{X: -w / 2, Y: r + vg.Points(2)}, Max: vg.Point{X: w / 2, Y: r + vg.Points(2) + h}}})
	}
	return boxes
}

func (a *axisMark) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: a.color, Radius: vg.Points(4), Shape: diamond{}}, c.Center())
}

// diamond is a filled square on its corner.
type diamond struct{}

func (diamond) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(sty.Color)
	r := sty.Radius
	var path vg.Path
	path.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	path.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	path.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	path.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	path.Close()
	c.Fill(path)
}
