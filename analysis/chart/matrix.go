package chart

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Matrix describes a heatmap: Values[r][c] for row r (drawn top first) and
// column c; NaN cells are empty. Each cell is labelled with its value.
type Matrix struct {
	Title, XLabel, YLabel string
	Rows, Cols            []string
	Values                [][]float64
	Format                string // cell labels, default "%.3f"
}

// Heatmap plots m, low values pale, high values in the style's accent.
func Heatmap(m Matrix, st Style) (*plot.Plot, error) {
	if len(m.Rows) == 0 || len(m.Cols) == 0 || len(m.Values) != len(m.Rows) {
		return nil, ErrEmpty
	}
	p := newPlot(st, m.Title, m.XLabel, m.YLabel)
	p.Add(&heatGrid{m: m, st: st})
	var xt, yt []plot.Tick
	for i, c := range m.Cols {
		xt = append(xt, plot.Tick{Value: float64(i) + 0.5, Label: c})
	}
	for i, r := range m.Rows {
		yt = append(yt, plot.Tick{Value: float64(len(m.Rows)-1-i) + 0.5, Label: r})
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	p.X.Min, p.X.Max = 0, float64(len(m.Cols))
	p.Y.Min, p.Y.Max = 0, float64(len(m.Rows))
	return p, nil
}

type heatGrid struct {
	m  Matrix
	st Style
}

func (h *heatGrid) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, float64(len(h.m.Cols)), 0, float64(len(h.m.Rows))
}

func (h *heatGrid) Plot(c draw.Canvas, p *plot.Plot) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range h.m.Values {
		for _, v := range row {
			if !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	trX, trY := p.Transforms(&c)
	bg := color.RGBAModel.Convert(h.st.Background).(color.RGBA)
	ac := color.RGBAModel.Convert(h.st.Accent).(color.RGBA)
	format := h.m.Format
	if format == "" {
		format = "%.3f"
	}
	ts := p.Legend.TextStyle
	ts.Font.Size = h.st.FontSize
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YCenter
	for r, row := range h.m.Values {
		y0 := float64(len(h.m.Rows) - 1 - r)
		for col, v := range row {
			if col >= len(h.m.Cols) || math.IsNaN(v) {
				continue
			}
			t := 0.5
			if hi > lo {
				t = 0.15 + 0.85*(v-lo)/(hi-lo)
			}
			cell := color.RGBA{mix(bg.R, ac.R, t), mix(bg.G, ac.G, t), mix(bg.B, ac.B, t), 0xff}
			x0 := float64(col)
			pts := []vg.Point{{X: trX(x0), Y: trY(y0)}, {X: trX(x0 + 1), Y: trY(y0)}, {X: trX(x0 + 1), Y: trY(y0 + 1)}, {X: trX(x0), Y: trY(y0 + 1)}}
			c.FillPolygon(cell, pts)
			c.StrokeLines(draw.LineStyle{Color: h.st.Background, Width: vg.Points(1)}, append(pts, pts[0]))
			// text in the colour that contrasts with the cell
			ts.Color = h.st.Foreground
			if lum(cell) < 0.45 {
				ts.Color = color.White
			} else if lum(cell) > 0.6 {
				ts.Color = color.Black
			}
			c.FillText(ts, vg.Point{X: trX(x0 + 0.5), Y: trY(y0 + 0.5)}, fmt.Sprintf(format, v))
		}
	}
}

func mix(a, b uint8, t float64) uint8 {
	return uint8(math.Round(float64(a)*(1-t) + float64(b)*t))
}

func lum(c color.RGBA) float64 {
	return (0.2126*float64(c.R) + 0.7152*float64(c.G) + 0.0722*float64(c.B)) / 255
}

// Bars describes grouped bars: for each category, one bar per series.
type Bars struct {
	Title, YLabel string
	Categories    []string
	Series        []Series // Y per category (X unused)
}

// GroupedBars plots b, the legend (series with a name) above the bars.
func GroupedBars(b Bars, st Style) (*plot.Plot, error) {
	if len(b.Categories) == 0 || len(b.Series) == 0 {
		return nil, ErrEmpty
	}
	p := newPlot(st, b.Title, "", b.YLabel)
	w := vg.Points(14)
	n := len(b.Series)
	for i, s := range b.Series {
		if len(s.Y) != len(b.Categories) {
			return nil, fmt.Errorf("chart: series %q has %d values for %d categories", s.Name, len(s.Y), len(b.Categories))
		}
		bc, err := plotter.NewBarChart(plotter.Values(s.Y), w)
		if err != nil {
			return nil, err
		}
		bc.Color = st.Color(i)
		bc.LineStyle.Width = 0
		bc.Offset = (vg.Length(i) - vg.Length(n-1)/2) * w
		p.Add(bars{bc})
		if s.Name != "" {
			p.Legend.Add(s.Name, bc)
		}
	}
	p.NominalX(b.Categories...)
	var top float64
	for _, s := range b.Series {
		for _, y := range s.Y {
			top = max(top, y)
		}
	}
	p.X.Min, p.X.Max = -0.6, float64(len(b.Categories))-0.4
	p.Y.Min, p.Y.Max = 0, 1.08*top+1e-9
	legendAbove(p)
	return p, nil
}
