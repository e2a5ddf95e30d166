package chart

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Panels is a figure of small plots in a grid (Cols a row), their data
// areas aligned, under one title and one legend (right-aligned in a band
// below the title, above every panel; with LegendRight, in a column right
// of them).
type Panels struct {
	Title      string
	Plots      []*plot.Plot
	Cols       int // plots a row; 0: all in one row
	Legend     plot.Legend
	TitleStyle text.Style
	Background color.Color
	Pad        vg.Length // between panels, and around the title and legend
	// LegendRight puts the legend at the top of a column right of the
	// panels (a long legend above them would take their height)
	LegendRight bool
}

// newPanels returns an empty figure in the style.
func newPanels(st Style, title string) *Panels {
	p := newPlot(st, title, "", "")
	return &Panels{Title: title, Legend: p.Legend, TitleStyle: p.Title.TextStyle, Background: st.Background, Pad: st.FontSize}
}

// grid is the number of rows and columns.
func (f *Panels) grid() (rows, cols int) {
	cols = f.Cols
	if cols <= 0 || cols > len(f.Plots) {
		cols = max(len(f.Plots), 1)
	}
	return (len(f.Plots) + cols - 1) / cols, cols
}

// layout returns where the legend goes (empty without entries) and the
// canvas of each plot when f is drawn in c.
func (f *Panels) layout(c draw.Canvas) (vg.Rectangle, []draw.Canvas) {
	if f.Title != "" {
		c.Max.Y -= f.TitleStyle.Rectangle(f.Title).Size().Y + f.Pad/2
	}
	var legend vg.Rectangle
	if sz := f.Legend.Rectangle(c).Size(); sz.Y > 0 {
		legend = vg.Rectangle{Min: vg.Point{X: c.Max.X - sz.X, Y: c.Max.Y - sz.Y}, Max: c.Max}
		if f.LegendRight {
			c.Max.X -= sz.X + f.Pad
		} else {
			c.Max.Y -= sz.Y + f.Pad/2
		}
	}
	rows, cols := f.grid()
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for k := range cols {
			if i := r*cols + k; i < len(f.Plots) {
				grid[r][k] = f.Plots[i]
			}
		}
	}
	tiles := plot.Align(grid, draw.Tiles{Rows: rows, Cols: cols, PadX: f.Pad, PadY: f.Pad / 2}, c)
	out := make([]draw.Canvas, len(f.Plots))
	for i := range f.Plots {
		out[i] = tiles[i/cols][i%cols]
	}
	return legend, out
}

// Draw draws the figure in c.
func (f *Panels) Draw(c draw.Canvas) {
	if f.Background != nil {
		c.SetColor(f.Background)
		c.Fill(c.Rectangle.Path())
	}
	if f.Title != "" {
		ts := f.TitleStyle
		ts.XAlign, ts.YAlign = draw.XCenter, draw.YTop
		c.FillText(ts, vg.Point{X: c.Center().X, Y: c.Max.Y}, f.Title)
	}
	legend, tiles := f.layout(c)
	if legend.Size().Y > 0 {
		l := f.Legend
		l.Top, l.Left, l.XOffs, l.YOffs = true, false, 0, 0
		lc := c
		lc.Rectangle = legend
		// Legend.Draw puts the top entry's bottom at the top − its height − the descent
		lc.Max.Y += l.TextStyle.FontExtents().Descent
		l.Draw(lc)
	}
	for i, p := range f.Plots {
		if p != nil {
			p.Draw(tiles[i])
		}
	}
}
