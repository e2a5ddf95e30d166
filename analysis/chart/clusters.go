package chart

import (
	"fmt"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Projection describes a scatter plot of points coloured by group.
type Projection struct {
	Title     string
	Points    [][2]float64
	Group     []int    // group of each point, 0..len(Names)-1
	Names     []string // legend entry per group
	Explained [2]float64
	Notes     []string
	// Robust limits the view to the bulk of the points (2nd to 98th
	// percentile on each axis, widened by a third) and notes how many
	// points lie outside.
	Robust bool
}

// Scatter plots the projection, one colour per group.
func Scatter(pr Projection, st Style) (*plot.Plot, error) {
	if len(pr.Points) == 0 || len(pr.Group) != len(pr.Points) {
		return nil, ErrEmpty
	}
	p := newPlot(st, pr.Title, fmt.Sprintf("PC1 (%.0f%% of variance)", 100*pr.Explained[0]), fmt.Sprintf("PC2 (%.0f%%)", 100*pr.Explained[1]))
	groups := len(pr.Names)
	for _, g := range pr.Group {
		groups = max(groups, g+1)
	}
	inside := func(pt [2]float64) bool { return true }
	notes := pr.Notes
	if pr.Robust && len(pr.Points) >= 20 {
		var lo, hi [2]float64
		for k := 0; k < 2; k++ {
			v := make([]float64, len(pr.Points))
			for i, pt := range pr.Points {
				v[i] = pt[k]
			}
			sort.Float64s(v)
			a, b := v[len(v)*2/100], v[(len(v)*98)/100]
			pad := (b - a) / 3
			if pad == 0 {
				pad = 1e-9
			}
			lo[k], hi[k] = a-pad, b+pad
		}
		inside = func(pt [2]float64) bool {
			return pt[0] >= lo[0] && pt[0] <= hi[0] && pt[1] >= lo[1] && pt[1] <= hi[1]
		}
		out := 0
		for _, pt := range pr.Points {
			if !inside(pt) {
				out++
			}
		}
		if out > 0 {
			notes = append(append([]string(nil), notes...), fmt.Sprintf("%d outlying point(s) outside the view", out))
		}
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo[0], hi[0], lo[1], hi[1]
	}
	for g := 0; g < groups; g++ {
		var xy plotter.XYs
		for i, pt := range pr.Points {
			if pr.Group[i] == g && inside(pt) {
				xy = append(xy, plotter.XY{X: pt[0], Y: pt[1]})
			}
		}
		if len(xy) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		s.Color = st.Color(g)
		s.Shape = draw.CircleGlyph{}
		s.Radius = vg.Points(2.5)
		p.Add(s)
		if g < len(pr.Names) {
			p.Legend.Add(pr.Names[g], s)
		}
	}
	if len(notes) > 0 {
		p.Add(noteBox{lines: notes, style: st, left: true})
	}
	return p, nil
}

// Series is one named line of y values over x.
type Series struct {
	Name string
	X, Y []float64
}

// Lines plots several series over a shared x axis, each in its palette
// colour with points; Log makes the y axis logarithmic (values ≤ 0 are
// left out).
type Lines struct {
	Title, XLabel, YLabel string
	Series                []Series
	Log                   bool
	IntX                  bool      // whole-number x ticks
	HLines                []float64 // horizontal reference lines (the style's Model colour)
	HLabels               []string
	Mark                  int // index into Series[0] of a point to mark (-1: none)
	Notes                 []string
}

// LinePlot draws l.
func LinePlot(l Lines, st Style) (*plot.Plot, error) {
	if len(l.Series) == 0 {
		return nil, ErrEmpty
	}
	p := newPlot(st, l.Title, l.XLabel, l.YLabel)
	lo, hi := 1e300, -1e300
	xlo, xhi := 1e300, -1e300
	for i, s := range l.Series {
		var xy plotter.XYs
		for j := range s.Y {
			if l.Log && s.Y[j] <= 0 {
				continue
			}
			xy = append(xy, plotter.XY{X: s.X[j], Y: s.Y[j]})
			lo, hi = min(lo, s.Y[j]), max(hi, s.Y[j])
			xlo, xhi = min(xlo, s.X[j]), max(xhi, s.X[j])
		}
		if len(xy) == 0 {
			continue
		}
		ln, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		c := st.Color(i)
		if len(l.Series) == 1 {
			c = st.Accent
		}
		ln.Color, pts.Color = c, c
		ln.Width = vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(2)
		p.Add(ln, pts)
		if s.Name != "" {
			p.Legend.Add(s.Name, ln, pts)
		}
	}
	for i, y := range l.HLines {
		fn := plotter.NewFunction(func(float64) float64 { return y })
		fn.Color = st.Model
		fn.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		fn.Width = vg.Points(1)
		p.Add(fn)
		if i < len(l.HLabels) {
			p.Legend.Add(l.HLabels[i], fn)
		}
		lo, hi = min(lo, y), max(hi, y)
	}
	if xlo < xhi {
		pad := (xhi - xlo) * 0.04
		p.X.Min, p.X.Max = xlo-pad, xhi+pad
	}
	if m := l.Mark; m >= 0 && m < len(l.Series[0].Y) {
		s, err := plotter.NewScatter(plotter.XYs{{X: l.Series[0].X[m], Y: l.Series[0].Y[m]}})
		if err != nil {
			return nil, err
		}
		s.Shape = draw.RingGlyph{}
		s.Radius = vg.Points(6)
		s.Color = st.Model
		p.Add(s)
	}
	if l.Log {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		if lo < 1e300 {
			p.Y.Min = lo / 2
		}
	} else if lo < hi {
		pad := (hi - lo) * 0.08
		p.Y.Min, p.Y.Max = lo-pad, hi+3*pad // room for the legend
	}
	if l.IntX {
		p.X.Tick.Marker = intTicks{}
	}
	if len(l.Notes) > 0 {
		p.Add(noteBox{lines: l.Notes, style: st, left: true})
	}
	return p, nil
}
